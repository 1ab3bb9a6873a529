"""gp.serve: the engine's KV pool, max concurrency, largest context and the
throughput–latency curve (C++ serve.hpp), against derivations and the CLI."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

MIB = 2**20
GIB = 2**30
# Llama-3.1-8B: 8,030,261,248 parameters x 2 B (bf16); KV per token = 2 (K, V) x 32 layers
# x 8 kv heads x 128 head dim x 2 B = 131,072 B, so a 16-token vLLM block is 2 MiB.
LLAMA8_WEIGHTS = 8_030_261_248 * 2
LLAMA8_KV_TOKEN = 2 * 32 * 8 * 128 * 2


def vllm_a100(gp, **kw):
    args = dict(gpu="a100-80gb", engine="vllm", prompt_len=1024, output_len=256, precision="bf16-pure")
    args.update(kw)
    return gp.serve("llama-3.1-8b", **args)


def test_vllm_pool_follows_the_budget(gp):
    r = vllm_a100(gp)
    assert r.engine == "vllm" and r.paged and r.fits
    assert r.memory_fraction == 0.9 and r.block_tokens == 16 and r.step_tokens == 8192
    # vllm/v1/worker/gpu_worker.py: pool = 0.9 x capacity - weights - non-torch (0.35 GiB) - the
    # profiled step (8192 tokens x 2 B x (2 x hidden 4096 + 3 x ffn 14336) + 255 sequences of fp32 logits).
    act = 8192 * 2 * (2 * 4096 + 3 * 14336) + 255 * 128256 * 4
    pool = 0.9 * gp.gpu("a100-80gb").usable_memory_bytes - LLAMA8_WEIGHTS - 0.35 * GIB - act
    block = 16 * LLAMA8_KV_TOKEN
    assert block == 2 * MIB
    assert r.pool_blocks == pytest.approx(pool / block, rel=1e-3)
    assert r.pool_bytes == r.pool_blocks * block
    assert r.pool.gib == pytest.approx(r.pool_bytes / GIB)
    assert r.pool_tokens == 16 * r.pool_blocks
    # A request holds 1024 + 256 = 1280 tokens = 80 whole blocks.
    assert r.max_concurrency == r.pool_tokens // 1280
    assert r.pool_concurrency == pytest.approx(r.pool_tokens / 1280, rel=1e-12)
    # One request may take the whole pool, capped by max_position_embeddings (131072).
    assert r.largest_context == min(r.pool_tokens, 131072)


def test_max_concurrency_is_independent_of_the_typed_batch(gp):
    for engine in ("vllm", "hf", "sglang"):
        one = vllm_a100(gp, engine=engine, inference={"batch": 1})
        many = vllm_a100(gp, engine=engine, inference={"batch": 64})
        assert one.max_concurrency == many.max_concurrency > 1, engine
        assert one.pool_blocks == many.pool_blocks, engine
        assert one.largest_context == many.largest_context, engine


def test_curve_throughput_rises_and_latency_does_not_fall(gp):
    for engine in ("vllm", "hf", "tgi"):
        r = vllm_a100(gp, engine=engine)
        c = [p.concurrency for p in r.curve]
        assert c[0] == 1 and c[-1] == r.max_concurrency, engine
        assert c[:-1] == [2**i for i in range(len(c) - 1)], engine
        for a, b in zip(r.curve, r.curve[1:]):
            assert b.tokens_per_second > a.tokens_per_second, (engine, a, b)
            assert b.inter_token_latency_s >= a.inter_token_latency_s, (engine, a, b)
        for p in r.curve:
            assert p.tokens_per_second == pytest.approx(p.concurrency / p.inter_token_latency_s, rel=1e-12)
            assert p.tokens_per_second_per_request == pytest.approx(1 / p.inter_token_latency_s, rel=1e-12)
            assert p.ttft.seconds == p.time_to_first_token_s and p.itl.seconds == p.inter_token_latency_s


def test_single_request_latency_is_the_weight_read(gp):
    r = vllm_a100(gp)
    itl = r.curve[0].inter_token_latency_s
    # Batch 1 decode reads the 16.06 GB of weights per token: at 2039 GB/s x 0.8 achievable,
    # 9.85 ms, + 1 ms of vLLM step overhead + the 1024-token prefill spread over 256 steps
    # (2 x 8.03e9 x 1024 FLOP / ~200 TFLOP/s / 256 = 0.3 ms): between 10.8 and 13 ms.
    assert LLAMA8_WEIGHTS / (2039e9 * 0.8) == pytest.approx(9.85e-3, rel=2e-3)
    assert 10.8e-3 < itl < 13e-3
    # transformers generate() adds the eager launch floor: 32 layers x 45 ops x 12 us = 17.3 ms.
    hf = vllm_a100(gp, engine="hf")
    assert hf.curve[0].inter_token_latency_s == pytest.approx(itl - 1e-3 + 32 * 45 * 12e-6, rel=0.05)


def test_latency_target_gives_the_largest_concurrency_meeting_it(gp):
    r = vllm_a100(gp, latency_target="50ms")
    assert r.latency_target_s == pytest.approx(0.05) and r.latency_target.seconds == pytest.approx(0.05)
    c = r.concurrency_for_target
    assert 1 <= c < r.max_concurrency
    assert vllm_a100(gp, concurrency=c).at.inter_token_latency_s <= 0.05
    assert vllm_a100(gp, concurrency=c + 1).at.inter_token_latency_s > 0.05
    assert vllm_a100(gp, latency_target=0.05).concurrency_for_target == c
    # Below the single-request latency no concurrency meets it.
    assert vllm_a100(gp, latency_target="1ms").concurrency_for_target == 0
    assert vllm_a100(gp).concurrency_for_target is None and vllm_a100(gp).at is None


def test_llama_cpp_has_no_pool_and_gpu_layers_free_memory(gp):
    args = dict(gpu="rtx-4090", engine="llama.cpp", gguf="Q4_K_M", prompt_len=512, output_len=512)
    full = gp.serve("llama-3.1-8b", **args)
    assert not full.paged and full.pool_blocks == 0 and full.pool_bytes == 0
    assert full.fits and 0 < full.largest_context <= 131072
    half = gp.serve("llama-3.1-8b", gpu_layers=16, **args)
    # Half the layers on the CPU: half the GPU's weights and KV per token, so at least as long a context.
    assert half.largest_context >= full.largest_context
    assert half.curve[0].inter_token_latency_s > 5 * full.curve[0].inter_token_latency_s  # 76.8 vs 1008 GB/s


def test_enforce_eager_costs_launches_and_saves_the_graph_pool(gp):
    # vLLM without CUDA graphs (--enforce-eager): each of a layer's 11 decode kernels is
    # dispatched by PyTorch (12 us) instead of replayed from the graph (2.5 us): 32 layers x
    # 11 x 9.5 us = 3.3 ms more per step; the 0.5 GiB graph pool, captured outside the
    # gpu_memory_utilization budget, is not on the device and the KV pool is unchanged.
    args = dict(gpu="a100-80gb", engine="vllm", prompt_len=512, output_len=256)
    graphs = gp.serve("llama-3.1-8b", **args)
    eager = gp.serve("llama-3.1-8b", cuda_graphs=False, **args)
    added = eager.curve[0].inter_token_latency_s - graphs.curve[0].inter_token_latency_s
    assert abs(added - 32 * 11 * 9.5e-6) < 1e-4
    assert eager.pool_bytes == graphs.pool_bytes
    assert abs(graphs.device_bytes - eager.device_bytes - 0.5 * 2**30) < 1e6


def test_agrees_with_the_cli(gp, repo):
    cli = Path(os.environ.get("GPUPLAN_CLI", repo / "build" / "dev" / "bin" / "gpuplan"))
    if not cli.exists():
        pytest.skip(f"the CLI is not built ({cli}); set GPUPLAN_CLI")
    out = subprocess.run([str(cli), "serve", "llama-3.1-8b", "--gpu", "a100-80gb", "--engine", "vllm", "--precision",
                          "bf16-pure", "--prompt-len", "1024", "--output-len", "256", "--latency-target", "50ms",
                          "--concurrency", "3", "--json"], capture_output=True, text=True, check=True).stdout
    r = vllm_a100(gp, latency_target="50ms", concurrency=3)
    assert json.loads(out) == r.to_dict()
    assert r.at.concurrency == 3


def test_typed_result_converts(gp):
    r = vllm_a100(gp, latency_target="50ms", concurrency=3)
    d = r.to_dict()
    assert d["pool_blocks"] == r.pool_blocks and len(d["curve"]) == len(r.curve)
    d["pool_blocks"] = -1  # a copy
    assert r.pool_blocks > 0
    assert r.curve[0].to_dict() == r.to_dict()["curve"][0]
    text = repr(r)
    assert "KV pool" in text and "ITL ≤ 50 ms" in text and "vllm" in text
    html_out = r._repr_html_()
    assert "<table>" in html_out and "throughput" in html_out and html_out.count("<tr>") == len(r.curve) + 2
    assert "```" in r.to_markdown()


def test_to_frame(gp):
    pytest.importorskip("pandas")
    r = vllm_a100(gp)
    df = r.to_frame()
    assert list(df.columns) == ["concurrency", "time_to_first_token_s", "inter_token_latency_s",
                                "tokens_per_second_per_request", "tokens_per_second"]
    assert len(df) == len(r.curve) and df["concurrency"].tolist() == [p.concurrency for p in r.curve]
    assert df.attrs["engine"] == "vllm"


def test_to_frame_without_pandas(gp, monkeypatch):
    r = vllm_a100(gp)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ImportError, match="needs pandas"):
        r.to_frame()


def test_bad_input(gp):
    with pytest.raises(gp.InvalidInputError, match="serve.concurrency"):
        vllm_a100(gp, concurrency=0)
    with pytest.raises(gp.InvalidInputError, match="serve.concurrency"):
        vllm_a100(gp, concurrency=2.5)
    with pytest.raises(gp.ConfigError, match="serve.latency_target"):
        vllm_a100(gp, latency_target="fast")
    for bad in (-0.05, 0.0, math.nan, math.inf):
        with pytest.raises(gp.ConfigError, match="serve.latency_target"):
            vllm_a100(gp, latency_target=bad)
    with pytest.raises(gp.ConfigError, match="serve.latency_target"):
        vllm_a100(gp, latency_target=True)
    with pytest.raises(gp.UnknownNameError, match="scenario.engine"):
        vllm_a100(gp, engine="ollama")
    with pytest.raises(gp.ConfigError, match="only applies to engine llama.cpp"):
        vllm_a100(gp, gguf="Q4_K_M")
    with pytest.raises(gp.ConfigError, match="scenario.inference.prompt_len"):
        vllm_a100(gp, prompt_len=0)
    with pytest.raises(gp.ConfigError, match="given twice"):
        vllm_a100(gp, gen_len=128)


def test_plot_serve_curve(gp):
    pytest.importorskip("matplotlib")
    from gpuplan.plot import _drawn

    c = vllm_a100(gp, latency_target="50ms").concurrency_for_target
    v = vllm_a100(gp, latency_target="50ms", concurrency=c)
    h = vllm_a100(gp, engine="hf")
    fig = gp.plot_serve_curve({"vllm": v, "hf": h})
    # Two curves, the vLLM target line and the ring on its point at the target's concurrency.
    assert _drawn(fig)["lines"] == 4
    assert _drawn(gp.plot_serve_curve([h]))["lines"] == 1
    with pytest.raises(gp.ConfigError, match="plot_serve_curve.results"):
        gp.plot_serve_curve([])


PRICES = {"a100-80gb": 2.0, "l40s": 1.0, "rtx-4060-ti-16gb": 0.3}


def test_recommend_serving_rows_follow_littles_law(gp):
    r = gp.recommend_serving("llama-3.1-8b", requests_per_second=5, prompt_len=512, output_len=256, itl_target="50ms",
                             gpus=["a100-80gb", "l40s", "rtx-4060-ti-16gb"], prices=PRICES,
                             max_tp=2, precision="bf16-pure")
    rows = r.rows
    assert len(rows) == 6  # 3 GPUs x TP 1, 2
    meeting = [o for o in rows if o.meets]
    assert meeting and rows[:len(meeting)] == meeting  # meeting rows first
    for o in meeting:
        assert o.inter_token_latency_s <= 0.05
        # Little's law: concurrency requests in flight, each TTFT + 256 x ITL long.
        rps = o.concurrency / (o.time_to_first_token_s + 256 * o.inter_token_latency_s)
        assert o.requests_per_second == pytest.approx(rps)
        assert o.replicas == math.ceil(5 / rps) and o.gpus == o.replicas * o.tp
        assert o.cost_per_hour == pytest.approx(PRICES[o.gpu] * o.gpus)
        # 5 req/s x 256 tokens x 3600 s = 4.608 M output tokens an hour.
        assert o.cost_per_million_tokens == pytest.approx(o.cost_per_hour / 4.608)
    costs = [o.cost_per_hour for o in meeting]
    assert costs == sorted(costs) and r.best == meeting[0]
    # 16.06 GB of bf16 weights do not fit a 16 GB card alone.
    small = [o for o in rows if o.gpu == "rtx-4060-ti-16gb" and o.tp == 1][0]
    assert not small.meets and small.reason
    assert "requests/s" in repr(r) and "<table>" in r._repr_html_()
    assert r.to_dict()["rows"][0]["gpu"] == rows[0].gpu
    # to_markdown (the _Result base's): the summary fenced, then the table's markdown rows.
    md = r.to_markdown()
    assert md.startswith("```\nllama-3.1-8b served by vllm: 5.000 requests/s") and "| " + meeting[0].gpu + " |" in md


def test_recommend_serving_agrees_with_the_cli(gp, repo):
    cli = Path(os.environ.get("GPUPLAN_CLI", repo / "build" / "dev" / "bin" / "gpuplan"))
    if not cli.exists():
        pytest.skip(f"the CLI is not built ({cli}); set GPUPLAN_CLI")
    out = subprocess.run([str(cli), "recommend", "llama-3.1-8b", "--serve", "--requests-per-second", "3", "--prompt-len",
                          "1024", "--output-len", "128", "--itl-target", "40ms", "--gpus-list", "h100-sxm,a100-80gb",
                          "--price", "h100-sxm=3,a100-80gb=2", "--max-gpus", "4", "--json"],
                         capture_output=True, text=True, check=True).stdout
    r = gp.recommend_serving("llama-3.1-8b", requests_per_second=3, prompt_len=1024, output_len=128, itl_target=0.04,
                             gpus=["h100-sxm", "a100-80gb"], prices={"h100-sxm": 3, "a100-80gb": 2}, max_tp=4)
    assert json.loads(out) == r.to_dict()


def test_recommend_serving_to_frame_and_bad_input(gp):
    pytest.importorskip("pandas")
    r = gp.recommend_serving("llama-3.1-8b", requests_per_second=1, prompt_len=256, output_len=64,
                             gpus=["a100-80gb"], prices={"a100-80gb": 2.0}, max_tp=2)
    df = r.to_frame()
    assert len(df) == 2 and df["tp"].tolist() == [o.tp for o in r.rows] and df.attrs["engine"] == "vllm"
    with pytest.raises(gp.ConfigError, match="requests-per-second"):
        gp.recommend_serving("llama-3.1-8b", requests_per_second=0, gpus=["a100-80gb"])
    with pytest.raises(gp.ConfigError, match="recommend_serving.requests_per_second"):
        gp.recommend_serving("llama-3.1-8b", requests_per_second="many", gpus=["a100-80gb"])
    with pytest.raises(gp.ConfigError, match="recommend_serving.itl_target"):
        gp.recommend_serving("llama-3.1-8b", requests_per_second=1, itl_target="soon", gpus=["a100-80gb"])
    with pytest.raises(gp.UnknownNameError, match="recommend_serving.gpus"):
        gp.recommend_serving("llama-3.1-8b", requests_per_second=1, gpus=["a100-90gb"])
    with pytest.raises(gp.ConfigError, match="recommend_serving.prices"):
        gp.recommend_serving("llama-3.1-8b", requests_per_second=1, gpus=["a100-80gb"], prices={"a100-80gb": -1})


def test_kernel_follows_the_weights_and_the_gpu(gp):
    # kernels.hpp: FP8 W8A8 needs FP8 tensor cores (sm_89+); the A100 runs FP8 weights through Marlin.
    assert vllm_a100(gp).kernel == "unquantised"
    assert vllm_a100(gp, gpu="h100-sxm", quantization={"weights": "fp8"}).kernel.startswith("FP8 W8A8")
    assert vllm_a100(gp, quantization={"weights": "fp8"}).kernel.startswith("FP8 weight-only")
    assert "Marlin" in vllm_a100(gp, quantization={"weights": "int4"}).kernel
    with pytest.raises(gp.ConfigError, match="scenario.quantization.weights"):
        vllm_a100(gp, gpu="v100-sxm2-32gb", quantization={"weights": "int8"})
