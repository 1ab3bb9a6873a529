"""The keyword-argument API over gpuplan._core.

Every scenario goes through the C++ scenario reader (``io::read_scenario``): the
keyword arguments become the same JSON object the CLI reads, so validation and
error messages are identical. Keyword names are the scenario file's keys
(docs/scenario.md); the parallel layout may also be given flat (``tp=2`` means
``parallel={"tp": 2}``).
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _core
from ._quantity import Bytes, Seconds

ConfigError = _core.ConfigError
InvalidInputError = _core.InvalidInputError
UnknownNameError = _core.UnknownNameError
ParseError = _core.ParseError
FileError = _core.FileError

__all__ = [
    "ConfigError",
    "InvalidInputError",
    "UnknownNameError",
    "ParseError",
    "FileError",
    "Model",
    "GPU",
    "Scenario",
    "MemoryBreakdown",
    "TimeEstimate",
    "Estimate",
    "model",
    "models",
    "gpu",
    "gpus",
    "estimate",
]

#: Keys of the scenario's "parallel" object that may also be given flat (tp=2).
PARALLEL_KEYS = ("tp", "pp", "virtual_stages", "sp", "cp", "ep", "zero", "offload_optimizer", "offload_params",
                 "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")

ModelLike = Union["Model", str, "os.PathLike[str]", Mapping[str, Any]]


def _error(path: str, reason: str) -> "ConfigError":
    """An InvalidInputError shaped like the C++ one: '<path>: <reason>', with .path and .kind set."""
    e = InvalidInputError(f"{path}: {reason}")
    e.path = path
    e.kind = InvalidInputError.kind
    return e


def _delegate(attr: str, doc: str, wrap: Any = None) -> property:
    """A read-only property forwarding to self._core.<attr> (optionally wrapped)."""
    if wrap is None:
        return property(lambda self: getattr(self._core, attr), doc=doc)
    return property(lambda self: wrap(getattr(self._core, attr)), doc=doc)


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


# --------------------------------------------------------------------------- scenarios


def _model_spec(m: Any) -> Any:
    """The scenario's "model" value for anything gp.model() accepts."""
    if isinstance(m, Model):
        return m.spec
    if isinstance(m, os.PathLike):
        return os.fspath(m)
    if isinstance(m, Mapping):
        return dict(m)
    return m


def _scenario_dict(model_: Any, kwargs: Mapping[str, Any], base: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Keyword arguments -> the scenario JSON object (the CLI's schema).

    None values are dropped (None = the default). Flat parallel keys (tp=2) go
    into "parallel"; giving one both ways is an error naming it.
    """
    d: Dict[str, Any] = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in (base or {}).items()}
    if model_ is not None:
        d["model"] = _model_spec(model_)
    for key, value in kwargs.items():
        if value is None:
            d.pop(key, None)
            continue
        if key in PARALLEL_KEYS:
            if key in (kwargs.get("parallel") or {}):
                raise _error(f"scenario.parallel.{key}", f"given twice (as {key}= and in parallel=)")
            par = dict(d.get("parallel") or {})
            par[key] = value
            d["parallel"] = par
        elif key == "model":
            d["model"] = _model_spec(value)
        elif key == "parallel" and isinstance(value, Mapping):
            par = dict(d.get("parallel") or {})
            par.update(value)
            d["parallel"] = par
        elif isinstance(value, Mapping) and key != "gpu":
            d[key] = dict(value)
        else:
            d[key] = value
    return d


_KEEP = object()


def _with_profile(run: Any, profile: Any) -> Any:
    """The run using `profile` (a Profile, a profile file path, or None)."""
    if profile is None:
        return run
    from ._calibrate import Profile, load_profile

    if not isinstance(profile, Profile):
        if not isinstance(profile, (str, os.PathLike)):
            raise _error("profile", f"must be a gp.Profile or a profile file path (got {type(profile).__name__})")
        profile = load_profile(profile)
    return _core.with_profile(run, profile._core)


class Scenario:
    """A validated run: model, method, precision, batch, GPUs, parallel layout, ...

    ``gp.Scenario("llama-2-13b", gpu="rtx-4090", method="qlora", seq_len=2048)``;
    keyword names are the scenario file's keys (docs/scenario.md), plus flat
    parallel keys (``tp=2``). ``Scenario.from_json("run.json")`` reads a CLI
    scenario file. Invalid input raises :class:`ConfigError` with the CLI's message.
    """

    __slots__ = ("_run", "_input")

    def __init__(self, model: Optional[ModelLike] = None, /, **kwargs: Any) -> None:
        profile = kwargs.pop("profile", None)
        self._input = _scenario_dict(model, kwargs)
        self._run = _with_profile(_core.read_scenario(self._input), profile)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Scenario":
        """A scenario from a dict in the scenario file's schema."""
        s = cls.__new__(cls)
        # As given (null stays null): the reader sees exactly what a file would hold.
        s._input = dict(data) if isinstance(data, Mapping) else data
        s._run = _core.read_scenario(s._input)
        return s

    @classmethod
    def from_json(cls, source: Union[str, "os.PathLike[str]"]) -> "Scenario":
        """A scenario from a CLI scenario file (a path), or from JSON text ('{...}')."""
        src = os.fspath(source)
        s = cls.__new__(cls)
        if isinstance(src, str) and src.lstrip().startswith("{"):
            s._run = _core.read_scenario_text(src)  # validates exactly as the CLI does
            s._input = json.loads(src)
        else:
            raw = _core.read_text_file(src, "scenario")  # a regular file of at most 16 MiB, read once
            s._run = _core.read_scenario_text(raw)
            s._input = json.loads(raw)
        return s

    def to_dict(self) -> Dict[str, Any]:
        """All keys with canonical names, as the CLI writes a scenario (read back gives the same run)."""
        return self._run.to_dict()

    def to_json(self, path: Optional[Union[str, "os.PathLike[str]"]] = None, indent: int = 2) -> str:
        """The scenario as JSON text; also written to `path` when given."""
        text = json.dumps(self.to_dict(), indent=indent) + "\n"
        if path is not None:
            with open(os.fspath(path), "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def replace(self, **kwargs: Any) -> "Scenario":
        """A copy with some keys changed (validated again); ``None`` restores a default.

        ``profile=`` sets (or, with ``None``, removes) the calibration profile; it is kept otherwise.
        """
        s = Scenario.__new__(Scenario)
        profile = kwargs.pop("profile", _KEEP)
        s._input = _scenario_dict(None, kwargs, base=self._input)
        run = _core.read_scenario(s._input)
        if profile is _KEEP:
            current = _core.run_profile(self._run)
            s._run = _core.with_profile(run, current) if current is not None else run
        else:
            s._run = _with_profile(run, profile)
        return s

    @property
    def profile(self) -> Any:
        """The calibration profile (:class:`Profile`) this run uses, or None."""
        from ._calibrate import Profile

        core = _core.run_profile(self._run)
        return None if core is None else Profile(core)

    def estimate(self) -> "Estimate":
        """Memory and time of this run."""
        return Estimate(self)

    @property
    def model(self) -> Model:
        """The resolved model."""
        return Model(self._run.model, self._input.get("model", self._run.model_spec))

    @property
    def gpu(self) -> GPU:
        """The GPU."""
        return GPU(self._run.gpu)

    workload = property(lambda self: self._run.workload, doc="One of " + ", ".join(_core.names("workload")) + ".")
    method = property(lambda self: self._run.method, doc="One of " + ", ".join(_core.names("method")) + ".")
    precision = property(lambda self: self._run.precision, doc="One of " + ", ".join(_core.names("precision")) + ".")
    optimizer = property(lambda self: self._run.optimizer, doc="One of " + ", ".join(_core.names("optimizer")) + ".")
    micro_batch = property(lambda self: self._run.micro_batch, doc="Sequences per micro-batch per GPU.")
    seq_len = property(lambda self: self._run.seq_len, doc="Tokens per sequence.")
    grad_accum = property(lambda self: self._run.grad_accum, doc="Micro-batches per optimizer step.")
    num_gpus = property(lambda self: self._run.num_gpus, doc="GPUs in the job.")
    global_batch = property(lambda self: self._run.global_batch, doc="Sequences per optimizer step, all replicas.")

    def __repr__(self) -> str:
        return f"Scenario({self._run.model.name}: {_core.run_summary(self._run)})"


# --------------------------------------------------------------------------- results


class MemoryBreakdown:
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

    def to_dict(self) -> Dict[str, Any]:
        """Every figure, keys as in the CLI's JSON (``*_bytes``)."""
        keys = [n + "_bytes" for n in self.COMPONENTS] + [
            "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes", "capacity_bytes", "headroom_bytes",
            "host_bytes", "kv_cache_bytes"]
        d: Dict[str, Any] = {k: getattr(self._core, k) for k in keys}
        d.update(fits=self.fits, stage=self.stage, max_concurrent_sequences=self.max_concurrent_sequences,
                 warnings=list(self.warnings))
        return d

    def __repr__(self) -> str:
        return f"MemoryBreakdown(device={self.device!r}, capacity={self.capacity!r}, fits={self.fits})"


class TimeEstimate:
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

    def to_dict(self) -> Dict[str, Any]:
        """Every figure in canonical units."""
        keys = ["step_seconds", "tokens_per_second_per_gpu", "tokens_per_second", "model_flops_per_step",
                "hardware_flops_per_step", "mfu", "hfu", "total_seconds", "gpu_hours", "cost", "energy_kwh",
                "compute_seconds", "communication_seconds", "bubble_seconds", "optimizer_seconds", "offload_seconds",
                "time_to_first_token_seconds", "decode_tokens_per_second", "decode_tokens_per_second_per_sequence"]
        d: Dict[str, Any] = {k: getattr(self._core, k) for k in keys}
        d["warnings"] = list(self.warnings)
        return d

    def __repr__(self) -> str:
        return (f"TimeEstimate(step={self.step!r}, tokens_per_second_per_gpu={self.tokens_per_second_per_gpu:.4g}, "
                f"mfu={self.mfu:.3f})")


def _html_table(t: Mapping[str, Any]) -> str:
    """The CLI's table dict {title, header, rows, notes, right_align} as an HTML table."""
    align = list(t.get("right_align") or [])
    def cell(tag: str, text: str, i: int) -> str:
        right = align[i] if i < len(align) else i > 0
        style = ' style="text-align:right"' if right else ' style="text-align:left"'
        return f"<{tag}{style}>{html.escape(str(text))}</{tag}>"
    parts = ["<table>"]
    if t.get("title"):
        parts.append(f"<caption>{html.escape(t['title'])}</caption>")
    parts.append("<thead><tr>" + "".join(cell("th", h, i) for i, h in enumerate(t["header"])) + "</tr></thead><tbody>")
    for row in t["rows"]:
        parts.append("<tr>" + "".join(cell("td", c, i) for i, c in enumerate(row)) + "</tr>")
    parts.append("</tbody></table>")
    for note in t.get("notes") or []:
        parts.append(f"<div><small>{html.escape(note)}</small></div>")
    return "".join(parts)


class Estimate:
    """The estimate of one run: ``.memory`` (:class:`MemoryBreakdown`), ``.time``
    (:class:`TimeEstimate`), ``.scenario``, ``.warnings``.

    ``repr()`` is the CLI's text report, ``_repr_html_`` the breakdown table in a
    notebook, ``to_dict()`` the CLI's ``--json`` output.
    """

    __slots__ = ("scenario", "memory", "time")

    def __init__(self, scenario: Scenario) -> None:
        self.scenario: Scenario = scenario
        self.memory: MemoryBreakdown = MemoryBreakdown(_core.estimate_memory(scenario._run))
        self.time: TimeEstimate = TimeEstimate(_core.estimate_time(scenario._run))

    @property
    def model(self) -> Model:
        """The model."""
        return self.scenario.model

    @property
    def fits(self) -> bool:
        """Whether the run fits: ``verdict != "does_not_fit"``, i.e. its P50 device memory (the
        band's median) is within the usable capacity (``memory.fits`` compares the point estimate)."""
        return self.verdict != "does_not_fit"

    @property
    def verdict(self) -> str:
        """``"fits"`` (the P90 of device memory fits), ``"tight"`` (only the median
        does: leave headroom or try it) or ``"does_not_fit"``: ``to_dict()["memory"]["verdict"]``."""
        return str(_core.verdict(self.memory._core, self.scenario._run))

    @property
    def bands(self) -> Dict[str, Any]:
        """P10/P50/P90 bands of every memory and time figure, from the out-of-sample
        validation residuals of the run's regime: ``{"memory": {"device_bytes":
        {"p10", "p50", "p90"}, ...}, "time": {"step_seconds": ..., ...}}``."""
        d = self.to_dict()
        return {"memory": d["memory"]["bands"], "time": d["time"]["bands"]}

    def allocator_replay(self, expandable_segments: bool = False) -> Dict[str, Any]:
        """Two training steps replayed tensor by tensor through PyTorch's caching-allocator
        rules, with the keys of ``to_dict()["memory"]["allocator_replay"]``: ``peak_allocated_bytes``,
        ``peak_reserved_bytes`` (the pool, cuBLAS workspace included), ``reserved_over_allocated``,
        ``fast_path_reserved_over_allocated`` (the estimate's own), ``tensors``, ``segments``;
        ``replayed`` is False for serving runs. ``expandable_segments`` replays
        ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``."""
        return dict(_core.replay_allocator(self.scenario._run, bool(expandable_segments)))

    @property
    def warnings(self) -> List[str]:
        """Warnings from the memory and time models, without duplicates."""
        bits = self.memory._core.warning_bits | self.time._core.warning_bits
        return list(_core.warning_messages(bits))

    def to_dict(self) -> Dict[str, Any]:
        """The estimate as ``gpuplan estimate --json`` prints it."""
        return _core.estimate_json(self.scenario._run)

    def to_markdown(self) -> str:
        """The CLI's report as markdown."""
        return _core.estimate_report(self.scenario._run, "markdown")

    def __repr__(self) -> str:
        return _core.estimate_report(self.scenario._run, "text")

    def _repr_html_(self) -> str:
        run = self.scenario._run
        label = run.method
        parts = [f"<div><b>{html.escape(run.model.name)}</b>: {html.escape(_core.run_summary(run))}</div>",
                 _html_table(_core.memory_table([(label, self.memory._core)], run.workload, run)),
                 f"<div><b>{html.escape(_core.verdict_line(self.memory._core, run))}</b></div>",
                 _html_table(_core.time_table(self.time._core, run))]
        for w in self.warnings:
            parts.append(f"<div>warning: {html.escape(w)}</div>")
        return "".join(parts)


def estimate(model: Optional[Union[ModelLike, Scenario]] = None, /, **kwargs: Any) -> Estimate:
    """Memory and time of one run.

    ``gp.estimate(m, gpu="rtx-4090", method="qlora", seq_len=2048, micro_batch=1)``.
    `model` is a :class:`Model`, anything :func:`model` accepts, or a
    :class:`Scenario` (then keyword arguments override its keys). Keyword names are
    the scenario file's keys; unknown ones raise :class:`ConfigError` naming them.
    """
    if isinstance(model, Scenario):
        return Estimate(model.replace(**kwargs) if kwargs else model)
    return Estimate(Scenario(model, **kwargs))


def _iterable_axis(name: str, value: Any) -> List[Any]:
    """A sweep axis: None -> [], a scalar -> [scalar], an iterable -> list."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return [value]
    out = list(value)
    if not out:
        raise _error(f"sweep.{name}", "must not be empty")
    return out
