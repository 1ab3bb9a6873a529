"""The planner: gp.fit, gp.suggest, gp.search, gp.recommend (C++ plan.hpp).

Keyword arguments are the scenario's keys, exactly as for :func:`gpuplan.estimate`
(unknown ones raise :class:`ConfigError`), plus a few planner options named in
each function's signature. Results print as the CLI does (``repr`` is the text
of ``gpuplan fit|search|recommend``), render as HTML tables in a notebook, convert
with ``to_dict()`` (the CLI's ``--json``) and, for lists, ``to_frame()`` (pandas).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _core
from ._api import ModelLike, Scenario, _error, _html_table

__all__ = ["FitReport", "Suggestions", "SearchResult", "Recommendations", "PlanRow",
           "fit", "suggest", "search", "recommend"]


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


class PlanRow(dict):
    """One row of a planner result: a dict (the CLI's JSON object) with attribute access."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_scenario(self) -> Scenario:
        """The row's run as a :class:`Scenario` (suggestions and search rows)."""
        return Scenario.from_dict(self["scenario"])


def _flatten(row: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
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


class _Result:
    __slots__ = ("_r", "scenario")

    def __init__(self, r: Mapping[str, Any], scenario: Scenario) -> None:
        self._r = r
        self.scenario: Scenario = scenario  #: the run the question was asked about

    def to_dict(self) -> Any:
        """The result as the CLI's ``--json`` prints it."""
        return self._r["data"]

    def to_markdown(self) -> str:
        """The CLI's table as markdown."""
        return self._r["markdown"]

    def __repr__(self) -> str:
        return self._r["text"]

    def _repr_html_(self) -> str:
        return _html_table(self._r["table"])


class _ListResult(_Result, Sequence[PlanRow]):
    __slots__ = ()

    def _rows(self) -> List[Any]:
        d = self._r["data"]
        return d["rows"] if isinstance(d, Mapping) else d

    def __len__(self) -> int:
        return len(self._rows())

    def __getitem__(self, i: Any) -> Any:  # type: ignore[override]
        rows = self._rows()
        if isinstance(i, slice):
            return [PlanRow(r) for r in rows[i]]
        return PlanRow(rows[i])

    def __iter__(self) -> Iterator[PlanRow]:
        return (PlanRow(r) for r in self._rows())

    def to_frame(self) -> "Any":
        """The rows as a pandas DataFrame (nested objects flattened, layout keys as columns)."""
        import pandas as pd
        return pd.DataFrame([_flatten(r) for r in self._rows()])


class FitReport(_Result):
    """``gp.fit(...)``: ``fits``, ``headroom_bytes``, ``binding``, ``max_micro_batch``,
    ``max_seq_len``, ``min_gpus`` ({ZeRO stage: GPUs or None}); repr = verdict + limits."""

    __slots__ = ()

    fits = property(lambda self: bool(self._r["data"]["fits"]), doc="Whether the run fits.")
    headroom_bytes = property(lambda self: self._r["data"]["headroom_bytes"], doc="Usable capacity - device (bytes).")
    binding = property(lambda self: self._r["data"]["binding"], doc="The largest memory term.")
    max_micro_batch = property(lambda self: self._r["data"]["max_micro_batch"],
                               doc="Largest micro-batch (serving: batch) that fits; None if 1 does not.")
    max_seq_len = property(lambda self: self._r["data"]["max_seq_len"], doc="Longest sequence that fits; None if none.")
    memory = property(lambda self: self._r["data"]["memory"], doc="The memory breakdown (the CLI's JSON keys).")

    @property
    def min_gpus(self) -> Dict[int, Optional[int]]:
        """Smallest GPU count that fits per ZeRO stage (None: none up to max_gpus or not applicable)."""
        return {g["zero"]: (g["gpus"] if g["applicable"] else None) for g in self._r["data"]["min_gpus"]}

    def __repr__(self) -> str:
        verdict = _core.verdict_line(_core.estimate_memory(self.scenario._run))
        return verdict + "\n\n" + self._r["text"]

    def _repr_html_(self) -> str:
        import html
        verdict = _core.verdict_line(_core.estimate_memory(self.scenario._run))
        return f"<div><b>{html.escape(verdict)}</b></div>" + _html_table(self._r["table"])


class Suggestions(_ListResult):
    """``gp.suggest(...)``: what would make the run fit, cheapest first (rows: rank,
    changes, description, fits, device_bytes, headroom_bytes, step_seconds, time_cost, ...)."""

    __slots__ = ()


class SearchResult(_ListResult):
    """``gp.search(...)``: the top-k layouts, best first, with ``evaluated`` (configurations
    decided) and ``seconds`` (search time)."""

    __slots__ = ()

    evaluated = property(lambda self: self._r["data"]["evaluated"], doc="Configurations of the space decided.")
    seconds = property(lambda self: self._r["data"]["seconds"], doc="Wall-clock seconds of the search.")
    global_batch = property(lambda self: self._r["data"]["global_batch"], doc="Sequences per step held fixed.")


class Recommendations(_ListResult):
    """``gp.recommend(...)``: GPU types × counts, ranked (deadline, budget, cost, time),
    each with its layout, wall-clock, GPU-hours, cost and ``system`` sizing."""

    __slots__ = ()


def fit(model: Optional[Union[ModelLike, Scenario]] = None, /, *, max_gpus: int = 4096, **kwargs: Any) -> FitReport:
    """Will it fit? Verdict, binding term, largest micro-batch, longest sequence and the
    smallest GPU count per ZeRO stage (up to `max_gpus`). Keywords as :func:`gpuplan.estimate`."""
    s = _scenario(model, kwargs)
    return FitReport(_core.plan_fit(s._run, _int(max_gpus, "fit.max_gpus", 1, 1 << 20)), s)


def suggest(model: Optional[Union[ModelLike, Scenario]] = None, /, *, gpus: Optional[Sequence[str]] = None,
            max_gpus: int = 1024, pairs: bool = True, **kwargs: Any) -> Suggestions:
    """What would make the run fit: every applicable change (checkpointing, LoRA, QLoRA,
    8-bit/paged optimizer, chunked loss, smaller micro-batch, ZeRO-3 across N GPUs, CPU
    offload, a bigger GPU from `gpus` — default the catalog) and pairs, cheapest first."""
    s = _scenario(model, kwargs)
    ids = None if gpus is None else ([gpus] if isinstance(gpus, str) else [str(g) for g in gpus])
    return Suggestions(_core.plan_suggest(s._run, ids, _int(max_gpus, "suggest.max_gpus", 1, 1 << 20), bool(pairs)), s)


def search(model: Optional[Union[ModelLike, Scenario]] = None, /, *, top_k: int = 10,
           global_batch: Optional[int] = None, threads: int = 1, objective: str = "time",
           **kwargs: Any) -> SearchResult:
    """The fastest (objective "time") or cheapest ("cost") parallel layouts on `num_gpus`
    GPUs, holding `global_batch` sequences per step (default: the run's). Here
    `global_batch` is the search's target, not a scenario key."""
    s = _scenario(model, kwargs)
    gb = None if global_batch is None else _int(global_batch, "search.global_batch", 1, 1 << 40)
    return SearchResult(_core.plan_search(s._run, _int(top_k, "search.top_k", 1, 100000), gb,
                                          _int(threads, "search.threads", 1, 256), str(objective)), s)


def recommend(model: Optional[Union[ModelLike, Scenario]] = None, /, *, gpus: Optional[Sequence[str]] = None,
              prices: Optional[Mapping[str, float]] = None, epochs: float = 1.0,
              dataset_tokens: Optional[Union[float, str]] = None, deadline: Union[float, str] = "24h",
              budget: Optional[float] = None, max_gpus: int = 64, rank: str = "cost", keep_late: bool = True,
              **kwargs: Any) -> Recommendations:
    """Which GPU and how many: GPU types (`gpus`, default the catalog) × counts 1, 2, 4, …
    up to `max_gpus`, each with its fastest layout, for `tokens` (a scenario key: 2e9 or
    "2B") or `epochs` × `dataset_tokens`; `deadline` in seconds or "24h"; `prices` per
    GPU-hour by GPU id; `budget` in the prices' currency."""
    s = _scenario(model, kwargs)
    ids = None if gpus is None else ([gpus] if isinstance(gpus, str) else [str(g) for g in gpus])
    price_map = {str(k): _number(v, f"recommend.prices.{k}") for k, v in (prices or {}).items()}
    ds = None if dataset_tokens is None else _suffixed(dataset_tokens, "recommend.dataset_tokens", _AMOUNT, "2e9 or '2B'")
    dl = _suffixed(deadline, "recommend.deadline", _DURATION, "86400 or '24h'")
    b = None if budget is None else _number(budget, "recommend.budget")
    return Recommendations(_core.plan_recommend(s._run, ids, price_map, None, _number(epochs, "recommend.epochs"), ds,
                                                dl, b, _int(max_gpus, "recommend.max_gpus", 1, 1 << 20), str(rank),
                                                bool(keep_late)), s)
