"""Serving as the engines do it: gp.serve (C++ serve.hpp).

``gp.serve(model, gpu=..., engine="vllm", prompt_len=1024, output_len=256,
concurrency=..., latency_target="50ms")`` returns a :class:`ServeResult`: the KV pool
a paged engine (vLLM, SGLang, TGI) builds at start-up in blocks and tokens, the most
requests of prompt + output tokens it holds (independent of any typed batch), the
longest single request that fits, the throughput–latency curve over concurrency
1, 2, 4, …, max as :class:`ServePoint` rows, and the most requests whose inter-token
latency meets a target. It prints as ``gpuplan serve`` does, renders as an HTML table
in a notebook, converts with ``to_dict()`` (the CLI's ``--json``) and ``to_frame()``
(the curve as a pandas DataFrame). docs/serving.md derives every figure.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _core
from ._api import Scenario, _scenario_dict
from ._catalog import ModelLike
from ._helpers import _error, _int, _pop_keys, _seconds_view
from ._quantity import Bytes, Seconds
from ._results import PlanRow, _TableResult

__all__ = ["ServePoint", "ServeResult", "serve", "ServeOption", "ServeRecommendation", "recommend_serving"]

#: Keywords of gp.serve that are keys of the scenario's "inference" object (output_len is gen_len).
_INFERENCE_KEYS = ("prompt_len", "gen_len", "kv_cache_dtype", "max_batched_tokens", "gguf", "gpu_layers", "cuda_graphs",
                   "memory_fraction")


@dataclasses.dataclass(frozen=True)
class ServePoint(PlanRow):
    """One point of the throughput–latency curve: one request's view at `concurrency`
    requests in flight (steady state)."""

    concurrency: int
    time_to_first_token_s: float
    inter_token_latency_s: float
    tokens_per_second_per_request: float  #: 1 / inter-token latency
    tokens_per_second: float  #: all requests of one replica: concurrency / inter-token latency

    ttft = _seconds_view("time_to_first_token_s", "Time to first token as Seconds.")
    itl = _seconds_view("inter_token_latency_s", "Inter-token latency as Seconds.")


class ServeResult(_TableResult):
    """``gp.serve(...)``: the engine's KV pool, the limits it sets and the
    throughput–latency curve. ``repr`` is the text of ``gpuplan serve``;
    ``to_dict()`` its ``--json``; ``to_frame()`` the curve as a DataFrame, one row per
    concurrency (the point at `concurrency`, when asked for, is not among them: see ``at``)."""

    __slots__ = ()
    _ROW = ServePoint
    _FRAME_FIELDS = True
    _HTML_HEAD = ("summary", "lines")

    engine = property(lambda self: self._data()["engine"], doc="The serving engine (hf, vllm, sglang, tgi, llama.cpp).")
    kernel = property(lambda self: self._data()["kernel"],
                      doc="The matmul kernel the engine runs for the weight format on the GPU (FP8 W8A8, Marlin, ...).")
    paged = property(lambda self: bool(self._data()["paged"]),
                     doc="Whether the engine holds the KV cache in a pool of fixed-size blocks (vLLM, SGLang, TGI).")
    memory_fraction = property(lambda self: self._data()["memory_fraction"],
                               doc="The engine's memory budget as a share of the GPU (vLLM gpu_memory_utilization).")
    step_tokens = property(lambda self: self._data()["step_tokens"],
                           doc="Tokens per engine step: the profiled peak and the prefill chunk.")
    pool_bytes = property(lambda self: self._data()["pool_bytes"], doc="The KV pool per GPU, bytes (0 without a pool).")
    pool = property(lambda self: Bytes(self.pool_bytes), doc="The KV pool per GPU as Bytes.")
    block_tokens = property(lambda self: self._data()["block_tokens"], doc="Tokens per KV block (vLLM block_size).")
    pool_blocks = property(lambda self: self._data()["pool_blocks"], doc="Blocks in the pool (vLLM's '# GPU blocks').")
    pool_tokens = property(lambda self: self._data()["pool_tokens"],
                           doc="Tokens the pool holds (vLLM's 'GPU KV cache size: N tokens').")
    pool_concurrency = property(lambda self: self._data()["pool_concurrency"],
                                doc="Pool tokens / (prompt + output): vLLM's 'Maximum concurrency ... x'.")
    max_concurrency = property(lambda self: self._data()["max_concurrency"],
                               doc="Whole requests of prompt + output tokens that fit at once.")
    largest_context = property(lambda self: self._data()["largest_context"],
                               doc="The longest single request (prompt + output tokens) that fits.")
    fits = property(lambda self: bool(self._data()["fits"]), doc="Whether the engine fits on the GPU at all.")
    device_bytes = property(lambda self: self._data()["device_bytes"], doc="Device memory per GPU, bytes.")
    device = property(lambda self: Bytes(self.device_bytes), doc="Device memory per GPU as Bytes.")

    @property
    def curve(self) -> List[ServePoint]:
        """The throughput–latency curve: concurrency 1, 2, 4, …, max_concurrency."""
        return [ServePoint.from_dict(p) for p in self._data()["curve"]]

    @property
    def at(self) -> Optional[ServePoint]:
        """The point at the `concurrency` asked for (None when none was)."""
        p = self._data().get("at")
        return None if p is None else ServePoint.from_dict(p)

    @property
    def latency_target_s(self) -> Optional[float]:
        """The inter-token latency target in seconds (None when none was given)."""
        return self._data().get("latency_target_s")

    @property
    def latency_target(self) -> Optional[Seconds]:
        """The inter-token latency target as Seconds."""
        t = self.latency_target_s
        return None if t is None else Seconds(t)

    @property
    def concurrency_for_target(self) -> Optional[int]:
        """The most concurrent requests whose inter-token latency meets the target
        (0: not even one; None: no target given)."""
        return self._data().get("concurrency_for_target")

    def _rows(self) -> List[ServePoint]:
        return self.curve

    def _frame_attrs(self) -> Dict[str, Any]:
        return {"engine": self.engine, "model": self.scenario.model.name}


def serve(model: Optional[Union[ModelLike, Scenario]] = None, /, *, gpu: Any = None, engine: Optional[str] = None,
          prompt_len: Optional[int] = None, output_len: Optional[int] = None, concurrency: Optional[int] = None,
          latency_target: Union[None, float, str] = None, **kwargs: Any) -> ServeResult:
    """Serving as the engine does it: KV pool, max concurrency, largest context and the
    throughput–latency curve.

    `engine` is hf (transformers generate, the default), vllm, sglang, tgi or llama.cpp;
    `prompt_len` and `output_len` are the tokens of one request; `concurrency` adds the
    point at that many requests (``.at``); `latency_target` (seconds, or "50ms", "0.05s")
    asks for the most requests whose inter-token latency meets it. Other keywords are
    scenario keys as for :func:`gpuplan.estimate`; the serving keys ``gguf``,
    ``gpu_layers``, ``max_batched_tokens``, ``kv_cache_dtype``, ``memory_fraction`` (vLLM's
    ``--gpu-memory-utilization``) and ``cuda_graphs`` (False: vLLM's ``--enforce-eager``) may
    be given flat.
    `model` may be a :class:`Scenario` (its keys, then these overrides).
    """
    s = _serving_scenario(model, gpu, engine, prompt_len, output_len, kwargs)
    return _serve_run(s, concurrency, latency_target)


def _serving_scenario(model: Any, gpu: Any, engine: Optional[str], prompt_len: Optional[int], output_len: Optional[int],
                      kwargs: Dict[str, Any]) -> Scenario:
    """The scenario of a serving call: workload infer, the engine and the request's tokens."""
    inference: Dict[str, Any] = {}
    if prompt_len is not None:
        inference["prompt_len"] = prompt_len
    if output_len is not None:
        if kwargs.get("gen_len") is not None:
            raise _error("scenario.inference.gen_len", "given twice (as output_len= and gen_len=)")
        inference["gen_len"] = output_len
    _pop_keys(kwargs, _INFERENCE_KEYS, inference)
    keys: Dict[str, Any] = dict(kwargs)
    keys["workload"] = "infer"
    if gpu is not None:
        keys["gpu"] = gpu
    if engine is not None:
        keys["engine"] = engine
    if isinstance(model, Scenario):
        d = _scenario_dict(None, keys, base=model._input)
    else:
        d = _scenario_dict(model, keys)
    if inference:
        merged = dict(d.get("inference") or {})
        merged.update(inference)
        d["inference"] = merged
    return Scenario.from_dict(d)


def _serve_run(s: Scenario, concurrency: Optional[int], latency_target: Union[None, float, str]) -> ServeResult:
    target: Optional[float] = None
    if latency_target is not None:
        if isinstance(latency_target, str):
            target = float(_core.parse_latency(latency_target, "serve.latency_target"))
        elif isinstance(latency_target, bool) or not isinstance(latency_target, numbers.Real):
            raise _error("serve.latency_target", f"must be seconds or a duration such as '50ms' (got {latency_target!r})")
        else:
            target = float(latency_target)  # checked finite and positive in C++
    conc = None if concurrency is None else _int(concurrency, "serve.concurrency", 1, 1 << 40)
    return ServeResult(_core.serve(s._run, target, conc), s)


@dataclasses.dataclass(frozen=True)
class ServeOption(PlanRow):
    """One GPU type at one tensor-parallel size for a serving workload
    (plan/serve_recommend.hpp)."""

    gpu: str
    tp: int  #: GPUs per replica
    meets: bool  #: fits and meets the inter-token latency target
    reason: str  #: why not, when not `meets`
    max_concurrency: int  #: requests of prompt + output tokens the memory holds per replica
    concurrency: int  #: requests in flight per replica at the target
    time_to_first_token_s: float
    inter_token_latency_s: float
    tokens_per_second: float  #: output tokens/s of one replica
    requests_per_second: float  #: completed requests/s of one replica: concurrency / (TTFT + output x ITL)
    replicas: int  #: replicas the request rate needs
    gpus: int  #: replicas x tp
    price_per_gpu_hour: Optional[float]
    cost_per_hour: Optional[float]
    cost_per_million_tokens: Optional[float]  #: per million output tokens at the workload's rate

    ttft = _seconds_view("time_to_first_token_s", "Time to first token as Seconds.")
    itl = _seconds_view("inter_token_latency_s", "Inter-token latency as Seconds.")


class ServeRecommendation(_TableResult):
    """``gp.recommend_serving(...)``: GPU types x TP sizes for a request rate under an
    inter-token latency target, cheapest first. ``rows`` are :class:`ServeOption`;
    ``to_frame()`` is a DataFrame of them, one per GPU x TP; ``to_dict()`` is
    ``gpuplan recommend --serve --json``."""

    __slots__ = ()
    _ROW = ServeOption
    _FRAME_FIELDS = True
    _HTML_HEAD = ("summary", "div")

    @property
    def rows(self) -> List[ServeOption]:
        """Every GPU x TP tried: the ones meeting the target first, cheapest first."""
        return [ServeOption.from_dict(r) for r in self._data()["rows"]]

    @property
    def best(self) -> Optional[ServeOption]:
        """The cheapest row meeting the target (None when none does)."""
        rows = [r for r in self.rows if r.meets]
        return rows[0] if rows else None

    def _rows(self) -> List[ServeOption]:
        return self.rows

    def _frame_attrs(self) -> Dict[str, Any]:
        return {"engine": self._data()["engine"], "model": self._data()["model"]}


def recommend_serving(model: Optional[Union[ModelLike, Scenario]] = None, /, *, requests_per_second: float,
                      prompt_len: Optional[int] = None, output_len: Optional[int] = None,
                      itl_target: Union[float, str] = "50ms", engine: str = "vllm",
                      gpus: Optional[Sequence[str]] = None, prices: Optional[Mapping[str, float]] = None,
                      max_tp: int = 8, top_k: int = 10, **kwargs: Any) -> ServeRecommendation:
    """Which GPU and how many to serve `requests_per_second` requests of `prompt_len` +
    `output_len` tokens with an inter-token latency of at most `itl_target` (seconds, or
    "50ms"). For each GPU (default: every catalog GPU with a price) at TP 1, 2, 4, ...
    `max_tp`: the most requests in flight per replica that meet the target, the requests/s
    a replica then completes, the replicas needed, and the cost per hour and per million
    output tokens (`prices` per GPU-hour by id override the catalog's)."""
    if isinstance(requests_per_second, bool) or not isinstance(requests_per_second, numbers.Real):
        raise _error("recommend_serving.requests_per_second", f"must be a number (got {requests_per_second!r})")
    if isinstance(itl_target, str):
        target = float(_core.parse_latency(itl_target, "recommend_serving.itl_target"))
    elif isinstance(itl_target, bool) or not isinstance(itl_target, numbers.Real):
        raise _error("recommend_serving.itl_target", f"must be seconds or a duration such as '50ms' (got {itl_target!r})")
    else:
        target = float(itl_target)
    s = _serving_scenario(model, None, engine, prompt_len, output_len, kwargs)
    ids = [str(g) for g in (gpus or [])]
    price_map: Dict[str, float] = {}
    for k, v in (prices or {}).items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise _error(f"recommend_serving.prices.{k}", f"must be a number (got {v!r})")
        price_map[str(k)] = float(v)
    r = _core.recommend_serving(s._run, float(requests_per_second), target, ids, price_map,
                                _int(max_tp, "recommend_serving.max_tp", 1, 64), _int(top_k, "recommend_serving.top_k", 1, 100000))
    return ServeRecommendation(r, s)
