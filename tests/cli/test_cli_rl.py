#!/usr/bin/python3
"""CLI tests of `gpuplan rl` (RL post-training, include/gpuplan/rl.hpp): figures recomputed
from its --json, the text report, the scenario file's "rl" object, and hostile input (one
stderr line naming the flag or key, exit 2).

Usage: test_cli_rl.py BINARY VERSION CASE (registered one case per CTest test by
tests/cli/CMakeLists.txt); the helpers are test_cli.py's.
"""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import CASE, expect, expect_error, run  # noqa: E402

GRPO_TRL = ("rl", "qwen2.5-7b", "--algorithm", "grpo", "--framework", "trl", "--gpu", "h100-sxm", "--gpus", "8")
GRPO_VERL = ("rl", "qwen2.5-7b", "--algorithm", "grpo", "--framework", "verl", "--gpu", "h100-sxm", "--gpus", "8")


def rl_json(*args):
    rc, out, err = run(*args, "--json")
    expect(rc in (0, 1), f"{args}: exit 0 or 1", rc, out, err)
    j = json.loads(out)
    expect(rc == (0 if j["fits"] else 1), f"{args}: exit code follows fits", rc, out, err)
    return j


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def check_figures(j, what):
    """Every figure the JSON derives, recomputed from the others."""
    phases = j["phases"]
    peak = max(phases, key=lambda p: p["device_bytes"])
    expect(j["peak_phase"] == peak["name"] and [p["name"] for p in phases if p["peak"]] == [peak["name"]],
           f"{what}: the peak is the phase with the most device memory", out=json.dumps(phases))
    expect(close(j["device_bytes"], peak["device_bytes"]), f"{what}: device = the peak phase's", out=json.dumps(j)[:2000])
    expect(close(j["headroom_bytes"], j["capacity_bytes"] - j["device_bytes"]), f"{what}: headroom = capacity - device")
    expect(j["fits"] == (j["headroom_bytes"] >= 0 and j["rollout_fits"]), f"{what}: fits = headroom >= 0 and the engine holds a sequence")
    expect(close(j["peak_reserved_bytes"], max(p["reserved_bytes"] for p in phases)), f"{what}: peak reserved")
    for p in phases:
        # Device = CUDA context + the trainer's pool + the engine: never below pool + engine.
        expect(p["device_bytes"] >= p["reserved_bytes"] + p["engine_bytes"] - 1 and p["reserved_bytes"] >= p["allocated_bytes"] - 1,
               f"{what}: {p['name']}: device >= reserved + engine >= allocated + engine", out=json.dumps(p))
    parts = j["rollout_seconds"] + j["scoring_seconds"] + j["training_seconds"] + j["transfer_seconds"]
    expect(close(j["step_seconds"], parts), f"{what}: step = rollout + scoring + training + transfers", out=json.dumps(j)[:1500])
    seqs, tokens = j["sequences_per_step"], j["prompt_len"] + j["mean_completion_len"]
    rollout_gpus = (j["scenario"]["rl"].get("rollout_gpus") or j["scenario"]["num_gpus"]) if j["placement"] == "separate" else 0
    expect(j["rollout_gpus"] == rollout_gpus and j["gpus"] == j["scenario"]["num_gpus"] + rollout_gpus,
           f"{what}: GPUs = training + rollout GPUs (separate: as many as train when unset)")
    gpus = j["gpus"]
    expect(close(j["tokens_per_second_per_gpu"], seqs * tokens / j["step_seconds"] / gpus, 1e-6),
           f"{what}: tokens/s/GPU = sequences x (prompt + mean completion) / step / GPUs")


def case_rl_figures():
    j = rl_json(*GRPO_TRL)
    check_figures(j, "grpo trl")
    expect([p["name"] for p in j["phases"]] == ["rollout", "scoring", "actor update"], "GRPO's three phases")
    # TRL's GRPO defaults: transformers generate, no reference (beta 0), 8 generations of 512 + 256 tokens,
    # per-device batch 8: the step trains 8 x 8 GPUs = 64 sequences.
    expect((j["rollout"], j["reference"], j["generations"], j["prompt_len"], j["completion_len"], j["sequences_per_step"]) ==
           ("hf", False, 8, 512, 256, 64), "TRL's defaults", out=json.dumps(j)[:1500])
    expect(j["trainer"] == "hf" and j["policy"]["scenario"]["seq_len"] == 768 and j["policy"]["scenario"]["loss_tokens"] == 256,
           "the actor trains prompt + completion, logits for the completion", out=json.dumps(j["policy"]["scenario"]))
    # Full fine-tuning of 7.6 B parameters under DDP: 16 B/param of states alone pass 80 GiB.
    expect(not j["fits"] and j["policy"]["memory"]["optimizer_bytes"] > 50 * 2**30, "full 7B under DDP does not fit")
    sug = j["suggestions"]
    expect(sug and [s["fits"] for s in sug] == sorted((s["fits"] for s in sug), reverse=True), "suggestions: those that fit first")
    expect(any(s["change"] == "method = lora" and s["fits"] for s in sug), "LoRA fits", out=json.dumps(sug)[:3000])
    for s in sug:  # each suggestion's scenario, run again, gives its figures
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "s.json")
            with open(f, "w") as h:
                json.dump(s["scenario"], h)
            again = rl_json("rl", "--scenario", f)
        expect(close(again["device_bytes"], s["device_bytes"]) and again["fits"] == s["fits"], f"{s['change']} re-runs the same")


def case_rl_frameworks():
    v = rl_json(*GRPO_VERL)
    check_figures(v, "grpo verl")
    # verl: FSDP full shard, vLLM at 0.5 asleep (level 2) while training, reference on the CPU, 1024 prompts x n 5.
    expect((v["trainer"], v["rollout"], v["rollout_fraction"], v["sequences_per_step"], v["reference_bytes"]) ==
           ("fsdp", "vllm", 0.5, 5120, 0.0) and v["scenario"]["parallel"]["zero"] == 3, "verl's defaults", out=json.dumps(v)[:2000])
    on, off = v["phases"][0]["engine_bytes"], v["phases"][-1]["engine_bytes"]
    expect(close(on, v["engine_budget_bytes"]) and off < on / 10, "the engine sleeps while the actor trains")
    expect(close(on, 0.5 * v["capacity_bytes"] + off, 1e-6), "engine budget = fraction x usable + the CUDA graph pool")
    p = rl_json("rl", "qwen2.5-7b", "--algorithm", "ppo", "--framework", "trl", "--method", "lora", "--gpu", "h100-sxm",
                "--gpus", "8", "--rollout", "vllm")
    check_figures(p, "ppo trl")
    expect([x["name"] for x in p["phases"]] == ["rollout", "scoring", "actor update", "critic update"] and p["critic"] and
           p["reward_model"] and p["critic_bytes"] > 0 and p["reward_bytes"] > 0, "PPO keeps a critic and a reward model")
    expect(p["reference"] and p["reference_bytes"] == 0, "with LoRA the reference is the base, no copy")
    expect(p["generation_gathered_bytes"] == 0, "a vLLM rollout gathers nothing for transformers' generate")
    # TRL's transformers generate under ZeRO-3 gathers policy and value model whole (ds3_gather_for_generation):
    # at least the policy's 16-bit weights, and counted in the rollout phase.
    z = rl_json("rl", "llama-3.2-1b", "--algorithm", "ppo", "--framework", "trl", "--gpu", "a100-80gb", "--gpus", "8", "--zero", "3")
    check_figures(z, "ppo trl zero3")
    expect(z["generation_gathered_bytes"] > 2 * z["model"]["parameters"] and
           z["phases"][0]["allocated_bytes"] > z["generation_gathered_bytes"], "ZeRO-3 generate gathers the trained models",
           out=json.dumps({k: z[k] for k in ("generation_gathered_bytes", "model")}))
    o = rl_json("rl", "qwen2.5-7b", "--algorithm", "ppo", "--framework", "openrlhf", "--gpu", "h100-sxm", "--gpus", "8")
    check_figures(o, "ppo openrlhf")
    expect(o["placement"] == "separate" and o["rollout_device_bytes"] > 0 and o["critic_bytes"] == 0 and o["phases"][0]["engine_bytes"] == 0,
           "OpenRLHF: engine, critic and reward model on GPUs of their own", out=json.dumps(o)[:2000])
    # One 16 GB card cannot hold Llama-3.1-8B's 16-bit weights and a KV pool: the rollout GPU is the
    # verdict, and splitting the engine over two GPUs is offered and gives a finite step.
    t = rl_json("rl", "llama-3.1-8b", "--framework", "openrlhf", "--method", "lora", "--gpu", "t4", "--gpus", "8",
                "--rollout-gpus", "1")
    expect(not t["fits"] and not t["rollout_fits"] and t["step_seconds"] is None and t["rollout_gpus"] == 1 and t["gpus"] == 9,
           "the rollout GPU decides the verdict", out=json.dumps({k: t[k] for k in ("fits", "rollout_fits", "gpus")}))
    tp = [s for s in t["suggestions"] if s["change"] == "rl.rollout_tp = 2, rl.rollout_gpus = 2"]
    expect(tp and tp[0]["step_seconds"] is not None, "a wider engine is offered", out=json.dumps(t["suggestions"])[:2000])
    d = rl_json("rl", "qwen2.5-7b", "--algorithm", "dpo", "--method", "lora", "--gpu", "h100-sxm", "--micro-batch", "2",
                "--max-length", "1024")
    check_figures(d, "dpo")
    expect([x["name"] for x in d["phases"]] == ["actor update"] and d["rollout_seconds"] == 0 and d["sequences_per_step"] == 4 and
           d["policy"]["scenario"]["micro_batch"] == 4, "DPO: one phase, chosen + rejected = 2 sequences a pair", out=json.dumps(d)[:1500])


def case_rl_text():
    rc, out, err = run(*GRPO_TRL)
    expect(rc == 1 and "DOES NOT FIT: the actor update phase peaks at" in out and "actor update *" in out, "verdict, peak marked",
           rc, out, err)
    expect("What lowers the peak" in out and "method = lora" in out and "step " in out and "tokens/s per GPU" in out,
           "hints and the step", rc, out, err)
    rc, out, err = run(*GRPO_VERL)
    expect(rc == 0 and "FITS: the rollout phase peaks at" in out and "headroom" in out and "What lowers" not in out, "verl fits",
           rc, out, err)
    expect("reference on the CPU between uses" in out and "while generating" in out and "trainer fsdp" in out, "what each model holds",
           rc, out, err)
    rc, out, err = run(*GRPO_VERL, "--format", "markdown")
    expect(rc == 0 and "**FITS**" in out and "| Phase" in out, "markdown", rc, out, err)
    rc, out, err = run("rl", "--help")
    expect(rc == 0 and "Examples:" in out and "Exit codes: 0 ok" in out and "--framework" in out and "nemo-rl" in out,
           "rl --help", rc, out, err)
    rc, out, err = run("completion", "bash")
    expect(rc == 0 and " rl" in out and "--algorithm)" in out, "completion lists rl", rc, out, err)


def case_rl_scenario_file():
    scen = {"model": "qwen2.5-7b", "gpu": "h100-sxm", "num_gpus": 8, "method": "lora",
            "rl": {"algorithm": "grpo", "framework": "trl", "rollout": "vllm", "placement": "colocated", "rollout_fraction": 0.3,
                   "sleep_level": 0, "cuda_graphs": False, "reference": True, "generations": 8, "prompt_len": 512,
                   "completion_len": 256, "mean_completion_len": 200, "micro_batch": 4, "prompts_per_step": 64, "rollout_tp": 1}}
    flags = ("rl", "qwen2.5-7b", "--gpu", "h100-sxm", "--gpus", "8", "--method", "lora", "--rollout", "vllm",
             "--gpu-memory-utilization", "0.3", "--sleep-level", "0", "--enforce-eager", "--reference", "--generations", "8", "--prompt-len", "512",
             "--completion-len", "256", "--mean-completion-len", "200", "--micro-batch", "4", "--prompts-per-step", "64")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "rl.json")
        with open(f, "w") as h:
            json.dump(scen, h)
        a = rl_json("rl", "--scenario", f)
        b = rl_json(*flags)
        expect(a == b, "the file and the flags give the same answer", out=json.dumps(a)[:1500])
        check_figures(a, "file")
        expect(a["sequences_per_step"] == 64 * 8 and a["mean_completion_len"] == 200, "the file's figures")
        # enforce_eager: the engine's budget without the 0.5 GiB CUDA graph pool.
        expect(a["scenario"]["rl"]["cuda_graphs"] is False and close(a["engine_budget_bytes"], 0.3 * a["capacity_bytes"]),
               "an eager engine keeps no graph pool", out=json.dumps(a)[:600])
        c = rl_json("rl", "--scenario", f, "--generations", "4")
        expect(c["generations"] == 4 and c["sequences_per_step"] == 256, "a flag overrides the file's rl key")
        with open(f, "w") as h:
            json.dump(a["scenario"], h)
        expect(rl_json("rl", "--scenario", f) == a, "the written scenario reads back to the same answer")
        # DPO's length is max_length.
        with open(f, "w") as h:
            json.dump({"model": "qwen2.5-7b", "gpu": "h100-sxm", "method": "lora", "rl": {"algorithm": "dpo", "max_length": 512}}, h)
        dpo = rl_json("rl", "--scenario", f)
        expect(dpo["prompt_len"] == 512 and dpo["scenario"]["rl"]["max_length"] == 512 and "prompt_len" not in dpo["scenario"]["rl"],
               "dpo max_length", out=json.dumps(dpo["scenario"]))


def case_rl_hostile():
    m = ("rl", "qwen2.5-7b", "--gpu", "h100-sxm")
    expect_error([*m, "--algorithm", "sft"], "--algorithm:", "dpo, grpo, ppo", "sft")
    expect_error([*m, "--framework", "deepspeed"], "--framework:", "trl, verl, openrlhf, nemo-rl")
    expect_error([*m, "--generations", "-2"], "--generations:", "-2")
    expect_error([*m, "--rollout", "vllm", "--gpu-memory-utilization", "nan"], "--gpu-memory-utilization:", "finite", "nan")
    expect_error([*m, "--rollout", "vllm", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization:", "1.5")
    expect_error([*m, "--completion-len", "0"], "--completion-len:", "(got 0)")
    expect_error([*m, "--algorithm", "dpo", "--generations", "4"], "--generations:", "dpo")
    expect_error([*m, "--algorithm", "ppo", "--generations", "4"], "--generations:", "grpo")
    expect_error([*m, "--gpu-memory-utilization", "0.5"], "--gpu-memory-utilization:", "rollout hf")
    expect_error([*m, "--rollout-gpus", "4"], "--rollout-gpus:", "separate")
    expect_error([*m, "--rollout", "llama.cpp"], "--rollout:", "llama.cpp")
    expect_error([*m, "--placement", "separate"], "--placement:", "separate")
    expect_error([*m, "--gpus", "8", "--rollout", "vllm", "--rollout-tp", "3"], "--rollout-tp:", "(8 GPUs, got 3)")
    expect_error([*m, "--mean-completion-len", "999"], "--mean-completion-len:", "999")
    expect_error([*m, "--max-length", "100"], "--max-length:", "dpo")
    expect_error([*m, "--algorithm", "dpo", "--prompt-len", "100"], "--prompt-len:", "max_length")
    expect_error([*m, "--seq", "100"], "--seq:", "--prompt-len")
    expect_error([*m, "--tp", "0"], "--tp:", "(got 0)")
    expect_error([*m, "--prompts-per-step", "20000000"], "--prompts-per-step:", "20000000")
    expect_error([*m, "--no-reward-model"], "--no-reward-model:", "ppo")
    expect_error(["rl", "gpt2", "--prompt-len", "1000", "--completion-len", "500"], "--completion-len:", "max_position_embeddings")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "bad.json")
        for scen, prefix, needle in [
            ({"model": "qwen2.5-7b", "rl": {"algorithm": "grpo", "temperature": 1.0}}, "scenario.rl.", "unknown key"),
            ({"model": "qwen2.5-7b", "rl": ["grpo"]}, "scenario.rl:", "JSON object"),
            ({"model": "qwen2.5-7b", "rl": {"generations": 2.5}}, "scenario.rl.generations:", "integer"),
            ({"model": "qwen2.5-7b", "rl": {"reference": "yes"}}, "scenario.rl.reference:", "true or false"),
            ({"model": "qwen2.5-7b", "rl": {"completion_len": 0}}, "scenario.rl.completion_len:", "(got 0)"),
            ({"model": "qwen2.5-7b", "seq_len": 4096, "rl": {}}, "scenario.seq_len:", "rl.prompt_len"),
            ({"model": "qwen2.5-7b", "micro_batch": 4}, "scenario.micro_batch:", "rl.micro_batch"),
            ({"model": "qwen2.5-7b", "workload": "infer"}, "scenario.workload:", "train"),
            ({"model": "qwen2.5-7b", "rl": {"algorithm": "dpo", "completion_len": 10}}, "scenario.rl.completion_len:", "dpo"),
        ]:
            with open(f, "w") as h:
                json.dump(scen, h)
            expect_error(["rl", "--scenario", f], prefix, needle)


def case_rl_max_micro_batch():
    """--max-micro-batch: the largest micro-batch that fits, the step reported at it; one more does
    not fit; exit 1 when none fits; a token-bounded run is refused by its flag."""
    lora = (*GRPO_VERL, "--method", "lora")
    rc, out, err = run(*lora, "--max-micro-batch", "--json")
    expect(rc == 0, "exit 0 when some micro-batch fits", rc, out, err)
    j = json.loads(out)
    n = j["max_micro_batch"]
    expect(isinstance(n, int) and n > 1 and j["fits"] and j["scenario"]["rl"]["micro_batch"] == n, "the step at it", rc, out, err)
    expect("max_micro_batch" not in rl_json(*lora, "--micro-batch", str(n)), "the key only when asked", rc, out, err)
    expect(not rl_json(*lora, "--micro-batch", str(n + 1))["fits"], "one more does not fit", rc, out, err)
    rc, out, err = run(*lora, "--max-micro-batch")
    expect(rc == 0 and out.startswith(f"largest micro-batch that fits: {n} sequences per GPU"), "the text's first line", rc, out, err)
    rc, out, err = run("rl", "qwen2.5-72b", "--framework", "verl", "--gpu", "rtx-4090", "--max-micro-batch", "--json")
    expect(rc == 1 and json.loads(out)["max_micro_batch"] is None, "none fits: null, exit 1", rc, out, err)
    expect_error([*lora, "--max-token-len", "8192", "--max-micro-batch"], "--max-token-len:", "token-bounded", "(got 8192)")


RECOMMEND = ("rl", "qwen2.5-7b", "--framework", "verl", "--generations", "8", "--recommend",
             "--gpus-list", "h100-sxm,a100-40gb,rtx-4090")


def case_rl_recommend():
    """--recommend: per GPU type the fewest GPUs (a power of two) whose every phase fits with the
    planning headroom, max(5% of usable, 1 GiB); half as many does not (re-run as a plain rl run);
    cheapest step first; the text has a header and one line per row; the refusals."""
    rc, out, err = run(*RECOMMEND, "--json")
    expect(rc == 0, "exit 0 when a row fits", rc, out, err)
    j = json.loads(out)
    rows = j["recommendations"]
    expect(rows and j["candidates"] == ["h100-sxm", "a100-40gb", "rtx-4090"], "rows and candidates", rc, out, err)
    expect(sorted(j["not_fitting"] + [r["gpu"] for r in rows]) == sorted(j["candidates"]), "each candidate a row or not fitting",
           out=out)
    priced = [r for r in rows if r["cost_per_step"] is not None]
    expect(rows[:len(priced)] == priced, "priced rows first", out=out)
    expect([r["cost_per_step"] for r in priced] == sorted(r["cost_per_step"] for r in priced), "cheapest step first", out=out)
    unpriced = rows[len(priced):]
    expect([r["step_seconds"] for r in unpriced] == sorted(r["step_seconds"] for r in unpriced), "then the fastest", out=out)
    for r in rows:
        what = f"{r['gpu']} x {r['gpus']}"
        n = r["gpus"]
        expect(n >= 1 and n & (n - 1) == 0 and n <= 64, f"{what}: a power of two up to --max-gpus", out=json.dumps(r))
        keep = max(0.05 * r["capacity_bytes"], 2**30)
        expect(close(r["headroom_kept_bytes"], keep) and r["headroom_bytes"] >= keep, f"{what}: headroom >= max(5%, 1 GiB)",
               out=json.dumps(r))
        one = ("rl", "qwen2.5-7b", "--framework", "verl", "--generations", "8", "--gpu", r["gpu"])
        same = rl_json(*one, "--gpus", str(n))
        expect(close(same["headroom_bytes"], r["headroom_bytes"]) and close(same["step_seconds"], r["step_seconds"]) and
               same["peak_phase"] == r["peak_phase"], f"{what}: the plain rl run gives the row's figures", out=json.dumps(r))
        if r["price_per_gpu_hour"] is not None:
            cost = r["price_per_gpu_hour"] * (n + r["rollout_gpus"]) * r["step_seconds"] / 3600
            tokens = r["tokens_per_second_per_gpu"] * (n + r["rollout_gpus"]) * r["step_seconds"]
            expect(close(r["cost_per_step"], cost) and close(r["cost_per_million_tokens"], cost / tokens * 1e6),
                   f"{what}: cost = price x GPUs x step / 3600, per million tokens", out=json.dumps(r))
        if n > 1:  # half as many: below the headroom, no whole sequence, or no layout (exit 2)
            rc2, out2, err2 = run(*one, "--gpus", str(n // 2), "--json")
            if rc2 != 2:
                h = json.loads(out2)
                expect(h["headroom_bytes"] < max(0.05 * h["capacity_bytes"], 2**30) or h["step_seconds"] is None,
                       f"{what}: half as many GPUs does not fit with the headroom", rc2, out2[:1500], err2)
    rc, text, err = run(*RECOMMEND)
    lines = text.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith("GPU ") and "Peak phase" in line]
    expect(rc == 0 and len(header) == 1, "one header line", rc, text, err)
    body = lines[header[0] + 2:header[0] + 2 + len(rows)]  # under the rule
    expect([line.split()[0] for line in body] == [r["gpu"] for r in rows], "one line per row, in order", rc, text, err)
    expect(lines[header[0] + 2 + len(rows)].startswith("Cheapest step first"), "then the notes", rc, text, err)
    # A price given overrides the catalog's.
    p = json.loads(run(*RECOMMEND, "--price", "h100-sxm=1", "--json")[1])["recommendations"]
    expect([r["price_per_gpu_hour"] for r in p if r["gpu"] == "h100-sxm"] == [1], "--price overrides", out=json.dumps(p))
    # Nothing fits: exit 1, no rows.
    rc, out, err = run("rl", "qwen2.5-72b", "--framework", "verl", "--recommend", "--gpus-list", "rtx-4090", "--max-gpus", "2", "--json")
    expect(rc == 1 and json.loads(out)["recommendations"] == [] and json.loads(out)["not_fitting"] == ["rtx-4090"],
           "none fits: exit 1", rc, out, err)
    # A layout needing several GPUs (a rollout TP of 4) is read at the largest count tried; the
    # counts it cannot take (1, 2) are skipped.
    rc, out, err = run("rl", "qwen2.5-7b", "--framework", "verl", "--rollout-tp", "4", "--recommend", "--gpus-list", "h100-sxm", "--json")
    tp4 = json.loads(out)["recommendations"] if rc == 0 else []
    expect(rc == 0 and tp4 and tp4[0]["gpus"] >= 4, "a rollout TP of 4 from 4 GPUs", rc, out, err)
    m = ("rl", "qwen2.5-7b", "--framework", "verl")
    expect_error([*m, "--recommend", "--max-micro-batch"], "--recommend:", "--max-micro-batch")
    expect_error([*m, "--recommend", "--gpus-list", "nosuchgpu"], "--gpus-list:", "nosuchgpu")
    expect_error([*m, "--gpus-list", "h100-sxm"], "--gpus-list:", "--recommend", "h100-sxm")
    expect_error([*m, "--recommend", "--gpus", "8"], "--gpus:", "(got 8)")
    expect_error([*m, "--recommend", "--gpu", "h100-sxm"], "--gpu:", "--gpus-list", "h100-sxm")
    expect_error([*m, "--recommend", "--max-gpus", "0"], "--max-gpus:", "(got 0)")
    expect_error([*m, "--recommend", "--price", "h100-sxm=x"], "--price:", "h100-sxm=x")


if __name__ == "__main__":
    globals()["case_" + CASE]()
    print(f"ok: {CASE}")
