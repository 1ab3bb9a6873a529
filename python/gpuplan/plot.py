"""Matplotlib charts. Each function returns the Figure (draws on `ax` when given).

matplotlib is imported when a chart is drawn, so ``import gpuplan`` does not need it.
Memory is shown in GiB (2**30 bytes) unless ``unit="GB"`` (10**9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._api import Estimate
from ._breakdown import MemoryBreakdown
from ._helpers import _error
from ._quantity import GB, GiB
from ._serve import ServeResult

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_memory", "plot_memory_sweep", "plot_time_cost", "plot_serve_curve"]

_COLORS = {
    "weights": "#4c72b0", "master_weights": "#8172b2", "gradients": "#dd8452", "optimizer": "#c44e52",
    "activations": "#55a868", "transient": "#937860", "overhead": "#8c8c8c", "allocator": "#cccccc",
}
_LABELS = {
    "weights": "weights", "master_weights": "master weights", "gradients": "gradients", "optimizer": "optimizer state",
    "activations": "activations", "transient": "transient", "overhead": "CUDA context + workspaces",
    "allocator": "allocator cache / other",
}


def _unit(unit: str) -> Tuple[float, str]:
    if unit == "GiB":
        return GiB, "GiB"
    if unit == "GB":
        return GB, "GB"
    raise _error("plot.unit", f"must be GiB or GB (got {unit!r})")


def _axes(ax: Optional["Axes"], figsize: Tuple[float, float]) -> Tuple["Figure", "Axes"]:
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure  # no pyplot: no global state, works under any backend

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def plot_memory(estimates: Union[Estimate, Sequence[Estimate], Mapping[str, Estimate]], *,
                ax: Optional["Axes"] = None, unit: str = "GiB", title: Optional[str] = None) -> "Figure":
    """Stacked memory breakdown per estimate, against each GPU's usable capacity.

    `estimates` is one :class:`Estimate`, a list (labelled by method), or a dict
    label -> Estimate (e.g. ``{"full": e1, "lora": e2, "qlora": e3}``). The dashed
    line over each bar is that GPU's usable capacity.
    """
    if isinstance(estimates, Estimate):
        items: List[Tuple[str, Estimate]] = [(estimates.scenario.method, estimates)]
    elif isinstance(estimates, Mapping):
        items = [(str(k), v) for k, v in estimates.items()]
    else:
        items = [(e.scenario.method, e) for e in estimates]
    if not items:
        raise _error("plot_memory.estimates", "must not be empty")
    scale, uname = _unit(unit)
    fig, ax = _axes(ax, (1.6 + 1.3 * len(items), 4.2))
    names = list(MemoryBreakdown.COMPONENTS) + ["allocator"]
    x = list(range(len(items)))
    bottoms = [0.0] * len(items)
    for name in names:
        heights = [e.memory.components()[name] / scale for _, e in items]
        if not any(h > 0 for h in heights):
            continue
        ax.bar(x, heights, bottom=bottoms, width=0.6, color=_COLORS[name], label=_LABELS[name])
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for i, (_, e) in enumerate(items):
        cap = e.memory.capacity_bytes / scale
        ax.hlines(cap, i - 0.4, i + 0.4, colors="black", linestyles="dashed", linewidth=1.5,
                  label="usable capacity" if i == 0 else None)
        verdict = "fits" if e.fits else "does not fit"  # verdict != does_not_fit (P50)
        ax.annotate(f"{e.memory.device_bytes / scale:.1f} {uname}\n{verdict}", (i, max(bottoms[i], cap)),
                    xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [label for label, _ in items])
    ax.set_ylabel(f"memory per GPU ({uname})")
    top = max(max(bottoms), max(e.memory.capacity_bytes / scale for _, e in items))
    ax.set_ylim(0, top * 1.25 if top > 0 else 1)
    first = items[0][1]
    ax.set_title(title or f"{first.scenario.model.name} on {first.scenario.gpu.id}")
    ax.legend(fontsize=7, loc="upper right")
    return fig


def plot_memory_sweep(df: "pandas.DataFrame", *, x: str = "micro_batch", hue: Optional[str] = None,
                      ax: Optional["Axes"] = None, unit: str = "GiB", title: Optional[str] = None) -> "Figure":
    """Device memory vs `x` ("micro_batch" or "seq_len") from :func:`gpuplan.sweep`,
    one line per `hue` value (default: whichever of method / gpu varies), with each
    GPU's usable capacity as a horizontal line. Points that do not fit are hollow.
    """
    if x not in ("micro_batch", "seq_len", "num_gpus"):
        raise _error("plot_memory_sweep.x", f"must be micro_batch, seq_len or num_gpus (got {x!r})")
    if hue is None:
        hue = next((c for c in ("method", "gpu", "seq_len", "micro_batch") if c != x and df[c].nunique() > 1), "method")
    if hue not in df.columns:
        raise _error("plot_memory_sweep.hue", f"is not a column (got {hue!r})")
    scale, uname = _unit(unit)
    fig, ax = _axes(ax, (6.4, 4.2))
    for key, g in df.groupby(hue, observed=True, sort=False):
        g = g.sort_values(x)
        (line,) = ax.plot(g[x], g["device_bytes"] / scale, marker="o", markersize=3, label=f"{hue}={key}")
        bad = g[~g["fits"]]
        if len(bad):
            ax.plot(bad[x], bad["device_bytes"] / scale, linestyle="none", marker="o", markersize=6,
                    markerfacecolor="white", markeredgecolor=line.get_color())
    for gpu_id, cap in df.groupby("gpu", observed=True, sort=False)["capacity_bytes"].max().items():
        ax.axhline(cap / scale, color="black", linestyle="dashed", linewidth=1)
        ax.annotate(f"{gpu_id} usable", (0.01, cap / scale), xycoords=("axes fraction", "data"),
                    xytext=(0, 2), textcoords="offset points", fontsize=8)
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(f"device memory per GPU ({uname})")
    if df[x].max() / max(df[x].min(), 1) >= 16:
        ax.set_xscale("log", base=2)
    ax.set_title(title or f"{df.attrs.get('model', '')} memory vs {x.replace('_', ' ')}".strip())
    ax.legend(fontsize=8)
    return fig


def plot_time_cost(df: "pandas.DataFrame", *, price_per_gpu_hour: Union[None, float, Mapping[str, float]] = None,
                   only_fitting: bool = True, title: Optional[str] = None) -> "Figure":
    """Time to train and cost vs number of GPUs, one line per GPU type.

    `df` is a :func:`gpuplan.sweep` over ``gpu=[...]`` and ``num_gpus=[...]`` with
    ``tokens`` set. Cost uses `price_per_gpu_hour` (one price, or a dict per GPU id)
    or the sweep's own cost column. Configurations that do not fit are left out
    unless ``only_fitting=False``. Returns a Figure with two axes (time, cost).
    """
    from matplotlib.figure import Figure

    d = df[df["fits"]] if only_fitting else df
    if "num_gpus" not in d.columns:
        raise _error("plot_time_cost.df", "needs a num_gpus column (a gp.sweep result)")
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_t, ax_c = fig.subplots(1, 2)
    for gpu_id, g in d.groupby("gpu", observed=True, sort=False):
        # Best (fastest) configuration per GPU count among the other axes swept.
        best = g.sort_values("total_seconds").groupby("num_gpus", as_index=False).first().sort_values("num_gpus")
        hours = best["total_seconds"] / 3600.0
        ax_t.plot(best["num_gpus"], hours, marker="o", label=str(gpu_id))
        if isinstance(price_per_gpu_hour, Mapping):
            price = price_per_gpu_hour.get(str(gpu_id))
            cost = None if price is None else best["gpu_hours"] * price
        elif price_per_gpu_hour is not None:
            cost = best["gpu_hours"] * float(price_per_gpu_hour)
        else:
            cost = best["cost"]
        if cost is not None:
            ax_c.plot(best["num_gpus"], cost, marker="o", label=str(gpu_id))
    for ax in (ax_t, ax_c):
        ax.set_xlabel("number of GPUs")
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
    ax_t.set_ylabel("time to train (hours)")
    ax_c.set_ylabel("cost (currency)")
    ax_t.legend(fontsize=8)
    fig.suptitle(title or f"{df.attrs.get('model', '')}: time and cost vs GPUs".strip(": "))
    return fig


def plot_serve_curve(results: Union["ServeResult", Sequence["ServeResult"], Mapping[str, "ServeResult"]], *,
                     ax: Optional["Axes"] = None, title: Optional[str] = None) -> "Figure":
    """The throughput–latency curve of :func:`gpuplan.serve`: inter-token latency (ms)
    against aggregate tokens/s, one point per concurrency (1, 2, 4, …, max, labelled).

    `results` is one :class:`ServeResult`, a list (labelled by engine) or a dict
    label -> ServeResult (e.g. ``{"vllm": r1, "hf": r2}``). A result's latency target,
    when given, is a dashed horizontal line; its point at `concurrency` (``.at``), when
    asked for, is ringed (``gp.serve(..., latency_target="50ms",
    concurrency=r.concurrency_for_target)`` rings the answer).
    """
    if isinstance(results, ServeResult):
        items: List[Tuple[str, Any]] = [(results.engine, results)]
    elif isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    else:
        items = [(r.engine, r) for r in results]
    if not items:
        raise _error("plot_serve_curve.results", "must not be empty")
    for label, r in items:
        if not isinstance(r, ServeResult):
            raise _error("plot_serve_curve.results", f"must be gp.serve results (got {type(r).__name__} for {label!r})")
    fig, ax = _axes(ax, (6.4, 4.2))
    for label, r in items:
        pts = r.curve
        if not pts:
            continue
        x = [p.tokens_per_second for p in pts]
        y = [p.inter_token_latency_s * 1e3 for p in pts]
        (line,) = ax.plot(x, y, marker="o", markersize=4, label=label)
        for p, xi, yi in zip(pts, x, y):
            ax.annotate(str(p.concurrency), (xi, yi), xytext=(3, 3), textcoords="offset points", fontsize=7)
        target = r.latency_target_s
        if target is not None:
            ax.axhline(target * 1e3, color=line.get_color(), linestyle="dashed", linewidth=1)
        at = r.at
        if at is not None:
            ax.plot([at.tokens_per_second], [at.inter_token_latency_s * 1e3], linestyle="none", marker="o",
                    markersize=10, markerfacecolor="none", markeredgecolor=line.get_color())
            ax.annotate(str(at.concurrency), (at.tokens_per_second, at.inter_token_latency_s * 1e3), xytext=(3, -9),
                        textcoords="offset points", fontsize=7, color=line.get_color())
    ax.set_xlabel("aggregate throughput (tokens/s, one replica)")
    ax.set_ylabel("inter-token latency (ms)")
    xs = [p.tokens_per_second for _, r in items for p in r.curve]
    if xs and max(xs) / max(min(xs), 1e-12) >= 16:
        ax.set_xscale("log", base=2)
    ax.grid(True, alpha=0.3)
    first = items[0][1]
    ax.set_title(title or f"{first.scenario.model.name} on {first.scenario.gpu.id}: throughput vs latency")
    ax.legend(fontsize=8)
    return fig


def _drawn(fig: "Figure") -> Dict[str, Any]:
    """Counts of what a figure holds (used by tests and docs)."""
    axes = fig.get_axes()
    return {"axes": len(axes), "patches": sum(len(a.patches) for a in axes),
            "lines": sum(len(a.lines) for a in axes), "collections": sum(len(a.collections) for a in axes)}
