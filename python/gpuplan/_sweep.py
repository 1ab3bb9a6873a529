"""gp.sweep: estimates over a cartesian product, vectorised in C++, as a DataFrame."""

from __future__ import annotations

from typing import Any, Optional, Union

from . import _core
from ._api import Scenario, _scenario_dict
from ._catalog import ModelLike
from ._helpers import _error, _iterable_axis

__all__ = ["sweep"]


def _unique(labels: "list[str]") -> "list[str]":
    """Category labels made unique ("a100-80gb", "a100-80gb#2") so repeated inputs stay distinct rows."""
    seen: "dict[str, int]" = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def sweep(model: Optional[Union[ModelLike, Scenario]] = None, /, *, gpu: Any = None, method: Any = None,
          num_gpus: Any = None, micro_batch: Any = None, seq_len: Any = None, **kwargs: Any) -> "pandas.DataFrame":  # noqa: F821
    """Estimates over gpu x method x num_gpus x micro_batch x seq_len, as a pandas DataFrame.

    Each axis takes a scalar or an iterable (list, range, numpy array); omitted axes
    keep the scenario's value. Other keyword arguments are fixed scenario keys (as
    in :func:`gpuplan.estimate`). The loop runs in C++: each (gpu, method, num_gpus)
    combination is validated by the scenario reader, every micro_batch and seq_len
    value once, then only the estimators run per row.

    Columns: gpu, method (categorical), num_gpus, micro_batch, seq_len, global_batch,
    fits, the memory figures ``*_bytes`` (device_bytes, capacity_bytes, headroom_bytes,
    weights_bytes, ...), step_seconds, tokens_per_second_per_gpu, tokens_per_second,
    mfu, total_seconds, gpu_hours, cost (NaN without a price), warning_bits.
    Rows are ordered gpu-major, seq_len fastest.
    """
    import pandas as pd

    if isinstance(model, Scenario):
        base = _scenario_dict(None, kwargs, base=model._input)
    else:
        base = _scenario_dict(model, kwargs)
    axes = {"gpu": _iterable_axis("gpu", gpu), "method": _iterable_axis("method", method),
            "num_gpus": _iterable_axis("num_gpus", num_gpus), "micro_batch": _iterable_axis("micro_batch", micro_batch),
            "seq_len": _iterable_axis("seq_len", seq_len)}
    for key in ("num_gpus", "micro_batch", "seq_len"):
        for v in axes[key]:
            if isinstance(v, bool) or not hasattr(v, "__index__"):
                raise _error(f"sweep.{key}", f"must be integers (got {v!r})")
    out = _core.sweep(base, axes["gpu"], axes["method"], axes["num_gpus"], axes["micro_batch"], axes["seq_len"])
    cols = out["columns"]
    data = dict(cols)
    data["gpu"] = pd.Categorical.from_codes(cols["gpu"], categories=_unique(out["gpu_labels"]))
    data["method"] = pd.Categorical.from_codes(cols["method"], categories=_unique(out["method_labels"]))
    order = ["gpu", "method", "num_gpus", "micro_batch", "seq_len", "global_batch", "fits"]
    order += [k for k in cols if k not in order]
    df = pd.DataFrame({k: data[k] for k in order}, copy=False)
    df.attrs["model"] = base.get("model") if isinstance(base.get("model"), str) else "inline"
    return df
