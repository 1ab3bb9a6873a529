"""The keyword-argument API: models, GPUs, scenarios, estimates, units, reprs.

The memory and time models have their own C++ tests; here the question is whether
Python hands the right scenario to them and hands their results back unchanged, in
the units its attribute names promise.
"""

import json
import math

import numpy as np
import pytest

import gpuplan as gp
from gpuplan import _core

# Llama-2-13B (HF LlamaForCausalLM, untied head): 2·V·h + L·(4h² + 3h·f + 2h) + h
# with V=32000, h=5120, L=40, f=13824 = 13,015,864,320 (= model.num_parameters()).
LLAMA2_13B_PARAMS = 2 * 32000 * 5120 + 40 * (4 * 5120 * 5120 + 3 * 5120 * 13824 + 2 * 5120) + 5120


def tiny_llama_config(**overrides):
    cfg = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000,
           "max_position_embeddings": 512, "tie_word_embeddings": False}
    cfg.update(overrides)
    return cfg


# Same formula as above for the tiny config: 2·1000·256 + 2·(4·256² + 3·256·688 + 2·256) + 256.
TINY_PARAMS = 2 * 1000 * 256 + 2 * (4 * 256 * 256 + 3 * 256 * 688 + 2 * 256) + 256


def test_catalog_model_parameter_count():
    m = gp.model("llama-2-13b")
    assert m.parameters == LLAMA2_13B_PARAMS == 13_015_864_320
    assert (m.name, m.family, m.hidden, m.layers, m.heads, m.kv_heads) == ("llama-2-13b", "llama", 5120, 40, 40, 40)
    assert m.parameter_breakdown()["total"] == m.parameters
    assert "13.02 B" in repr(m)
    assert m.spec == "llama-2-13b"


def test_hub_alias_resolves_to_catalog_entry():
    assert gp.model("meta-llama/Llama-2-13b-hf").parameters == LLAMA2_13B_PARAMS


def test_model_from_dict_and_config_file(tmp_path):
    assert gp.model(tiny_llama_config()).parameters == TINY_PARAMS
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_llama_config()))
    assert gp.model(config=path).parameters == TINY_PARAMS
    assert gp.model(config=str(path)).parameters == TINY_PARAMS
    assert gp.model(config=tmp_path).parameters == TINY_PARAMS  # a checkpoint directory


def test_model_errors_are_config_errors():
    with pytest.raises(gp.ConfigError) as e:
        gp.model("llama-2-13")
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith("model: unknown model 'llama-2-13'")
    assert e.value.path == "model"
    with pytest.raises(gp.ConfigError, match="^model: give a name or config=, not both$"):
        gp.model("llama-2-13b", config="x.json")
    with pytest.raises(gp.ConfigError, match="^model: must be a name, a path or a dict"):
        gp.model(12)


def test_gpu_catalog():
    g = gp.gpu("rtx-4090")
    assert g.id == "rtx-4090"
    assert g.usable_memory_bytes == g.usable_memory.bytes > 20 * gp.GiB
    assert g.usable_memory.gib == pytest.approx(g.usable_memory_bytes / 2**30, rel=1e-15)
    assert "rtx-4090" in gp.gpus() and "llama-2-13b" in gp.models()
    with pytest.raises(gp.ConfigError, match=r"^gpu: unknown GPU 'rtx-409' \(did you mean: rtx-4090"):
        gp.gpu("rtx-409")


@pytest.fixture(scope="module")
def qlora():
    return gp.estimate(gp.model("llama-2-13b"), gpu="rtx-4090", method="qlora", seq_len=2048, micro_batch=1)


def test_estimate_matches_cli_json(qlora):
    # to_dict() is io::estimate_json (what `gpuplan estimate --json` prints); the
    # attribute path goes through separate accessors: both must agree exactly.
    d = qlora.to_dict()
    mem = d["memory"]
    for key in ("weights_bytes", "master_weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "transient_bytes", "overhead_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes",
                "capacity_bytes", "headroom_bytes"):
        assert getattr(qlora.memory, key) == mem[key], key
    assert qlora.memory.fits is mem["fits"]
    t = d["time"]
    for key in ("step_seconds", "tokens_per_second_per_gpu", "tokens_per_second", "mfu", "hfu",
                "model_flops_per_step", "hardware_flops_per_step"):
        assert getattr(qlora.time, key) == t[key], key
    assert qlora.time.compute_seconds == t["breakdown"]["compute_seconds"]
    assert d["model"]["parameters"] == LLAMA2_13B_PARAMS
    assert d["scenario"]["method"] == "qlora" and d["scenario"]["gpu"] == "rtx-4090"
    assert qlora.warnings == d["warnings"]


def test_units_and_views(qlora):
    m = qlora.memory
    assert isinstance(m.device, gp.Bytes) and isinstance(m.device, float)
    assert m.total == m.device == m.device_bytes == m.total_bytes
    assert m.device.gib == m.device_bytes / 2**30
    assert m.device.gb == m.device_bytes / 1e9
    assert m.capacity_bytes == gp.gpu("rtx-4090").usable_memory_bytes
    # headroom = capacity - device (memory.hpp); fits <=> headroom >= 0.
    assert m.headroom_bytes == pytest.approx(m.capacity_bytes - m.device_bytes, rel=1e-12)
    assert m.fits == (m.device_bytes <= m.capacity_bytes)
    assert isinstance(qlora.time.step, gp.Seconds)
    assert qlora.time.step.hours == qlora.time.step_seconds / 3600
    # The training throughput definition: tokens per step / step time / GPUs.
    tokens_per_step = qlora.scenario.global_batch * qlora.scenario.seq_len
    assert qlora.time.tokens_per_second == pytest.approx(tokens_per_step / qlora.time.step_seconds, rel=1e-9)
    parts = m.components()
    assert set(parts) == set(gp.MemoryBreakdown.COMPONENTS) | {"allocator"}
    assert sum(parts.values()) == pytest.approx(max(m.device_bytes, sum(v for k, v in parts.items() if k != "allocator")),
                                                rel=1e-12)


def test_full_lora_qlora_order():
    # Same model and batch: full fine-tuning adds gradients and optimizer state for
    # every parameter; QLoRA stores the base in ~4.1 bits instead of 16.
    m = gp.model("llama-2-13b")
    e = {k: gp.estimate(m, gpu="rtx-4090", method=k, seq_len=2048) for k in ("full", "lora", "qlora")}
    assert e["full"].memory.device_bytes > e["lora"].memory.device_bytes > e["qlora"].memory.device_bytes
    assert not e["full"].memory.fits
    assert e["lora"].memory.weights_bytes > 3 * e["qlora"].memory.weights_bytes
    assert e["full"].memory.optimizer_bytes > 100 * e["lora"].memory.optimizer_bytes


def test_repr_is_the_cli_report(qlora):
    text = repr(qlora)
    assert text == _core.estimate_report(qlora.scenario._run, "text")
    assert "Memory per GPU" in text and "GiB" in text
    html = qlora._repr_html_()
    assert html.count("<table>") == 2 and "Weights" in html
    assert "FITS" in html  # the verdict line: 13B QLoRA at 2048 with PEFT's default checkpointing fits 24 GB
    assert "<b>llama-2-13b</b>" in html
    assert qlora.to_markdown().count("|") > 20
    assert repr(qlora.memory).startswith("MemoryBreakdown(device=")


def test_config_error_messages_match_cpp():
    m = gp.model("llama-2-13b")
    with pytest.raises(gp.ConfigError) as e:
        gp.estimate(m, gpu="rtx-4090", num_gpus=3, tp=3)
    assert str(e.value) == "scenario.parallel.tp: must divide num_attention_heads=40 (got 3)"
    assert e.value.path == "scenario.parallel.tp"
    with pytest.raises(gp.ConfigError, match=r"^scenario\.parallel\.tp: given twice"):
        gp.estimate(m, tp=2, parallel={"tp": 2})


def test_unknown_keyword_is_named():
    with pytest.raises(gp.ConfigError) as e:
        gp.estimate("llama-2-13b", gpu="rtx-4090", micro_bach=2)
    assert str(e.value).startswith("scenario.micro_bach: unknown key (expected one of: model, workload")


def test_bad_scenarios_give_the_cpp_messages(repo):
    # tests/data/bad_scenarios.jsonl is the C++ reader's table of rejected inputs
    # and exact messages (tests/unit/test_scenario.cpp checks them in C++).
    lines = (repo / "tests" / "data" / "bad_scenarios.jsonl").read_text().splitlines()
    assert len(lines) > 100
    for line in lines:
        case = json.loads(line)
        with pytest.raises(gp.ConfigError) as e:
            gp.Scenario.from_dict(case["scenario"])
        assert str(e.value) == case["error"], case["scenario"]


def test_numpy_and_path_values(tmp_path):
    a = gp.estimate("llama-2-7b", gpu="a100-80gb", micro_batch=np.int64(2), seq_len=np.int32(1024),
                    tokens=np.float64(1e9))
    b = gp.estimate("llama-2-7b", gpu="a100-80gb", micro_batch=2, seq_len=1024, tokens=1e9)
    assert a.memory.device_bytes == b.memory.device_bytes
    assert a.time.total_seconds == b.time.total_seconds > 0
    with pytest.raises(gp.ConfigError, match=r"^scenario\.micro_batch: unsupported value of type object"):
        gp.estimate("llama-2-7b", micro_batch=object())


def test_none_means_default():
    a = gp.estimate("llama-2-7b", gpu="a100-80gb", tokens=None, checkpointing=None)
    b = gp.estimate("llama-2-7b", gpu="a100-80gb")
    assert a.memory.device_bytes == b.memory.device_bytes


def test_scenario_json_round_trip(tmp_path):
    s = gp.Scenario("llama-2-13b", gpu="rtx-4090", method="qlora", micro_batch=2, seq_len=1024,
                    lora={"rank": 16, "targets": "all-linear"}, checkpointing="full")
    path = tmp_path / "run.json"
    s.to_json(path)
    t = gp.Scenario.from_json(path)
    assert t.to_dict() == s.to_dict()
    assert gp.Scenario.from_json(path.read_text()).to_dict() == s.to_dict()
    assert t.estimate().memory.device_bytes == s.estimate().memory.device_bytes
    assert (t.method, t.micro_batch, t.seq_len, t.gpu.id) == ("qlora", 2, 1024, "rtx-4090")
    with pytest.raises(gp.ConfigError, match="^scenario: cannot open file"):
        gp.Scenario.from_json(tmp_path / "missing.json")


def test_scenario_replace_and_estimate_overrides():
    s = gp.Scenario("llama-2-7b", gpu="a100-80gb", micro_batch=1)
    s4 = s.replace(micro_batch=4)
    assert (s.micro_batch, s4.micro_batch) == (1, 4)
    assert gp.estimate(s, micro_batch=4).memory.device_bytes == s4.estimate().memory.device_bytes
    assert s4.estimate().memory.activations_bytes > s.estimate().memory.activations_bytes
    assert "llama-2-7b" in repr(s)


def test_dir_is_all_and_everything_documented():
    assert dir(gp) == sorted(gp.__all__)  # dir() sorts what __dir__ returns
    assert set(vars(gp)) - set(gp.__all__)  # ... while the module holds more (submodules, helpers)
    for name in gp.__all__:
        obj = getattr(gp, name)
        if name.startswith("__") or isinstance(obj, (float, str)):
            continue
        assert obj.__doc__ and obj.__doc__.strip(), name
        if isinstance(obj, type):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if callable(member) or isinstance(member, property):
                    assert member.__doc__ and member.__doc__.strip(), f"{name}.{attr}"


def test_version_is_the_cmake_version(repo):
    import re

    text = (repo / "CMakeLists.txt").read_text()
    assert gp.__version__ == re.search(r"project\(gpuplan VERSION ([0-9.]+)", text).group(1)


def test_infinite_and_huge_numbers_rejected_like_json():
    with pytest.raises(gp.ConfigError, match=r"^scenario\.tokens: must be a finite number"):
        gp.estimate("llama-2-7b", tokens=math.inf)
    with pytest.raises(gp.ConfigError, match=r"^scenario\.micro_batch: "):
        gp.estimate("llama-2-7b", micro_batch=10**30)


# --------------------------------------------------------------------------- error kinds


@pytest.mark.parametrize("call, cls, kind", [
    (lambda: gp.model("llama-2-13"), gp.UnknownNameError, "unknown_name"),
    (lambda: gp.gpu("rtx-409"), gp.UnknownNameError, "unknown_name"),
    (lambda: gp.Scenario("llama-2-13b", method="adalora"), gp.UnknownNameError, "unknown_name"),
    (lambda: gp.Scenario("llama-2-13b", modle="x"), gp.UnknownNameError, "unknown_name"),
    (lambda: gp.Scenario.from_json('{"model": "gpt2",,}'), gp.ParseError, "parse_error"),
    (lambda: gp.Scenario.from_json("/nonexistent/run.json"), gp.FileError, "io_error"),
    (lambda: gp.model(config="/nonexistent/config.json"), gp.FileError, "io_error"),
    (lambda: gp.Scenario("llama-2-13b", micro_batch=0), gp.InvalidInputError, "invalid_input"),
    (lambda: gp.Scenario("llama-2-13b", tp=3), gp.InvalidInputError, "invalid_input"),
    (lambda: gp.model("llama-2-13b", config="x.json"), gp.InvalidInputError, "invalid_input"),
    (lambda: gp.search("llama-2-13b", num_gpus=8, objective="speed"), gp.UnknownNameError, "unknown_name"),
])
def test_errors_have_a_kind_and_stay_config_errors(call, cls, kind):
    with pytest.raises(cls) as e:
        call()
    assert e.value.kind == kind == cls.kind
    assert isinstance(e.value, gp.ConfigError) and isinstance(e.value, ValueError)
    assert str(e.value).startswith(e.value.path + ": ")
    # Every subclass is caught by `except gp.ConfigError`, as before.
    try:
        call()
    except gp.ConfigError as caught:
        assert type(caught) is cls
    assert set(_core.names("error_kind")) >= {"invalid_input", "unknown_name", "parse_error", "io_error"}


def test_file_errors_are_os_errors_too():
    with pytest.raises(OSError) as e:
        gp.Scenario.from_json("/nonexistent/run.json")
    assert str(e.value) == "scenario: cannot open file '/nonexistent/run.json'"
    assert e.value.path == "scenario"


# --------------------------------------------------------------------------- names


TRAIN = {"model": "llama-2-7b", "gpu": "h100-sxm"}  # FP8 tensor cores: every precision applies


@pytest.mark.parametrize("key, context", [
    ("workload", TRAIN), ("method", TRAIN), ("precision", TRAIN), ("optimizer", TRAIN), ("checkpointing", TRAIN),
    ("attention", TRAIN), ("optimizer_kernel", TRAIN), ("parallel.offload_optimizer", dict(TRAIN, parallel={"zero": 3})),
    ("parallel.offload_params", dict(TRAIN, parallel={"zero": 3})),
    ("quantization.weights", dict(TRAIN, workload="infer")), ("inference.kv_cache_dtype", dict(TRAIN, workload="infer")),
])
def test_names_are_exactly_what_the_reader_accepts(key, context):
    names = _core.names(key)
    assert names and len(set(names)) == len(names)

    def with_value(value):
        d = json.loads(json.dumps(context))
        *outer, last = key.split(".")
        node = d
        for k in outer:
            node = node.setdefault(k, {})
        node[last] = value
        return d

    for name in names:
        gp.Scenario.from_dict(with_value(name))  # every name of the table is accepted
    with pytest.raises(gp.UnknownNameError) as e:
        gp.Scenario.from_dict(with_value("no-such-name"))
    assert str(e.value) == f"scenario.{key}: must be one of {', '.join(names)} (got \"no-such-name\")"


def test_names_of_lora_targets_and_unknown_keys():
    targets = _core.names("lora.targets")
    assert targets[-1] == "all-linear"
    for t in targets[:-1]:
        assert gp.Scenario("llama-2-7b", method="lora", lora={"targets": [t]}).method == "lora"
    with pytest.raises(gp.UnknownNameError, match=r"^names: unknown key 'nope'"):
        _core.names("nope")


def test_scenario_docs_list_the_table():
    assert gp.Scenario.method.__doc__ == "One of " + ", ".join(_core.names("method")) + "."


# --------------------------------------------------------------------------- amounts


def test_python_reads_counts_and_durations_like_cpp(repo):
    from gpuplan._plan import _AMOUNT, _DURATION, _suffixed

    rows = [json.loads(line) for line in (repo / "tests" / "data" / "amounts.jsonl").read_text().splitlines() if line]
    assert len(rows) > 20
    for row in rows:
        parse = _AMOUNT if row["parser"] == "amount" else _DURATION
        if "value" in row:
            assert _suffixed(row["text"], "x", parse, "...") == row["value"], row
        else:
            with pytest.raises(gp.InvalidInputError) as e:
                _suffixed(row["text"], "x", parse, "...")
            assert str(e.value) == "x: " + row["error"], row
    # Numbers pass through the same positivity rule.
    assert _suffixed(3600, "x", _DURATION, "...") == 3600.0
    with pytest.raises(gp.InvalidInputError, match=r"^x: must be positive \(got -1\)$"):
        _suffixed(-1, "x", _DURATION, "...")
    with pytest.raises(gp.InvalidInputError, match=r"^x: must be a number such as \.\.\. \(got True\)$"):
        _suffixed(True, "x", _DURATION, "...")


# --------------------------------------------------------------------------- GPU fields


def test_gpu_fields_are_the_catalogs_columns(repo):
    header = (repo / "src" / "data" / "gpus.csv").read_text().splitlines()[0].split(",")
    g = gp.gpu("h100-sxm")
    d = g.to_dict()
    # memory_type is descriptive only (not modelled); usable_gib and link_group are the
    # GPU JSON's overrides of the derived values.
    assert set(d) | {"memory_type"} >= set(header)
    assert set(d) - set(header) == {"usable_gib", "link_group"}
    for key, value in d.items():
        assert getattr(g, key) == value, key
        assert getattr(g._core, key) == value, key
    assert (g.bandwidth_gb_s, g.bf16_tflops, g.gpu_link, g.memory_gb) == (3350.0, 989.4, "nvlink4", 80.0)
    assert g.memory_bytes == 80 * gp.GiB
    # The dict is a GPU object: read back, it is the same GPU.
    assert _core.read_gpu(d).to_dict() == d
    e = gp.estimate("gpt2", gpu=d, seq_len=1024)
    assert e.memory.capacity_bytes == gp.estimate("gpt2", gpu="h100-sxm", seq_len=1024).memory.capacity_bytes


def test_fit_binding_is_the_largest_component():
    components = ("weights", "master_weights", "gradients", "optimizer", "activations", "transient", "overhead",
                  "kv_cache")
    for kwargs in ({"gpu": "rtx-4090"}, {"gpu": "rtx-4090", "method": "qlora"},
                   {"gpu": "a100-80gb", "workload": "infer", "inference": {"batch": 64, "prompt_len": 4096}}):
        f = gp.fit("llama-2-7b", **kwargs)
        mem = f.to_dict()["memory"]  # the CLI's JSON of the breakdown (f.memory is the typed object)
        best = components[0]
        for c in components[1:]:
            if mem.get(c + "_bytes", 0) > mem.get(best + "_bytes", 0):
                best = c
        assert f.binding == best, kwargs
        assert "binding" not in f.to_dict().get("limits", {})


def test_bands_and_three_state_verdict():
    # 7B LoRA on a 24 GB card: ~18 GB fits even at the P90; at 12k tokens ~24 GB is tight.
    e = gp.estimate("llama-2-7b", gpu="rtx-4090", method="lora", seq_len=2048)
    assert e.verdict == "fits"
    dev = e.bands["memory"]["device_bytes"]
    assert dev["p10"] <= dev["p50"] <= dev["p90"] <= e.memory.capacity_bytes
    assert e.bands["memory"]["regime"]["validated"] is True
    tight = gp.estimate("llama-2-7b", gpu="rtx-4090", method="lora", seq_len=12288)
    assert tight.verdict == "tight"
    t = tight.bands["time"]["step_seconds"]
    assert t["p10"] <= t["p50"] <= t["p90"]
    # A family never measured gets the widest band and says so.
    assert gp.estimate("phi-2", gpu="a100-80gb").bands["memory"]["regime"]["validated"] is False


def test_framework_keyword():
    # PEFT/TRL recipes checkpoint QLoRA; an explicit value wins; unknown names are errors.
    assert gp.Scenario("llama-2-7b", gpu="t4", method="qlora").to_dict()["checkpointing"] == "full"
    assert gp.Scenario("llama-2-7b", gpu="t4", method="qlora", checkpointing="none").to_dict()["checkpointing"] == "none"
    assert gp.Scenario("llama-2-7b", gpu="a100-80gb", framework="megatron").to_dict()["framework"] == "megatron"
    with pytest.raises(gp.UnknownNameError):
        gp.Scenario("llama-2-7b", gpu="a100-80gb", framework="keras")


def test_optimizer_kernel_keyword():
    # PEFT's benchmark harness builds torch.optim.AdamW (foreach) where the Trainer would run the
    # fused kernel: full fine-tuning of a 3B model in bf16 moves 46 B/param foreach, 20 B fused.
    run = dict(gpu="l40s", method="full", precision="bf16-pure", micro_batch=4, seq_len=256)
    fused = gp.estimate("llama-3.2-3b", **run)
    foreach = gp.estimate("llama-3.2-3b", optimizer_kernel="foreach", **run)
    assert "optimizer_kernel" not in fused.scenario.to_dict()  # the framework's default, not written
    assert foreach.scenario.to_dict()["optimizer_kernel"] == "foreach"
    assert foreach.time.optimizer_seconds == pytest.approx(fused.time.optimizer_seconds * 46 / 20)
    assert foreach.time.compute_seconds == fused.time.compute_seconds


def test_megatron_pipeline_split_keywords():
    # Megatron-LM's --account-for-{embedding,loss}-in-pipeline-split as flat keywords (parallel.*):
    # llama-2-7b's 32 blocks + 2 units = 34 split over pp 2; the scenario carries them back.
    s = gp.Scenario("llama-2-7b", gpu="a100-80gb", framework="megatron", num_gpus=2, pp=2,
                    account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True)
    par = s.to_dict()["parallel"]
    assert par["account_for_embedding_in_pipeline_split"] and par["account_for_loss_in_pipeline_split"]
    # 32 + 1 = 33 units do not split over 2 stages; other frameworks have no such split.
    with pytest.raises(gp.InvalidInputError, match="scenario.parallel.pp"):
        gp.Scenario("llama-2-7b", gpu="a100-80gb", framework="megatron", num_gpus=2, pp=2,
                    account_for_loss_in_pipeline_split=True)
    with pytest.raises(gp.InvalidInputError, match="only framework megatron"):
        gp.Scenario("llama-2-7b", gpu="a100-80gb", framework="fsdp", account_for_loss_in_pipeline_split=True)


def test_allocator_replay_matches_the_cli_json():
    # replay.hpp: the same replay behind Estimate.allocator_replay() and the --json key.
    e = gp.estimate("llama-2-7b", gpu="a100-80gb", method="lora", seq_len=2048, micro_batch=4, checkpointing="full")
    r = e.allocator_replay()
    assert r["replayed"]
    j = e.to_dict()["memory"]["allocator_replay"]
    assert {k: v for k, v in r.items() if k != "replayed"} == j  # one field list for both
    assert 1.0 <= r["reserved_over_allocated"] < 1.5
    assert r["peak_reserved_bytes"] >= r["peak_allocated_bytes"]
    # Expandable segments never reserve more than the segmented pool here.
    assert e.allocator_replay(expandable_segments=True)["peak_reserved_bytes"] <= r["peak_reserved_bytes"]
    # Serving engines preallocate: no replay, and no key in the JSON.
    s = gp.estimate("llama-2-7b", gpu="a100-80gb", workload="infer")
    assert not s.allocator_replay()["replayed"]
    assert "allocator_replay" not in s.to_dict()["memory"]
