"""The catalog sweep of `plan --export`: every model x method x 1/8/16/64 GPUs x target
is either accepted by the target's contract (src/data/export/<tool>.json: each tool's
names and rules taken from its source at a named commit) with batch, precision,
parallelism, offload and architecture equal to the plan, or refused with a one-line
reason naming what launches instead.

The checks here are the client's side, written from the contracts and not from the
writers: exports are parsed with json, PyYAML and shlex, and every launcher line
(torchrun, and `tune run`'s launcher arguments, which are torchrun's) goes through
torchrun's own argument parser, torch.distributed.run.get_args_parser (Debian's
python3-torch). Megatron-LM's arguments are checked against its parser's complete
flag list and the validate_args rules in the contract, and the model Megatron builds
from them is counted with the contract's parameter formula."""

import json
import pathlib
import shlex

import pytest
import yaml

import gpuplan as gp

from torch.distributed import run as torchrun  # Debian python3-torch (scripts/install-deps.sh)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONTRACT = {t: json.loads((ROOT / "src" / "data" / "export" / f"{t}.json").read_text())
            for t in ("deepspeed", "accelerate", "torchtune", "axolotl", "megatron", "vllm")}

GPU = "h100-sxm"
COUNTS = (1, 8, 16, 64)
METHODS = ("full", "lora", "qlora")
# The framework whose search a target launches: its layouts are the ones it can run.
FRAMEWORK = {"deepspeed": "deepspeed", "accelerate-fsdp": "fsdp", "torchtune": "torchtune",
             "axolotl": "hf", "torchrun": "megatron"}
DECODERS = [m for m in gp.models() if gp.model(m).kind == "decoder"]


def _first_launch(result, target):
    """(row, launch) of the first row the target expresses, or (None, [errors])."""
    errors = []
    for row in result:
        try:
            return row, gp.export_launch(row, target)
        except gp.ConfigError as e:
            errors.append(str(e))
    return None, errors


def _check_refusal(message, target):
    assert "\n" not in message
    assert message.startswith(f"export: {target} cannot express "), message
    # What launches instead: another target, method, optimizer or layout.
    assert "use " in message or "set " in message or "only " in message, message


def _torchrun_args(words):
    """torchrun's own parser on a launcher line (its options up to the script)."""
    return torchrun.get_args_parser().parse_args(words)


def _check_launcher(args, gpus):
    nnodes = int(str(args.nnodes).split(":")[-1])  # "N" or torchrun's default "1:1"
    assert nnodes * int(args.nproc_per_node) == gpus
    if nnodes > 1:
        # Nodes meet only at an explicit endpoint (torchtune's run.py goes standalone without one).
        assert args.rdzv_backend == "c10d" and args.rdzv_endpoint.endswith(":29500") and args.rdzv_id != "none"


# ---- DeepSpeed -------------------------------------------------------------------------

def check_deepspeed(text, row, scenario):
    c = CONTRACT["deepspeed"]
    cfg = json.loads(text)
    layout = row.layout
    assert set(cfg) <= set(c["top_level_keys"])
    assert "auto" not in text  # plain deepspeed.initialize does not resolve "auto"
    assert cfg["train_batch_size"] == cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"] * layout.dp
    assert (cfg["train_micro_batch_size_per_gpu"], cfg["gradient_accumulation_steps"]) == (layout.micro_batch, layout.grad_accum)
    z = cfg["zero_optimization"]
    assert set(z) <= set(c["zero_keys"]) and z["stage"] == layout.zero
    assert set(z.get("offload_optimizer", {})) <= set(c["offload_optimizer_keys"])
    assert set(z.get("offload_param", {})) <= set(c["offload_param_keys"])
    assert z.get("offload_optimizer", {}).get("device", "none") == layout.offload_optimizer
    assert z.get("offload_param", {}).get("device", "none") == layout.offload_params
    if "offload_param" in z:
        assert z["stage"] == 3
    if "optimizer" in cfg:
        kind = cfg["optimizer"]["type"].lower()
        assert kind in c["optimizer_types"]
        accepted = {p.split()[0] for p in c["optimizer_params"][kind]}
        assert set(cfg["optimizer"]["params"]) <= accepted
    if "offload_optimizer" in z:
        # ZeRO-Offload with a client optimizer raises: the config must build DeepSpeed's CPU one.
        assert "optimizer" in cfg and not c["cpu_offload_optimizers"][cfg["optimizer"]["type"].lower()].startswith("none")
    assert cfg["bf16"]["enabled"] == scenario["precision"].startswith("bf16")
    assert cfg["fp16"]["enabled"] == (scenario["precision"] == "fp16-mixed")
    assert set(cfg.get("activation_checkpointing", {})) <= set(c["activation_checkpointing_keys"])


# ---- accelerate ------------------------------------------------------------------------

def check_accelerate(text, row, scenario):
    c = CONTRACT["accelerate"]
    y = yaml.safe_load(text)
    layout = row.layout
    assert set(y) <= set(c["config_keys"])
    assert str(y["mixed_precision"]) in c["mixed_precision"]
    assert y["num_processes"] == layout.gpus
    if y["num_machines"] > 1:
        assert set(c["multi_node"]["required"]) <= set(y)
    launch = shlex.split(text.splitlines()[0].lstrip("# "))
    assert launch[launch.index("--per_device_train_batch_size") + 1] == str(layout.micro_batch)
    assert launch[launch.index("--gradient_accumulation_steps") + 1] == str(layout.grad_accum)
    fsdp = y.get("fsdp_config", {})
    assert set(fsdp) <= set(c["fsdp_config_keys"])
    if fsdp:
        assert y["distributed_type"] == "FSDP" and fsdp["fsdp_version"] == 2
        assert fsdp["fsdp_reshard_after_forward"] is (layout.zero == 3) and layout.zero in (2, 3)
        assert fsdp["fsdp_offload_params"] is (layout.offload_params == "cpu")
    else:
        assert layout.zero == 0 and layout.offload_params == "none"
    # The Trainer refuses --gradient_checkpointing beside FSDP's activation checkpointing.
    ckpt_fsdp = fsdp.get("fsdp_activation_checkpointing", False)
    ckpt_flag = "--gradient_checkpointing" in launch
    assert not (ckpt_fsdp and ckpt_flag)
    assert (ckpt_fsdp or ckpt_flag) == (layout.checkpointing == "full")


# ---- torchtune -------------------------------------------------------------------------

def check_torchtune(text, row, scenario, model):
    c = CONTRACT["torchtune"]
    words = shlex.split(text)
    assert words[:2] == ["tune", "run"]
    recipe_at = next(i for i, w in enumerate(words) if w in c["recipes"])
    launcher, recipe = words[2:recipe_at], words[recipe_at]
    layout = row.layout
    if layout.gpus == 1:
        assert launcher == [] and recipe.endswith("_single_device")  # tune run refuses torchrun args here
    else:
        args = _torchrun_args(launcher + [recipe, "--config", "x"])
        _check_launcher(args, layout.gpus)
        assert recipe.endswith("_distributed")
    assert words[recipe_at + 1] == "--config"
    config = words[recipe_at + 2]
    registered = {n for names in c["recipes"].values() for n in names} - {"dev/3B_grpo_sft"}
    assert config in registered and config.startswith(c["models"][model]["dir"] + "_")
    kv = dict(w.split("=", 1) for w in words[recipe_at + 3:])
    assert set(kv) <= set(c["recipe_keys"][recipe]) | {"model._component_", "compile"}
    if "model._component_" in kv:
        module, builder = kv["model._component_"].rsplit(".", 1)
        m = c["models"][model]
        assert module == m["module"] and builder in (m.get("full"), m.get("lora"), m.get("qlora"))
    assert kv["batch_size"] == str(layout.micro_batch) and kv["gradient_accumulation_steps"] == str(layout.grad_accum)
    assert kv["enable_activation_checkpointing"] == str(layout.checkpointing == "full")
    assert kv["dtype"] in c["dtypes"] and kv["tokenizer.max_seq_len"] == str(scenario["seq_len"])
    if layout.gpus > 1:
        assert kv["fsdp_reshard_after_forward"] == str(layout.zero == 3)
        assert kv["fsdp_cpu_offload"] == str(layout.offload_params == "cpu")
    method = scenario["method"]
    assert recipe.startswith("full" if method == "full" else "lora")
    if method == "qlora":
        kind = config[len(c["models"][model]["dir"]) + 1:].split("_")[0]
        assert kind == "qlora" or kv.get("model._component_", "").endswith(".qlora_" + c["models"][model]["lora"][5:]) \
            or kv.get("model.quantize_base") == "True"
    if method != "full":
        modules = kv["model.lora_attn_modules"].strip("[]").split(",")
        assert set(modules) <= set(c["lora_attn_modules"])
        assert kv["model.lora_rank"] == str(scenario["lora"]["rank"])


# ---- axolotl ---------------------------------------------------------------------------

def check_axolotl(text, row, scenario):
    c = CONTRACT["axolotl"]
    y = yaml.safe_load(text)
    layout = row.layout
    assert set(c["required_keys"]) <= set(y)
    assert sum(k in y for k in ("micro_batch_size", "gradient_accumulation_steps", "batch_size")) >= 2
    assert not ("gradient_accumulation_steps" in y and "batch_size" in y)
    assert not set(y) & {k for k in c["deprecated"] if "." not in k and " " not in k}
    assert all(set(c["dataset_entry"]["required"]) <= set(d) for d in y["datasets"])
    assert y["optimizer"] in c["optimizers"] and y["attn_implementation"] in c["attention_values"]
    assert (y["micro_batch_size"], y["gradient_accumulation_steps"]) == (layout.micro_batch, layout.grad_accum)
    assert y["sequence_len"] == scenario["seq_len"]
    method = scenario["method"]
    if method == "full":
        assert "adapter" not in y
    else:
        assert y["adapter"] in c["adapters"] and y["load_in_4bit"] is (method == "qlora")
        assert y["lora_r"] == scenario["lora"]["rank"]
    fsdp = y.get("fsdp_config")
    if fsdp is not None:
        assert y["fsdp_version"] == 2 and set(fsdp) <= set(c["fsdp"]["config_keys"])
        assert fsdp["reshard_after_forward"] is (layout.zero == 3)
        assert fsdp["offload_params"] is (layout.offload_params == "cpu")
        assert not (fsdp["activation_checkpointing"] and y["gradient_checkpointing"])
        assert (fsdp["activation_checkpointing"] or y["gradient_checkpointing"]) == (layout.checkpointing == "full")
    else:
        assert y["gradient_checkpointing"] is (layout.checkpointing == "full")
    ds = y.get("deepspeed")
    if ds is not None:
        assert isinstance(ds, dict)  # inline: never a path inside axolotl's repository
        assert ds["zero_optimization"]["stage"] == layout.zero
        assert ds["zero_optimization"].get("offload_optimizer", {}).get("device", "none") == layout.offload_optimizer
        assert ds["zero_optimization"].get("offload_param", {}).get("device", "none") == layout.offload_params
    elif fsdp is None:
        assert layout.offload_optimizer == "none" and (layout.zero == 0 or layout.gpus == 1)


# ---- torchrun + Megatron-LM ------------------------------------------------------------

def _megatron_args(words, contract):
    """Megatron's arguments as {flag: value or True}; every flag is its parser's, and a
    store_true flag takes no value."""
    flags, store_true = set(contract["flags"]), set(contract["store_true_flags"])
    out, i = {}, 0
    while i < len(words):
        w = words[i]
        assert w in flags, w
        if w in store_true:
            out[w], i = True, i + 1
        else:
            assert i + 1 < len(words) and not words[i + 1].startswith("--"), w
            out[w], i = words[i + 1], i + 2
    return out


def _megatron_parameters(a):
    """The GPT model Megatron builds from these flags, counted with the contract's
    parameter_count formula (embeddings, per-layer qkv/proj/MLP/norms, final norm, head)."""
    h, layers, heads = int(a["--hidden-size"]), int(a["--num-layers"]), int(a["--num-attention-heads"])
    d = int(a.get("--kv-channels", h // heads))
    groups = int(a["--num-query-groups"]) if "--group-query-attention" in a else heads
    vocab = int(a["--padded-vocab-size"])
    bias = "--disable-bias-linear" not in a
    norm = h if a.get("--normalization") == "RMSNorm" else 2 * h
    attn = h * (heads * d + 2 * groups * d) + heads * d * h
    attn += (heads * d + 2 * groups * d) * (bias or "--add-qkv-bias" in a) + h * bias
    ffn, g = int(a["--ffn-hidden-size"]), 2 if "--swiglu" in a else 1
    dense = g * ffn * h + ffn * h + (g * ffn + h) * bias
    experts = int(a.get("--num-experts", 0))
    mlp = experts * h + experts * dense if experts else dense
    positions = int(a["--max-position-embeddings"]) * h if a.get("--position-embedding-type", "learned_absolute") == "learned_absolute" else 0
    head = vocab * h if "--untie-embeddings-and-output-weights" in a else 0
    return vocab * h + positions + layers * (attn + mlp + 2 * norm) + norm + head


def check_torchrun(text, row, scenario, model):
    c = CONTRACT["megatron"]
    words = shlex.split(text)
    layout = row.layout
    env = {}
    while "=" in words[0]:
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    assert words[0] == "torchrun"
    args = _torchrun_args(words[1:])
    _check_launcher(args, layout.gpus)
    assert args.training_script == "pretrain_gpt.py"
    a = _megatron_args(args.training_script_args, c)
    tp, pp = int(a["--tensor-model-parallel-size"]), int(a["--pipeline-model-parallel-size"])
    assert (tp, pp) == (layout.tp, layout.pp)
    if tp > 1:  # validate_args: an error without it before Blackwell
        assert env.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1"
    assert layout.gpus % (tp * pp) == 0
    dp = layout.gpus // (tp * pp)
    mb, gb = int(a["--micro-batch-size"]), int(a["--global-batch-size"])
    assert mb == layout.micro_batch and gb == mb * layout.grad_accum * dp and gb % (mb * dp) == 0
    assert ("--sequence-parallel" in a) == (layout.sp and tp > 1)
    arch = gp.model(model)
    heads, groups = int(a["--num-attention-heads"]), int(a.get("--num-query-groups", a["--num-attention-heads"]))
    assert heads % tp == 0 and (groups % tp == 0 or tp % groups == 0)
    assert int(a["--num-layers"]) % pp == 0
    if "--num-virtual-stages-per-pipeline-rank" in a:
        assert (int(a["--num-layers"]) // pp) % int(a["--num-virtual-stages-per-pipeline-rank"]) == 0
    assert int(a["--seq-length"]) <= int(a["--max-position-embeddings"])
    for required in ("--train-iters", "--lr", "--tokenizer-type"):
        assert required in a
    assert "--data-path" in a or "--mock-data" in a
    recompute = {"full": "full", "selective": "selective", "none": None}[layout.checkpointing]
    assert a.get("--recompute-granularity") == recompute
    assert ("--use-distributed-optimizer" in a) == (layout.zero == 1)
    assert ("--bf16" in a) == scenario["precision"].startswith("bf16")
    # The model Megatron builds is the planned one, parameter for parameter.
    assert _megatron_parameters(a) == arch.parameters


CHECKS = {"deepspeed": check_deepspeed, "accelerate-fsdp": check_accelerate, "axolotl": check_axolotl}


@pytest.mark.parametrize("target", sorted(FRAMEWORK))
def test_catalog_sweep(target):
    accepted = refused = unplanned = 0
    for model in DECODERS:
        for method in METHODS:
            for gpus in COUNTS:
                try:
                    result = gp.search(model, gpu=GPU, num_gpus=gpus, method=method,
                                       framework=FRAMEWORK[target], top_k=20)
                except gp.ConfigError:
                    unplanned += 1  # the framework cannot run this method/count (e.g. megatron LoRA)
                    continue
                if len(result) == 0:
                    unplanned += 1
                    continue
                row, launch = _first_launch(result, target)
                if row is None:
                    for message in launch:
                        _check_refusal(message, target)
                    refused += 1
                    continue
                scenario = row.to_scenario().to_dict()
                where = f"{model} {method} {gpus} x {GPU} -> {target}: {launch['text']}"
                try:
                    if target == "torchtune":
                        check_torchtune(launch["text"], row, scenario, model)
                    elif target == "torchrun":
                        check_torchrun(launch["text"], row, scenario, model)
                    else:
                        CHECKS[target](launch["text"], row, scenario)
                except AssertionError as e:
                    raise AssertionError(f"{where}\n{e}") from e
                assert launch["checked_against"].split()[0].lower() in \
                    CONTRACT[{"accelerate-fsdp": "accelerate", "torchrun": "megatron"}.get(target, target)]["tool"].lower()
                accepted += 1
    print(f"{target}: {accepted} accepted, {refused} refused, {unplanned} without a plan")
    assert accepted > 0


def test_torchtune_refuses_models_without_a_builder():
    # falcon-7b has no torchtune builder: the refusal names the reason and what launches instead.
    s = gp.Scenario("falcon-7b", gpu=GPU, method="lora")
    with pytest.raises(gp.ConfigError, match=r"^export: torchtune cannot express model falcon-7b \(torchtune has no falcon"
                                             r" builders.*\); use --export accelerate-fsdp or axolotl$"):
        gp.export(s, "torchtune")


def test_torchtune_qlora_70b_uses_a_registered_config():
    # No llama3_1/70B_qlora is registered: the LoRA config with the QLoRA builder.
    s = gp.Scenario("llama-3.1-70b", gpu=GPU, num_gpus=8, method="qlora", parallel={"zero": 3})
    words = shlex.split(gp.export(s, "torchtune"))
    assert words[words.index("--config") + 1] == "llama3_1/70B_lora"
    assert "model._component_=torchtune.models.llama3_1.qlora_llama3_1_70b" in words


def test_megatron_refuses_architectures_it_cannot_build():
    for model, feature in (("falcon-7b", "attention and MLP in parallel"), ("bloomz-7b1", "a norm after the embeddings"),
                           ("opt-1.3b", "learned positions with an offset"), ("gemma-2b", "a gated MLP other than SwiGLU")):
        s = gp.Scenario(model, gpu=GPU, num_gpus=8, framework="megatron", seq_len=512)
        with pytest.raises(gp.ConfigError, match=feature):
            gp.export(s, "torchrun")
        assert CONTRACT["megatron"]["families"][model].startswith("unsupported")


def test_megatron_families_agree_with_the_contract():
    # The writer's verdict per catalog model is the contract's.
    for model, verdict in CONTRACT["megatron"]["families"].items():
        s = gp.Scenario(model, gpu=GPU, num_gpus=8, framework="megatron", seq_len=512)
        try:
            gp.export(s, "torchrun")
            ok = True
        except gp.ConfigError:
            ok = False
        assert ok == verdict.startswith("supported"), (model, verdict)


# ---- vLLM --------------------------------------------------------------------------------

def check_vllm(text, scenario):
    c = CONTRACT["vllm"]
    words = shlex.split(text)
    assert words[:2] == ["vllm", "serve"]
    flags = dict(zip(words[3::2], words[4::2]))
    assert set(flags) <= set(c["flags"])
    assert flags["--tensor-parallel-size"] == str(scenario["parallel"]["tp"])
    assert int(flags["--max-model-len"]) == scenario["inference"]["prompt_len"] + scenario["inference"]["gen_len"]
    assert 0 < float(flags["--gpu-memory-utilization"]) <= 1
    q = flags.get("--quantization")
    if q is not None:
        assert q in c["quantization_methods"] or q in c["plugin_methods"]
        # A catalog model is an unquantized checkpoint: only methods that quantize at load.
        assert q in c["inflight_methods"] or q in c["plugin_methods"] or q == "int8_per_channel_weight_only"
    if "--kv-cache-dtype" in flags:
        assert flags["--kv-cache-dtype"] in c["kv_cache_dtypes"]


@pytest.mark.parametrize("quant", [None, "fp8", "int8", "nf4", "int4"])
def test_vllm_sweep(quant):
    accepted = refused = 0
    for model in DECODERS:
        for tp in (1, 8):
            kw = {"quantization": {"weights": quant}} if quant else {}
            try:
                s = gp.Scenario(model, gpu=GPU, num_gpus=tp, tp=tp, workload="infer",
                                inference={"prompt_len": 1024, "gen_len": 256}, **kw)
            except gp.ConfigError:
                continue  # a layout the model cannot take (heads not divisible by tp)
            try:
                launch = gp.export_launch(s, "vllm")
            except gp.ConfigError as e:
                _check_refusal(str(e), "vllm")
                assert quant == "int4"
                refused += 1
                continue
            check_vllm(launch["text"], s.to_dict())
            accepted += 1
    assert accepted + refused > 0
    assert (refused > 0) == (quant == "int4")


def test_vllm_serves_an_awq_checkpoint_without_quantization_flag(tmp_path):
    # A checkpoint whose config.json says quant_method awq: vLLM reads it; a --quantization
    # that differs would be refused at load (vllm/config/model.py _verify_quantization).
    cfg = json.loads((ROOT / "src" / "data" / "models" / "llama-2-13b.json").read_text())
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    s = gp.Scenario(str(tmp_path / "config.json"), gpu="rtx-4090", workload="infer",
                    quantization={"weights": "int4"}, inference={"prompt_len": 1024, "gen_len": 256})
    words = shlex.split(gp.export(s, "vllm"))
    assert words[2] == str(tmp_path) and "--quantization" not in words
