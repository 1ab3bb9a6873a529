"""How long a context fits: gp.max_context (C++ plan/max_context.hpp, docs/long-context.md).

``gp.max_context("llama-3.1-8b", gpu="h100-sxm", framework="deepspeed", parallel={"zero": 3},
max_gpus=8)`` returns a :class:`MaxContextResult`: the largest trainable sequence length at
the run's micro-batch (fits: the device memory at the P50 of its error band within capacity,
as ``gp.fit(...).fits``), the largest that is a plan under the margin (``confidence``,
``headroom``), and per GPU count 1, 2, 4, ..., `max_gpus` (default the run's ``num_gpus``)
the same with context parallelism over the GPUs where the framework runs it
(:class:`ContextRung` rows). It prints as ``gpuplan fit --max-context`` does, converts with
``to_dict()`` (that command's ``--json`` "max_context") and ``to_frame()`` (the ladder).
A serving run's longest request is ``gp.serve(...).largest_context``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Sequence, Union

from . import _core
from ._api import Estimate, Scenario, _as_scenario
from ._catalog import ModelLike
from ._helpers import _int
from ._plan import _margin
from ._quantity import Bytes
from ._results import PlanRow, _TableResult

__all__ = ["ContextRung", "MaxContextResult", "max_context"]


@dataclasses.dataclass(frozen=True)
class ContextRung(PlanRow):
    """One GPU count of the ladder: `num_gpus` GPUs as cp × dp (× the run's tp · pp) and the
    largest context that fits there (None: not even `step` tokens)."""

    num_gpus: int
    cp: int
    dp: int
    tokens: Optional[int]
    tokens_text: Optional[str]  #: "32,768 tokens (32K)"
    step: int  #: the search unit of this layout (2·cp with context parallelism)
    device_bytes: float  #: device memory at `tokens`, as estimated
    p50_device_bytes: float  #: the same at the P50 of its error band: what decides "fits"
    capacity_bytes: float

    device = property(lambda self: Bytes(self.device_bytes), doc="Device memory at `tokens` as Bytes.")


class MaxContextResult(_TableResult):
    """``gp.max_context(...)``: the largest trainable context of the run and per GPU count.
    ``repr`` is the text of ``gpuplan fit --max-context`` without its memory table (``at``
    is the estimate at that length); ``to_frame()`` the ladder, one row per GPU count."""

    __slots__ = ()
    _ROW = ContextRung
    _FRAME_FIELDS = True
    _HTML_HEAD = ("summary", "lines")

    tokens = property(lambda self: self._data()["tokens"],
                      doc="The largest sequence length that fits at the run's micro-batch (None: not even `step`).")
    tokens_text = property(lambda self: self._data()["tokens_text"], doc="`tokens` in words: '32,768 tokens (32K)'.")
    planned_tokens = property(lambda self: self._data()["planned_tokens"],
                              doc="The largest that is a plan under the margin (its quantile plus the headroom fits).")
    micro_batch = property(lambda self: self._data()["micro_batch"], doc="Sequences per micro-batch, as the run says.")
    step = property(lambda self: self._data()["step"],
                    doc="The search unit: tp with sequence parallelism, 2·cp with context parallelism.")
    limit = property(lambda self: self._data()["limit"],
                     doc="The search's upper end: max_position_embeddings for learned positions, else 2**24.")
    max_positions = property(lambda self: self._data()["max_positions"], doc="The model's max_position_embeddings.")
    beyond_max_positions = property(lambda self: bool(self._data()["beyond_max_positions"]),
                                    doc="Whether `tokens` passes max_position_embeddings (needs RoPE scaling).")
    context_parallel = property(lambda self: bool(self._data()["context_parallel"]),
                                doc="Whether the ladder splits the sequence (the framework runs context parallelism).")

    @property
    def ladder(self) -> List[ContextRung]:
        """The GPU counts 1, 2, 4, ..., max_gpus (empty for one GPU), as :class:`ContextRung` rows."""
        return [ContextRung.from_dict(x) for x in self._data()["ladder"]]

    def _rows(self) -> Sequence[PlanRow]:
        return self.ladder

    @property
    def at(self) -> Estimate:
        """The estimate at the largest context (at `step` tokens when none fits)."""
        return Estimate(self.scenario.replace(seq_len=self.tokens or self.step))

    def __repr__(self) -> str:
        return self._r["text"] if self._data()["ladder"] else self._r["summary"]


def max_context(model: Optional[Union[ModelLike, Scenario]] = None, /, *, max_gpus: Optional[int] = None,
                confidence: float = 0.9, headroom: str = "5%,1GiB", **kwargs: Any) -> MaxContextResult:
    """The largest trainable sequence length of a training run at its micro-batch, and per GPU
    count up to `max_gpus` (default the run's ``num_gpus``) with context parallelism where the
    framework runs it. Keywords as :func:`gpuplan.estimate`; ``seq_len`` is what is searched."""
    s = _as_scenario(model, kwargs)
    ladder = 0 if max_gpus is None else _int(max_gpus, "max_context.max_gpus", 1, 1 << 20)
    return MaxContextResult(_core.max_context(s._run, ladder, **_margin(confidence, headroom, "max_context")), s)
