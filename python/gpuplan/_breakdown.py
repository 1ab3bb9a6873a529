"""The figures of one estimate: :class:`MemoryBreakdown` (per-GPU memory) and
:class:`TimeEstimate` (step time, throughput, cost), read-only views of the C++ structs
whose ``to_dict()`` and ``repr`` come from one field list each (:class:`_CoreFields`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, Tuple

from . import _core
from ._helpers import _delegate
from ._quantity import Bytes, Seconds

__all__ = ["MemoryBreakdown", "TimeEstimate"]


class _CoreFields:
    """A view of a _core struct (``self._core``): ``to_dict()`` holds its ``_FIELDS``
    (and ``_LISTS``, copied as lists), ``repr`` its ``_REPR`` fields, each
    (attribute, format spec; "r": repr)."""

    __slots__ = ()
    _FIELDS: ClassVar[Tuple[str, ...]] = ()
    _LISTS: ClassVar[Tuple[str, ...]] = ()
    _REPR: ClassVar[Tuple[Tuple[str, str], ...]] = ()

    def to_dict(self) -> Dict[str, Any]:
        """Every figure, keys as in the CLI's JSON (canonical units)."""
        core = self._core  # type: ignore[attr-defined]
        d: Dict[str, Any] = {k: getattr(core, k) for k in self._FIELDS}
        for k in self._LISTS:
            d[k] = list(getattr(core, k))
        return d

    def __repr__(self) -> str:
        shown = (f"{name}={repr(getattr(self, name)) if spec == 'r' else format(getattr(self, name), spec)}"
                 for name, spec in self._REPR)
        return f"{type(self).__name__}({', '.join(shown)})"


class MemoryBreakdown(_CoreFields):
    """Per-GPU memory of the most loaded pipeline stage.

    ``*_bytes`` attributes are floats in bytes; the same names without the suffix
    are :class:`Bytes` (``m.device.gib``). ``total`` is ``device``: what nvidia-smi
    shows, compared with the GPU's usable capacity to decide ``fits``.
    """

    __slots__ = ("_core",)

    #: Components stacked in charts and tables, in drawing order.
    COMPONENTS: Tuple[str, ...] = ("weights", "master_weights", "gradients", "optimizer", "activations",
                                   "transient", "overhead")

    def __init__(self, core: "_core.MemoryBreakdown") -> None:
        self._core = core

    weights_bytes = _delegate("weights_bytes", "(Quantized) base and trainable weights, bytes.")
    master_weights_bytes = _delegate("master_weights_bytes", "FP32 master copy (mixed precision), bytes.")
    gradients_bytes = _delegate("gradients_bytes", "Gradients, bytes.")
    optimizer_bytes = _delegate("optimizer_bytes", "Optimizer state, bytes.")
    activations_bytes = _delegate("activations_bytes", "Activations saved for backward at the peak, bytes.")
    transient_bytes = _delegate("transient_bytes", "Largest working set alive at the peak, bytes.")
    overhead_bytes = _delegate("overhead_bytes", "CUDA context, cuBLAS/NCCL workspaces, bytes.")
    peak_allocated_bytes = _delegate("peak_allocated_bytes", "torch.cuda.max_memory_allocated, bytes.")
    peak_reserved_bytes = _delegate("peak_reserved_bytes", "torch.cuda.max_memory_reserved, bytes.")
    device_bytes = _delegate("device_bytes", "What nvidia-smi shows, bytes.")
    total_bytes = _delegate("device_bytes", "= device_bytes.")
    capacity_bytes = _delegate("capacity_bytes", "The GPU's usable capacity, bytes.")
    headroom_bytes = _delegate("headroom_bytes", "capacity - device (negative when it does not fit), bytes.")
    host_bytes = _delegate("host_bytes", "Host RAM for offloaded state per node, bytes.")
    kv_cache_bytes = _delegate("kv_cache_bytes", "Serving: KV cache, bytes.")

    weights = _delegate("weights_bytes", "Weights as Bytes.", Bytes)
    master_weights = _delegate("master_weights_bytes", "Master weights as Bytes.", Bytes)
    gradients = _delegate("gradients_bytes", "Gradients as Bytes.", Bytes)
    optimizer = _delegate("optimizer_bytes", "Optimizer state as Bytes.", Bytes)
    activations = _delegate("activations_bytes", "Activations as Bytes.", Bytes)
    transient = _delegate("transient_bytes", "Transient working set as Bytes.", Bytes)
    overhead = _delegate("overhead_bytes", "Context and workspaces as Bytes.", Bytes)
    peak_allocated = _delegate("peak_allocated_bytes", "Peak allocated as Bytes.", Bytes)
    peak_reserved = _delegate("peak_reserved_bytes", "Peak reserved as Bytes.", Bytes)
    device = _delegate("device_bytes", "Device total (nvidia-smi) as Bytes.", Bytes)
    total = _delegate("device_bytes", "= device, as Bytes.", Bytes)
    capacity = _delegate("capacity_bytes", "Usable capacity as Bytes.", Bytes)
    headroom = _delegate("headroom_bytes", "Headroom as Bytes (negative when it does not fit).", Bytes)
    host = _delegate("host_bytes", "Host RAM as Bytes.", Bytes)
    kv_cache = _delegate("kv_cache_bytes", "KV cache as Bytes.", Bytes)

    fits = _delegate("fits", "device <= capacity.")
    stage = _delegate("stage", "Pipeline stage these figures describe.")
    max_concurrent_sequences = _delegate("max_concurrent_sequences", "Serving: sequences that fit.")
    warnings = _delegate("warnings", "Warning messages.")

    def components(self) -> Dict[str, float]:
        """The stacked components in bytes, plus 'allocator' = device minus their sum (when positive)."""
        parts = {name: getattr(self._core, name + "_bytes") for name in self.COMPONENTS}
        rest = self._core.device_bytes - sum(parts.values())
        parts["allocator"] = rest if rest > 0 else 0.0
        return parts

    #: to_dict()'s keys, as in the CLI's JSON (``*_bytes``), then "warnings" as a list.
    _FIELDS = tuple(n + "_bytes" for n in COMPONENTS) + (
        "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes", "capacity_bytes", "headroom_bytes",
        "host_bytes", "kv_cache_bytes", "fits", "stage", "max_concurrent_sequences")
    _LISTS = ("warnings",)
    _REPR = (("device", "r"), ("capacity", "r"), ("fits", ""))


class TimeEstimate(_CoreFields):
    """Step time, throughput, time-to-train and cost (seconds, tokens/s, FLOP)."""

    __slots__ = ("_core",)

    def __init__(self, core: "_core.TimeEstimate") -> None:
        self._core = core

    step_seconds = _delegate("step_seconds", "One optimizer step, seconds.")
    step = _delegate("step_seconds", "One optimizer step as Seconds.", Seconds)
    tokens_per_second_per_gpu = _delegate("tokens_per_second_per_gpu", "Training tokens/s per GPU.")
    tokens_per_second = _delegate("tokens_per_second", "Training tokens/s, whole job.")
    model_flops_per_step = _delegate("model_flops_per_step", "Model FLOP per step (no recompute).")
    hardware_flops_per_step = _delegate("hardware_flops_per_step", "Hardware FLOP per step (with recompute).")
    mfu = _delegate("mfu", "Model FLOPs utilisation, 0..1.")
    hfu = _delegate("hfu", "Hardware FLOPs utilisation, 0..1.")
    total_seconds = _delegate("total_seconds", "Time to train `tokens`, seconds (0 when tokens is unset).")
    total = _delegate("total_seconds", "Time to train `tokens` as Seconds.", Seconds)
    gpu_hours = _delegate("gpu_hours", "GPU-hours to train `tokens`.")
    cost = _delegate("cost", "price_per_gpu_hour x gpu_hours, or None.")
    energy_kwh = _delegate("energy_kwh", "Energy, kWh.")
    compute_seconds = _delegate("compute_seconds", "Compute per step, seconds.")
    communication_seconds = _delegate("communication_seconds", "Exposed communication per step, seconds.")
    bubble_seconds = _delegate("bubble_seconds", "Pipeline bubble per step, seconds.")
    optimizer_seconds = _delegate("optimizer_seconds", "Optimizer per step, seconds.")
    offload_seconds = _delegate("offload_seconds", "Exposed offload per step, seconds.")
    time_to_first_token_seconds = _delegate("time_to_first_token_seconds", "Serving: prefill latency, seconds.")
    decode_tokens_per_second = _delegate("decode_tokens_per_second", "Serving: decode tokens/s, all sequences.")
    decode_tokens_per_second_per_sequence = _delegate("decode_tokens_per_second_per_sequence",
                                                      "Serving: decode tokens/s per sequence.")
    warnings = _delegate("warnings", "Warning messages.")

    #: to_dict()'s keys, in canonical units, then "warnings" as a list.
    _FIELDS = ("step_seconds", "tokens_per_second_per_gpu", "tokens_per_second", "model_flops_per_step",
               "hardware_flops_per_step", "mfu", "hfu", "total_seconds", "gpu_hours", "cost", "energy_kwh",
               "compute_seconds", "communication_seconds", "bubble_seconds", "optimizer_seconds", "offload_seconds",
               "time_to_first_token_seconds", "decode_tokens_per_second", "decode_tokens_per_second_per_sequence")
    _LISTS = ("warnings",)
    _REPR = (("step", "r"), ("tokens_per_second_per_gpu", ".4g"), ("mfu", ".3f"))
