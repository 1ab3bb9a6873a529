"""The keyword-argument API over gpuplan._core.

Every scenario goes through the C++ scenario reader (``io::read_scenario``): the
keyword arguments become the same JSON object the CLI reads, so validation and
error messages are identical. Keyword names are the scenario file's keys
(docs/scenario.md); the parallel layout may also be given flat (``tp=2`` means
``parallel={"tp": 2}``). Here: the errors, :class:`Scenario` and :func:`estimate` with
its :class:`Estimate`; models and GPUs are in _catalog.py, the memory and time figures
in _breakdown.py.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _core
from ._breakdown import MemoryBreakdown, TimeEstimate
from ._calibrate import Profile, load_profile
from ._catalog import GPU, Model, ModelLike
from ._helpers import _error, _html_table

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
    "Scenario",
    "Estimate",
    "estimate",
]

#: Keys of the scenario's "parallel" object that may also be given flat (tp=2).
PARALLEL_KEYS = ("tp", "pp", "virtual_stages", "sp", "cp", "ep", "zero", "offload_optimizer", "offload_params",
                 "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")


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


# --------------------------------------------------------------------------- estimates


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
    return Estimate(_as_scenario(model, kwargs))


def _as_scenario(model: Any, kwargs: Mapping[str, Any]) -> Scenario:
    """`model` with `kwargs` as a Scenario: a Scenario with keys replaced, or a new one."""
    if isinstance(model, Scenario):
        return model.replace(**kwargs) if kwargs else model
    return Scenario(model, **kwargs)
