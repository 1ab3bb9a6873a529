"""Models and GPUs: gp.model / gp.models (the model catalog, Hugging Face config.json
files, inline configs) and gp.gpu / gp.gpus (the GPU catalog), as :class:`Model` and
:class:`GPU`, read-only views of the C++ architecture and GPU records.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _core
from ._helpers import _delegate, _error
from ._quantity import Bytes

__all__ = ["Model", "GPU", "model", "models", "gpu", "gpus"]

ModelLike = Union["Model", str, "os.PathLike[str]", Mapping[str, Any]]


# --------------------------------------------------------------------------- models


class Model:
    """A transformer architecture with its exact parameter count.

    Create with :func:`gpuplan.model`. ``spec`` is what a scenario file would say
    (a catalog name, a config.json path, or an inline config dict).
    """

    __slots__ = ("_core", "_spec")

    def __init__(self, core: "_core.Architecture", spec: Union[str, Dict[str, Any]]) -> None:
        self._core = core
        self._spec = spec

    @property
    def spec(self) -> Union[str, Dict[str, Any]]:
        """What a scenario's "model" key holds for this model."""
        return self._spec

    name = _delegate("name", "Catalog or config name.")
    family = _delegate("family", "Hugging Face model_type.")
    kind = _delegate("kind", "'decoder', 'encoder' or 'encoder-decoder'.")
    hidden = _delegate("hidden", "Hidden size.")
    layers = _delegate("layers", "Decoder (or encoder) layers.")
    heads = _delegate("heads", "Attention heads.")
    kv_heads = _delegate("kv_heads", "Key/value heads (= heads for multi-head attention).")
    head_dim = _delegate("head_dim", "Per-head dimension.")
    ffn = _delegate("ffn", "MLP intermediate size.")
    vocab = _delegate("vocab", "Vocabulary size.")
    max_positions = _delegate("max_positions", "max_position_embeddings.")
    experts = _delegate("experts", "Experts per MoE layer (0 or 1: dense).")
    is_moe = _delegate("is_moe", "Mixture of experts.")
    parameters = _delegate("parameters", "Exact parameter count (tied embeddings counted once).")

    def parameter_breakdown(self) -> Dict[str, int]:
        """Parameters by component: embeddings, attention, mlp, norms, head, total, ..."""
        return self._core.parameter_breakdown()

    def to_dict(self) -> Dict[str, Any]:
        """The model as ``gpuplan describe --json`` prints it."""
        return _core.describe_json(self._core)

    def describe(self) -> str:
        """The model as ``gpuplan describe`` prints it (text table)."""
        return _core.describe_report(self._core, "text")

    def __repr__(self) -> str:
        return f"Model({self.name!r}, {self.family}, {self.parameters / 1e9:.2f} B parameters)"


def model(name: Optional[Union[str, "os.PathLike[str]", Mapping[str, Any], Model]] = None, *,
          config: Optional[Union[str, "os.PathLike[str]", Mapping[str, Any]]] = None) -> Model:
    """A model from the catalog, a Hugging Face config.json, or a dict.

    ``gp.model("llama-2-13b")`` (catalog names and Hub ids such as
    "meta-llama/Llama-2-13b-hf"), ``gp.model(config="path/config.json")`` (a file or
    a checkpoint directory), or ``gp.model({...config.json contents...})``.
    Unknown names raise :class:`UnknownNameError` (a :class:`ConfigError`) suggesting the nearest ones.
    """
    if isinstance(name, Model) and config is None:
        return name
    if name is not None and config is not None:
        raise _error("model", "give a name or config=, not both")
    src = config if config is not None else name
    if src is None:
        raise _error("model", "is required (a catalog name, config= path, or a config dict)")
    if isinstance(src, os.PathLike):
        src = os.fspath(src)
    if isinstance(src, Mapping):
        spec: Union[str, Dict[str, Any]] = dict(src)
    elif isinstance(src, str):
        spec = src
    else:
        raise _error("model", f"must be a name, a path or a dict (got {type(src).__name__} {src!r})")
    return Model(_core.load_model(spec), spec)


def models() -> List[str]:
    """Names in the built-in model catalog."""
    return list(_core.model_names())


# --------------------------------------------------------------------------- GPUs


class GPU:
    """A GPU from the catalog. Fields are the catalog's columns in its units (src/data/gpus.csv:
    ``memory_gb``, ``bandwidth_gb_s``, ``bf16_tflops``, ``gpu_link``, ...; dense tensor rates),
    ``to_dict()`` is the GPU object a scenario's ``gpu`` key or a GPU file takes."""

    __slots__ = ("_core",)

    def __init__(self, core: "_core.GpuSpec") -> None:
        self._core = core

    id = _delegate("id", "Catalog id, e.g. 'rtx-4090'.")
    name = _delegate("name", "Marketing name.")
    arch = _delegate("arch", "Architecture.")
    compute_capability = _delegate("compute_capability", "As published ('8.9').")
    memory_gb = _delegate("memory_gb", "Nominal capacity, datasheet GB (binary: GiB).")
    usable_gib = _delegate("usable_gib", "Capacity a process can use (nvidia-smi total), GiB.")
    bandwidth_gb_s = _delegate("bandwidth_gb_s", "Memory bandwidth, GB/s.")
    fp64_tflops = _delegate("fp64_tflops", "FP64, TFLOP/s, or None.")
    fp32_tflops = _delegate("fp32_tflops", "Non-tensor FP32, TFLOP/s.")
    tf32_tflops = _delegate("tf32_tflops", "Dense TF32 tensor TFLOP/s, or None.")
    bf16_tflops = _delegate("bf16_tflops", "Dense BF16/FP16 tensor TFLOP/s (FP32 accumulate), or None.")
    fp16_acc16_tflops = _delegate("fp16_acc16_tflops", "Dense FP16 tensor TFLOP/s with FP16 accumulate, or None.")
    fp8_tflops = _delegate("fp8_tflops", "Dense FP8 tensor TFLOP/s, or None.")
    int8_tops = _delegate("int8_tops", "Dense INT8 tensor TOPS, or None.")
    gpu_link = _delegate("gpu_link", "GPU-GPU link ('nvlink4', 'none', ...).")
    gpu_link_gb_s_bidir = _delegate("gpu_link_gb_s_bidir", "GPU-GPU link bandwidth, both directions, GB/s, or None.")
    link_group = _delegate("link_group", "GPUs joined by that link (bridge: 2; NVSwitch: 8).")
    pcie_gen = _delegate("pcie_gen", "PCIe generation.")
    pcie_lanes = _delegate("pcie_lanes", "PCIe lanes (0: integrated).")
    tdp_w = _delegate("tdp_w", "Board power, W, or None.")
    ecc = _delegate("ecc", "yes, no, soft-toggle or unverified.")
    mig = _delegate("mig", "Multi-Instance GPU support.")
    p2p = _delegate("p2p", "PCIe peer-to-peer allowed by the driver (False on GeForce cards).")
    year = _delegate("year", "Launch year, or None.")
    sm_count = _delegate("sm_count", "Streaming multiprocessors (AMD: compute units), or None.")
    confidence = _delegate("confidence", "The catalog's confidence column.")
    # Memory in bytes as well, for arithmetic with the estimates' *_bytes figures.
    memory_bytes = _delegate("memory_bytes", "Nominal capacity, bytes.")
    usable_memory_bytes = _delegate("usable_memory_bytes", "Capacity a process can use (nvidia-smi total), bytes.")
    memory = _delegate("memory_bytes", "Nominal capacity as Bytes (.gib, .gb).", Bytes)
    usable_memory = _delegate("usable_memory_bytes", "Usable capacity as Bytes (.gib, .gb).", Bytes)

    def to_dict(self) -> Dict[str, Any]:
        """The GPU as JSON: the catalog's columns (a scenario's "gpu" object, a GPU file entry)."""
        return self._core.to_dict()

    def __repr__(self) -> str:
        bf16 = self.bf16_tflops
        rate = f"{bf16:.0f} TFLOP/s bf16" if bf16 else "no bf16 tensor cores"
        return f"GPU({self.id!r}, {self.name}, {Bytes(self.memory_bytes)!r}, {rate})"


def gpu(id: str) -> GPU:  # noqa: A002 - the catalog calls it id
    """A catalog GPU by id (``gp.gpu("rtx-4090")``); unknown ids suggest the nearest."""
    return GPU(_core.find_gpu(id))


def gpus() -> List[str]:
    """Ids in the GPU catalog."""
    return list(_core.gpu_ids())
