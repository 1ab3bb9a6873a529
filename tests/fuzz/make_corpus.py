#!/usr/bin/python3
"""Regenerates the fuzz seed corpora under tests/fuzz/corpus/ from the test fixtures.

  /usr/bin/python3 tests/fuzz/make_corpus.py

scenario/     every row of tests/data/bad_scenarios.jsonl plus a few accepted runs
hf_config/    the catalog's config.json files (src/data/models/*.json)
gpu/          user GPU objects (inline "gpu" / --gpu-file entries)
safetensors/  small .safetensors files: valid, truncated, lying header length
rl/           RL scenarios (a training scenario with an "rl" object): accepted and rejected
The libFuzzer dictionary json.dict is hand-written and not generated here.
"""
import hashlib
import json
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fuzz" / "corpus"


def put(sub, data):
    if isinstance(data, str):
        data = data.encode()
    d = OUT / sub
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def scenarios():
    for line in (ROOT / "tests" / "data" / "bad_scenarios.jsonl").read_text().splitlines():
        if line.strip():
            put("scenario", json.dumps(json.loads(line)["scenario"]))
    good = [
        {"model": "llama-2-13b", "gpu": "rtx-4090", "method": "qlora", "seq_len": 2048},
        {"model": "llama-2-70b", "method": "lora", "lora": {"rank": 16, "alpha": 32, "targets": "all-linear"},
         "precision": "bf16-pure", "optimizer": "paged-adamw-8bit", "micro_batch": 2, "seq_len": 4096,
         "global_batch": 64, "checkpointing": "selective", "attention": "eager", "gpu": "h100-sxm", "num_gpus": 32,
         "network": {"internode_gb_s": 50, "latency_us": 3, "host_memory_gib": 2048},
         "parallel": {"tp": 4, "pp": 2, "virtual_stages": 2, "sp": True, "zero": 1, "offload_optimizer": "cpu"},
         "tokens": "1T", "price_per_gpu_hour": 2.5},
        {"model": "mixtral-8x7b", "method": "qlora", "lora": {"rank": 4, "targets": ["q", "k", "v", "o"]},
         "gpu": "a100-40gb", "num_gpus": 8, "parallel": {"ep": 4, "zero": 2}, "seq_len": 1024, "micro_batch": 3},
        {"model": {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000,
                   "n_positions": 256}, "workload": "infer", "seq_len": 128,
         "inference": {"batch": 4, "prompt_len": 100, "gen_len": 28, "kv_cache_dtype": "fp8"}},
        {"model": "gpt2", "seq_len": 1024, "gpu": "t4", "precision": "bf16-mixed"},
        {"model": "llama-3-8b", "gpu": {"base": "rtx-4090", "memory_gb": 48}, "method": "freeze",
         "freeze": {"trainable_layers": 2}},
    ]
    for g in good:
        put("scenario", json.dumps(g))


def hf_configs():
    for f in sorted((ROOT / "src" / "data" / "models").glob("*.json")):
        put("hf_config", f.read_bytes())


def gpus():
    for g in [
        {"base": "a100-80gb", "memory_gb": 96},
        {"id": "my-gpu", "name": "My GPU", "memory_gb": 24, "bandwidth_gb_s": 1000, "fp32_tflops": 40,
         "bf16_tflops": 160, "compute_capability": "8.9"},
        {"id": "x", "memory_gb": 1e308, "bandwidth_gb_s": -0.0, "bf16_tflops": 0},
        {"base": "l40s", "sm_count": 100},
        {"id": "y", "memory_gb": 24, "bandwidth_gb_s": 1000, "bf16_tflops": 100, "sm_count": 0},
        # At and just under the lower bounds (catalog.cpp kMin*), and a name with terminal escapes.
        {"id": "tiny", "memory_gb": 0.25, "bandwidth_gb_s": 1, "fp32_tflops": 0.01, "fp64_tflops": 0.001, "tdp_w": 1},
        {"id": "slow", "memory_gb": 24, "bandwidth_gb_s": 1000, "fp32_tflops": 80, "bf16_tflops": 1e-300},
        {"base": "rtx-4090", "id": "evil\u001b[2J", "name": "Evil\u001b]0;t\u0007\u009b2J"},
    ]:
        put("gpu", json.dumps(g))


def rl():
    base = {"model": "llama-3.2-1b", "gpu": "h100-sxm", "num_gpus": 2}
    for obj in [
        {},
        {"algorithm": "grpo", "framework": "trl", "rollout": "vllm", "placement": "colocated", "rollout_fraction": 0.3,
         "sleep_level": 0, "reference": True, "generations": 8, "prompt_len": 512, "completion_len": 256,
         "mean_completion_len": 200, "micro_batch": 4, "prompts_per_step": 64, "rollout_tp": 1},
        {"algorithm": "grpo", "framework": "verl", "generations": 5, "sleep_level": 2},
        {"algorithm": "grpo", "framework": "verl", "rollout_tp": 2, "cuda_graphs": False},
        {"algorithm": "dpo", "cuda_graphs": "yes"},
        {"algorithm": "grpo", "framework": "nemo-rl", "rollout": "sglang", "mean_completion_len": 100},
        {"algorithm": "ppo", "framework": "openrlhf", "rollout_gpus": 2, "rollout_tp": 2, "reward_model": False},
        {"algorithm": "ppo", "framework": "trl", "rollout": "vllm", "placement": "separate"},
        {"algorithm": "dpo", "framework": "trl", "max_length": 1024, "micro_batch": 2, "reference": False},
        {"algorithm": "dpo", "generations": 4},
        {"algorithm": "grpo", "completion_len": 0},
        {"algorithm": "grpo", "rollout": "vllm", "rollout_fraction": 1e-9},
        {"algorithm": "grpo", "rollout": "llama.cpp"},
        {"algorithm": "grpo", "prompts_per_step": 16777216, "generations": 1024},
        {"temperature": 1.0},
    ]:
        put("rl", json.dumps(dict(base, rl=obj)))
    put("rl", json.dumps({"model": "llama-3.2-1b", "method": "lora", "parallel": {"tp": 0}, "rl": {"algorithm": "grpo"}}))
    put("rl", json.dumps({"model": "gpt2", "global_batch": 16, "num_gpus": 2, "rl": {"prompt_len": 900, "completion_len": 200}}))
    put("rl", json.dumps({"model": "llama-3.2-1b", "seq_len": 4096, "rl": {}}))


def st(header, data=b"", length=None):
    h = json.dumps(header).encode()
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def safetensors():
    w = {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}
    put("safetensors", st({"__metadata__": {"format": "pt"}, "w": w}, bytes(12)))
    put("safetensors", st({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                           "b": {"dtype": "I8", "shape": [], "data_offsets": [16, 17]}}, bytes(17)))
    put("safetensors", st({"w": w}, bytes(5)))                    # truncated data
    put("safetensors", st({"w": w}, bytes(12), length=1 << 40))    # lying header length
    put("safetensors", st({"w": {"dtype": "BF16", "shape": [1000000, 1000000, 1000000, 1000],
                                 "data_offsets": [0, 12]}}, bytes(12)))  # 10^21 elements
    put("safetensors", b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    put("safetensors", b"\x00" * 8)


if __name__ == "__main__":
    scenarios()
    hf_configs()
    gpus()
    safetensors()
    rl()
