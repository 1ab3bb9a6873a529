"""The planner's typed rows (C++ plan.hpp, the CLI's ``--json`` objects): :class:`Layout`,
:class:`Suggestion` (gp.suggest), :class:`SearchRow` (gp.search), :class:`Recommendation`
with its :class:`SystemSizing` (gp.recommend) and :class:`GraphRecommendation`
(gp.recommend for an image or diffusion model). Each is a frozen dataclass over
:class:`PlanRow`: typed attributes, a read-only mapping, ``to_dict()`` / ``from_dict()``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, List, Mapping, Optional

from ._api import Scenario
from ._helpers import _bytes_view, _seconds_view
from ._results import PlanRow

__all__ = ["Layout", "Suggestion", "SearchRow", "SystemSizing", "Recommendation", "GraphRecommendation"]


@dataclasses.dataclass(frozen=True)
class Layout(PlanRow):
    """A parallel layout: GPU count, tensor / pipeline / data parallelism, virtual
    stages, sequence parallelism, checkpointing, ZeRO stage and offload, micro-batch
    and gradient accumulation (C++ ``gpuplan::layout``)."""

    gpus: int
    tp: int
    pp: int
    virtual_stages: int
    dp: int
    micro_batch: int
    grad_accum: int
    checkpointing: str
    zero: int
    sp: bool
    offload_optimizer: str
    offload_params: str

    def scenario_keys(self) -> Dict[str, Any]:
        """The scenario keywords that set this layout (``gp.estimate(m, **l.scenario_keys(), ...)``)."""
        return dict(num_gpus=self.gpus, tp=self.tp, pp=self.pp, virtual_stages=self.virtual_stages, sp=self.sp,
                    zero=self.zero, offload_optimizer=self.offload_optimizer, offload_params=self.offload_params,
                    micro_batch=self.micro_batch, grad_accum=self.grad_accum, checkpointing=self.checkpointing)


@dataclasses.dataclass(frozen=True)
class Suggestion(PlanRow):
    """One row of ``gp.suggest``: a change (or two) to the run, where it happens (own
    card, more cards, another GPU), the changed run's memory, its time relative to the
    run and, for another GPU, its price."""

    rank: int
    changes: List[str]  #: change kinds, e.g. ["qlora", "full_checkpointing"]
    description: str
    fits: bool
    device_bytes: float
    capacity_bytes: float
    headroom_bytes: float
    step_seconds: float
    time_cost: Optional[float]  #: GPU-seconds per sample relative to the run; None when undefined
    num_gpus: int
    scope: str  #: "own_card", "more_cards" or "other_gpu"
    effect: str  #: "same_result", "approximate", "different_model" or "different_data"
    device_quantile_bytes: float  #: device memory at the margin's confidence (P90 by default)
    headroom_kept_bytes: float  #: what the margin keeps free on this GPU
    time_change: Optional[float]  #: wall-clock time per trained sample relative to the run
    price_per_gpu_hour: Optional[float]  #: other GPUs: the catalog's cheapest on-demand price
    run_cost: Optional[float]  #: price × GPU-hours when the run has a token count
    gpu: str  #: GPU id of the changed run
    scenario: Dict[str, Any] = dataclasses.field(repr=False)  #: the changed run (scenario file schema)

    device = _bytes_view("device_bytes", "Device memory of the changed run as Bytes.")
    capacity = _bytes_view("capacity_bytes", "Usable capacity as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes (negative when it does not fit).")
    step = _seconds_view("step_seconds", "Step time of the changed run as Seconds.")

    def to_scenario(self) -> Scenario:
        """The changed run as a :class:`Scenario`."""
        return Scenario.from_dict(self.scenario)


@dataclasses.dataclass(frozen=True)
class SearchRow(PlanRow):
    """One row of ``gp.search``: a layout with its memory, step time and throughput."""

    _NESTED: ClassVar[Mapping[str, Any]] = {"layout": Layout}

    rank: int
    layout: Layout
    score: float  #: step seconds (objective "time") or GPU-seconds per step ("cost")
    device_bytes: float
    headroom_bytes: float
    step_seconds: float
    tokens_per_second: float
    tokens_per_second_per_gpu: float
    mfu: float
    scenario: Dict[str, Any] = dataclasses.field(repr=False)  #: the run with this layout

    device = _bytes_view("device_bytes", "Device memory as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes.")
    step = _seconds_view("step_seconds", "Step time as Seconds.")

    def to_scenario(self) -> Scenario:
        """The run with this layout as a :class:`Scenario`."""
        return Scenario.from_dict(self.scenario)


@dataclasses.dataclass(frozen=True)
class SystemSizing(PlanRow):
    """The system around a recommendation: nodes, CPU cores, host RAM, power, CUDA
    floor, NVLink and ECC (docs/planner.md cites each rule)."""

    platform: str  #: desktop, workstation, server or cloud
    nodes: int
    gpus_per_node: int
    cpu_cores_min: int
    cpu_cores: int
    host_ram_bytes: float
    gpu_watts: float
    cpu_watts: float
    psu_watts: float
    psu_watts_per_node: float
    wall_watts: float
    pcie_lanes_per_gpu: int
    cuda_min: Optional[str]  #: e.g. "12.0"; None for non-NVIDIA GPUs
    driver_min: Optional[str]  #: the Linux driver for cuda_min
    nvlink_present: bool
    nvlink_needed: bool
    ecc: str
    notes: List[str]

    host_ram = _bytes_view("host_ram_bytes", "Host RAM, whole system, as Bytes.")


@dataclasses.dataclass(frozen=True)
class Recommendation(PlanRow):
    """One row of ``gp.recommend``: a GPU type and count with its fastest layout,
    wall-clock, GPU-hours, cost, deadline and budget verdicts and system sizing."""

    _NESTED: ClassVar[Mapping[str, Any]] = {"layout": Layout, "system": SystemSizing}

    rank: int
    gpu: str
    count: int
    layout: Layout
    global_batch: int
    wall_seconds: float
    gpu_hours: float
    cost: Optional[float]  #: None without a price for the GPU
    rent: Optional[Dict[str, Any]]  #: the offer rented: provider, instance, instances, prices; None without a price
    purchase: Optional[float]  #: count × one card's price, when the card can be bought
    break_even_hours: Optional[float]  #: hours after which owning beats renting; None: never, or no prices
    own_electricity: Optional[float]  #: electricity of this run on owned cards
    own_cost: Optional[float]  #: cards with no rental price: purchase + this run's electricity (the ranking's cost)
    meets_deadline: bool
    within_budget: bool
    device_bytes: float
    step_seconds: float
    mfu: float
    system: SystemSizing

    wall = _seconds_view("wall_seconds", "Wall-clock to train the tokens as Seconds.")
    device = _bytes_view("device_bytes", "Device memory as Bytes.")
    step = _seconds_view("step_seconds", "Step time as Seconds.")


@dataclasses.dataclass(frozen=True)
class GraphRecommendation(PlanRow):
    """One row of ``gp.recommend`` for an image or diffusion model: a GPU type and count
    under PyTorch DDP, the micro-batch × accumulation each GPU runs, its memory, images/s,
    scaling against one GPU, wall-clock and cost."""

    rank: int
    gpu: str
    count: int
    link: str  #: the link the gradients are all-reduced over ("nvlink4", "PCIe, no P2P", ...)
    micro_batch: int
    grad_accum: int
    global_batch: int  #: micro_batch × grad_accum × count: the global batch in whole micro-batches
    device_bytes: float
    usable_bytes: float
    micro_step_seconds: float
    optimizer_step_seconds: float
    exposed_all_reduce_seconds: float
    samples_per_second: float
    scaling: Optional[float]  #: images/s per GPU over one GPU of the type; None when one GPU does not fit
    wall_seconds: float
    gpu_hours: float
    cost: Optional[float]  #: None without a price for the GPU
    rent: Optional[Dict[str, Any]]
    meets_deadline: bool
    within_budget: bool

    wall = _seconds_view("wall_seconds", "Wall-clock to train as Seconds.")
    device = _bytes_view("device_bytes", "Device memory of one GPU (nvidia-smi) as Bytes.")
