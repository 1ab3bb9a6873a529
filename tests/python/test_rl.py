"""gp.rl, gp.rl_scenario and gp.rl_recommend (C++ rl.hpp through io/rl_json.hpp and
io/rl_report.hpp): the keyword arguments, the scenario dict and the CLI's --json give the same
figures; the result's attributes, rows and views; errors name the key."""

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

GRPO = dict(gpu="h100-sxm", num_gpus=8, method="lora", rollout="vllm", rollout_fraction=0.3, sleep_level=1, cuda_graphs=False,
            generations=8, prompt_len=512, completion_len=256, mean_completion_len=200, micro_batch=4, prompts_per_step=64)
GRPO_DICT = {"model": "qwen2.5-7b", "gpu": "h100-sxm", "num_gpus": 8, "method": "lora",
             "rl": {"algorithm": "grpo", "framework": "trl", "rollout": "vllm", "rollout_fraction": 0.3, "sleep_level": 1, "cuda_graphs": False,
                    "generations": 8, "prompt_len": 512, "completion_len": 256, "mean_completion_len": 200,
                    "micro_batch": 4, "prompts_per_step": 64}}
GRPO_FLAGS = ["rl", "qwen2.5-7b", "--gpu", "h100-sxm", "--gpus", "8", "--method", "lora", "--rollout", "vllm",
              "--gpu-memory-utilization", "0.3", "--sleep-level", "1", "--enforce-eager", "--generations", "8", "--prompt-len", "512",
              "--completion-len", "256", "--mean-completion-len", "200", "--micro-batch", "4", "--prompts-per-step", "64"]


def test_kwargs_dict_and_text_agree(gp):
    a = gp.rl("qwen2.5-7b", algorithm="grpo", framework="trl", **GRPO)
    b = gp.rl_scenario(GRPO_DICT)
    c = gp.rl_scenario(json.dumps(GRPO_DICT))
    assert a.to_dict() == b.to_dict() == c.to_dict()
    assert repr(a) == repr(b)


def test_agrees_with_the_cli(gp, repo):
    cli = Path(os.environ.get("GPUPLAN_CLI", repo / "build" / "dev" / "bin" / "gpuplan"))
    if not cli.exists():
        pytest.skip(f"the CLI is not built ({cli}); set GPUPLAN_CLI")
    proc = subprocess.run([str(cli), *GRPO_FLAGS, "--json"], capture_output=True, text=True)
    r = gp.rl("qwen2.5-7b", **GRPO)
    assert proc.returncode == (0 if r.fits else 1)
    assert json.loads(proc.stdout) == r.to_dict()
    text = subprocess.run([str(cli), *GRPO_FLAGS], capture_output=True, text=True).stdout
    assert text == repr(r)


def test_figures(gp):
    r = gp.rl("qwen2.5-7b", **GRPO)
    assert [p.name for p in r.phases] == ["rollout", "scoring", "actor update"]
    assert r.peak.device_bytes == max(p.device_bytes for p in r.phases) == r.device_bytes
    assert r.peak.name == r.peak_phase and r.peak.peak
    assert math.isclose(r.headroom_bytes, r.capacity_bytes - r.device_bytes)
    assert r.fits == (r.headroom_bytes >= 0 and r.rollout_fits)
    assert math.isclose(r.step_seconds, r.rollout_seconds + r.scoring_seconds + r.training_seconds + r.transfer_seconds)
    assert r.sequences_per_step == 64 * 8 and r.generations == 8 and r.mean_completion_len == 200
    assert math.isclose(r.tokens_per_second_per_gpu, 512 * (512 + 200) / r.step_seconds / 8)
    # Sleep level 1: the engine's budget (0.3 of the GPU + its CUDA graph pool) only while it generates.
    assert math.isclose(r.engine_budget_bytes, r.phases[0].engine_bytes)
    assert r.phases[-1].engine_bytes < r.engine_budget_bytes / 10
    assert r.device.gib == pytest.approx(r.device_bytes / 2**30)
    assert r.step.seconds == pytest.approx(r.step_seconds)
    # The actor's own training run is a Scenario, its memory the estimate's.
    assert r.scenario.seq_len == 768 and r.scenario.micro_batch == 4
    assert r.policy_memory["peak_allocated_bytes"] == pytest.approx(gp.estimate(r.scenario).memory.peak_allocated_bytes)
    frame = r.to_frame()
    assert list(frame["name"]) == ["rollout", "scoring", "actor update"] and frame.attrs["framework"] == "trl"
    assert "memory of a training GPU" in r._repr_html_() and "step " in r._repr_html_()
    # The written RL scenario reads back to the same answer.
    assert gp.rl_scenario(r.rl_scenario).to_dict() == r.to_dict()


def test_suggestions_when_it_does_not_fit(gp):
    r = gp.rl("qwen2.5-7b", gpu="h100-sxm", num_gpus=8)  # full fine-tuning under DDP
    assert not r.fits and r.suggestions
    fits = [s.fits for s in r.suggestions]
    assert fits == sorted(fits, reverse=True)
    lora = next(s for s in r.suggestions if s.change == "method = lora")
    assert lora.fits and lora.to_result().device_bytes == pytest.approx(lora.device_bytes)


def test_a_scenario_as_the_policy(gp):
    s = gp.Scenario("qwen2.5-7b", gpu="h100-sxm", num_gpus=8, method="lora", framework="deepspeed", zero=2)
    r = gp.rl(s, algorithm="dpo", max_length=512)
    assert r.trainer == "deepspeed" and r.algorithm == "dpo" and r.prompt_len == 512
    assert [p.name for p in r.phases] == ["actor update"] and r.rollout_seconds == 0


def test_verl_fused_kernels_from_a_policy_scenario(gp):
    # verl's use_fused_kernels is the policy's fused_linear_loss: the scoring pass holds one
    # 512-token chunk's fp32 logits, softmax, log-softmax and a temporary (16 B per logit) where
    # the in-place path held every token's 16-bit logits (docs/rl.md).
    kw = dict(framework="verl", micro_batch=32)
    plain = gp.rl(gp.Scenario("llama-3.2-1b", gpu="h100-sxm"), **kw)
    fused = gp.rl(gp.Scenario("llama-3.2-1b", gpu="h100-sxm", fused_linear_loss=True), **kw)
    settings = [r.scenario.to_dict() for r in (plain, fused)]
    assert settings[1]["fused_linear_loss"] and not settings[1]["inplace_loss"] and settings[0]["inplace_loss"]
    tokens = 32 * fused.scenario.seq_len
    scoring = [r.phases[1].allocated_bytes for r in (plain, fused)]
    assert scoring[0] - scoring[1] == pytest.approx(128256 * (2 * tokens - 16 * 512), rel=1e-9)
    assert fused.phases[2].name == "actor update" and fused.phases[2].allocated_bytes < plain.phases[2].allocated_bytes


def test_errors_name_the_key(gp):
    with pytest.raises(gp.UnknownNameError, match=r"^scenario\.rl\.algorithm: must be one of dpo, grpo, ppo"):
        gp.rl("qwen2.5-7b", algorithm="sft")
    with pytest.raises(gp.InvalidInputError, match=r"^scenario\.rl\.generations: .*\(got -1\)"):
        gp.rl("qwen2.5-7b", generations=-1)
    with pytest.raises(gp.InvalidInputError, match=r"^scenario\.rl\.rollout_fraction: must be a finite number"):
        gp.rl("qwen2.5-7b", rollout="vllm", rollout_fraction=float("nan"))
    with pytest.raises(gp.InvalidInputError, match=r"^scenario\.rl\.generations: only applies to grpo and ppo"):
        gp.rl("qwen2.5-7b", algorithm="dpo", generations=4)
    with pytest.raises(gp.InvalidInputError, match=r"^scenario\.seq_len: .*rl\.prompt_len"):
        gp.rl("qwen2.5-7b", seq_len=4096)
    with pytest.raises(gp.UnknownNameError, match=r"^scenario\.rl\.temperature: unknown key"):
        gp.rl_scenario({"model": "qwen2.5-7b", "rl": {"temperature": 1.0}})


def test_largest_micro_batch_agrees_with_the_cli(gp, repo):
    # The largest micro-batch that fits: the step is reported at it, one more sequence does not fit,
    # and `gpuplan rl --max-micro-batch --json` gives the same figures.
    r = gp.rl("qwen2.5-7b", largest_micro_batch=True, **GRPO)
    n = r.max_micro_batch
    assert isinstance(n, int) and n > GRPO["micro_batch"]
    assert r.fits
    assert r.to_dict() == gp.rl("qwen2.5-7b", **{**GRPO, "micro_batch": n}).to_dict() | {"max_micro_batch": n}
    assert not gp.rl("qwen2.5-7b", **{**GRPO, "micro_batch": n + 1}).fits
    assert gp.rl_scenario(json.dumps(GRPO_DICT), largest_micro_batch=True).max_micro_batch == n
    assert gp.rl("qwen2.5-7b", **GRPO).max_micro_batch is None
    cli = Path(os.environ.get("GPUPLAN_CLI", repo / "build" / "dev" / "bin" / "gpuplan"))
    if not cli.exists():
        pytest.skip(f"the CLI is not built ({cli}); set GPUPLAN_CLI")
    proc = subprocess.run([str(cli), *GRPO_FLAGS, "--max-micro-batch", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == r.to_dict()


def test_largest_micro_batch_of_a_token_bounded_run_is_refused(gp):
    with pytest.raises(gp.InvalidInputError, match=r"^scenario\.rl\.max_token_len: micro-batches are token-bounded"):
        gp.rl("qwen2.5-7b", framework="verl", gpu="h100-sxm", method="lora", max_token_len=8192, largest_micro_batch=True)


RECOMMEND_GPUS = ["h100-sxm", "a100-40gb", "rtx-4090"]


def test_rl_recommend_agrees_with_the_cli(gp, repo):
    rows = gp.rl_recommend("qwen2.5-7b", gpus=RECOMMEND_GPUS, framework="verl", generations=8)
    assert rows and all(isinstance(r, gp.RlRecommendation) for r in rows)
    for r in rows:
        assert r.headroom_bytes >= max(0.05 * r.capacity_bytes, 2**30) == pytest.approx(r.headroom_kept_bytes)
        assert r.gpus & (r.gpus - 1) == 0 and r.step.seconds == pytest.approx(r.step_seconds)
    # Each row is the plain run's estimate at its count.
    first = rows[0]
    one = gp.rl("qwen2.5-7b", gpu=first.gpu, num_gpus=first.gpus, framework="verl", generations=8)
    assert one.headroom_bytes == pytest.approx(first.headroom_bytes) and one.step_seconds == pytest.approx(first.step_seconds)
    cli = Path(os.environ.get("GPUPLAN_CLI", repo / "build" / "dev" / "bin" / "gpuplan"))
    if not cli.exists():
        pytest.skip(f"the CLI is not built ({cli}); set GPUPLAN_CLI")
    flags = ["rl", "qwen2.5-7b", "--framework", "verl", "--generations", "8", "--recommend", "--gpus-list", ",".join(RECOMMEND_GPUS)]
    proc = subprocess.run([str(cli), *flags, "--json"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["recommendations"] == [r.to_dict() for r in rows]
    # The catalog's candidates and a caller's price, likewise.
    both = subprocess.run([str(cli), "rl", "qwen2.5-7b", "--framework", "verl", "--method", "lora", "--recommend", "--max-gpus", "8",
                           "--price", "h100-sxm=1.5", "--json"], capture_output=True, text=True)
    mine = gp.rl_recommend("qwen2.5-7b", framework="verl", method="lora", max_gpus=8, prices={"h100-sxm": 1.5})
    assert json.loads(both.stdout)["recommendations"] == [r.to_dict() for r in mine]
    assert [r.price_per_gpu_hour for r in mine if r.gpu == "h100-sxm"] == [1.5]


def test_rl_recommend_errors_name_the_key(gp):
    with pytest.raises(gp.InvalidInputError, match=r"^scenario\.rl\.generations: .*\(got -1\)"):
        gp.rl_recommend("qwen2.5-7b", gpus=["h100-sxm"], generations=-1)
    with pytest.raises(gp.UnknownNameError, match=r"^rl_recommend\.gpus: .*nosuchgpu"):
        gp.rl_recommend("qwen2.5-7b", gpus=["nosuchgpu"])
    with pytest.raises(gp.InvalidInputError, match=r"^rl_recommend\.max_gpus: .*\(got 0\)"):
        gp.rl_recommend("qwen2.5-7b", max_gpus=0)
    with pytest.raises(gp.UnknownNameError, match=r"^scenario\.temperature: unknown key"):
        gp.rl_recommend("qwen2.5-7b", temperature=1.0)
    with pytest.raises(gp.InvalidInputError, match=r"^rl_recommend\.num_gpus: "):
        gp.rl_recommend("qwen2.5-7b", num_gpus=8)
    with pytest.raises(gp.InvalidInputError, match=r"^rl_recommend\.prices\.h100-sxm: "):
        gp.rl_recommend("qwen2.5-7b", prices={"h100-sxm": "cheap"})
