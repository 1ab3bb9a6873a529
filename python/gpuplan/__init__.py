"""gpuplan — GPU memory and time estimates for training and serving transformers.

>>> import gpuplan as gp
>>> m = gp.model("llama-2-13b")
>>> r = gp.estimate(m, gpu="rtx-4090", method="qlora", seq_len=2048, micro_batch=1)
>>> r.memory.fits, r.memory.device.gib, r.time.tokens_per_second_per_gpu

Keyword arguments are the scenario file's keys (docs/scenario.md); every scenario
goes through the same C++ reader as the CLI, so errors (:class:`ConfigError`, a
ValueError) carry the CLI's message; its subclasses say what went wrong
(:class:`InvalidInputError`, :class:`UnknownNameError`, :class:`ParseError`,
:class:`FileError` — also an OSError). Numbers are floats in canonical units named
by their suffix (``*_bytes``, ``*_seconds``, ``*_flop_per_s``); :class:`Bytes` and
:class:`Seconds` views convert (``r.memory.total.gib``), as do the constants
``GiB`` (2**30) and ``GB`` (10**9).
"""

from __future__ import annotations

from typing import List

from . import _core
from ._api import (
    ConfigError,
    Estimate,
    FileError,
    InvalidInputError,
    ParseError,
    Scenario,
    UnknownNameError,
    estimate,
)
from ._breakdown import MemoryBreakdown, TimeEstimate
from ._calibrate import Profile, calibrate, load_profile, measure
from ._catalog import GPU, Model, gpu, gpus, model, models
from ._diffusion import DiffusionResult, diffusion
from ._graph import Graph
from ._long_context import ContextRung, MaxContextResult, max_context
from ._plan import (
    FitReport,
    FitResult,
    GraphRecommendation,
    GraphRecommendations,
    Layout,
    PlanRow,
    Recommendation,
    Recommendations,
    SearchResult,
    SearchRow,
    Suggestion,
    Suggestions,
    SystemSizing,
    export,
    export_launch,
    fit,
    recommend,
    search,
    suggest,
)
from ._quantity import GB, TB, Bytes, GiB, KiB, MiB, Seconds
from ._rl import RlPhase, RlRecommendation, RlResult, RlSuggestion, rl, rl_recommend, rl_scenario
from ._serve import ServeOption, ServePoint, ServeRecommendation, ServeResult, recommend_serving, serve
from ._sweep import sweep
from ._trace import trace
from ._vision import VisionResult, vision
from .plot import plot_memory, plot_memory_sweep, plot_serve_curve, plot_time_cost

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "ConfigError",
    "InvalidInputError",
    "UnknownNameError",
    "ParseError",
    "FileError",
    "Model",
    "GPU",
    "Scenario",
    "Estimate",
    "MemoryBreakdown",
    "TimeEstimate",
    "Bytes",
    "Seconds",
    "KiB",
    "MiB",
    "GiB",
    "GB",
    "TB",
    "model",
    "models",
    "gpu",
    "gpus",
    "estimate",
    "Profile",
    "calibrate",
    "load_profile",
    "measure",
    "sweep",
    "fit",
    "max_context",
    "MaxContextResult",
    "ContextRung",
    "suggest",
    "search",
    "export",
    "export_launch",
    "recommend",
    "serve",
    "rl",
    "rl_scenario",
    "rl_recommend",
    "RlResult",
    "RlPhase",
    "RlSuggestion",
    "RlRecommendation",
    "vision",
    "VisionResult",
    "diffusion",
    "DiffusionResult",
    "trace",
    "Graph",
    "recommend_serving",
    "ServeRecommendation",
    "ServeOption",
    "ServeResult",
    "ServePoint",
    "FitResult",
    "FitReport",
    "Suggestion",
    "Suggestions",
    "Layout",
    "SearchRow",
    "SearchResult",
    "Recommendation",
    "Recommendations",
    "GraphRecommendation",
    "GraphRecommendations",
    "SystemSizing",
    "PlanRow",
    "plot_memory",
    "plot_memory_sweep",
    "plot_time_cost",
    "plot_serve_curve",
]


def __dir__() -> List[str]:
    return list(__all__)
