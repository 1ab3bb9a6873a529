"""The bases of the typed results: what each result shows is declared once, as field
lists and class attributes, and ``to_dict`` / ``repr`` / ``_repr_html_`` / ``to_frame``
are generated from them (the views of C++ structs, MemoryBreakdown and TimeEstimate,
have theirs in _breakdown.py).

- :class:`PlanRow`: a frozen dataclass row read from (and back to) the CLI's ``--json``;
- :class:`_Result`: a planner or serving result over the bindings' dict {data, table,
  text, markdown, ...}; :class:`_TableResult` adds ``to_frame()`` over its rows and
  :class:`_ListResult` makes it a sequence of rows;
- :class:`_GraphModelResult`: a layer-graph result (gp.vision, gp.diffusion, Graph.estimate).
"""

from __future__ import annotations

import copy
import dataclasses
import html
from types import MappingProxyType
from typing import (TYPE_CHECKING, Any, ClassVar, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type,
                    TypeVar, overload)

from ._helpers import _flatten, _cell, _html_table, _pandas
from ._quantity import Bytes, Seconds

if TYPE_CHECKING:
    from ._api import Scenario

_R = TypeVar("_R", bound="PlanRow")


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


class _Result:
    """A result over the bindings' dict: "data" (the CLI's ``--json``), "table", "text",
    "markdown". ``_HTML_HEAD`` names the dict's key shown above the HTML table, and how:
    "bold" (one bold line), "div" (one line) or "lines" (a line per line of text)."""

    __slots__ = ("_r", "scenario")
    _HTML_HEAD: ClassVar[Optional[Tuple[str, str]]] = None

    def __init__(self, r: Mapping[str, Any], scenario: "Scenario") -> None:
        self._r = r
        self.scenario: Scenario = scenario  #: the run the question was asked about

    def _data(self) -> Any:
        return self._r["data"]

    def to_dict(self) -> Any:
        """The result as the CLI's ``--json`` prints it."""
        return copy.deepcopy(self._r["data"])

    def to_markdown(self) -> str:
        """The CLI's table as markdown."""
        return self._r["markdown"]

    def __repr__(self) -> str:
        return self._r["text"]

    def _repr_html_(self) -> str:
        head = ""
        if self._HTML_HEAD is not None:
            key, form = self._HTML_HEAD
            text = self._r[key]
            line = "<div><b>{}</b></div>" if form == "bold" else "<div>{}</div>"
            head = "".join(line.format(html.escape(t)) for t in (text.splitlines() if form == "lines" else [text]))
        return head + _html_table(self._r["table"])


def _datum(key: str, doc: str) -> property:
    """A read-only attribute of a result: ``self._data()[key]``, a key of the CLI's ``--json``."""
    return property(lambda self: self._data()[key], doc=doc)


class _TableResult(_Result):
    """A result with rows of ``_ROW``: ``to_frame()`` is a pandas DataFrame of them, with
    ``_frame_attrs()`` as its attrs. With ``_FRAME_FIELDS`` its columns are the row's
    fields in order (also with no rows); otherwise each row's JSON object flattened
    (layout keys as columns, ``system_*`` for the sizing, lists joined, the scenario left out)."""

    __slots__ = ()
    _ROW: ClassVar[Any] = PlanRow
    _FRAME_FIELDS: ClassVar[bool] = False

    def _rows(self) -> Sequence[PlanRow]:
        raise NotImplementedError

    def _frame_attrs(self) -> Dict[str, Any]:
        return {}

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame, one row each: the row type's fields as columns
        (serving results), or each row's JSON object flattened (the planner's lists: layout
        keys as columns, ``system_*`` for the sizing, lists joined, the scenario left out)."""
        pd = _pandas(f"{type(self).__name__}.to_frame()")
        if self._FRAME_FIELDS:
            df = pd.DataFrame([r.to_dict() for r in self._rows()], columns=list(self._ROW._field_names()))
        else:
            df = pd.DataFrame([_flatten(r.to_dict()) for r in self._rows()])
        df.attrs.update(self._frame_attrs())
        return df


class _ListResult(_TableResult, Sequence[_R]):
    """A result that is a sequence of its rows (``data["rows"]``, or ``data`` itself)."""

    __slots__ = ("_items",)

    def __init__(self, r: Mapping[str, Any], scenario: "Scenario") -> None:
        super().__init__(r, scenario)
        d = r["data"]
        rows = d["rows"] if isinstance(d, Mapping) else d
        self._items: List[_R] = [self._ROW.from_dict(x) for x in rows]

    def _rows(self) -> Sequence[PlanRow]:
        return self._items

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


class _GraphModelResult:
    """What every layer-graph result holds: the CLI's --json data, its text and markdown."""

    def __init__(self, raw: Dict[str, Any]) -> None:
        self._data: Dict[str, Any] = raw["data"]
        self._text: str = raw["text"]
        self._markdown: str = raw["markdown"]

    @property
    def params(self) -> int:
        """Exact parameter count (sum of p.numel() over the model's parameters)."""
        return int(self._data["params"])

    @property
    def peak_allocated(self) -> Bytes:
        """Peak allocated bytes (torch.cuda.max_memory_allocated) of one step or call."""
        return Bytes(self._data["memory"]["peak_allocated"])

    @property
    def reserved(self) -> Bytes:
        """The caching allocator's pool (torch.cuda.max_memory_reserved), bytes."""
        return Bytes(self._data["memory"]["reserved"])

    @property
    def device(self) -> Bytes:
        """What nvidia-smi shows: reserved plus the CUDA context, bytes."""
        return Bytes(self._data["memory"]["device"])

    @property
    def fits(self) -> bool:
        """Whether the device figure fits the GPU's usable memory."""
        return bool(self._data["memory"]["fits"])

    @property
    def step(self) -> Seconds:
        """Seconds per step."""
        return Seconds(self._data["time"]["step_seconds"])

    @property
    def images_per_second(self) -> float:
        """Images per second."""
        return float(self._data["time"]["images_per_second"])

    def to_dict(self) -> Dict[str, Any]:
        """The figures as the CLI's --json prints them."""
        return copy.deepcopy(self._data)

    def __str__(self) -> str:
        return self._text

    def _repr_markdown_(self) -> str:
        return self._markdown
