"""The planner: gp.fit, gp.suggest, gp.search, gp.recommend (C++ plan.hpp).

Keyword arguments are the scenario's keys, exactly as for :func:`gpuplan.estimate`
(unknown ones raise :class:`ConfigError`), plus a few planner options named in
each function's signature. Results are typed: :class:`FitResult`, and sequences of
:class:`Suggestion`, :class:`SearchRow` and :class:`Recommendation` (with
:class:`Layout` and :class:`SystemSizing` inside). They print as the CLI does
(``repr`` is the text of ``gpuplan fit|search|recommend``), render as HTML tables
in a notebook, convert with ``to_dict()`` (the CLI's ``--json``) and, for lists,
``to_frame()`` (pandas).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import os
from types import MappingProxyType
from typing import (Any, ClassVar, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union,
                    overload)

from . import _core
from ._api import MemoryBreakdown, ModelLike, Scenario, _error, _html_table
from ._quantity import Bytes, Seconds

__all__ = ["FitResult", "FitReport", "Layout", "Suggestion", "SearchRow", "SystemSizing", "Recommendation",
           "Suggestions", "SearchResult", "Recommendations", "PlanRow", "fit", "suggest", "search", "recommend", "export", "export_launch"]

_R = TypeVar("_R", bound="PlanRow")


def _scenario(model: Any, kwargs: Mapping[str, Any]) -> Scenario:
    if isinstance(model, Scenario):
        return model.replace(**kwargs) if kwargs else model
    return Scenario(model, **kwargs)


def _int(value: Any, path: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _error(path, f"must be an integer (got {type(value).__name__} {value!r})")
    v = int(value)
    if not lo <= v <= hi:
        raise _error(path, f"must be between {lo} and {hi} (got {v})")
    return v


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise _error(path, f"must be a finite number (got {value!r})")
    return float(value)


# Counts ("2B") and durations ("24h") are read by the C++ parser (gpuplan/io/amount.hpp),
# as the scenario file and the CLI read them.
_AMOUNT = _core.parse_amount
_DURATION = _core.parse_duration


def _suffixed(value: Any, path: str, parse: Any, example: str) -> float:
    """A positive number, or a string with an optional unit suffix ("2B", "24h") read by `parse`."""
    if isinstance(value, str):
        return float(parse(value, path))
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _error(path, f"must be a number such as {example} (got {value!r})")
    return float(parse(float(value), path))


def _flatten(row: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """A row's JSON object as flat columns: "scenario" dropped, "layout" keys as they
    are, other nested objects prefixed ("system_psu_watts"), lists joined."""
    out: Dict[str, Any] = {}
    for k, v in row.items():
        if k == "scenario":
            continue
        if isinstance(v, Mapping):
            out.update(_flatten(v, prefix + ("" if k == "layout" else k + "_")))
        elif isinstance(v, list):
            out[prefix + k] = "; ".join(str(x) for x in v) if k == "notes" else "+".join(str(x) for x in v)
        else:
            out[prefix + k] = v
    return out


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else str(v)


class PlanRow(Mapping[str, Any]):
    """Base of the planner's typed rows (:class:`Layout`, :class:`Suggestion`,
    :class:`SearchRow`, :class:`Recommendation`, :class:`SystemSizing`).

    Fields are the keys of the CLI's ``--json`` object, read as typed attributes;
    ``to_dict()`` gives that object back and ``from_dict()`` reads one. A row is
    also a read-only mapping over the same keys (``row["fits"]``; nested rows come
    back as dicts there), so dict-style code reads it too.
    Keys this version does not know are kept and returned by ``to_dict()``.
    """

    __slots__ = ()
    #: Fields holding a nested row, by name.
    _NESTED: ClassVar[Mapping[str, Any]] = {}
    _extra: Mapping[str, Any] = MappingProxyType({})

    @classmethod
    def from_dict(cls: Type[_R], data: Mapping[str, Any]) -> _R:
        """A row from its JSON object (the CLI's ``--json``)."""
        names = cls._field_names()
        missing = [k for k in names if k not in data]
        if missing:
            raise KeyError(f"{cls.__name__}: missing keys {missing}")
        kwargs: Dict[str, Any] = {}
        for k in names:
            v = data[k]
            nested = cls._NESTED.get(k)
            kwargs[k] = nested.from_dict(v) if nested is not None and v is not None else copy.deepcopy(v)
        row = cls(**kwargs)
        extra = {k: copy.deepcopy(v) for k, v in data.items() if k not in names}
        if extra:
            object.__setattr__(row, "_extra", extra)
        return row

    @classmethod
    def _field_names(cls) -> Tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def to_dict(self) -> Dict[str, Any]:
        """The row as the CLI's ``--json`` prints it (a new dict)."""
        out: Dict[str, Any] = {}
        for k in self._field_names():
            v = getattr(self, k)
            out[k] = v.to_dict() if isinstance(v, PlanRow) else copy.deepcopy(v)
        out.update(copy.deepcopy(dict(self._extra)))
        return out

    def __getitem__(self, key: str) -> Any:
        if key in self._field_names():
            v = getattr(self, key)
            return v.to_dict() if isinstance(v, PlanRow) else v
        return self._extra[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._field_names()
        yield from self._extra

    def __len__(self) -> int:
        return len(self._field_names()) + len(self._extra)

    def _repr_html_(self) -> str:
        flat = _flatten(self.to_dict())
        return _html_table({"title": type(self).__name__, "header": ["", "value"],
                            "rows": [[k, _cell(v)] for k, v in flat.items()], "right_align": [False, True]})


def _bytes_view(name: str, doc: str) -> property:
    return property(lambda self: Bytes(getattr(self, name)), doc=doc)


def _seconds_view(name: str, doc: str) -> property:
    return property(lambda self: Seconds(getattr(self, name)), doc=doc)


@dataclasses.dataclass(frozen=True)
class Layout(PlanRow):
    """A parallel layout: GPU count, tensor / pipeline / data parallelism, virtual
    stages, sequence parallelism, checkpointing, ZeRO stage and offload, micro-batch
    and gradient accumulation (C++ ``gpuplan::layout``)."""

    gpus: int
    tp: int
    pp: int
    virtual_stages: int
    dp: int
    micro_batch: int
    grad_accum: int
    checkpointing: str
    zero: int
    sp: bool
    offload_optimizer: str
    offload_params: str

    def scenario_keys(self) -> Dict[str, Any]:
        """The scenario keywords that set this layout (``gp.estimate(m, **l.scenario_keys(), ...)``)."""
        return dict(num_gpus=self.gpus, tp=self.tp, pp=self.pp, virtual_stages=self.virtual_stages, sp=self.sp,
                    zero=self.zero, offload_optimizer=self.offload_optimizer, offload_params=self.offload_params,
                    micro_batch=self.micro_batch, grad_accum=self.grad_accum, checkpointing=self.checkpointing)


@dataclasses.dataclass(frozen=True)
class Suggestion(PlanRow):
    """One row of ``gp.suggest``: a change (or two) to the run, where it happens (own
    card, more cards, another GPU), the changed run's memory, its time relative to the
    run and, for another GPU, its price."""

    rank: int
    changes: List[str]  #: change kinds, e.g. ["qlora", "full_checkpointing"]
    description: str
    fits: bool
    device_bytes: float
    capacity_bytes: float
    headroom_bytes: float
    step_seconds: float
    time_cost: Optional[float]  #: GPU-seconds per sample relative to the run; None when undefined
    num_gpus: int
    scope: str  #: "own_card", "more_cards" or "other_gpu"
    effect: str  #: "same_result", "approximate", "different_model" or "different_data"
    device_quantile_bytes: float  #: device memory at the margin's confidence (P90 by default)
    headroom_kept_bytes: float  #: what the margin keeps free on this GPU
    time_change: Optional[float]  #: wall-clock time per trained sample relative to the run
    price_per_gpu_hour: Optional[float]  #: other GPUs: the catalog's cheapest on-demand price
    run_cost: Optional[float]  #: price × GPU-hours when the run has a token count
    gpu: str  #: GPU id of the changed run
    scenario: Dict[str, Any] = dataclasses.field(repr=False)  #: the changed run (scenario file schema)

    device = _bytes_view("device_bytes", "Device memory of the changed run as Bytes.")
    capacity = _bytes_view("capacity_bytes", "Usable capacity as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes (negative when it does not fit).")
    step = _seconds_view("step_seconds", "Step time of the changed run as Seconds.")

    def to_scenario(self) -> Scenario:
        """The changed run as a :class:`Scenario`."""
        return Scenario.from_dict(self.scenario)


@dataclasses.dataclass(frozen=True)
class SearchRow(PlanRow):
    """One row of ``gp.search``: a layout with its memory, step time and throughput."""

    _NESTED: ClassVar[Mapping[str, Any]] = {"layout": Layout}

    rank: int
    layout: Layout
    score: float  #: step seconds (objective "time") or GPU-seconds per step ("cost")
    device_bytes: float
    headroom_bytes: float
    step_seconds: float
    tokens_per_second: float
    tokens_per_second_per_gpu: float
    mfu: float
    scenario: Dict[str, Any] = dataclasses.field(repr=False)  #: the run with this layout

    device = _bytes_view("device_bytes", "Device memory as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes.")
    step = _seconds_view("step_seconds", "Step time as Seconds.")

    def to_scenario(self) -> Scenario:
        """The run with this layout as a :class:`Scenario`."""
        return Scenario.from_dict(self.scenario)


@dataclasses.dataclass(frozen=True)
class SystemSizing(PlanRow):
    """The system around a recommendation: nodes, CPU cores, host RAM, power, CUDA
    floor, NVLink and ECC (docs/planner.md cites each rule)."""

    platform: str  #: desktop, workstation, server or cloud
    nodes: int
    gpus_per_node: int
    cpu_cores_min: int
    cpu_cores: int
    host_ram_bytes: float
    gpu_watts: float
    cpu_watts: float
    psu_watts: float
    psu_watts_per_node: float
    wall_watts: float
    pcie_lanes_per_gpu: int
    cuda_min: Optional[str]  #: e.g. "12.0"; None for non-NVIDIA GPUs
    driver_min: Optional[str]  #: the Linux driver for cuda_min
    nvlink_present: bool
    nvlink_needed: bool
    ecc: str
    notes: List[str]

    host_ram = _bytes_view("host_ram_bytes", "Host RAM, whole system, as Bytes.")


@dataclasses.dataclass(frozen=True)
class Recommendation(PlanRow):
    """One row of ``gp.recommend``: a GPU type and count with its fastest layout,
    wall-clock, GPU-hours, cost, deadline and budget verdicts and system sizing."""

    _NESTED: ClassVar[Mapping[str, Any]] = {"layout": Layout, "system": SystemSizing}

    rank: int
    gpu: str
    count: int
    layout: Layout
    global_batch: int
    wall_seconds: float
    gpu_hours: float
    cost: Optional[float]  #: None without a price for the GPU
    rent: Optional[Dict[str, Any]]  #: the offer rented: provider, instance, instances, prices; None without a price
    purchase: Optional[float]  #: count × one card's price, when the card can be bought
    break_even_hours: Optional[float]  #: hours after which owning beats renting; None: never, or no prices
    own_electricity: Optional[float]  #: electricity of this run on owned cards
    own_cost: Optional[float]  #: cards with no rental price: purchase + this run's electricity (the ranking's cost)
    meets_deadline: bool
    within_budget: bool
    device_bytes: float
    step_seconds: float
    mfu: float
    system: SystemSizing

    wall = _seconds_view("wall_seconds", "Wall-clock to train the tokens as Seconds.")
    device = _bytes_view("device_bytes", "Device memory as Bytes.")
    step = _seconds_view("step_seconds", "Step time as Seconds.")


class _Result:
    __slots__ = ("_r", "scenario")

    def __init__(self, r: Mapping[str, Any], scenario: Scenario) -> None:
        self._r = r
        self.scenario: Scenario = scenario  #: the run the question was asked about

    def to_dict(self) -> Any:
        """The result as the CLI's ``--json`` prints it."""
        return copy.deepcopy(self._r["data"])

    def to_markdown(self) -> str:
        """The CLI's table as markdown."""
        return self._r["markdown"]

    def __repr__(self) -> str:
        return self._r["text"]

    def _repr_html_(self) -> str:
        return _html_table(self._r["table"])


class _ListResult(_Result, Sequence[_R]):
    __slots__ = ("_items",)
    _ROW: ClassVar[Any] = PlanRow

    def __init__(self, r: Mapping[str, Any], scenario: Scenario) -> None:
        super().__init__(r, scenario)
        d = r["data"]
        rows = d["rows"] if isinstance(d, Mapping) else d
        self._items: List[_R] = [self._ROW.from_dict(x) for x in rows]

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> _R: ...
    @overload
    def __getitem__(self, i: slice) -> List[_R]: ...
    def __getitem__(self, i: Any) -> Any:
        return self._items[i]

    def __iter__(self) -> Iterator[_R]:
        return iter(self._items)

    def to_frame(self) -> "Any":
        """The rows as a pandas DataFrame (nested objects flattened: layout keys as
        columns, ``system_*`` for the sizing; lists joined; the scenario left out)."""
        import pandas as pd
        return pd.DataFrame([_flatten(r.to_dict()) for r in self._items])


class FitResult(_Result):
    """``gp.fit(...)``: will the run fit, and how far is each limit. ``repr`` is the
    verdict and the CLI's limits table; ``to_dict()`` the CLI's ``--json``."""

    __slots__ = ()

    def _data(self) -> Mapping[str, Any]:
        return self._r["data"]

    @property
    def fits(self) -> bool:
        """Whether the run fits: ``verdict != "does_not_fit"`` (its P50 device memory is within capacity)."""
        return bool(self._data()["fits"])

    @property
    def verdict(self) -> str:
        """'fits' (the band's quantile plus the headroom fits), 'tight' (the P50 fits) or 'does_not_fit'."""
        return self._data()["verdict"]

    @property
    def headroom_bytes(self) -> float:
        """Usable capacity minus device memory, bytes (negative when it does not fit)."""
        return self._data()["headroom_bytes"]

    @property
    def headroom(self) -> Bytes:
        """Headroom as Bytes."""
        return Bytes(self.headroom_bytes)

    @property
    def binding(self) -> str:
        """The largest memory term (weights, optimizer, activations, ...)."""
        return self._data()["binding"]

    @property
    def max_micro_batch(self) -> Optional[int]:
        """Largest micro-batch (serving: batch) that fits; None if 1 does not."""
        return self._data()["max_micro_batch"]

    @property
    def max_seq_len(self) -> Optional[int]:
        """Longest sequence (serving: prompt) that fits, a multiple of seq_step; None if none."""
        return self._data()["max_seq_len"]

    @property
    def seq_step(self) -> int:
        """The sequence search's step (tp with sequence parallelism, 2·cp with context parallelism)."""
        return self._data()["seq_step"]

    @property
    def seq_limit(self) -> int:
        """The upper end of the sequence search (max_position_embeddings when capped)."""
        return self._data()["seq_limit"]

    @property
    def min_gpus(self) -> Dict[int, Optional[int]]:
        """Smallest GPU count that fits per ZeRO stage (None: none up to max_gpus or not applicable)."""
        return {g["zero"]: (g["gpus"] if g["applicable"] else None) for g in self._data()["min_gpus"]}

    @property
    def memory(self) -> MemoryBreakdown:
        """The run's memory breakdown (``to_dict()["memory"]`` has it as the CLI's JSON)."""
        return MemoryBreakdown(_core.estimate_memory(self.scenario._run))

    def __repr__(self) -> str:
        return self._r["verdict_line"] + "\n\n" + self._r["text"]

    def _repr_html_(self) -> str:
        import html
        return f"<div><b>{html.escape(self._r['verdict_line'])}</b></div>" + _html_table(self._r["table"])


#: Another name for :class:`FitResult`.
FitReport = FitResult


class Suggestions(_ListResult[Suggestion]):
    """``gp.suggest(...)``: what would make the run fit, cheapest first — a sequence
    of :class:`Suggestion`; ``repr`` is the CLI's table, ``to_frame()`` a DataFrame."""

    __slots__ = ()
    _ROW = Suggestion


class SearchResult(_ListResult[SearchRow]):
    """``gp.search(...)``: the top-k layouts, best first — a sequence of
    :class:`SearchRow` — with ``evaluated`` (configurations decided), ``seconds``
    (search time) and ``global_batch``."""

    __slots__ = ()
    _ROW = SearchRow

    evaluated = property(lambda self: self._r["data"]["evaluated"], doc="Configurations of the space decided.")
    seconds = property(lambda self: self._r["data"]["seconds"], doc="Wall-clock seconds of the search.")
    global_batch = property(lambda self: self._r["data"]["global_batch"], doc="Sequences per step held fixed.")
    objective = property(lambda self: self._r["data"]["objective"], doc="'time' or 'cost'.")

    def export(self, target: str) -> str:
        """The config file or command line that launches the first-ranked layout the
        target can express: ``target`` is one of deepspeed, accelerate-fsdp, torchtune, axolotl, torchrun
        (``gpuplan plan --export``). A layout the target cannot express raises ConfigError."""
        return export(self, target)


@dataclasses.dataclass(frozen=True)
class GraphRecommendation(PlanRow):
    """One row of ``gp.recommend`` for an image or diffusion model: a GPU type and count
    under PyTorch DDP, the micro-batch × accumulation each GPU runs, its memory, images/s,
    scaling against one GPU, wall-clock and cost."""

    rank: int
    gpu: str
    count: int
    link: str  #: the link the gradients are all-reduced over ("nvlink4", "PCIe, no P2P", ...)
    micro_batch: int
    grad_accum: int
    global_batch: int  #: micro_batch × grad_accum × count: the global batch in whole micro-batches
    device_bytes: float
    usable_bytes: float
    micro_step_seconds: float
    optimizer_step_seconds: float
    exposed_all_reduce_seconds: float
    samples_per_second: float
    scaling: Optional[float]  #: images/s per GPU over one GPU of the type; None when one GPU does not fit
    wall_seconds: float
    gpu_hours: float
    cost: Optional[float]  #: None without a price for the GPU
    rent: Optional[Dict[str, Any]]
    meets_deadline: bool
    within_budget: bool

    wall = _seconds_view("wall_seconds", "Wall-clock to train as Seconds.")
    device = _bytes_view("device_bytes", "Device memory of one GPU (nvidia-smi) as Bytes.")


class GraphRecommendations(_ListResult[GraphRecommendation]):
    """``gp.recommend(...)`` for an image or diffusion model: GPU types × counts, ranked
    (deadline, budget, cost, time) — a sequence of :class:`GraphRecommendation`.
    ``summary`` says what was planned: samples, global batch and the recipe's source."""

    __slots__ = ()
    _ROW = GraphRecommendation

    @property
    def summary(self) -> str:
        """The model, samples, global batch and settings planned, and the recipe they come from."""
        return str(self._r["data"]["summary"])


class Recommendations(_ListResult[Recommendation]):
    """``gp.recommend(...)``: GPU types × counts, ranked (deadline, budget, cost, time)
    — a sequence of :class:`Recommendation`, each with its layout, wall-clock,
    GPU-hours, cost and ``system`` sizing."""

    __slots__ = ()
    _ROW = Recommendation


# The planning margin of fit/suggest/search/recommend: `confidence` (0.5, 0.9 or 0.99)
# is the quantile of the memory band planned on and `headroom` ("5%", "2GiB", or
# "5%,1GiB": the larger) what is kept free (docs/planner.md, "Safety margin").
def _margin(confidence: float, headroom: str, path: str) -> Dict[str, Any]:
    if not isinstance(headroom, str):
        raise TypeError(f"{path}.headroom: must be a string such as '5%', '2GiB' or '5%,1GiB' (got {headroom!r})")
    return {"confidence": _number(confidence, f"{path}.confidence"), "headroom": headroom}


def fit(model: Optional[Union[ModelLike, Scenario]] = None, /, *, max_gpus: int = 4096, confidence: float = 0.9,
        headroom: str = "5%,1GiB", **kwargs: Any) -> FitResult:
    """Will it fit? Verdict (fits / tight / does_not_fit under the margin), binding term,
    largest micro-batch, longest sequence and the smallest GPU count per ZeRO stage (up to
    `max_gpus`) that fit with the margin. Keywords as :func:`gpuplan.estimate`."""
    s = _scenario(model, kwargs)
    return FitResult(_core.plan_fit(s._run, _int(max_gpus, "fit.max_gpus", 1, 1 << 20),
                                    **_margin(confidence, headroom, "fit")), s)


def suggest(model: Optional[Union[ModelLike, Scenario]] = None, /, *, gpus: Optional[Sequence[str]] = None,
            max_gpus: int = 1024, pairs: bool = True, confidence: float = 0.9, headroom: str = "5%,1GiB",
            **kwargs: Any) -> Suggestions:
    """What would make the run fit with the margin: only changes that do. Changes on the
    own card first (chunked loss, checkpointing, paged/8-bit optimizer, more accumulation,
    CPU offload, LoRA, QLoRA, a shorter sequence), then ZeRO-3 / tensor parallelism across
    more cards of the same type, then other GPUs from `gpus` (default the catalog), cheapest
    first by the catalog's on-demand price."""
    s = _scenario(model, kwargs)
    ids = None if gpus is None else ([gpus] if isinstance(gpus, str) else [str(g) for g in gpus])
    return Suggestions(_core.plan_suggest(s._run, ids, _int(max_gpus, "suggest.max_gpus", 1, 1 << 20), bool(pairs),
                                          **_margin(confidence, headroom, "suggest")), s)


def search(model: Optional[Union[ModelLike, Scenario]] = None, /, *, top_k: int = 10,
           global_batch: Optional[int] = None, threads: int = 1, objective: str = "time",
           confidence: float = 0.9, headroom: str = "5%,1GiB", **kwargs: Any) -> SearchResult:
    """The fastest (objective "time") or cheapest ("cost") parallel layouts on `num_gpus`
    GPUs, holding `global_batch` sequences per step (default: the run's). Here
    `global_batch` is the search's target, not a scenario key."""
    s = _scenario(model, kwargs)
    gb = None if global_batch is None else _int(global_batch, "search.global_batch", 1, 1 << 40)
    return SearchResult(_core.plan_search(s._run, _int(top_k, "search.top_k", 1, 100000), gb,
                                          _int(threads, "search.threads", 1, 256), str(objective),
                                          **_margin(confidence, headroom, "search")), s)


def export(plan: Union["SearchResult", SearchRow, Scenario], target: str) -> str:
    """The config file or command line that launches `plan` — a search result (its first
    row the target can express), one search row, or a Scenario (its own layout; vllm for
    serving scenarios) — with `target`: deepspeed (JSON), accelerate-fsdp / axolotl
    (YAML), torchtune, torchrun or vllm (command lines). See docs/export.md."""
    return export_launch(plan, target)["text"]


def export_launch(plan: Union["SearchResult", SearchRow, Scenario], target: str) -> Dict[str, Any]:
    """export() with what the user must still fill in: {"text", "fill_in" (list of
    placeholders and values a plan cannot know), "checked_against" (the tool version the
    names come from)}. A target that cannot express the plan raises ConfigError naming
    the element and what launches instead."""
    if isinstance(plan, SearchResult):
        # The first-ranked row the target can express, as `gpuplan plan --export`; when
        # none can, the first row's error.
        if len(plan) == 0:
            raise ValueError("export: no layout fits: nothing to export")
        first_error: Optional[Exception] = None
        for row in plan:
            try:
                return export_launch(row, target)
            except _core.ConfigError as e:
                first_error = first_error or e
        assert first_error is not None
        raise first_error
    if isinstance(plan, SearchRow):
        plan = plan.to_scenario()
    if not isinstance(plan, Scenario):
        raise TypeError(f"export: plan must be a SearchResult, a SearchRow or a Scenario (got {type(plan).__name__})")
    if not isinstance(target, str):
        raise TypeError(f"export: target must be a string such as 'deepspeed' (got {target!r})")
    return dict(_core.export_launch(plan._run, target))


# The keywords gp.recommend takes for an image or diffusion model (io/graph_plan.hpp).
_GRAPH_KEYS = ("images", "image", "resolution", "global_batch", "batch", "lora_rank", "method", "precision",
               "optimizer", "checkpointing", "ema", "zero")


def recommend(model: Optional[Union[ModelLike, Scenario, Any]] = None, /, *, gpus: Optional[Sequence[str]] = None,
              prices: Optional[Mapping[str, float]] = None, epochs: Optional[float] = None,
              dataset_tokens: Optional[Union[float, str]] = None, deadline: Union[float, str] = "24h",
              budget: Optional[float] = None, max_gpus: Optional[int] = None, rank: str = "cost", keep_late: bool = True,
              confidence: float = 0.9, headroom: str = "5%,1GiB",
              prices_file: Optional[Union[str, "os.PathLike[str]"]] = None, spot: bool = False,
              **kwargs: Any) -> Union[Recommendations, GraphRecommendations]:
    """Which GPU and how many: GPU types (`gpus`, default every GPU the price catalog
    rents) × counts 1, 2, 4, … up to `max_gpus` (default 64), each with its fastest layout,
    for `tokens` (a scenario key: 2e9 or "2B") or `epochs` (default 1) × `dataset_tokens`;
    `deadline` in seconds or "24h". Prices: the dated catalog (on-demand, or `spot` where
    published), a `prices_file` (CSV/JSON, src/data/PRICES.md) over it, and `prices` per
    GPU-hour by GPU id over both; `budget` in dollars.

    An image or diffusion model — a catalog name of gp.vision or gp.diffusion, or a
    :class:`Graph` (gp.trace) — is planned under PyTorch DDP from its published recipe
    (global batch, optimizer, epochs; docs/planner.md): keywords `images` (default
    ImageNet-1k; diffusion the recipe's 60,000), `epochs`, `image`, `resolution`,
    `global_batch`, `batch` (micro-batch per GPU; default the largest that fits), `method`
    ("full"; diffusion also "lora"), `lora_rank`, `precision`, `optimizer`,
    `checkpointing`, `ema` (diffusion) and `zero` (classifiers: the ZeRO stage sharding the
    model states over the GPUs, 3 = FSDP FULL_SHARD); `max_gpus` defaults to 8. Returns
    :class:`GraphRecommendations`."""
    ids = None if gpus is None else ([gpus] if isinstance(gpus, str) else [str(g) for g in gpus])
    price_map = {str(k): _number(v, f"recommend.prices.{k}") for k, v in (prices or {}).items()}
    dl = _suffixed(deadline, "recommend.deadline", _DURATION, "86400 or '24h'")
    b = None if budget is None else _number(budget, "recommend.budget")
    market = dict(rank=str(rank), keep_late=bool(keep_late), **_margin(confidence, headroom, "recommend"),
                  prices_file="" if prices_file is None else os.fspath(prices_file), spot=bool(spot))
    from ._trace import Graph
    if isinstance(model, Graph) or (isinstance(model, str) and _core.is_graph_model(model)):
        if dataset_tokens is not None:
            raise _error("recommend.dataset_tokens", "does not apply to image and diffusion models: give images=")
        unknown = sorted(k for k in kwargs if k not in _GRAPH_KEYS)
        if unknown:
            raise _error(f"recommend.{unknown[0]}", "does not apply to image and diffusion models "
                         f"(they take {', '.join(_GRAPH_KEYS)})")
        query: Dict[str, Any] = {}
        for k, v in kwargs.items():
            if v is None:
                continue
            if k in ("image", "resolution", "global_batch", "batch", "lora_rank"):
                query[k] = _int(v, f"recommend.{k}", 1, 1 << 40)
            elif k == "zero":
                query[k] = _int(v, "recommend.zero", 0, 3)
            elif k in ("method", "precision", "optimizer"):
                if not isinstance(v, str):
                    raise _error(f"recommend.{k}", f"must be a string (got {type(v).__name__} {v!r})")
                query[k] = v
            elif k == "checkpointing":  # as the CLI's --checkpointing none|full, or a bool
                if v not in (True, False, "none", "full") or isinstance(v, (int, float)) and not isinstance(v, bool):
                    raise _error("recommend.checkpointing", f"must be True, False, 'none' or 'full' (got {v!r})")
                query[k] = v in (True, "full")
            elif k == "ema":
                if not isinstance(v, bool):
                    raise _error("recommend.ema", f"must be True or False (got {v!r})")
                query[k] = v
            elif isinstance(v, str):  # images: an amount such as "1.28M"
                query[k] = v
            elif isinstance(v, numbers.Real) and not isinstance(v, bool):
                query[k] = repr(float(_number(v, f"recommend.{k}")))
            else:
                raise _error(f"recommend.{k}", f"must be a number or an amount such as '1.28M' (got {v!r})")
        if epochs is not None:
            query["epochs"] = _number(epochs, "recommend.epochs")
        if isinstance(model, Graph):
            query["graph"] = model.to_json()
        else:
            query["model"] = model
        n = 8 if max_gpus is None else _int(max_gpus, "recommend.max_gpus", 1, 4096)
        return GraphRecommendations(_core.plan_recommend_graph(query, ids, price_map, dl, b, n, **market), None)  # type: ignore[arg-type]
    s = _scenario(model, kwargs)
    ds = None if dataset_tokens is None else _suffixed(dataset_tokens, "recommend.dataset_tokens", _AMOUNT, "2e9 or '2B'")
    ep = 1.0 if epochs is None else _number(epochs, "recommend.epochs")
    n = 64 if max_gpus is None else _int(max_gpus, "recommend.max_gpus", 1, 1 << 20)
    return Recommendations(_core.plan_recommend(s._run, ids, price_map, None, ep, ds, dl, b, n, **market), s)
