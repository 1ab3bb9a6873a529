#!/usr/bin/python3
"""Generates bad_scenarios.jsonl: one rejected scenario per line with its exact error.

Each row is a base scenario with one change. The C++ (test_scenario.cpp), CLI and
Python suites all read the generated file, so every interface is held to the same
message. Run: /usr/bin/python3 tests/data/make_bad_scenarios.py > tests/data/bad_scenarios.jsonl
"""
import copy
import json

BASE = {"model": "llama-2-13b", "gpu": "rtx-4090", "method": "full", "seq_len": 2048, "micro_batch": 1}

def row(change, error, remove=()):
    s = copy.deepcopy(BASE)
    for k in remove:
        s.pop(k, None)
    for k, v in change.items():
        if isinstance(v, dict) and isinstance(s.get(k), dict):
            s[k].update(v)
        else:
            s[k] = v
    return {"scenario": s, "error": error}

R = []
add = lambda *a, **k: R.append(row(*a, **k))
# Structure and unknown keys.
add({"modle": "llama-2-13b"}, "scenario.modle: unknown key (expected one of: model, workload, method, lora, peft, freeze, quantization, precision, optimizer, micro_batch, seq_len, grad_accum, global_batch, framework, checkpointing, attention, compile, fused_kernels, chunked_loss, fused_linear_loss, tiled_mlp, inplace_loss, loss_tokens, activation_offload, optimizer_in_backward, optimizer_kernel, keep_gradients, expandable_segments, gpu, num_gpus, gpus_per_node, network, parallel, inference, tokens, price_per_gpu_hour, engine)")
add({}, "scenario.model: is required (a catalog name, a config.json path, a checkpoint directory or an inline config object)", remove=["model"])
add({"parallel": {"tq": 2}}, "scenario.parallel.tq: unknown key (expected one of: tp, pp, virtual_stages, sp, cp, ep, zero, offload_optimizer, offload_params, account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split, first_stage_layers, last_stage_layers)")
add({"parallel": 4}, "scenario.parallel: must be a JSON object (got number 4)")
add({"lora": {"rank": 8}}, "scenario.lora: only applies to method lora, qlora, dora or vera (got method full)")
add({"freeze": {"trainable_layers": 2}}, "scenario.freeze: only applies to method freeze (got method full)")
add({"inference": {"batch": 1}}, "scenario.inference: only applies to workload infer (got workload train)")
add({"method": "lora", "lora": {"rnak": 8}}, "scenario.lora.rnak: unknown key (expected one of: rank, alpha, dropout, targets, modules_to_save)")
add({"network": {"bandwidth": 1}}, "scenario.network.bandwidth: unknown key (expected one of: internode_gb_s, latency_us, host_memory_gib)")
add({"quantization": {"bits": 4}}, "scenario.quantization.bits: unknown key (expected one of: weights, double_quant, group_size)")
# Enums.
for key, bad, options in [
    ("workload", "serve", "train, infer"),
    ("method", "adalora", "full, lora, qlora, freeze, dora, ia3, prompt-tuning, prefix-tuning, vera, ln-tuning"),
    ("precision", "fp16", "fp32, tf32, fp16-mixed, bf16-mixed, bf16-pure, fp8-mixed"),
    ("precision", "BF16-MIXED", "fp32, tf32, fp16-mixed, bf16-mixed, bf16-pure, fp8-mixed"),
    ("optimizer", "adamw8bit", "adamw, adam, adamw-8bit, paged-adamw-8bit, paged-adamw-32bit, sgd, sgd-momentum, adafactor, lion"),
    ("optimizer", "rmsprop", "adamw, adam, adamw-8bit, paged-adamw-8bit, paged-adamw-32bit, sgd, sgd-momentum, adafactor, lion"),
    ("checkpointing", "partial", "none, selective, full"),
    ("checkpointing", True, "none, selective, full"),
    ("attention", "sdpa", "flash, eager"),
    ("optimizer_kernel", "apex", "foreach, fused"),
]:
    add({key: bad}, f"scenario.{key}: must be one of {options} (got {json.dumps(bad)})")
add({"parallel": {"offload_optimizer": "disk", "zero": 2}}, 'scenario.parallel.offload_optimizer: must be one of none, cpu, nvme (got "disk")')
add({"parallel": {"offload_params": 1}}, "scenario.parallel.offload_params: must be one of none, cpu, nvme (got 1)")
add({"method": "qlora", "quantization": {"weights": "int3"}}, 'scenario.quantization.weights: must be one of nf4, fp4, int8, int4, fp8, bf16, fp16, fp32 (got "int3")')
add({"workload": "infer", "inference": {"kv_cache_dtype": "nf4"}}, 'scenario.inference.kv_cache_dtype: must be one of bf16, fp16, fp32, fp8, int8, int4 (got "nf4")')
# Types.
for key, bad, what in [
    ("micro_batch", "4", 'must be an integer (got string "4")'),
    ("micro_batch", 2.5, "must be an integer (got 2.5)"),
    ("micro_batch", None, "must be an integer (got null null)"),
    ("seq_len", [2048], "must be an integer (got array [2048])"),
    ("seq_len", 1e300, "too large (got 1e+300)"),
    ("grad_accum", 18446744073709551615, "too large (got 18446744073709551615)"),
    ("num_gpus", 1e12, "out of range (got 1000000000000.0)"),
    ("compile", "yes", 'must be true or false (got string "yes")'),
    ("fused_kernels", "on", 'must be true or false (got string "on")'),
    ("chunked_loss", 1, "must be true or false (got number 1)"),
    ("fused_linear_loss", 1, "must be true or false (got number 1)"),
    ("tiled_mlp", "yes", 'must be true or false (got string "yes")'),
    ("inplace_loss", 1, "must be true or false (got number 1)"),
    ("activation_offload", None, "must be true or false (got null null)"),
    ("optimizer_in_backward", "true", 'must be true or false (got string "true")'),
    ("keep_gradients", 0, "must be true or false (got number 0)"),
    ("expandable_segments", "yes", 'must be true or false (got string "yes")'),
    ("price_per_gpu_hour", "cheap", 'must be a number (got string "cheap")'),
    ("tokens", "lots", 'must be a number such as 2e9, "300B" or "1T" (got "lots")'),
    ("tokens", "1X", 'must be a number such as 2e9, "300B" or "1T" (got "1X")'),
    ("gpu", 4090, "must be a catalog id or a GPU object (got 4090)"),
]:
    add({key: bad}, f"scenario.{key}: {what}")
# Ranges.
for key, bad, what in [
    ("micro_batch", 0, "must be at least 1 (got 0)"),
    ("micro_batch", -4, "must be at least 1 (got -4)"),
    ("micro_batch", 1 << 25, "must be at most 16777216 (got 33554432)"),
    ("seq_len", 0, "must be at least 1 (got 0)"),
    ("seq_len", -2048, "must be at least 1 (got -2048)"),
    ("seq_len", 1 << 30, "must be at most 16777216 (got 1073741824)"),
    ("grad_accum", 0, "must be at least 1 (got 0)"),
    ("num_gpus", 0, "must be at least 1 (got 0)"),
    ("num_gpus", -8, "must be at least 1 (got -8)"),
    ("num_gpus", 1 << 21, "must be at most 1048576 (got 2097152)"),
    ("gpus_per_node", 0, "must be at least 1 (got 0)"),
    ("tokens", 0, "must be at least 1 (got 0)"),
    ("tokens", -1e9, "must be at least 1 (got -1000000000)"),
    ("tokens", 1e30, "must be at most 1e+18 (got 1e+30)"),
    ("price_per_gpu_hour", -1, "must be at least 0 (got -1)"),
]:
    add({key: bad}, f"scenario.{key}: {what}")
for key, bad, what in [
    ("tp", 0, "must be at least 1 (got 0)"),
    ("tp", -2, "must be at least 1 (got -2)"),
    ("pp", 0, "must be at least 1 (got 0)"),
    ("cp", 0, "must be at least 1 (got 0)"),
    ("ep", 0, "must be at least 1 (got 0)"),
    ("virtual_stages", 0, "must be at least 1 (got 0)"),
    ("zero", 4, "must be at most 3 (got 4)"),
    ("zero", -1, "must be at least 0 (got -1)"),
    ("zero", 1.5, "must be an integer (got 1.5)"),
    ("sp", "yes", 'must be true or false (got string "yes")'),
]:
    add({"parallel": {key: bad}}, f"scenario.parallel.{key}: {what}")
# Layout rules.
add({"num_gpus": 3, "parallel": {"tp": 3}}, "scenario.parallel.tp: must divide num_attention_heads=40 (got 3)")
add({"num_gpus": 16, "parallel": {"tp": 16}}, "scenario.parallel.tp: must divide num_attention_heads=40 (got 16)")
add({"model": "qwen2.5-7b", "num_gpus": 7, "parallel": {"tp": 7}}, "scenario.parallel.tp: must divide num_key_value_heads=4 or be a multiple of it (got 7)")
add({"num_gpus": 41, "parallel": {"pp": 41}}, "scenario.parallel.pp: must not exceed the number of layers=40 (got pp=41)")
add({"num_gpus": 4, "parallel": {"pp": 4, "virtual_stages": 3}}, "scenario.parallel.pp: pp*virtual_stages=12 must divide the number of layers=40 (got pp=4)")
add({"parallel": {"virtual_stages": 2}}, "scenario.parallel.virtual_stages: needs pp > 1 (got virtual_stages=2 with pp=1)")
add({"num_gpus": 12, "parallel": {"tp": 8}}, "scenario.num_gpus: must be a multiple of tp*pp*cp=8 (got 12)")
add({"num_gpus": 4, "parallel": {"tp": 8}}, "scenario.num_gpus: must be a multiple of tp*pp*cp=8 (got 4)")
add({"num_gpus": 8, "parallel": {"tp": 2, "pp": 2, "cp": 4}}, "scenario.num_gpus: must be a multiple of tp*pp*cp=16 (got 8)")
add({"num_gpus": 2, "parallel": {"ep": 2}}, "scenario.parallel.ep: needs a mixture-of-experts model (got ep=2)")
add({"model": "mixtral-8x7b", "num_gpus": 3, "parallel": {"ep": 3}}, "scenario.parallel.ep: must divide num_local_experts=8 (got 3)")
add({"model": "mixtral-8x7b", "num_gpus": 2, "parallel": {"ep": 4}}, "scenario.parallel.ep: must divide the data-parallel degree dp*cp=2 (got 4)")
add({"num_gpus": 2, "seq_len": 2050, "parallel": {"cp": 2}}, "scenario.seq_len: must be divisible by 2*cp=4 for context parallelism (got 2050)")
add({"num_gpus": 4, "seq_len": 2050, "parallel": {"tp": 4, "sp": True}}, "scenario.seq_len: must be divisible by tp=4 with sequence parallelism (got 2050)")
add({"num_gpus": 2, "parallel": {"zero": 2, "offload_params": "cpu"}}, "scenario.parallel.offload_params: needs zero=3 (got zero=2)")
add({"parallel": {"offload_optimizer": "cpu"}}, "scenario.parallel.offload_optimizer: needs zero>=1 (got zero=0)")
add({"num_gpus": 8, "micro_batch": 4, "global_batch": 16}, "scenario.micro_batch: micro_batch*dp=32 exceeds global_batch=16 (got micro_batch=4)")
add({"num_gpus": 2, "micro_batch": 3, "global_batch": 16}, "scenario.global_batch: must be a multiple of micro_batch*dp=6 (got 16)")
add({"num_gpus": 2, "micro_batch": 2, "global_batch": 16, "grad_accum": 3}, "scenario.grad_accum: disagrees with global_batch/(micro_batch*dp)=4 (got 3)")
add({"global_batch": 0}, "scenario.global_batch: must be at least 1 (got 0)")
# Sequence.
add({"model": "gpt2", "seq_len": 2048}, "scenario.seq_len: exceeds max_position_embeddings=1024 of a learned-position model (got 2048)")
add({"model": "bert-large-uncased", "seq_len": 1024}, "scenario.seq_len: exceeds max_position_embeddings=512 of a learned-position model (got 1024)")
add({"model": "gpt2", "workload": "infer", "inference": {"prompt_len": 1000, "gen_len": 100}}, "scenario.inference: exceeds max_position_embeddings=1024 of a learned-position model (got 1100)", remove=["seq_len"])
add({"model": "vit-base-patch16-224", "seq_len": 2048}, "scenario.seq_len: a ViT's sequence is fixed by image_size/patch_size = 197 tokens (got 2048)")
# Methods.
add({"method": "lora", "lora": {"rank": 0}}, "scenario.lora.rank: must be at least 1 (got 0)")
add({"method": "lora", "lora": {"rank": -8}}, "scenario.lora.rank: must be at least 1 (got -8)")
add({"method": "lora", "lora": {"rank": 6000}}, "scenario.lora.rank: must be at most 5120 (got 6000)")
add({"method": "lora", "lora": {"rank": 8, "alpha": 0}}, "scenario.lora.alpha: must be a positive finite number (got 0)")
add({"method": "lora", "lora": {"alpha": -16}}, "scenario.lora.alpha: must be a positive finite number (got -16)")
add({"method": "lora", "lora": {"dropout": 1.5}}, "scenario.lora.dropout: must be at most 0.999 (got 1.5)")
add({"method": "lora", "lora": {"dropout": -0.1}}, "scenario.lora.dropout: must be at least 0 (got -0.1)")
add({"method": "lora", "lora": {"targets": []}}, "scenario.lora.targets: must be \"all-linear\" or a non-empty list of q, k, v, o, gate, up, down (got [])")
add({"method": "lora", "lora": {"targets": "everything"}}, 'scenario.lora.targets: must be "all-linear" or a list of q, k, v, o, gate, up, down (got "everything")')
add({"method": "lora", "lora": {"targets": ["q", "x"]}}, 'scenario.lora.targets[1]: must be one of q, k, v, o, gate, up, down (got "x")')
add({"method": "lora", "lora": {"targets": ["q_proj"]}}, 'scenario.lora.targets[0]: must be one of q, k, v, o, gate, up, down (got "q_proj")')
add({"method": "lora", "lora": {"targets": [7]}}, "scenario.lora.targets[0]: must be one of q, k, v, o, gate, up, down (got 7)")
add({"model": "gpt2", "seq_len": 1024, "method": "lora", "lora": {"targets": ["q", "gate"]}}, "scenario.lora.targets: model has no 'gate' projection (plain MLP)")
# PEFT methods beyond LoRA (peft.hpp).
add({"method": "lora", "peft": {"vera_rank": 256}}, "scenario.peft.vera_rank: only applies to method vera (got method lora)")
add({"method": "ia3", "peft": {"virtual_tokens": 20}}, "scenario.peft.virtual_tokens: only applies to method prompt-tuning or prefix-tuning (got method ia3)")
add({"method": "vera", "peft": {"ia3_targets": ["k"]}}, "scenario.peft.ia3_targets: only applies to method ia3 (got method vera)")
add({"method": "ia3", "peft": {"targets": ["k"]}}, "scenario.peft.targets: unknown key (expected one of: virtual_tokens, vera_rank, ia3_targets)")
add({"method": "ia3", "peft": 3}, "scenario.peft: must be a JSON object (got number 3)")
add({"method": "prompt-tuning", "peft": {"virtual_tokens": 0}}, "scenario.peft.virtual_tokens: must be at least 1 (got 0)")
add({"method": "prefix-tuning", "peft": {"virtual_tokens": -5}}, "scenario.peft.virtual_tokens: must be at least 1 (got -5)")
add({"method": "vera", "peft": {"vera_rank": 0}}, "scenario.peft.vera_rank: must be at least 1 (got 0)")
add({"method": "ia3", "peft": {"ia3_targets": []}}, "scenario.peft.ia3_targets: must be \"all-linear\" or a non-empty list of q, k, v, o, gate, up, down (got [])")
add({"model": "gpt2", "seq_len": 1024, "method": "ia3", "peft": {"ia3_targets": ["k", "gate"]}}, "scenario.peft.ia3_targets: model has no 'gate' projection (plain MLP)")
add({"model": "gpt2", "seq_len": 1024, "method": "vera", "lora": {"targets": ["gate"]}}, "scenario.lora.targets: model has no 'gate' projection (plain MLP)")
add({"method": "lora", "lora": {"modules_to_save": ["lm_head"]}}, 'scenario.lora.modules_to_save[0]: must be one of embed, head (got "lm_head")')
add({"method": "lora", "lora": {"modules_to_save": "head"}}, 'scenario.lora.modules_to_save: must be a list of embed, head (got "head")')
add({"method": "ia3", "lora": {"rank": 8}}, "scenario.lora: only applies to method lora, qlora, dora or vera (got method ia3)")
add({"method": "freeze", "freeze": {"trainable_layers": 0}}, "scenario.freeze.trainable_layers: must be at least 1 (got 0)")
add({"method": "freeze", "freeze": {"trainable_layers": 41}}, "scenario.freeze.trainable_layers: must be at most 40 (got 41)")
add({"method": "qlora", "quantization": {"weights": "bf16"}}, "scenario.quantization.weights: qlora needs a quantized base (nf4, fp4, int4, int8) (got bf16)")
add({"quantization": {"weights": "nf4"}}, "scenario.quantization: cannot train quantized weights with method full; use lora/qlora or workload infer (got weights=nf4)")
add({"method": "lora", "quantization": {"weights": "int8", "double_quant": True}}, "scenario.quantization.double_quant: applies to nf4/fp4 only (got weights=int8)")
add({"method": "qlora", "quantization": {"group_size": -64}}, "scenario.quantization.group_size: must be at least 0 (got -64)")
add({"optimizer_in_backward": True, "grad_accum": 4}, "scenario.optimizer_in_backward: cannot be combined with gradient accumulation (got grad_accum=4)")
add({"fused_linear_loss": True, "chunked_loss": True}, "scenario.fused_linear_loss: the fused head and loss replace chunked_loss and inplace_loss (got both fused_linear_loss and chunked_loss)")
add({"fused_linear_loss": True, "inplace_loss": True}, "scenario.fused_linear_loss: the fused head and loss replace chunked_loss and inplace_loss (got both fused_linear_loss and inplace_loss)")
# Hardware.
add({"precision": "fp8-mixed", "gpu": "a100-80gb"}, "scenario.precision: fp8-mixed needs FP8 tensor cores (sm_89+); a100-80gb is sm_80")
add({"workload": "infer", "quantization": {"weights": "fp8"}, "gpu": "t4"},
    "scenario.quantization.weights: fp8 weights need FP8 tensor cores (sm_89+) or Marlin (sm_80+); t4 is sm_75")
add({"precision": "fp8-mixed", "gpu": "t4"}, "scenario.precision: fp8-mixed needs FP8 tensor cores (sm_89+); t4 is sm_75")
add({"precision": "fp8-mixed", "gpu": "v100-sxm2-32gb"}, "scenario.precision: fp8-mixed needs FP8 tensor cores (sm_89+); v100-sxm2-32gb is sm_70")
add({"precision": "fp8-mixed", "gpu": "rtx-3090"}, "scenario.precision: fp8-mixed needs FP8 tensor cores (sm_89+); rtx-3090 is sm_86")
add({"network": {"internode_gb_s": 0}}, "scenario.network.internode_gb_s: must be at least 0.001 (got 0)")
add({"network": {"internode_gb_s": -25}}, "scenario.network.internode_gb_s: must be at least 0.001 (got -25)")
add({"network": {"latency_us": -1}}, "scenario.network.latency_us: must be at least 0 (got -1)")
add({"network": {"host_memory_gib": 0}}, "scenario.network.host_memory_gib: must be at least 1 (got 0)")
# Serving.
add({"workload": "infer", "inference": {"batch": 0}}, "scenario.inference.batch: must be at least 1 (got 0)")
add({"workload": "infer", "inference": {"prompt_len": 0}}, "scenario.inference.prompt_len: must be at least 1 (got 0)")
add({"workload": "infer", "inference": {"gen_len": -5}}, "scenario.inference.gen_len: must be at least 0 (got -5)")
add({"workload": "infer", "inference": {"batch": "8"}}, 'scenario.inference.batch: must be an integer (got string "8")')
# Hostile values (tests/unit/test_hostile_input.cpp has the cases that
# cannot be a JSON line, e.g. a 10^5-deep array: json.dumps itself would recurse).
add({"model": "gpt2", "seq_len": 1024, "tokens": 1e308}, "scenario.tokens: must be at most 1e+18 (got 1e+308)")
add({"model": "gpt2", "seq_len": 1024, "micro_batch": 4611686018427387904, "num_gpus": 4, "global_batch": 8},
    "scenario.micro_batch: must be at most 16777216 (got 4611686018427387904)")
deep = []
for _ in range(199):
    deep = [deep]
add({"parallel": deep}, "scenario.parallel: must be a JSON object (got array " + "[" * 77 + "...)")
# GPU objects: every figure has an upper bound (src/catalog.cpp; finite values whose
# unit conversion overflowed used to give "fits with inf headroom").
for key, bad, what in [
    ("memory_gb", 1e308, "must be at most 100000 (got 1e+308)"),
    ("usable_gib", 1e6, "must be at most 100000 (got 1000000)"),
    ("bandwidth_gb_s", 1e7, "must be at most 1000000 (got 10000000)"),
    ("gpu_link_gb_s_bidir", 1e300, "must be at most 1000000 (got 1e+300)"),
    ("bf16_tflops", 1e308, "must be at most 1000000 (got 1e+308)"),
    ("fp8_tflops", 2e6, "must be at most 1000000 (got 2000000)"),
    ("int8_tops", 1e9, "must be at most 1000000 (got 1000000000)"),
    ("tdp_w", 1e6, "must be at most 100000 (got 1000000)"),
    ("memory_gb", -24, "must be a positive finite number (got -24)"),
]:
    add({"gpu": {"base": "rtx-4090", key: bad}}, f"scenario.gpu.{key}: {what}")
for bad, shown in [(0, "0"), (5000, "5000"), (-1, "-1"), (1e30, "1e+30"), ("128", '"128"')]:
    add({"gpu": {"base": "rtx-4090", "sm_count": bad}}, f"scenario.gpu.sm_count: must be an integer in [1, 4096] (got {shown})")
# Figures below any real part (catalog.cpp kMin*): 1e-300 TFLOP/s printed an MFU of 697%.
for key, bad, what in [
    ("bf16_tflops", 1e-300, "must be at least 0.01 (got 1e-300)"),
    ("fp32_tflops", 0.001, "must be at least 0.01 (got 0.001)"),
    ("fp64_tflops", 0.0001, "must be at least 0.001 (got 0.0001)"),
    ("memory_gb", 0.1, "must be at least 0.25 (got 0.1)"),
    ("bandwidth_gb_s", 0.5, "must be at least 1 (got 0.5)"),
    ("tdp_w", 0.5, "must be at least 1 (got 0.5)"),
]:
    add({"gpu": {"base": "rtx-4090", key: bad}}, f"scenario.gpu.{key}: {what}")
# Bounds the reader adds (scenario_json.cpp): LoRA alpha past any use, a price under a hundredth of a cent.
add({"method": "lora", "lora": {"alpha": 1e300}}, "scenario.lora.alpha: must be between 0.001 and 1e6 (got 1e+300)")
add({"price_per_gpu_hour": 1e-300}, "scenario.price_per_gpu_hour: must be 0 or at least 0.0001 per GPU-hour (got 1e-300)")

# Serving engines (engine.hpp): unknown names, keys of another engine, negative counts.
add({"workload": "infer", "engine": "vllm2"}, "scenario.engine: must be one of hf, vllm, sglang, tgi, llama.cpp (got \"vllm2\")")
add({"engine": "vllm"}, "scenario.engine: only applies to workload infer (got workload train)")
add({"workload": "infer", "fused_linear_loss": True}, "scenario.fused_linear_loss: only applies to workload train (got workload infer)")
add({"workload": "infer", "tiled_mlp": True}, "scenario.tiled_mlp: only applies to workload train (got workload infer)")
add({"workload": "infer", "engine": "vllm", "inference": {"gguf": "Q4_K_M"}}, "scenario.inference.gguf: only applies to engine llama.cpp (got engine vllm)")
add({"workload": "infer", "engine": "llama.cpp", "inference": {"gguf": "Q3_K_XXL"}}, "scenario.inference.gguf: must be one of F16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0 (got \"Q3_K_XXL\")")
add({"workload": "infer", "engine": "llama.cpp", "inference": {"gpu_layers": -1}}, "scenario.inference.gpu_layers: must be at least 0 (got -1)")
add({"workload": "infer", "engine": "vllm", "inference": {"max_batched_tokens": -5}}, "scenario.inference.max_batched_tokens: must be at least 0 (got -5)")
add({"workload": "infer", "engine": "vllm", "inference": {"cuda_graphs": "no"}}, "scenario.inference.cuda_graphs: must be true or false (got string \"no\")")
add({"workload": "infer", "engine": "hf", "inference": {"cuda_graphs": True}}, "scenario.inference.cuda_graphs: engine hf does not replay decode as CUDA graphs (got true)")

for r in R:
    print(json.dumps(r))
