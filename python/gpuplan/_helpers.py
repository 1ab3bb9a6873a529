"""The Python helpers every module of the package shares, in one leaf module (it imports
only gpuplan._core and _quantity): errors shaped like the C++ ones, checks of keyword
arguments, read-only views, and the HTML and flat-column forms of the CLI's tables.
"""

from __future__ import annotations

import html
import math
import numbers
from typing import Any, Dict, Iterable, List, Mapping

from . import _core
from ._quantity import Bytes, Seconds


def _error(path: str, reason: str) -> "_core.ConfigError":
    """An InvalidInputError shaped like the C++ one: '<path>: <reason>', with .path and .kind set."""
    e = _core.InvalidInputError(f"{path}: {reason}")
    e.path = path
    e.kind = _core.InvalidInputError.kind
    return e


# --------------------------------------------------------------------------- checks


def _pop_keys(kwargs: Dict[str, Any], names: Iterable[str], into: Dict[str, Any]) -> Dict[str, Any]:
    """Moves the keywords named in `names` out of `kwargs` into `into` (a None value is left unset)."""
    for key in names:
        if key in kwargs:
            value = kwargs.pop(key)
            if value is not None:
                into[key] = value
    return into


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


# --------------------------------------------------------------------------- views


def _delegate(attr: str, doc: str, wrap: Any = None) -> property:
    """A read-only property forwarding to self._core.<attr> (optionally wrapped)."""
    if wrap is None:
        return property(lambda self: getattr(self._core, attr), doc=doc)
    return property(lambda self: wrap(getattr(self._core, attr)), doc=doc)


def _bytes_view(name: str, doc: str) -> property:
    return property(lambda self: Bytes(getattr(self, name)), doc=doc)


def _seconds_view(name: str, doc: str) -> property:
    return property(lambda self: Seconds(getattr(self, name)), doc=doc)


# --------------------------------------------------------------------------- tables


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


def _pandas(what: str) -> Any:
    """The pandas module, or an ImportError saying that `what` (e.g. "ServeResult.to_frame()") needs it."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError(f"{what} needs pandas (Debian: apt install python3-pandas; "
                          "elsewhere: pip install pandas)") from e
    return pandas
