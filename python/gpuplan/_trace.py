"""Any PyTorch module as a layer graph: gp.trace (docs/trace.md).

``gp.trace(module, example_inputs)`` traces the module with torch.fx, runs it once on
the example input to record every tensor's shape (torch.fx.passes.shape_prop.ShapeProp),
and maps each leaf module and function to a layer of the C++ layer graph
(include/gpuplan/layers.hpp). The result is a :class:`Graph`: its exact parameter count,
FLOPs and saved-for-backward bytes (``analyze()``), its JSON (``to_json()``, ``save()``;
``gpuplan vision --graph FILE`` reads it) and the memory and time of training or running
it on one or more GPUs (``estimate()``, the figures of ``gp.vision``).

Nothing is guessed: a node with no layer kind is an error naming it and its target, the
per-sample size of every mapped tensor is checked against the layer graph's shapes, and
the parameter count against ``sum(p.numel() for p in module.parameters())``.
The node mapper is in _trace_map.py, the :class:`Graph` in _graph.py.
"""

from __future__ import annotations

import dis
import inspect
from typing import Any, Dict, Optional, Tuple

from . import _core
from ._graph import Graph
from ._helpers import _error
from ._trace_map import _Mapper, _Other, _P, _T, _describe, _prod

__all__ = ["trace"]


def _input_layout(torch: Any, gm: Any, x: Any) -> Tuple[Dict[str, int], Optional[int]]:
    """The graph input {c, d, h, w} per sample and which dimension of x is c."""
    rest = [int(s) for s in x.shape[1:]]
    if not x.is_floating_point():  # token ids: c = 1, positions = the rest
        return ({"c": 1, "h": _prod(rest)} if rest else {"c": 1}), None
    if len(rest) == 1:
        return {"c": rest[0]}, 1
    if len(rest) == 2:
        # (N, C, L) for 1-D convolutions, norms and pooling; else (N, L, D), a sequence of width D.
        nn = torch.nn
        first = [u for n in gm.graph.nodes if n.op == "placeholder" for u in n.users][:1]
        channel_first = (nn.Conv1d, nn.BatchNorm1d, nn.GroupNorm, nn.MaxPool1d, nn.AvgPool1d,
                         nn.AdaptiveAvgPool1d, nn.AdaptiveMaxPool1d, nn.Upsample)
        if first and first[0].op == "call_module" and isinstance(gm.get_submodule(first[0].target), channel_first):
            return {"c": rest[0], "w": rest[1]}, 1
        return {"c": rest[1], "h": rest[0]}, 2
    if len(rest) == 3:
        return {"c": rest[0], "h": rest[1], "w": rest[2]}, 1
    if len(rest) == 4:
        return {"c": rest[0], "d": rest[1], "h": rest[2], "w": rest[3]}, 1
    raise _error("trace.example_inputs", f"must be (N, ...) with 1 to 4 dimensions after the batch (got shape {tuple(x.shape)})")


def trace(module: Any, example_inputs: Any, *, flash: bool = True, name: Optional[str] = None) -> Graph:
    """The layer graph of a PyTorch module, traced with torch.fx on `example_inputs` (one
    tensor, or a tuple holding one: a small batch at the real input size, e.g.
    torch.randn(2, 3, 224, 224); token ids for a model that starts with nn.Embedding).
    The graph's input is the example's shape without the batch dimension.
    nn.MultiheadAttention becomes fused (flash) attention, or eager softmax(QK^T)V with
    flash=False. Raises InvalidInputError naming the node for anything not mapped."""
    torch, shape_prop = _torch_fx()
    x = _example_input(torch, module, example_inputs, flash)
    batch = int(x.shape[0])

    kinds = list(_core.graph_layer_kinds())
    nn = torch.nn
    root = module
    if module.__class__.__module__.startswith("torch.nn") and not isinstance(module, nn.Sequential):
        root = nn.Sequential(module)  # a lone leaf module: trace it as a call, not through its forward
    gm = _fx_graph(torch, module, root)
    _propagate_shapes(torch, shape_prop, module, gm, x)

    inp, cdim = _input_layout(torch, gm, x)
    mapper = _Mapper(torch, gm, root, batch, flash, kinds)
    out_value = _map_nodes(torch, mapper, gm, root, x, cdim)
    if not mapper.layers:
        raise _error("trace", f"{type(module).__name__} maps to no layers")
    mapper.flush_host_ops(len(mapper.layers) - 1)  # calls after the last layer (a final view)
    if out_value is None or out_value.ref != len(mapper.layers) - 1:
        raise _error("trace", "the module's output is not the last mapped layer (unused branches after it?)")

    graph = Graph({"name": name if name is not None else type(module).__name__, "input": inp, "layers": mapper.layers})
    _check(root, gm, mapper, graph, batch)
    return graph


def _torch_fx() -> Tuple[Any, Any]:
    """torch (with torch.fx) and ShapeProp, or the error saying gp.trace needs them."""
    try:
        import torch
        import torch.fx
        from torch.fx.passes.shape_prop import ShapeProp
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise _error("trace", f"needs PyTorch with torch.fx (import failed: {e})") from None
    return torch, ShapeProp


def _example_input(torch: Any, module: Any, example_inputs: Any, flash: Any) -> Any:
    """The one example tensor, with the module and `flash` checked."""
    if not isinstance(module, torch.nn.Module):
        raise _error("trace.module", f"must be a torch.nn.Module (got {type(module).__name__})")
    if not isinstance(flash, bool):
        raise _error("trace.flash", f"must be True or False (got {flash!r})")
    inputs = (example_inputs,) if torch.is_tensor(example_inputs) else example_inputs
    if not isinstance(inputs, (tuple, list)) or len(inputs) != 1 or not torch.is_tensor(inputs[0]):
        raise _error("trace.example_inputs", "must be one tensor (or a tuple of one): gp.trace maps single-input modules")
    x = inputs[0]
    if x.dim() < 2 or x.shape[0] < 1:
        raise _error("trace.example_inputs", f"must have a batch dimension and at least one more (got shape {tuple(x.shape)})")
    return x


def _fx_tracer(torch: Any) -> Any:
    """A torch.fx tracer that keeps nn.MultiheadAttention a leaf and unpacks proxies
    (`out, weights = attn(q, k, v)`, `n, c, h, w = x.shape`) into a fixed number of names."""
    nn = torch.nn
    leaves = (nn.MultiheadAttention,)

    def _unpack(proxy: Any, caller: Any) -> Any:
        n = proxy.node
        if n.op == "call_module" and isinstance(proxy.tracer.root.get_submodule(n.target), nn.MultiheadAttention):
            return iter((proxy[0], proxy[1]))  # `out, weights = attn(q, k, v)`
        # `a, b = proxy` (e.g. `n, c, h, w = x.shape`): the caller's UNPACK_SEQUENCE says how many.
        # torch 1.13's Proxy.__iter__ finds it at index f_lasti // 2, which Python 3.11's inline
        # caches break; the instruction at offset f_lasti is the same one on every version.
        if caller is not None:
            for ins in dis.get_instructions(caller.f_code):
                if ins.offset == caller.f_lasti:
                    if ins.opname == "UNPACK_SEQUENCE":
                        return iter([proxy[i] for i in range(int(ins.argval))])
                    break
        raise RuntimeError(f"node '{n.name}' ({n.op} '{getattr(n.target, '__name__', n.target)}') is iterated, "
                           "which torch.fx cannot follow (only unpacking into a fixed number of names)")

    class _Attribute(torch.fx.proxy.Attribute):
        def __iter__(self):
            frame = inspect.currentframe()
            return _unpack(self, frame.f_back if frame is not None else None)

    class _Proxy(torch.fx.Proxy):
        def __iter__(self):
            frame = inspect.currentframe()
            return _unpack(self, frame.f_back if frame is not None else None)

        def __getattr__(self, k: str) -> Any:
            return _Attribute(self, k)

    class _Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m: Any, qualname: str) -> bool:
            return isinstance(m, leaves) or super().is_leaf_module(m, qualname)

        def proxy(self, node: Any) -> Any:
            return _Proxy(node, self)

    return _Tracer()


def _fx_graph(torch: Any, module: Any, root: Any) -> Any:
    """`root` traced by torch.fx, as a GraphModule; a trace failure names `module`."""
    tracer = _fx_tracer(torch)
    try:
        fx_graph = tracer.trace(root)
    except Exception as e:  # torch.fx: data-dependent control flow, unsupported Python, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _error("trace", f"torch.fx cannot trace {type(module).__name__}: {first}") from None
    return torch.fx.GraphModule(tracer.root, fx_graph)


def _propagate_shapes(torch: Any, shape_prop: Any, module: Any, gm: Any, x: Any) -> None:
    """Runs `gm` once on `x` in eval mode (no grad), recording every node's tensor_meta;
    each submodule's training flag is restored after."""
    modes = {m: m.training for m in gm.modules()}
    try:
        gm.eval()
        with torch.no_grad():
            shape_prop(gm).propagate(x)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _error("trace", f"running {type(module).__name__} on the example input failed: {first}") from None
    finally:
        for m, training in modes.items():
            m.train(training)


def _map_nodes(torch: Any, mapper: _Mapper, gm: Any, root: Any, x: Any, cdim: Optional[int]) -> Optional[_T]:
    """Maps every node of `gm` in order; returns the value the graph outputs."""
    placeholders = 0
    out_value: Optional[_T] = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            placeholders += 1
            if placeholders == 1:
                mapper.values[node] = _T(-2, cdim, tuple(int(s) for s in x.shape))
            elif node.users:
                raise _error("trace", f"{_describe(node)} is a second input: gp.trace maps single-input modules")
            continue
        if node.op == "output":
            res = node.args[0]
            if not (hasattr(res, "op") and isinstance(mapper.values.get(res), _T)):
                raise mapper.fail(node, "returns something other than one tensor of the graph")
            out_value = mapper.values[res]
            continue
        if node.op == "get_attr":
            value = _attribute(root, node.target)
            if not torch.is_tensor(value):
                if node.users:
                    raise mapper.unmapped(node, f" (the attribute is a {type(value).__name__}, not a tensor)")
                continue
            mapper.values[node] = _P(node.target, tuple(int(s) for s in value.shape), isinstance(value, torch.nn.Parameter))
            continue
        before = len(mapper.layers)
        if node.op == "call_module":
            value = mapper.module(node)
        else:
            value = mapper.function(node)
        mapper.count_host_op(node, value, before)
        if isinstance(value, _Other) and value.what == "attention weights" and node.users:
            raise mapper.fail(node, "uses nn.MultiheadAttention's attention weights (not modelled)")
        mapper.values[node] = value
    return out_value


def _attribute(root: Any, target: str) -> Any:
    """The module attribute a get_attr node reads (`encoder.pos_embedding`)."""
    obj = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _check(module: Any, gm: Any, mapper: _Mapper, graph: Graph, batch: int) -> None:
    """Per-sample shapes of every layer against PyTorch's, and the parameter count."""
    a = graph.analyze()
    for i, (layer, node, shape) in enumerate(zip(a["layers"], mapper.origin, mapper.shapes)):
        out = layer["out"]
        elems = out["c"] * out["d"] * out["h"] * out["w"]
        value = mapper.values.get(node)
        cdim = value.tensor.cdim if isinstance(value, _Other) and value.tensor else getattr(value, "cdim", None)
        bad = _prod(shape) != elems * batch or (cdim is not None and shape[cdim] != out["c"])
        kind = mapper.layers[i]["kind"]
        if not bad and kind in ("conv", "pool", "upsample"):
            d = len(shape) - 2
            bad = list(shape[2:]) != [out["d"], out["h"], out["w"]][3 - d:] or any(v != 1 for v in [out["d"], out["h"], out["w"]][:3 - d])
        if bad:
            raise _error("trace", f"{_describe(node)}: PyTorch's output {shape} does not match layers[{i}]'s "
                                  f"{{c={out['c']}, d={out['d']}, h={out['h']}, w={out['w']}}} per sample (a mapping error)")
    for i, names in mapper.param_layers.items():
        node = mapper.origin[i]
        n = sum(_attribute(module, nm).numel() for nm in names)
        if a["layers"][i]["params"] != n:
            raise _error("trace", f"{_describe(node)}: the parameters {', '.join(names)} hold {n:,} values but "
                                  f"layers[{i}] counts {a['layers'][i]['params']:,} (a mapping error)")
    for nm, uses in mapper.param_uses.items():
        if uses > 1:
            raise _error("trace", f"the parameter '{nm}' is read by {uses} layers; it would be counted once per layer")
    for i, node in enumerate(mapper.origin):
        if node.op != "call_module":
            continue
        m = gm.get_submodule(node.target)
        n = sum(p.numel() for p in m.parameters())
        if a["layers"][i]["params"] != n:
            raise _error("trace", f"{_describe(node)}: {type(m).__name__} has {n:,} parameters but layers[{i}] counts "
                                  f"{a['layers'][i]['params']:,} (a mapping error)")
        if n and mapper.calls.get(node.target, 0) > 1:
            raise _error("trace", f"{_describe(node)}: the module is called {mapper.calls[node.target]} times; its "
                                  f"{n:,} parameters would be counted once per call")
    total = sum(p.numel() for p in module.parameters())
    if a["params"] != total:
        called = set(mapper.calls)
        missing = [nm for nm, _ in module.named_parameters()
                   if nm not in mapper.param_uses and not any(nm.startswith(c + ".") for c in called)]
        raise _error("trace", f"the graph counts {a['params']:,} parameters but the module has {total:,} "
                              f"(not in any mapped layer: {', '.join(missing[:5]) or 'shared or tied parameters'})")
