"""gp.trace's node mapper: each torch.fx node of a traced module, with the shapes
ShapeProp recorded, becomes a layer of the C++ layer graph (include/gpuplan/layers.hpp)
or a view of an existing one; anything else is an error naming the node (docs/trace.md).
"""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._helpers import _error


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
        if type(m) in conv:
            return self.conv(node, m, x, conv[type(m)])
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
            return self.pool(node, m, x, *pools[type(m)])
        adaptive = {nn.AdaptiveAvgPool1d: ("adaptive_avg", 1), nn.AdaptiveAvgPool2d: ("adaptive_avg", 2),
                    nn.AdaptiveAvgPool3d: ("adaptive_avg", 3), nn.AdaptiveMaxPool1d: ("adaptive_max", 1),
                    nn.AdaptiveMaxPool2d: ("adaptive_max", 2), nn.AdaptiveMaxPool3d: ("adaptive_max", 3)}
        if type(m) in adaptive:
            return self.adaptive_pool(node, m, x, *adaptive[type(m)])
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

    def conv(self, node: Any, m: Any, x: _T, d: int) -> _T:
        """nn.Conv1d/2d/3d (`d` spatial dimensions) over the channel, dimension 1."""
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

    def pool(self, node: Any, m: Any, x: _T, kind: str, d: int) -> _T:
        """nn.MaxPool / nn.AvgPool (`kind` "max" or "avg") over `d` spatial dimensions."""
        self.channel_first(node, x, "pooling")
        if m.ceil_mode:
            raise self.fail(node, "has ceil_mode=True (not modelled)")
        if kind == "max" and (m.return_indices or _tup(m.dilation, d) != [1] * d):
            raise self.fail(node, "has return_indices=True or a dilation (not modelled)")
        k = _tup(m.kernel_size, d)
        s = _tup(m.stride if m.stride is not None else m.kernel_size, d)  # nn.MaxPool2d docs: stride defaults to kernel_size
        return self.emit(node, {"kind": "pool", "pool": kind, "dims": d, "kernel": k, "stride": s,
                                "padding": _tup(m.padding, d)}, x, 1)

    def adaptive_pool(self, node: Any, m: Any, x: _T, kind: str, d: int) -> _T:
        """nn.AdaptiveAvgPool / nn.AdaptiveMaxPool (`kind` "adaptive_avg" or "adaptive_max")."""
        self.channel_first(node, x, "pooling")
        if getattr(m, "return_indices", False):
            raise self.fail(node, "has return_indices=True (not modelled)")
        out = list(self.shape_of(node)[-d:])  # output_size None keeps that axis: the shape says which
        return self.emit(node, {"kind": "pool", "pool": kind, "dims": d, "out_size": out}, x, 1)

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
