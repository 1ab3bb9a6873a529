"""RL post-training: gp.rl (C++ rl.hpp, docs/rl.md).

``gp.rl("qwen2.5-7b", gpu="h100-sxm", num_gpus=8, algorithm="grpo", framework="trl")``
returns an :class:`RlResult`: the memory of a training GPU in each phase of one step
(rollout, scoring, actor update, critic update; :class:`RlPhase` rows), the peak and whether
it fits, what each model holds (reference, critic, reward model, rollout engine), the step
time as rollout + scoring + training, tokens/s per GPU and, when it does not fit, the
changes that lower the peak, each estimated (:class:`RlSuggestion`). It prints as
``gpuplan rl`` does, renders as HTML in a notebook, converts with ``to_dict()`` (the CLI's
``--json``) and ``to_frame()`` (the phases). ``gp.rl_scenario(source)`` reads a whole RL
scenario (a dict, JSON text or a file with an "rl" object, docs/scenario.md § rl).
``gp.rl_recommend(model, gpus=[...])`` answers which GPU and how many
(:class:`RlRecommendation` rows, ``gpuplan rl --recommend``).
"""

from __future__ import annotations

import dataclasses
import html
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _core
from ._api import Scenario, _scenario_dict
from ._catalog import ModelLike
from ._helpers import _bytes_view, _error, _int, _number, _pop_keys, _seconds_view
from ._quantity import Seconds
from ._results import PlanRow, _datum, _TableResult

__all__ = ["RlPhase", "RlSuggestion", "RlResult", "RlRecommendation", "rl", "rl_scenario", "rl_recommend"]

#: Keywords of gp.rl that are keys of the scenario's "rl" object (docs/scenario.md § rl).
RL_KEYS = ("rollout", "placement", "rollout_fraction", "sleep_level", "cuda_graphs", "reference", "generations", "prompt_len",
           "max_length", "completion_len", "mean_completion_len", "mean_prompt_len", "max_token_len", "micro_batch",
           "prompts_per_step", "rollout_gpus", "rollout_tp", "reward_model", "train_batch", "offload_trainer",
           "entropy_bonus")


@dataclasses.dataclass(frozen=True)
class RlPhase(PlanRow):
    """The memory of a training GPU in one phase of the step."""

    name: str  #: "rollout", "scoring", "actor update" or "critic update"
    allocated_bytes: float  #: the trainer's live tensors
    reserved_bytes: float  #: the trainer's caching-allocator pool (torch.cuda.max_memory_reserved)
    engine_bytes: float  #: the co-located rollout engine (its pool and weights)
    device_bytes: float  #: nvidia-smi: CUDA context + reserved + engine
    peak: bool  #: the phase of the step's peak

    allocated = _bytes_view("allocated_bytes", "Allocated as Bytes.")
    reserved = _bytes_view("reserved_bytes", "Reserved as Bytes.")
    engine = _bytes_view("engine_bytes", "The engine's memory as Bytes.")
    device = _bytes_view("device_bytes", "Device memory as Bytes.")


@dataclasses.dataclass(frozen=True)
class RlSuggestion(PlanRow):
    """A change that lowers the step's peak, estimated (only when the run does not fit)."""

    change: str  #: in scenario keys, e.g. "rl.sleep_level = 1", "method = lora"
    description: str
    fits: bool
    peak_phase: str
    device_bytes: float
    headroom_bytes: float
    step_seconds: Optional[float]  #: None when the rollout engine holds no whole sequence
    scenario: Dict[str, Any] = dataclasses.field(repr=False)  #: the changed RL scenario

    device = _bytes_view("device_bytes", "Device memory of the changed run as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes (negative when it does not fit).")

    def to_result(self) -> "RlResult":
        """The changed run's whole estimate."""
        return rl_scenario(self.scenario)


def _maybe_seconds(key: str, doc: str) -> property:
    return property(lambda self: None if self._data()[key] is None else Seconds(self._data()[key]), doc=doc)


class RlResult(_TableResult):
    """``gp.rl(...)``: one RL step's memory per phase, the models kept, its time and, when it
    does not fit, what lowers the peak. ``repr`` is the text of ``gpuplan rl``; ``to_dict()``
    its ``--json``; ``to_frame()`` the phases as a DataFrame. ``scenario`` is the actor's own
    training run (a :class:`Scenario`), ``rl_scenario`` the whole RL scenario as a dict."""

    __slots__ = ()
    _ROW = RlPhase
    _FRAME_FIELDS = True
    _HTML_HEAD = ("summary", "lines")

    algorithm = _datum("algorithm", "dpo, grpo or ppo.")
    framework = _datum("framework", "The RL framework: trl, verl, openrlhf or nemo-rl.")
    trainer = _datum("trainer", "The training framework of the actor (hf, fsdp, deepspeed, megatron, ...).")
    rollout = _datum("rollout", "The rollout engine: hf (transformers generate), vllm or sglang.")
    placement = _datum("placement", "colocated (on the training GPUs) or separate (GPUs of its own).")
    rollout_fraction = _datum("rollout_fraction", "The engine's share of GPU memory (0 for transformers generate).")
    reference = _datum("reference", "Whether a reference model scores the KL term.")
    critic = _datum("critic", "Whether a critic (value model) trains (PPO).")
    reward_model = _datum("reward_model", "Whether a reward model scores the completions (PPO).")
    generations = _datum("generations", "Completions per prompt (GRPO's G; 1 otherwise).")
    prompt_len = _datum("prompt_len", "Prompt tokens (DPO: max_length).")
    completion_len = _datum("completion_len", "Most completion tokens (0 for DPO).")
    mean_completion_len = _datum("mean_completion_len", "The data's mean completion tokens (time; memory where padding is dropped).")
    mean_prompt_len = _datum("mean_prompt_len", "The data's mean prompt tokens (time; memory where padding is dropped).")
    sequences_per_step = _datum("sequences_per_step", "Sequences one optimizer step trains, all GPUs.")
    peak_phase = _datum("peak_phase", "The name of the phase with the most device memory.")
    fits = property(lambda self: bool(self._data()["fits"]), doc="Whether the peak phase fits the GPU's usable memory (placed separately, the engine its GPUs too).")
    device_bytes = _datum("device_bytes", "Device memory of the peak phase, bytes.")
    capacity_bytes = _datum("capacity_bytes", "The GPU's usable memory, bytes.")
    headroom_bytes = _datum("headroom_bytes", "capacity - device, bytes (negative: short by).")
    peak_reserved_bytes = _datum("peak_reserved_bytes", "The trainer's largest pool over the phases, bytes.")
    reference_bytes = _datum("reference_bytes", "The reference's bytes on a training GPU.")
    critic_bytes = _datum("critic_bytes", "The critic's states on a training GPU, bytes.")
    reward_bytes = _datum("reward_bytes", "The reward model's bytes on a training GPU.")
    generation_gathered_bytes = _datum("generation_gathered_bytes",
                                       "transformers generate under ZeRO-3: the trained models' weights gathered whole for the rollout, bytes.")
    engine_budget_bytes = _datum("engine_budget_bytes", "The co-located engine's memory while it generates, bytes.")
    rollout_device_bytes = _datum("rollout_device_bytes", "Placement separate: device memory of a rollout GPU, bytes.")
    rollout_concurrency = _datum("rollout_concurrency", "Sequences one engine decodes at once.")
    rollout_gpus = _datum("rollout_gpus", "Placement separate: the GPUs the engines run on (0 when co-located).")
    rollout_fits = property(lambda self: bool(self._data()["rollout_fits"]),
                            doc="Placement separate: whether the engine holds a whole sequence on its GPUs.")
    gpus = _datum("gpus", "GPUs the run holds: training GPUs + rollout GPUs.")
    rollout_seconds = _datum("rollout_seconds", "Rollout time per step (None: the engine holds no whole sequence).")
    scoring_seconds = _datum("scoring_seconds", "No-grad scoring passes per step (reference, old log-probs, values, rewards).")
    training_seconds = _datum("training_seconds", "The actor's (and critic's) training per step.")
    transfer_seconds = _datum("transfer_seconds", "State moved over PCIe per step (offloaded trainer, sleeping engine, CPU reference).")
    step_seconds = _datum("step_seconds", "rollout + scoring + training + transfers (None when the rollout is).")
    tokens_per_second_per_gpu = _datum("tokens_per_second_per_gpu", "Prompt + completion tokens per second per GPU.")

    device = _bytes_view("device_bytes", "Device memory of the peak phase as Bytes.")
    capacity = _bytes_view("capacity_bytes", "Usable memory as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes (negative when it does not fit).")
    step = _maybe_seconds("step_seconds", "The step as Seconds (None when the rollout engine holds no whole sequence).")
    training = _seconds_view("training_seconds", "Training time per step as Seconds.")
    scoring = _seconds_view("scoring_seconds", "Scoring time per step as Seconds.")

    @property
    def phases(self) -> List[RlPhase]:
        """The phases of the step on a training GPU, in order."""
        return [RlPhase.from_dict(p) for p in self._data()["phases"]]

    @property
    def peak(self) -> RlPhase:
        """The phase with the most device memory."""
        return next(p for p in self.phases if p.peak)

    @property
    def suggestions(self) -> List[RlSuggestion]:
        """When it does not fit: the changes tried, those that fit first (empty when it fits)."""
        return [RlSuggestion.from_dict(s) for s in self._data()["suggestions"]]

    @property
    def policy_memory(self) -> Dict[str, Any]:
        """The actor's training memory breakdown at its peak (``gpuplan estimate --json``'s memory keys)."""
        return dict(self._data()["policy"]["memory"])

    @property
    def policy_time(self) -> Dict[str, Any]:
        """The actor's training step over the step's sequences (``gpuplan estimate --json``'s time keys)."""
        return dict(self._data()["policy"]["time"])

    @property
    def rl_scenario(self) -> Dict[str, Any]:
        """The whole RL scenario with every default written out (``gp.rl_scenario`` reads it back)."""
        return dict(self._data()["scenario"])

    @property
    def max_micro_batch(self) -> Optional[int]:
        """With ``largest_micro_batch=True``: the largest micro-batch at which every phase fits, the
        step being reported at it (None when not even one sequence fits, or when not asked)."""
        return self._data().get("max_micro_batch")

    @property
    def warnings(self) -> List[str]:
        """Warnings of the actor's training estimate."""
        return list(self._data()["warnings"])

    def _rows(self) -> List[RlPhase]:
        return self.phases

    def _frame_attrs(self) -> Dict[str, Any]:
        return {"algorithm": self.algorithm, "framework": self.framework, "model": self._data()["model"]["name"]}

    def _repr_html_(self) -> str:
        details = "".join(f"<div>{html.escape(t)}</div>" for t in self._r["details"].splitlines() if t.strip())
        return super()._repr_html_() + details


def _rl_result(raw: Mapping[str, Any]) -> RlResult:
    return RlResult(raw, Scenario.from_dict(raw["data"]["policy"]["scenario"]))


def rl(model: Union[ModelLike, Scenario], /, *, gpu: Any = None, algorithm: str = "grpo", framework: str = "trl",
       largest_micro_batch: bool = False, **kwargs: Any) -> RlResult:
    """One RL post-training step (DPO, GRPO, PPO) under an RL framework (trl, verl, openrlhf,
    nemo-rl): the memory of a training GPU in each phase, the models kept, the step time.

    The keywords of the scenario's "rl" object may be given flat: ``rollout`` ("hf", "vllm",
    "sglang"), ``placement``, ``rollout_fraction`` (vLLM's gpu_memory_utilization),
    ``sleep_level``, ``cuda_graphs``, ``reference``, ``generations``, ``prompt_len`` (DPO: ``max_length``),
    ``completion_len``, ``mean_completion_len``, ``mean_prompt_len``, ``max_token_len``, ``micro_batch``,
    ``prompts_per_step``, ``rollout_gpus``, ``rollout_tp``, ``reward_model``, ``train_batch``, ``offload_trainer``,
    ``entropy_bonus``; unset, they are the framework's
    (docs/scenario.md § rl). Other keywords are the policy's scenario keys as for
    :func:`gpuplan.estimate` (method, lora, precision, optimizer, num_gpus, tp, zero, ...);
    ``framework`` here is the RL framework, whose trainer the policy gets unless a
    :class:`Scenario` passed as `model` names another. ``largest_micro_batch=True`` reports the
    step at the largest micro-batch that fits (:attr:`RlResult.max_micro_batch`), as
    ``gpuplan rl --max-micro-batch``.
    """
    return _rl_result(_core.rl(_rl_dict(model, gpu, algorithm, framework, kwargs), largest_micro_batch))


def _rl_dict(model: Union[ModelLike, Scenario], gpu: Any, algorithm: Optional[str], framework: Optional[str],
             kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The RL scenario dict of gp.rl's keywords: the policy's scenario keys and an "rl" object."""
    obj: Dict[str, Any] = {}
    if algorithm is not None:
        obj["algorithm"] = algorithm
    if framework is not None:
        obj["framework"] = framework
    _pop_keys(kwargs, RL_KEYS, obj)
    if "rl" in kwargs:
        raise _error("rl", "give the rl object's keys as keywords, or a whole scenario to gp.rl_scenario")
    keys: Dict[str, Any] = dict(kwargs)
    if gpu is not None:
        keys["gpu"] = gpu
    d = _scenario_dict(None, keys, base=model._input) if isinstance(model, Scenario) else _scenario_dict(model, keys)
    d["rl"] = obj
    return d


def rl_scenario(source: Union[Mapping[str, Any], str, "os.PathLike[str]"], *, largest_micro_batch: bool = False) -> RlResult:
    """One RL step from a whole scenario with an "rl" object: a dict in the file's schema,
    JSON text ('{...}') or a file path, read exactly as ``gpuplan rl --scenario FILE``
    (``largest_micro_batch``: as :func:`rl`)."""
    if isinstance(source, Mapping):
        return _rl_result(_core.rl(dict(source), largest_micro_batch))
    src = os.fspath(source)
    text = src if src.lstrip().startswith("{") else _core.read_text_file(src, "scenario")
    return _rl_result(_core.rl_text(text, largest_micro_batch))  # bytes, read once, as Scenario.from_json


@dataclasses.dataclass(frozen=True)
class RlRecommendation(PlanRow):
    """One GPU type of :func:`rl_recommend`: the fewest GPUs at which every phase of the step fits
    with the planning headroom, its step and, where a price is known, its cost."""

    gpu: str  #: the GPU id
    gpus: int  #: training GPUs (1, 2, 4, ...)
    rollout_gpus: int  #: placement separate: the engine's GPUs (0 when co-located)
    peak_phase: str
    device_bytes: float  #: device memory of the peak phase on a training GPU
    capacity_bytes: float  #: the GPU's usable memory
    headroom_bytes: float  #: capacity - device
    headroom_kept_bytes: float  #: what the row had to leave free: max(5% of capacity, 1 GiB)
    step_seconds: float
    tokens_per_second_per_gpu: float  #: prompt + completion tokens per second per GPU (rollout GPUs included)
    price_per_gpu_hour: Optional[float]  #: the cheapest published offer, or the caller's price; None: none known
    cost_per_step: Optional[float]  #: price x all GPUs x step / 3600
    cost_per_million_tokens: Optional[float]  #: cost_per_step over the step's tokens, x 1e6

    device = _bytes_view("device_bytes", "Device memory of the peak phase as Bytes.")
    headroom = _bytes_view("headroom_bytes", "Headroom as Bytes.")
    step = _seconds_view("step_seconds", "The step as Seconds.")


def rl_recommend(model: Union[ModelLike, Scenario], /, *, gpus: Optional[Union[str, Sequence[str]]] = None, max_gpus: int = 64,
                 prices: Optional[Mapping[str, float]] = None, algorithm: str = "grpo", framework: str = "trl",
                 **kwargs: Any) -> List[RlRecommendation]:
    """Which GPU and how many for an RL run, as ``gpuplan rl --recommend``: for each GPU type of
    `gpus` (default every GPU the price catalog rents) the fewest GPUs, 1, 2, 4, ... up to
    `max_gpus`, at which every phase of the step fits with the planning headroom (the larger of
    5% of the usable memory and 1 GiB), cheapest step first where priced (then by step time).
    Prices per GPU-hour: the catalog's cheapest on-demand offer, `prices` ({id: price}) over it.
    The other keywords are :func:`rl`'s (the RL keys, `algorithm`, `framework` and the policy's
    scenario keys) but `gpu` and `num_gpus`, which the recommendation picks. A GPU type that
    fits at no count has no row.
    """
    for key in ("gpu", "num_gpus"):
        if key in kwargs:
            raise _error(f"rl_recommend.{key}", f"rl_recommend picks the GPU and the count (got {kwargs[key]!r}); name GPUs with gpus=[...]")
    ids = None if gpus is None else ([gpus] if isinstance(gpus, str) else [str(g) for g in gpus])
    price_map = {str(k): _number(v, f"rl_recommend.prices.{k}") for k, v in (prices or {}).items()}
    n = _int(max_gpus, "rl_recommend.max_gpus", 1, 4096)
    raw = _core.rl_recommend(_rl_dict(model, None, algorithm, framework, kwargs), ids, n, price_map)
    return [RlRecommendation.from_dict(r) for r in raw["data"]["recommendations"]]
