"""The planner: gp.fit, gp.suggest, gp.search, gp.recommend (C++ plan.hpp).

Keyword arguments are the scenario's keys, exactly as for :func:`gpuplan.estimate`
(unknown ones raise :class:`ConfigError`), plus a few planner options named in
each function's signature. Results are typed: :class:`FitResult`, and sequences of
:class:`Suggestion`, :class:`SearchRow` and :class:`Recommendation` (with
:class:`Layout` and :class:`SystemSizing` inside). They print as the CLI does
(``repr`` is the text of ``gpuplan fit|search|recommend``), render as HTML tables
in a notebook, convert with ``to_dict()`` (the CLI's ``--json``) and, for lists,
``to_frame()`` (pandas). The rows are in _plan_rows.py, their bases in _results.py.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _core
from ._api import Scenario, _as_scenario
from ._breakdown import MemoryBreakdown
from ._catalog import ModelLike
from ._graph import Graph
from ._helpers import _AMOUNT, _DURATION, _error, _int, _number, _suffixed
from ._plan_rows import (GraphRecommendation, Layout, Recommendation, SearchRow, Suggestion,  # noqa: F401 - re-exported
                         SystemSizing)
from ._quantity import Bytes
from ._results import PlanRow, _ListResult, _Result  # noqa: F401 - PlanRow re-exported

__all__ = ["FitResult", "FitReport", "Layout", "Suggestion", "SearchRow", "SystemSizing", "Recommendation",
           "Suggestions", "SearchResult", "Recommendations", "PlanRow", "fit", "suggest", "search", "recommend", "export", "export_launch"]


class FitResult(_Result):
    """``gp.fit(...)``: will the run fit, and how far is each limit. ``repr`` is the
    verdict and the CLI's limits table; ``to_dict()`` the CLI's ``--json``."""

    __slots__ = ()
    _HTML_HEAD = ("verdict_line", "bold")

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
    s = _as_scenario(model, kwargs)
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
    s = _as_scenario(model, kwargs)
    ids = None if gpus is None else ([gpus] if isinstance(gpus, str) else [str(g) for g in gpus])
    return Suggestions(_core.plan_suggest(s._run, ids, _int(max_gpus, "suggest.max_gpus", 1, 1 << 20), bool(pairs),
                                          **_margin(confidence, headroom, "suggest")), s)


def search(model: Optional[Union[ModelLike, Scenario]] = None, /, *, top_k: int = 10,
           global_batch: Optional[int] = None, threads: int = 1, objective: str = "time",
           confidence: float = 0.9, headroom: str = "5%,1GiB", **kwargs: Any) -> SearchResult:
    """The fastest (objective "time") or cheapest ("cost") parallel layouts on `num_gpus`
    GPUs, holding `global_batch` sequences per step (default: the run's). Here
    `global_batch` is the search's target, not a scenario key."""
    s = _as_scenario(model, kwargs)
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
    if isinstance(model, Graph) or (isinstance(model, str) and _core.is_graph_model(model)):
        query = _graph_query(model, dataset_tokens, epochs, kwargs)
        n = 8 if max_gpus is None else _int(max_gpus, "recommend.max_gpus", 1, 4096)
        return GraphRecommendations(_core.plan_recommend_graph(query, ids, price_map, dl, b, n, **market), None)  # type: ignore[arg-type]
    s = _as_scenario(model, kwargs)
    ds = None if dataset_tokens is None else _suffixed(dataset_tokens, "recommend.dataset_tokens", _AMOUNT, "2e9 or '2B'")
    ep = 1.0 if epochs is None else _number(epochs, "recommend.epochs")
    n = 64 if max_gpus is None else _int(max_gpus, "recommend.max_gpus", 1, 1 << 20)
    return Recommendations(_core.plan_recommend(s._run, ids, price_map, None, ep, ds, dl, b, n, **market), s)


def _graph_query(model: Union[str, Graph], dataset_tokens: Any, epochs: Optional[float],
                 kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """The query of gp.recommend for an image or diffusion model (io/graph_plan.hpp's keys), checked."""
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
    return query
