"""Floats that know their unit: ``Bytes`` and ``Seconds``.

Both subclass :class:`float` (the value is in the canonical unit: bytes, seconds),
so they work anywhere a number does; the properties name the unit you want out.
"""

from __future__ import annotations

__all__ = ["KiB", "MiB", "GiB", "GB", "TB", "Bytes", "Seconds"]

KiB: float = 1024.0
MiB: float = 1024.0**2
GiB: float = 1024.0**3  #: 2**30 bytes (what nvidia-smi and PyTorch print as "GB")
GB: float = 1e9  #: 10**9 bytes (datasheets, disk sizes)
TB: float = 1e12


class Bytes(float):
    """An amount of memory in bytes. ``b.gib``, ``b.gb``, ``b.mib`` convert."""

    __slots__ = ()

    @property
    def bytes(self) -> float:
        """The value in bytes (a plain float)."""
        return float(self)

    @property
    def gib(self) -> float:
        """The value in GiB (2**30 bytes)."""
        return float(self) / GiB

    @property
    def gb(self) -> float:
        """The value in GB (10**9 bytes)."""
        return float(self) / GB

    @property
    def mib(self) -> float:
        """The value in MiB (2**20 bytes)."""
        return float(self) / MiB

    def __repr__(self) -> str:
        # Same shape as the CLI's format_bytes: "26.03 GB (24.24 GiB)".
        return f"{self.gb:.2f} GB ({self.gib:.2f} GiB)"

    __str__ = __repr__


class Seconds(float):
    """A duration in seconds. ``s.minutes``, ``s.hours``, ``s.days`` convert."""

    __slots__ = ()

    @property
    def seconds(self) -> float:
        """The value in seconds (a plain float)."""
        return float(self)

    @property
    def minutes(self) -> float:
        """The value in minutes."""
        return float(self) / 60.0

    @property
    def hours(self) -> float:
        """The value in hours."""
        return float(self) / 3600.0

    @property
    def days(self) -> float:
        """The value in days (24 h)."""
        return float(self) / 86400.0

    def __repr__(self) -> str:
        v = float(self)
        if v < 1:
            return f"{v * 1e3:.3g} ms"
        if v < 120:
            return f"{v:.3g} s"
        if v < 7200:
            return f"{v / 60:.3g} min"
        if v < 172800:
            return f"{v / 3600:.3g} h"
        return f"{v / 86400:.3g} days"

    __str__ = __repr__
