"""Calibration from the user's own run: ``gp.measure`` a few steps, ``gp.calibrate``
the measurements into a :class:`Profile`, ``profile.save(path)``, and pass
``profile=`` to :class:`Scenario` / :func:`estimate` (or ``--profile FILE`` to the
CLI) to re-estimate and re-plan with the fitted constants and narrower bands.
Formats and the fit: docs/calibration.md.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Union

from . import _core
from ._helpers import _error


class Profile:
    """A calibration profile: fitted memory and time constants, and the bands of the fit."""

    __slots__ = ("_core",)

    def __init__(self, core: "_core.Profile") -> None:
        self._core = core

    name = property(lambda self: self._core.name, doc="The profile's name.")
    model = property(lambda self: self._core.model, doc="The measured model ('mixed' when the points differ).")
    gpu = property(lambda self: self._core.gpu, doc="The measured GPU id ('mixed' when the points differ).")
    framework = property(lambda self: self._core.framework, doc="The measured framework.")
    memory_points = property(lambda self: self._core.memory_points, doc="Measurements with a memory figure.")
    time_points = property(lambda self: self._core.time_points, doc="Measurements with a time figure.")

    def to_dict(self) -> Dict[str, Any]:
        """The profile file's content."""
        return self._core.to_dict()

    def save(self, path: Union[str, "os.PathLike[str]"], force: bool = False) -> None:
        """Writes the profile file (read it back with :func:`load_profile` or ``--profile``).

        Only a profile that reads back unchanged is written, through a temporary file
        renamed into place; an existing file is replaced only with ``force=True``."""
        file = os.fspath(path)
        if not force and os.path.exists(file):
            raise _error("save", f"{file} exists; pass force=True to replace it")
        _core.save_profile_file(self._core, file, bool(force))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Profile) and self._core == other._core

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Profile({self.name!r}: {self.model} on {self.gpu}, {self.framework}; "
                f"{self.memory_points} memory / {self.time_points} time points)")

    def _repr_html_(self) -> str:
        d = self.to_dict()
        rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in d.items() if k != "gpuplan_profile")
        return f"<table>{rows}</table>"


def _measurement_dict(m: Mapping[str, Any]) -> Dict[str, Any]:
    out = dict(m)
    s = out.get("scenario")
    if s is not None and hasattr(s, "to_dict") and hasattr(s, "_run"):
        out["scenario"] = s.to_dict()
    return out


def calibrate(measurements: Iterable[Mapping[str, Any]], name: str = "my-run") -> Profile:
    """Fits a profile to measured runs.

    Each measurement is a dict: ``scenario`` (a :class:`Scenario` or a scenario
    dict) and any of ``step_seconds``, ``tokens_per_second_per_gpu``,
    ``peak_allocated_bytes``, ``peak_reserved_bytes``, ``device_bytes`` (or the sizes
    in GiB: ``peak_reserved_gib`` ...) — :func:`measure` returns these keys.
    Bad input raises :class:`ConfigError` naming ``measurements[i].<key>``.
    """
    return Profile(_core.calibrate([_measurement_dict(m) for m in measurements], name))


def load_profile(path: Union[str, "os.PathLike[str]", Mapping[str, Any]]) -> Profile:
    """A profile from a file written by :meth:`Profile.save` or ``gpuplan calibrate --out``, or from its dict."""
    if isinstance(path, Mapping):
        return Profile(_core.read_profile(dict(path)))
    return Profile(_core.read_profile_file(os.fspath(path)))


def measure(step_fn: Callable[[], Any], steps: int = 3, warmup: int = 1,
            scenario: Optional[Any] = None) -> Dict[str, Any]:
    """Runs ``step_fn`` (one optimizer step of your job) ``warmup + steps`` times and
    returns what :func:`calibrate` takes: the median ``step_seconds`` and, when
    PyTorch sees a CUDA device, ``peak_allocated_bytes`` / ``peak_reserved_bytes``
    from ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` (peaks reset
    after the warm-up). With ``scenario`` the dict also holds it, ready for calibrate.
    """
    if not callable(step_fn):
        raise TypeError(f"measure: step_fn must be callable (got {type(step_fn).__name__})")
    for key, value, low in (("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or value > 10000:
            raise _error(f"measure.{key}", f"must be an integer from {low} to 10000 (got {value!r})")
    cuda = None
    try:
        import torch  # Debian: python3-torch
        if torch.cuda.is_available():
            cuda = torch.cuda
    except ImportError:
        pass
    for _ in range(warmup):
        step_fn()
    if cuda is not None:
        cuda.synchronize()
        cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step_fn()
        if cuda is not None:
            cuda.synchronize()
        times.append(time.perf_counter() - t0)
    out: Dict[str, Any] = {"step_seconds": statistics.median(times)}
    if cuda is not None:
        out["peak_allocated_bytes"] = float(cuda.max_memory_allocated())
        out["peak_reserved_bytes"] = float(cuda.max_memory_reserved())
    if scenario is not None:
        out["scenario"] = scenario
    return out
