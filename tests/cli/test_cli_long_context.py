#!/usr/bin/python3
"""CLI tests of `gpuplan fit --max-context` (plan/max_context.hpp, docs/long-context.md): the
largest trainable context in words and JSON, checked against `gpuplan estimate` at that length and
one search step beyond it, the GPU-count ladder, and the one-line refusals.

Usage: test_cli_long_context.py BINARY VERSION CASE (registered one case per CTest test by
tests/cli/CMakeLists.txt); the helpers are test_cli.py's.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import CASE, expect, expect_error, run  # noqa: E402

# LLaMA-Factory wiki "Performance comparison": LLaMA2-7B QLoRA r8 on every linear, batch 1, A100 40GB.
QLORA_7B = ["llama-2-7b", "--gpu", "a100-40gb", "--method", "qlora", "--lora-rank", "8", "--lora-targets", "all-linear",
            "--grad-accum", "4"]
# ArcticTraining's one-GPU baseline: Llama-3.1-8B full fine-tuning, ZeRO-3 with optimizer and parameter offload.
ARCTIC_8B = ["llama-3.1-8b", "--gpu", "h100-sxm", "--framework", "deepspeed", "--zero", "3", "--offload-optimizer", "cpu",
             "--offload-params", "cpu", "--checkpointing", "full"]


def fits_at(args, seq, *extra):
    """`fit --json`'s fits (verdict != does_not_fit) of the run at `seq` tokens."""
    rc, out, err = run("fit", *args, "--seq", str(seq), *extra, "--json")
    expect(rc in (0, 1, 3), f"fit at {seq}", rc, out, err)
    return json.loads(out)["fits"]


def case_max_context_text_and_json():
    """The answer in words ("N tokens (xK)"), the memory at that length, and the same figures in --json."""
    rc, out, err = run("fit", *QLORA_7B, "--max-context")
    expect(rc == 0, "exit 0: a length fits", rc, out, err)
    m = re.search(r"Largest trainable context: ([\d,]+) tokens \(([\d.]+)K\)", out)
    expect(m is not None, "the answer in human units", rc, out, err)
    tokens = int(m.group(1).replace(",", ""))
    expect(abs(tokens / 1024 - float(m.group(2))) < 0.051, "K = 1,024 tokens, one decimal", rc, out, err)
    # The wiki ran 32,768 tokens in 32 GB and ran out of memory at 65,536.
    expect(32768 < tokens < 65536, "between the published 32K (fits) and 64K (OOM)", rc, out, err)
    expect("With the planning margin" in out and f"at {tokens:,} tokens" in out, "margin line and memory table", rc, out, err)
    expect("past the model's max_position_embeddings (4,096)" in out, "the position note", rc, out, err)
    expect("Largest context per GPU count" not in out, "no ladder on one GPU", rc, out, err)
    rc, out, err = run("fit", *QLORA_7B, "--max-context", "--json")
    expect(rc == 0, "--json exit 0", rc, out, err)
    j = json.loads(out)
    mc = j["max_context"]
    expect(j["fits"] and mc["tokens"] == tokens and mc["tokens_text"] == f"{tokens:,} tokens ({m.group(2)}K)",
           "the JSON answer is the text's", rc, out, err)
    expect(mc["planned_tokens"] < tokens and mc["step"] == 1 and mc["ladder"] == [], "margin, step, ladder", rc, out, err)
    expect(mc["beyond_max_positions"] and mc["max_positions"] == 4096, "positions", rc, out, err)
    # The same run through `fit --seq`: fits at the answer, not one token more.
    expect(fits_at(QLORA_7B, tokens) and not fits_at(QLORA_7B, tokens + 1), "fit agrees at the edge", rc, out, err)
    rc, out, err = run("estimate", *QLORA_7B, "--seq", str(tokens), "--json")
    expect(abs(json.loads(out)["memory"]["device_bytes"] - mc["memory"]["device_bytes"]) < 1, "the memory at that length",
           rc, out, err)


def case_max_context_ladder():
    """--max-context-gpus N: 1, 2, 4, ..., N GPUs; deepspeed splits the sequence (cp = GPUs) in steps of 2·cp."""
    rc, out, err = run("fit", *ARCTIC_8B, "--max-context-gpus", "8", "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    mc = json.loads(out)["max_context"]
    ladder = mc["ladder"]
    expect([r["num_gpus"] for r in ladder] == [1, 2, 4, 8] and all(r["cp"] == r["num_gpus"] for r in ladder),
           "cp over every GPU", rc, out, err)
    expect(all(r["tokens"] % r["step"] == 0 and r["step"] == (2 * r["cp"] if r["cp"] > 1 else 1) for r in ladder),
           "steps of 2·cp", rc, out, err)
    expect(all(a["tokens"] <= b["tokens"] for a, b in zip(ladder, ladder[1:])), "more GPUs, never shorter", rc, out, err)
    # The recipe ran 32,000 tokens and called 36,000 "close to oom": the one-GPU answer within 20% of 36,000.
    expect(ladder[0]["tokens"] == mc["tokens"] and 28800 < mc["tokens"] < 43200, "one GPU near the published edge",
           rc, out, err)
    eight = ARCTIC_8B + ["--gpus", "8", "--cp", "8"]
    top = ladder[-1]["tokens"]
    expect(fits_at(eight, top) and not fits_at(eight, top + 16), "the 8-GPU rung agrees with fit --cp 8", rc, out, err)
    rc, out, err = run("fit", *ARCTIC_8B, "--gpus", "4", "--max-context")
    expect(rc == 0 and "Largest context per GPU count: context parallelism" in out, "--gpus > 1 prints the ladder",
           rc, out, err)
    # The hf profile runs no context parallelism of its own: data parallelism climbs its ladder.
    rc, out, err = run("fit", *QLORA_7B, "--max-context-gpus", "2", "--json")
    ladder = json.loads(out)["max_context"]["ladder"]
    expect(rc == 0 and [(r["cp"], r["dp"]) for r in ladder] == [(1, 1), (1, 2)], "hf: dp, not cp", rc, out, err)


def case_max_context_refusals():
    """One stderr line naming the flag: serving runs (gpuplan serve has theirs), method lists, bad counts."""
    expect_error(["fit", "llama-3.1-8b", "--infer", "--max-context"], "--max-context:", "gpuplan serve",
                 "(got workload infer)")
    expect_error(["fit", "llama-3.1-8b", "--infer", "--max-context-gpus", "4"], "--max-context-gpus:", "gpuplan serve")
    expect_error(["fit", "llama-3.1-8b", "--method", "full,lora", "--max-context"], "--max-context:",
                 "takes one method (got 'full,lora')")
    expect_error(["fit", "llama-3.1-8b", "--max-context-gpus", "0"], "--max-context-gpus:", "(got 0)")
    # Nothing fits: exit 1, and the answer says so.
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-3060", "--max-context")
    expect(rc == 1 and "Largest trainable context: none: 1 token" in out, "exit 1 when no length fits", rc, out, err)


if __name__ == "__main__":
    globals()["case_" + CASE]()
    print(f"ok: {CASE}")
