"""Any PyTorch module as a layer graph: gp.trace and gp.Graph (docs/trace.md).

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
"""

from __future__ import annotations

import dis
import inspect
import json
import operator
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _core
from ._api import _error
from ._plan import _int, _number
from ._vision import VisionResult, _run_args

__all__ = ["Graph", "trace"]


# --------------------------------------------------------------------------- Graph

class Graph:
    """A layer graph (layers.hpp) in its JSON form (io/graph_json.hpp, docs/trace.md)."""

    def __init__(self, graph: Union[str, Dict[str, Any]]) -> None:
        if not isinstance(graph, (str, dict)):
            raise _error("graph", f"must be graph JSON text or a dict (got {type(graph).__name__})")
        try:
            text = graph if isinstance(graph, str) else json.dumps(graph)
        except (TypeError, ValueError) as e:
            raise _error("graph", f"must hold only JSON values ({e})") from None
        self._text: str = _core.graph_normalize(text)  # read, checked (layers::analyze), written back
        self._data: Dict[str, Any] = json.loads(self._text)
        self._analysis: Optional[Dict[str, Any]] = None

    @classmethod
    def load(cls, path: str) -> "Graph":
        """Reads a graph file (as written by save() or `gpuplan vision --export-graph`): a regular file
        of at most 16 MiB (the readers' one file reader: a directory, FIFO or /dev/zero is a ConfigError)."""
        raw = _core.read_text_file(os.fspath(path), "graph")
        try:
            return cls(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise _error("graph", f"file is not UTF-8 text (byte {e.start})") from None

    @classmethod
    def from_catalog(cls, model: str, image: Optional[int] = None, classes: int = 1000) -> "Graph":
        """A catalog model of gp.vision (resnet-50, vit-b-16, ...) as a graph; ``image`` defaults to the
        crop size of the model's torchvision weights (224; EfficientNet-B1..B4 240 to 380), as gp.vision's."""
        if not isinstance(model, str):
            raise _error("graph.model", f"must be a string (got {type(model).__name__} {model!r})")
        size = None if image is None else _int(image, "graph.image", 1, 1 << 20)
        return cls(_core.vision_model_graph(model, size, _int(classes, "graph.classes", 1, 1 << 30)))

    @property
    def name(self) -> str:
        """The graph's name (the module's class name for gp.trace, unless given)."""
        return str(self._data.get("name", ""))

    @property
    def input(self) -> Dict[str, int]:
        """The per-sample input shape {c, d, h, w} (d, h, w default to 1)."""
        s = {"c": 1, "d": 1, "h": 1, "w": 1}
        s.update(self._data["input"])
        return s

    @property
    def layers(self) -> List[Dict[str, Any]]:
        """The layers as the JSON lists them (a copy)."""
        return json.loads(json.dumps(self._data["layers"]))

    def __len__(self) -> int:
        return len(self._data["layers"])

    def to_dict(self) -> Dict[str, Any]:
        """The graph file as a dict (a copy)."""
        return json.loads(self._text)

    def to_json(self, indent: Optional[int] = 1) -> str:
        """The graph file's text (the canonical form the C++ writer makes)."""
        return self._text if indent == 1 else json.dumps(self._data, indent=indent)

    def save(self, path: str) -> None:
        """Writes the graph file: `gpuplan vision --graph PATH` reads it."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._text + "\n")

    def analyze(self) -> Dict[str, Any]:
        """layers::analyze: params, forward flops and matmul_flops per sample, saved_elements
        and saved_fixed_bytes per sample (saved bytes = saved_elements x activation bytes +
        saved_fixed_bytes), peak_live_elements, kernels and host_ops (the eager calls one forward
        dispatches), and per layer its in/out shapes."""
        if self._analysis is None:
            self._analysis = _core.graph_analyze(self._text)
        return json.loads(json.dumps(self._analysis))

    @property
    def params(self) -> int:
        """Exact parameter count."""
        return int(self.analyze()["params"])

    def saved_bytes(self, activation_bytes: float = 4) -> float:
        """Bytes saved for backward per sample with activations of `activation_bytes` (4: fp32)."""
        a = self.analyze()
        return float(a["saved_elements"]) * _number(activation_bytes, "graph.activation_bytes") + float(a["saved_fixed_bytes"])

    def estimate(self, gpu: str = "a100-80gb", batch: int = 32, precision: str = "fp16-mixed",
                 optimizer: str = "sgd-momentum", infer: bool = False, num_gpus: int = 1,
                 images: Union[None, int, float, str] = None, epochs: float = 1,
                 checkpointing: bool = False, zero: int = 0) -> VisionResult:
        """Memory and time of training (or, with infer=True, running) the graph with `batch`
        samples per GPU on `num_gpus` GPUs, `zero` 1-3 sharding the model states over them:
        the figures of gp.vision (to_dict() is the same dict)."""
        run = _run_args("estimate", gpu, batch, precision, optimizer, infer, images, epochs, num_gpus, checkpointing, zero)
        return VisionResult(_core.vision_graph(self._text, *run))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and other._text == self._text

    def __repr__(self) -> str:
        return f"Graph({self.name or 'graph'}: {len(self)} layers, {self.params:,} params)"


# --------------------------------------------------------------------------- trace

class _T:
    """A tensor value: the layer that made it (-2: the graph input), which of its
    dimensions is the layer graph's channel c (None: token ids), and its shape."""

    __slots__ = ("ref", "cdim", "shape")

    def __init__(self, ref: int, cdim: Optional[int], shape: Tuple[int, ...]) -> None:
        self.ref, self.cdim, self.shape = ref, cdim, shape


class _Other:
    """A value that is not one tensor: a size, the (output, weights) pair of
    nn.MultiheadAttention, or its attention weights."""

    __slots__ = ("what", "tensor")

    def __init__(self, what: str, tensor: Optional[_T] = None) -> None:
        self.what, self.tensor = what, tensor


class _P:
    """A parameter or buffer read directly (a get_attr node), possibly expanded: its
    qualified name, its own shape and whether it is an nn.Parameter."""

    __slots__ = ("target", "shape", "param")

    def __init__(self, target: str, shape: Tuple[int, ...], param: bool) -> None:
        self.target, self.shape, self.param = target, shape, param

    @property
    def numel(self) -> int:
        return _prod(self.shape)


_KNOWN = ("modules Conv1d/2d/3d, Linear, BatchNorm1d/2d/3d, GroupNorm, LayerNorm, ReLU, ReLU6, GELU, SiLU, Sigmoid, "
          "MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d, Dropout, Embedding, "
          "MultiheadAttention, Upsample (nearest), Flatten, Identity; functions and methods add/iadd/add_, mul/mul_, "
          "cat, relu/relu_, relu6, gelu, silu, sigmoid, dropout, layer_norm, adaptive_avg_pool1d/2d/3d, stochastic_depth, "
          "flatten/view/reshape (as flattens), transpose/permute/contiguous, size/shape, getitem (attention output, "
          "x[:, 0]); parameters as class token (cat), position embedding (add), layer scale (mul), layer_norm weights")


def _describe(node: Any) -> str:
    t = node.target
    if node.op == "call_module":
        return f"node '{node.name}' (call_module '{t}')"
    if node.op == "call_function":
        return f"node '{node.name}' (call_function '{getattr(t, '__name__', str(t))}')"
    return f"node '{node.name}' ({node.op} '{t}')"


def _tup(v: Any, n: int) -> List[int]:
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)] * n


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


class _Mapper:
    def __init__(self, torch: Any, gm: Any, root: Any, batch: int, flash: bool, kinds: List[str]) -> None:
        self.torch, self.nn, self.F = torch, torch.nn, torch.nn.functional
        self.gm, self.root, self.batch, self.flash, self.kinds = gm, root, batch, flash, kinds
        self.layers: List[Dict[str, Any]] = []
        self.origin: List[Any] = []        # the fx node of each layer
        self.values: Dict[Any, Any] = {}   # fx node -> _T / _Other
        self.calls: Dict[str, int] = {}    # module path -> times called
        self.shapes: List[Tuple[int, ...]] = []  # PyTorch's output shape of each layer
        self.param_layers: Dict[int, List[str]] = {}  # layer -> the parameters it reads directly (get_attr)
        self.param_uses: Dict[str, int] = {}     # parameter name -> layers that read it
        self.cats: Dict[Tuple[int, ...], _T] = {}  # torch.cat operands (layer refs) -> the concat layer
        self.pending_host_ops = 0  # calls since the last layer that mapped to none (count_host_op)

    # ---- helpers ------------------------------------------------------------------------
    def fail(self, node: Any, reason: str) -> Exception:
        return _error("trace", f"{_describe(node)} {reason}")

    def unmapped(self, node: Any, why: str = "") -> Exception:
        return self.fail(node, f"has no layer kind{why}; known: {_KNOWN}")

    def shape_of(self, node: Any) -> Tuple[int, ...]:
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise self.fail(node, "produced no single tensor while the module ran on the example input")
        return tuple(int(s) for s in meta.shape)

    def tensor(self, node: Any, arg: Any) -> _T:
        if hasattr(arg, "op") and arg in self.values and isinstance(self.values[arg], _T):
            return self.values[arg]
        if hasattr(arg, "op") and isinstance(self.values.get(arg), _P):
            raise self.unmapped(node, f" for the parameter '{self.values[arg].target}' used directly (mapped: a class "
                                      "token cat, a position embedding add, a layer scale mul, layer_norm weights)")
        raise self.unmapped(node, f" for the operand {arg!r} (only tensors made by mapped layers are supported)")

    def emit(self, node: Any, layer: Dict[str, Any], src: _T, cdim: Optional[int], name: Optional[str] = None,
             shape: Optional[Tuple[int, ...]] = None, params: Sequence[_P] = ()) -> _T:
        """Appends a layer reading `src`; `shape`: its PyTorch shape when not the node's output
        (one step of a chained cat); `params`: the parameters it reads directly."""
        i = len(self.layers)
        layer = dict(layer)
        if src.ref != (i - 1 if i > 0 else -2):
            layer["from"] = src.ref
        layer["name"] = name if name is not None else (node.target if node.op == "call_module" else node.name)
        out = shape if shape is not None else self.shape_of(node)
        for prm in params:
            if not prm.param:
                raise self.fail(node, f"reads the buffer '{prm.target}' as a {layer['kind']} (only parameters are modelled)")
            self.param_uses[prm.target] = self.param_uses.get(prm.target, 0) + 1
        if params:
            self.param_layers[i] = [prm.target for prm in params]
        self.layers.append(layer)
        self.origin.append(node)
        self.shapes.append(out)
        return _T(i, cdim, out)

    def last_dim(self, node: Any, x: _T, what: str) -> None:
        if x.cdim != len(x.shape) - 1:
            raise self.fail(node, f"applies {what} over the last dimension of shape {x.shape}, but the layer graph's "
                                  f"channel is dimension {x.cdim}")

    def channel_first(self, node: Any, x: _T, what: str) -> None:
        if x.cdim != 1:
            raise self.fail(node, f"applies {what} over dimension 1 of shape {x.shape}, but the layer graph's channel "
                                  f"is dimension {x.cdim}")

    # ---- host calls that map to no layer ------------------------------------------------
    # A view, permute, contiguous, cast or eval-mode dropout is no layer but still one call the
    # host dispatches in eager PyTorch: the next layer carries them as `host_ops` (docs/trace.md),
    # so the graph's eager floor counts them. nn.Identity and Python-level getitem/size make none.
    _NO_DISPATCH = ("size", "dim", "numel")

    def count_host_op(self, node: Any, value: Any, before: int) -> None:
        import operator
        if len(self.layers) > before:
            self.flush_host_ops(before)
            return
        if not isinstance(value, _T):
            return
        if node.op == "call_module" and isinstance(self.gm.get_submodule(node.target), self.nn.Identity):
            return
        if node.target in (operator.getitem, getattr) or node.target in self._NO_DISPATCH:
            return
        self.pending_host_ops += 1

    def flush_host_ops(self, i: int) -> None:
        if self.pending_host_ops and 0 <= i < len(self.layers):
            self.layers[i]["host_ops"] = self.layers[i].get("host_ops", 0) + self.pending_host_ops
            self.pending_host_ops = 0

    # ---- modules ------------------------------------------------------------------------
    def module(self, node: Any) -> Any:
        nn = self.nn
        m = self.gm.get_submodule(node.target)
        self.calls[node.target] = self.calls.get(node.target, 0) + 1
        args = list(node.args)
        if isinstance(m, nn.Identity):
            return self.tensor(node, args[0])
        if isinstance(m, nn.MultiheadAttention):
            return self.attention(node, m)
        x = self.tensor(node, args[0])
        conv = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}
        for cls, d in conv.items():
            if type(m) is cls:
                self.channel_first(node, x, "a convolution")
                k, s, dil = _tup(m.kernel_size, d), _tup(m.stride, d), _tup(m.dilation, d)
                if isinstance(m.padding, str):
                    if m.padding == "valid":
                        pad = [0] * d
                    # torch/nn/modules/conv.py, padding='same': dil·(k-1) in total per axis, split evenly when even
                    elif all((di * (ki - 1)) % 2 == 0 for di, ki in zip(dil, k)):
                        pad = [di * (ki - 1) // 2 for di, ki in zip(dil, k)]
                    else:
                        raise self.fail(node, "has padding='same' with an even kernel (asymmetric padding is not modelled)")
                else:
                    pad = _tup(m.padding, d)
                return self.emit(node, {"kind": "conv", "dims": d, "out": m.out_channels, "kernel": k, "stride": s,
                                        "padding": pad, "dilation": dil, "groups": m.groups, "bias": m.bias is not None},
                                 x, 1)
        if type(m) is nn.Linear:
            self.last_dim(node, x, "nn.Linear")
            return self.emit(node, {"kind": "linear", "out": m.out_features, "bias": m.bias is not None}, x, len(x.shape) - 1)
        if type(m) in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d):
            self.channel_first(node, x, "batch norm")
            return self.emit(node, {"kind": "norm", "norm": "batch", "affine": bool(m.affine)}, x, 1)
        if type(m) is nn.GroupNorm:
            self.channel_first(node, x, "group norm")
            return self.emit(node, {"kind": "norm", "norm": "group", "groups": m.num_groups, "affine": bool(m.affine)}, x, 1)
        if type(m) is nn.LayerNorm:
            if len(m.normalized_shape) != 1:
                raise self.fail(node, f"normalizes over {tuple(m.normalized_shape)}: only the last dimension is modelled")
            self.last_dim(node, x, "nn.LayerNorm")
            return self.emit(node, {"kind": "norm", "norm": "layer", "affine": bool(m.elementwise_affine)}, x, x.cdim)
        acts = {nn.ReLU: "relu", nn.GELU: "gelu", nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.ReLU6: "relu6"}
        if type(m) in acts:
            layer: Dict[str, Any] = {"kind": "activation", "act": acts[type(m)]}
            if type(m) in (nn.ReLU, nn.ReLU6) and m.inplace:
                layer["inplace"] = True
            return self.emit(node, layer, x, x.cdim)
        pools = {nn.MaxPool1d: ("max", 1), nn.MaxPool2d: ("max", 2), nn.MaxPool3d: ("max", 3),
                 nn.AvgPool1d: ("avg", 1), nn.AvgPool2d: ("avg", 2), nn.AvgPool3d: ("avg", 3)}
        if type(m) in pools:
            kind, d = pools[type(m)]
            self.channel_first(node, x, "pooling")
            if m.ceil_mode:
                raise self.fail(node, "has ceil_mode=True (not modelled)")
            if kind == "max" and (m.return_indices or _tup(m.dilation, d) != [1] * d):
                raise self.fail(node, "has return_indices=True or a dilation (not modelled)")
            k = _tup(m.kernel_size, d)
            s = _tup(m.stride if m.stride is not None else m.kernel_size, d)  # nn.MaxPool2d docs: stride defaults to kernel_size
            return self.emit(node, {"kind": "pool", "pool": kind, "dims": d, "kernel": k, "stride": s,
                                    "padding": _tup(m.padding, d)}, x, 1)
        adaptive = {nn.AdaptiveAvgPool1d: ("adaptive_avg", 1), nn.AdaptiveAvgPool2d: ("adaptive_avg", 2),
                    nn.AdaptiveAvgPool3d: ("adaptive_avg", 3), nn.AdaptiveMaxPool1d: ("adaptive_max", 1),
                    nn.AdaptiveMaxPool2d: ("adaptive_max", 2), nn.AdaptiveMaxPool3d: ("adaptive_max", 3)}
        if type(m) in adaptive:
            kind, d = adaptive[type(m)]
            self.channel_first(node, x, "pooling")
            if getattr(m, "return_indices", False):
                raise self.fail(node, "has return_indices=True (not modelled)")
            out = list(self.shape_of(node)[-d:])  # output_size None keeps that axis: the shape says which
            return self.emit(node, {"kind": "pool", "pool": kind, "dims": d, "out_size": out}, x, 1)
        if type(m) is nn.Dropout:  # p = 0 returns its input (ATen Dropout.cpp): nothing
            return self.emit(node, {"kind": "dropout", "p": float(m.p)}, x, x.cdim) if m.p > 0 else x
        if type(m) is nn.Embedding:
            if x.cdim is not None:
                raise self.fail(node, f"embeds a tensor of shape {x.shape} that is not the graph's token ids")
            return self.emit(node, {"kind": "embedding", "vocab": m.num_embeddings, "out": m.embedding_dim}, x,
                             len(self.shape_of(node)) - 1)
        if type(m) is nn.Upsample:
            return self.upsample(node, x, m.mode)
        if type(m) is nn.Flatten:
            return self.reshape(node, x)
        raise self.unmapped(node, f" ({type(m).__module__}.{type(m).__name__})")

    def upsample(self, node: Any, x: _T, mode: str) -> _T:
        if mode != "nearest":
            raise self.fail(node, f"upsamples with mode '{mode}': only 'nearest' is modelled")
        self.channel_first(node, x, "upsampling")
        out = self.shape_of(node)
        d = len(x.shape) - 2
        factors = {o // i for i, o in zip(x.shape[2:], out[2:]) if i > 0 and o % i == 0}
        if len(factors) != 1 or any(o != i * next(iter(factors)) for i, o in zip(x.shape[2:], out[2:])):
            raise self.fail(node, f"upsamples {x.shape} to {out}: only one integer factor on every axis is modelled")
        return self.emit(node, {"kind": "upsample", "factor": next(iter(factors)), "dims": d}, x, 1)

    def attention(self, node: Any, m: Any) -> _Other:
        names = ["query", "key", "value"]
        ops = list(node.args[:3]) + [node.kwargs.get(n) for n in names[len(node.args[:3]):]]
        q = self.tensor(node, ops[0])
        k = self.tensor(node, ops[1])
        if ops[2] is not ops[1] and self.values.get(ops[2]) is not k:
            raise self.fail(node, "has key and value from different tensors (not modelled)")
        if m.dropout > 0:
            raise self.fail(node, f"has attention dropout {m.dropout} (not modelled; use dropout=0.0)")
        if m.bias_k is not None or m.add_zero_attn:
            raise self.fail(node, "has add_bias_kv or add_zero_attn (not modelled)")
        for key in ("attn_mask", "key_padding_mask"):
            if node.kwargs.get(key) is not None:
                raise self.fail(node, f"has a {key} (masks are not modelled)")
        self.last_dim(node, q, "nn.MultiheadAttention")
        layer: Dict[str, Any] = {"kind": "attention", "heads": m.num_heads}
        if not self.flash:
            layer["flash"] = False
        if k is not q:
            self.last_dim(node, k, "nn.MultiheadAttention (key)")
            kv_dim = k.shape[-1]
            layer["kv_dim"] = kv_dim
            layer["kv_len"] = _prod(k.shape) // (self.batch * kv_dim)
        meta = node.meta.get("tensor_meta")
        if hasattr(meta, "shape") or not isinstance(meta, (tuple, list)) or not hasattr(meta[0], "shape"):
            raise self.fail(node, "produced no attention output while the module ran on the example input")
        i = len(self.layers)
        if q.ref != (i - 1 if i > 0 else -2):
            layer["from"] = q.ref
        layer["name"] = node.target
        out = tuple(int(s) for s in meta[0].shape)
        self.layers.append(layer)
        self.origin.append(node)
        self.shapes.append(out)
        return _Other("attention", _T(i, len(out) - 1, out))

    # ---- functions and methods ----------------------------------------------------------
    def reshape(self, node: Any, x: _T) -> _T:
        out = self.shape_of(node)
        if out == x.shape:
            return _T(x.ref, x.cdim, out)
        if len(out) == 2 and len(x.shape) > 2 and out[0] == x.shape[0]:
            return self.emit(node, {"kind": "flatten"}, x, 1)
        if x.cdim is None:
            raise self.fail(node, f"reshapes token ids {x.shape} to {out} (not modelled)")
        c = x.cdim
        before, after = _prod(x.shape[:c]), _prod(x.shape[c + 1:])
        for j in range(len(out)):
            if _prod(out[:j]) == before and out[j] == x.shape[c] and _prod(out[j + 1:]) == after:
                return _T(x.ref, j, out)  # the channel stays whole: a view of the same layer
        raise self.unmapped(node, f" (reshapes {x.shape} to {out}, which is not a flatten)")

    def param_binary(self, node: Any, kind: str) -> _T:
        """A tensor and a parameter: a learned position embedding (add, the tensor's per-sample
        shape) or a layer scale (mul, one value per channel), as torchvision's ViT and ConvNeXt."""
        args = list(node.args)
        if len(args) != 2 or node.kwargs:
            raise self.unmapped(node, " (only the sum or product of a tensor and a parameter is mapped)")
        vals = [self.values.get(a) if hasattr(a, "op") else None for a in args]
        prm = next((v for v in vals if isinstance(v, _P)), None)
        x = next((v for v in vals if isinstance(v, _T)), None)
        if prm is None or x is None:
            raise self.unmapped(node, " (only the sum or product of a tensor and a parameter is mapped)")
        out = self.shape_of(node)
        per_sample = x.shape[1:]
        if kind == "add":
            if out != x.shape or tuple(prm.shape) not in (per_sample, (1,) + per_sample):
                raise self.fail(node, f"adds the parameter '{prm.target}' {prm.shape} to {x.shape}: only a position "
                                      "embedding of the tensor's per-sample shape is modelled")
            return self.emit(node, {"kind": "position_embedding"}, x, x.cdim, params=[prm])
        n = len(x.shape)
        aligned = [1] * (n - len(prm.shape)) + list(prm.shape)
        if (out != x.shape or x.cdim is None or len(prm.shape) > n or aligned[x.cdim] != x.shape[x.cdim]
                or _prod(aligned) != x.shape[x.cdim]):
            raise self.fail(node, f"multiplies {x.shape} by the parameter '{prm.target}' {prm.shape}: only a layer "
                                  f"scale of one value per channel (dimension {x.cdim}) is modelled")
        return self.emit(node, {"kind": "layer_scale"}, x, x.cdim, params=[prm])

    def layer_norm(self, node: Any, x: _T) -> _T:
        """F.layer_norm(x, (C,), weight, bias) over the channel, the last dimension (torchvision's LayerNorm2d)."""
        names = ["input", "normalized_shape", "weight", "bias", "eps"]
        a = dict(zip(names, node.args))
        a.update(node.kwargs)
        shape = a.get("normalized_shape")
        if not isinstance(shape, (tuple, list)) or len(shape) != 1 or int(shape[0]) != x.shape[-1]:
            raise self.fail(node, f"normalizes over {shape!r}: only the last dimension is modelled")
        self.last_dim(node, x, "layer_norm")
        w, b = (a.get(k) for k in ("weight", "bias"))
        pw, pb = (self.values.get(v) if hasattr(v, "op") else v for v in (w, b))
        if pw is None and pb is None:
            return self.emit(node, {"kind": "norm", "norm": "layer", "affine": False}, x, x.cdim)
        if not (isinstance(pw, _P) and isinstance(pb, _P) and pw.numel == pb.numel == x.shape[-1]):
            raise self.fail(node, "has weight and bias other than two parameters of the normalized width "
                                  "(only both or neither are modelled)")
        return self.emit(node, {"kind": "norm", "norm": "layer", "affine": True}, x, x.cdim, params=[pw, pb])

    def binary(self, node: Any, kind: str) -> _T:
        args = list(node.args)
        if any(hasattr(a, "op") and isinstance(self.values.get(a), _P) for a in args):
            return self.param_binary(node, kind)
        if len(args) != 2 or any(not (hasattr(a, "op") and isinstance(self.values.get(a), _T)) for a in args):
            raise self.unmapped(node, " (only the sum or product of two tensors is mapped)")
        if node.kwargs.get("alpha", 1) != 1:
            raise self.fail(node, "has alpha != 1 (not modelled)")
        a, b = self.values[args[0]], self.values[args[1]]
        i = len(self.layers)
        if b.ref == i - 1 and a.ref != i - 1:
            a, b = b, a  # the previous layer as the implicit input
        out = self.shape_of(node)
        if kind == "add" and a.shape != b.shape:
            raise self.fail(node, f"adds shapes {a.shape} and {b.shape}: broadcasting adds are not modelled")
        if kind == "add" and a.cdim != b.cdim:
            raise self.fail(node, f"adds tensors whose channels are dimensions {a.cdim} and {b.cdim}")
        layer: Dict[str, Any] = {"kind": kind, "skip": b.ref}
        if kind == "add" and (node.target in (operator.iadd, "add_")):
            layer["inplace"] = True
        big = a if _prod(a.shape) >= _prod(b.shape) else b
        if out != big.shape:
            raise self.fail(node, f"of shapes {a.shape} and {b.shape} gives {out} (not modelled)")
        return self.emit(node, layer, a, big.cdim)

    def function(self, node: Any) -> Any:
        torch, F = self.torch, self.F
        t = node.target
        name = t if node.op == "call_method" else getattr(t, "__name__", str(t))
        args = list(node.args)
        if node.op == "call_function" and t is operator.getitem:
            src = self.values.get(args[0])
            if isinstance(src, _Other) and src.what == "attention":
                if args[1] == 0:
                    return src.tensor
                if args[1] == 1:
                    return _Other("attention weights")
            if isinstance(src, _Other):
                return _Other("size")
            x = self.tensor(node, args[0])
            idx = args[1]
            if (isinstance(idx, tuple) and len(idx) == 2 and idx[0] == slice(None) and idx[1] == 0
                    and len(x.shape) == 3 and x.cdim == 2):
                return self.emit(node, {"kind": "take_token"}, x, 1)
            raise self.unmapped(node, f" (indexing {x.shape} with {idx!r})")
        if (node.op == "call_function" and t is getattr) or (node.op == "call_method" and t in ("size", "dim")):
            return _Other("size")
        if node.op == "call_method" and t == "expand" and isinstance(self.values.get(args[0]), _P):
            return self.values[args[0]]  # `self.class_token.expand(n, -1, -1)`: the same parameter, per sample
        inputs: List[Any] = []
        self.torch.fx.node.map_arg((node.args, node.kwargs), inputs.append)
        if "tensor_meta" not in node.meta and not any(isinstance(self.values.get(a), _T) for a in inputs):
            return _Other("size")  # arithmetic on sizes, torch._assert: no tensor in, none out
        if t in (operator.add, operator.iadd, torch.add, "add", "add_"):
            return self.binary(node, "add")
        if t in (operator.mul, operator.imul, torch.mul, "mul", "mul_"):
            return self.binary(node, "mul")
        if t is torch.cat:
            return self.concat(node)
        x = self.tensor(node, args[0]) if args else None
        if x is None:
            raise self.unmapped(node)
        if t is F.layer_norm:
            return self.layer_norm(node, x)
        pools = {F.adaptive_avg_pool1d: 1, F.adaptive_avg_pool2d: 2, F.adaptive_avg_pool3d: 3}
        if t in pools:
            d = pools[t]
            self.channel_first(node, x, "pooling")
            return self.emit(node, {"kind": "pool", "pool": "adaptive_avg", "dims": d,
                                    "out_size": list(self.shape_of(node)[-d:])}, x, 1)
        if name == "stochastic_depth" and getattr(t, "__module__", "").startswith("torchvision.ops"):
            # torchvision.ops.stochastic_depth: the input times a (N, 1, ..., 1) Bernoulli noise in
            # training ("row"; "batch": one value), the input itself otherwise. Only the noise is
            # saved (derivatives.yaml mul: `other` for the input's gradient), one element per sample.
            mode = node.kwargs.get("mode", args[2] if len(args) > 2 else None)
            if mode not in ("row", "batch"):
                raise self.fail(node, f"has mode {mode!r} (a traced or unknown mode)")
            return _T(x.ref, x.cdim, self.shape_of(node))
        acts = {F.relu: "relu", torch.relu: "relu", "relu": "relu", F.relu_: "relu", torch.relu_: "relu", "relu_": "relu",
                F.gelu: "gelu", "gelu": "gelu", F.silu: "silu", torch.sigmoid: "sigmoid", "sigmoid": "sigmoid",
                "sigmoid_": "sigmoid", F.relu6: "relu6"}
        act = acts.get(t)
        if act is not None:
            layer: Dict[str, Any] = {"kind": "activation", "act": act}
            if act in ("relu", "relu6") and (t in (F.relu_, torch.relu_, "relu_") or node.kwargs.get("inplace") or
                                             (t in (F.relu, F.relu6) and len(args) > 1 and args[1] is True)):
                layer["inplace"] = True
            return self.emit(node, layer, x, x.cdim)
        if t is F.dropout:
            p = node.kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            training = node.kwargs.get("training", args[2] if len(args) > 2 else True)
            if training is not True and training is not False:
                raise self.fail(node, "has a traced training flag (not a constant)")
            return self.emit(node, {"kind": "dropout", "p": float(p)}, x, x.cdim) if training and float(p) > 0 else x
        if t in (torch.flatten, "flatten", "view", "reshape", torch.reshape):
            return self.reshape(node, x)
        if t == "contiguous":
            return x
        if t in ("transpose", torch.transpose, "permute", torch.permute):
            return self.permute(node, x)
        for a in inputs:
            if isinstance(self.values.get(a), _P):
                self.tensor(node, a)  # the error naming the parameter read directly
        raise self.unmapped(node)

    def permute(self, node: Any, x: _T) -> _T:
        out = self.shape_of(node)
        n = len(x.shape)
        rest = list(node.args[1:])
        if node.target in ("transpose", self.torch.transpose):
            a, b = (int(v) % n for v in rest[:2])
            order = list(range(n))
            order[a], order[b] = order[b], order[a]
        else:
            dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
            order = [int(v) % n for v in dims]
        cdim = order.index(x.cdim) if x.cdim is not None else None
        return _T(x.ref, cdim, out)

    def concat(self, node: Any) -> _T:
        tensors = node.args[0] if node.args else node.kwargs.get("tensors")
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if not isinstance(tensors, (list, tuple)) or not tensors or not isinstance(dim, int):
            raise self.fail(node, "concatenates other than a list of tensors along a constant dimension (not modelled)")
        if any(hasattr(a, "op") and isinstance(self.values.get(a), _P) for a in tensors):
            return self.class_token(node, tensors, dim)
        ts = [self.tensor(node, a) for a in tensors]
        a = ts[0]
        if a.cdim is None or any(t.cdim != a.cdim or len(t.shape) != len(a.shape) for t in ts) or dim % len(a.shape) != a.cdim:
            raise self.fail(node, f"concatenates along dimension {dim}, not the channel {a.cdim}")
        if len(ts) == 1:
            return _T(a.ref, a.cdim, self.shape_of(node))  # a copy of the one tensor: its values, nothing saved
        if "concat" not in self.kinds:
            raise self.unmapped(node, " (the layer graph has no concat kind)")
        refs = tuple(t.ref for t in ts)
        # A cat whose operands but the last are an earlier cat's (DenseNet's growing feature list)
        # extends that cat's output; otherwise the operands are joined two at a time, left to right.
        k = len(refs) - 1
        while k > 1 and refs[:k] not in self.cats:
            k -= 1
        cur = self.cats[refs[:k]] if k > 1 else a
        for j in range(k, len(ts)):
            shape = list(cur.shape)
            shape[a.cdim] += ts[j].shape[a.cdim]
            last = j == len(ts) - 1
            cur = self.emit(node, {"kind": "concat", "skip": ts[j].ref}, cur, a.cdim,
                            name=None if last else f"{node.name}[{j}]", shape=None if last else tuple(shape))
            self.cats[refs[:j + 1]] = cur
        return cur

    def class_token(self, node: Any, tensors: Sequence[Any], dim: int) -> _T:
        """torch.cat([token.expand(N, -1, -1), x], dim=1) of a (N, L, D) sequence: a learned
        token of width D prepended (or appended) to the sequence (torchvision's VisionTransformer)."""
        vals = [self.values.get(a) if hasattr(a, "op") else None for a in tensors]
        prm = [v for v in vals if isinstance(v, _P)]
        xs = [v for v in vals if isinstance(v, _T)]
        if len(vals) != 2 or len(prm) != 1 or len(xs) != 1:
            raise self.fail(node, "concatenates a parameter other than with one tensor (only a class token is modelled)")
        p, x = prm[0], xs[0]
        if not (len(x.shape) == 3 and x.cdim == 2 and dim % 3 == 1 and p.shape == (1, 1, x.shape[2])):
            raise self.fail(node, f"concatenates the parameter '{p.target}' {p.shape} with {x.shape} along dimension "
                                  f"{dim}: only a (1, 1, D) class token on a (N, L, D) sequence is modelled")
        return self.emit(node, {"kind": "class_token"}, x, 2, params=[p])


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
    try:
        import torch
        import torch.fx
        from torch.fx.passes.shape_prop import ShapeProp
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise _error("trace", f"needs PyTorch with torch.fx (import failed: {e})") from None
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
    batch = int(x.shape[0])

    kinds = list(_core.graph_layer_kinds())
    nn = torch.nn
    leaves = (nn.MultiheadAttention,)
    root = module
    if module.__class__.__module__.startswith("torch.nn") and not isinstance(module, nn.Sequential):
        root = nn.Sequential(module)  # a lone leaf module: trace it as a call, not through its forward

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

    tracer = _Tracer()
    try:
        fx_graph = tracer.trace(root)
    except Exception as e:  # torch.fx: data-dependent control flow, unsupported Python, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _error("trace", f"torch.fx cannot trace {type(module).__name__}: {first}") from None
    gm = torch.fx.GraphModule(tracer.root, fx_graph)

    modes = {m: m.training for m in gm.modules()}
    try:
        gm.eval()
        with torch.no_grad():
            ShapeProp(gm).propagate(x)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _error("trace", f"running {type(module).__name__} on the example input failed: {first}") from None
    finally:
        for m, training in modes.items():
            m.train(training)

    inp, cdim = _input_layout(torch, gm, x)
    mapper = _Mapper(torch, gm, root, batch, flash, kinds)
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
            mapper.values[node] = _P(node.target, tuple(int(s) for s in value.shape), isinstance(value, nn.Parameter))
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

    if not mapper.layers:
        raise _error("trace", f"{type(module).__name__} maps to no layers")
    mapper.flush_host_ops(len(mapper.layers) - 1)  # calls after the last layer (a final view)
    if out_value is None or out_value.ref != len(mapper.layers) - 1:
        raise _error("trace", "the module's output is not the last mapped layer (unused branches after it?)")

    graph = Graph({"name": name if name is not None else type(module).__name__, "input": inp, "layers": mapper.layers})
    _check(root, gm, mapper, graph, batch)
    return graph


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
