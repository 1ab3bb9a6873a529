"""The plan exported as its launch config (gp.export / SearchResult.export): each
export is loaded with the format's own parser (json; PyYAML, Debian python3-yaml) and
its keys are checked against the layout of the first search row."""

import json
import shlex

import pytest

import gpuplan as gp

yaml = pytest.importorskip("yaml")


def _search(**kw):
    # llama-2-7b on 8 × A100, global batch 64 (mb × ga × dp), the search's first row.
    r = gp.search("llama-2-7b", gpu="a100-80gb", num_gpus=8, global_batch=64, top_k=3, **kw)
    assert len(r) >= 1
    return r, r[0].layout


def test_deepspeed_json_matches_the_first_layout():
    r, l = _search(framework="deepspeed")
    cfg = json.loads(r.export("deepspeed"))
    assert cfg["zero_optimization"]["stage"] == l.zero
    assert cfg["train_micro_batch_size_per_gpu"] == l.micro_batch
    assert cfg["gradient_accumulation_steps"] == l.grad_accum
    assert cfg["train_batch_size"] == l.micro_batch * l.grad_accum * l.dp == 64
    assert ("offload_optimizer" in cfg["zero_optimization"]) == (l.offload_optimizer != "none")
    assert cfg["bf16"]["enabled"] is True
    # gp.export of the result, of its first row and of that row's scenario are the same text.
    assert gp.export(r, "deepspeed") == gp.export(r[0], "deepspeed") == gp.export(r[0].to_scenario(), "deepspeed")


def test_accelerate_fsdp_yaml_loads_and_matches():
    r, l = _search(framework="fsdp")
    y = yaml.safe_load(r.export("accelerate-fsdp"))
    assert l.zero in (2, 3) and y["distributed_type"] == "FSDP"
    assert y["fsdp_config"]["fsdp_version"] == 2
    assert y["fsdp_config"]["fsdp_reshard_after_forward"] is (l.zero == 3)  # FSDP2: FULL_SHARD vs SHARD_GRAD_OP
    assert y["fsdp_config"]["fsdp_offload_params"] is (l.offload_params == "cpu")
    assert y["fsdp_config"]["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert y["fsdp_config"]["fsdp_activation_checkpointing"] is (l.checkpointing == "full")
    assert y["num_processes"] == 8 and y["num_machines"] == 1
    assert y["mixed_precision"] == "bf16"


def test_axolotl_yaml_loads_and_matches():
    s = gp.Scenario("llama-2-13b", gpu="a100-80gb", num_gpus=2, method="qlora", micro_batch=4, grad_accum=4,
                    seq_len=4096, parallel={"zero": 2}, lora={"rank": 16, "alpha": 32, "targets": ["q", "v"]})
    y = yaml.safe_load(gp.export(s, "axolotl"))
    assert y["base_model"] == "meta-llama/Llama-2-13b-hf"
    assert y["adapter"] == "qlora" and y["load_in_4bit"] is True
    assert y["lora_r"] == 16 and y["lora_alpha"] == 32
    assert y["lora_target_linear"] is False and y["lora_target_modules"] == ["q_proj", "v_proj"]
    assert y["sequence_len"] == 4096 and y["micro_batch_size"] == 4 and y["gradient_accumulation_steps"] == 4
    assert y["gradient_checkpointing"] is True  # PEFT's default: full checkpointing
    assert y["deepspeed"]["zero_optimization"]["stage"] == 2  # inline, not a path inside axolotl's repository
    assert y["datasets"][0]["path"] and y["learning_rate"] > 0  # required by axolotl's validator


def test_command_lines():
    s = gp.Scenario("llama-3.1-8b", gpu="rtx-4090", method="lora", micro_batch=2, grad_accum=8, seq_len=1024)
    words = shlex.split(gp.export(s, "torchtune"))
    assert words[:5] == ["tune", "run", "lora_finetune_single_device", "--config", "llama3_1/8B_lora_single_device"]
    kv = dict(w.split("=", 1) for w in words if "=" in w)
    assert kv["batch_size"] == "2" and kv["gradient_accumulation_steps"] == "8" and kv["tokenizer.max_seq_len"] == "1024"
    assert kv["model.lora_attn_modules"] == "[q_proj,v_proj]" and kv["model.apply_lora_to_mlp"] == "False"
    serve = gp.Scenario("llama-2-13b", gpu="l40s", num_gpus=2, tp=2, workload="infer",
                        inference={"prompt_len": 3000, "gen_len": 1000})
    words = shlex.split(gp.export(serve, "vllm"))
    assert words[:3] == ["vllm", "serve", "meta-llama/Llama-2-13b-hf"]
    assert words[words.index("--tensor-parallel-size") + 1] == "2"
    assert words[words.index("--max-model-len") + 1] == "4000"  # prompt 3000 + generated 1000
    launch = gp.export_launch(serve, "vllm")
    assert launch["text"] == gp.export(serve, "vllm") and launch["checked_against"].startswith("vLLM ")


def test_errors_name_the_element():
    s = gp.Scenario("llama-2-13b", gpu="a100-80gb", num_gpus=8, tp=2)
    with pytest.raises(gp.ConfigError, match=r"^export: deepspeed cannot express tensor parallelism \(tp=2\)"):
        gp.export(s, "deepspeed")
    with pytest.raises(gp.UnknownNameError, match="must be deepspeed"):
        gp.export(s, "megatron")
    with pytest.raises(TypeError):
        gp.export("llama-2-7b", "deepspeed")


def test_search_result_exports_the_first_expressible_row():
    # Whatever the search ranks first, the export is the first row the target can
    # express, as the CLI's: each earlier row raises ConfigError for that target.
    r, _ = _search()
    text = r.export("accelerate-fsdp")
    for row in r:
        try:
            expected = gp.export(row, "accelerate-fsdp")
        except gp.ConfigError:
            continue
        assert text == expected
        break
