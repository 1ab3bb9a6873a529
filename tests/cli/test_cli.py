#!/usr/bin/python3
"""CLI tests: run the built `gpuplan` binary and check exit codes, stdout and stderr.

Usage: test_cli.py BINARY VERSION CASE   (registered one case per CTest test by
tests/cli/CMakeLists.txt). Each case raises AssertionError with the command line and
its output when it fails.
"""
import json
import re
import math
import os
import subprocess
import sys
import tempfile

BIN, VERSION, CASE = sys.argv[1], sys.argv[2], sys.argv[3]


def run(*args, env=None, stdin=None):
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    p = subprocess.run([BIN, *args], capture_output=True, text=True, env=e, timeout=60, stdin=stdin)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what, rc=None, out="", err=""):
    if not cond:
        raise AssertionError(f"{what}\n--- rc={rc}\n--- stdout:\n{out[:4000]}\n--- stderr:\n{err[:2000]}")


def expect_error(args, path_prefix, *needles):
    """Exit 2, nothing on stdout, exactly one stderr line 'gpuplan: <path>: ...'."""
    rc, out, err = run(*args)
    lines = err.splitlines()
    expect(rc == 2, f"{args}: exit 2 expected", rc, out, err)
    expect(out == "", f"{args}: stdout must be empty on error", rc, out, err)
    expect(len(lines) == 1, f"{args}: exactly one stderr line expected", rc, out, err)
    expect(lines[0].startswith("gpuplan: " + path_prefix), f"{args}: 'gpuplan: {path_prefix}' expected", rc, out, err)
    for n in needles:
        expect(n in lines[0], f"{args}: '{n}' expected in the message", rc, out, err)
    return lines[0]


def case_describe_json_parameters():
    rc, out, err = run("describe", "llama-2-13b", "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    # Official count (Llama-2-13b-hf model card / num_parameters()), exact.
    expect(j["parameters"] == 13015864320, "llama-2-13b parameters", rc, out, err)
    expect(set(j["components"]) == {"embeddings", "attention", "mlp", "norms", "head"}, "components", rc, out, err)
    expect(sum(j["components"].values()) == j["parameters"], "components sum to the total", rc, out, err)
    expect(sum(l["parameters"] for l in j["layers"]) == j["parameters"], "layers sum to the total", rc, out, err)
    expect(len(j["layers"]) == 40 + 2, "embeddings + 40 blocks + head", rc, out, err)
    # 32000 x 5120 token embedding (= untied head) is the largest single module.
    expect(j["largest_layer_parameters"] == 32000 * 5120, "largest layer", rc, out, err)
    # A Hub id is an alias of the same model.
    rc2, out2, err2 = run("describe", "meta-llama/Llama-2-13b-hf", "--json")
    expect(rc2 == 0 and json.loads(out2)["parameters"] == 13015864320, "hub alias", rc2, out2, err2)


def case_describe_text():
    rc, out, err = run("describe", "llama-2-13b")
    expect(rc == 0, "exit 0", rc, out, err)
    expect("13,015,864,320" in out, "total with separators", rc, out, err)
    # bf16 weights: 13,015,864,320 x 2 B = 26.03 GB = 24.24 GiB.
    expect("26.03 GB (24.24 GiB)" in out, "bf16 weight memory in GB and GiB", rc, out, err)


def case_unknown_model_suggests():
    line = expect_error(["describe", "llama-2-13"], "model:", "llama-2-13b")
    expect("did you mean" in line, "suggests names", err=line)
    expect_error(["fit", "llama-2-13", "--gpu", "rtx-4090"], "model:", "llama-2-13b")
    expect_error(["fit", "llama-2-13b", "--gpu", "rtx-409"], "--gpu:", "rtx-4090")


def case_errors_are_one_line():
    with tempfile.TemporaryDirectory() as d:
        bad_json = os.path.join(d, "bad.json")
        with open(bad_json, "w") as f:
            f.write('{"model": "llama-2-13b",')
        bad_key = os.path.join(d, "key.json")
        with open(bad_key, "w") as f:
            json.dump({"model": "llama-2-13b", "gpu": "rtx-4090", "micro_batchh": 2}, f)
        cases = [
            (["fit", "llama-2-13b", "--gpu", "rtx-4090", "--tp", "3"], "--tp:", "must divide num_attention_heads=40"),
            (["fit", "llama-2-13b", "--gpu", "rtx-4090", "--seq", "abc"], "--seq:", "must be an integer (got abc)"),
            (["fit", "llama-2-13b", "--gpu", "rtx-4090", "--seq", "0"], "--seq:", "(got 0)"),
            # gpt2's learned positions stop at 1024; the default seq_len 2048 names --seq.
            (["fit", "gpt2", "--gpu", "h100-sxm"], "--seq:", "max_position_embeddings=1024"),
            (["fit", "llama-2-13b", "--precision", "bf17"], "--precision:", "bf16-mixed"),
            (["fit", "llama-2-13b", "--method", "full,lorra"], "--method:", "lorra"),
            (["fit", "llama-2-13b", "--bogus"], "fit:", "--bogus"),
            (["time", "llama-2-7b", "--tokens", "1Q"], "--tokens:", "1Q"),
            (["estimate"], "model:", "--scenario"),
            (["estimate", "--scenario", os.path.join(d, "missing.json")], "--scenario:", "cannot open"),
            (["estimate", "--scenario", bad_json], "--scenario:", "malformed JSON"),
            (["estimate", "--scenario", bad_key], "scenario.micro_batchh:", "unknown key"),
            (["describe"], "describe:", "MODEL"),
            ([], "usage:", "subcommand"),
            (["frobnicate"], "usage:", "frobnicate"),
            (["describe", "llama-2-13b", "--format", "xml"], "describe:", "xml"),
            (["completion", "zsh"], "completion:", "zsh"),
            (["fit", "llama-2-13b", "--method", "lora", "--lora-alpha", "nan"], "--lora-alpha:", "(got nan)"),
            (["fit", "llama-2-13b", "--method", ""], "--method:", "at least one"),
            (["fit", "llama-2-13b", "--lora-rank", "4"], "--lora-rank:", "only applies to method lora"),
            (["fit", "llama-2-13b", "--infer-batch", "4"], "--infer-batch:", "only applies to workload infer"),
            (["fit", "llama-2-13b", "--gpus", "0"], "--gpus:", "(got 0)"),
            (["fit", "llama-2-13b", "--gpu", os.path.join(d, "missing-gpu.json")], "--gpu:", "cannot open"),
        ]
        for args, path, needle in cases:
            expect_error(args, path, needle)


def case_fit_exit_codes():
    # gpt2 (124 M parameters) trains in well under 80 GB; llama-3.1-405b's bf16 weights
    # alone (811 GB) exceed a 24 GB card. Exit 0 = fits, 1 = does not fit.
    rc, out, err = run("fit", "gpt2", "--gpu", "h100-sxm", "--seq", "1024")
    expect(rc == 0, "gpt2 on an H100 fits: exit 0", rc, out, err)
    expect("FITS" in out and "headroom" in out, "verdict and headroom", rc, out, err)
    rc, out, err = run("fit", "llama-3.1-405b", "--gpu", "rtx-4090")
    expect(rc == 1, "405B on a 4090 does not fit: exit 1", rc, out, err)
    expect("DOES NOT FIT" in out and "short by" in out, "verdict", rc, out, err)
    expect("GB (" in out and "GiB)" in out, "GB and GiB", rc, out, err)
    rc, out, err = run("fit", "llama-3.1-405b", "--gpu", "rtx-4090", "--json")
    expect(rc == 1 and json.loads(out)["fits"] is False, "--json keeps the exit code", rc, out, err)
    expect(json.loads(out)["verdict"] == "does_not_fit", "verdict does_not_fit", rc, out, err)
    # Exit 3 = tight: the median estimate fits, its P90 does not (bands.hpp). LoRA on a
    # 7B at 12k tokens on a 24 GB card needs ~24 GB, inside the band around 25.8 GB.
    rc, out, err = run("fit", "llama-2-7b", "--gpu", "rtx-4090", "--method", "lora", "--seq", "12288", "--json")
    j = json.loads(out)
    expect(rc == 3 and j["verdict"] == "tight", "tight: exit 3", rc, out, err)
    mem = j["results"][0]["memory"]
    band = mem["bands"]["device_bytes"]
    expect(band["p50"] <= mem["capacity_bytes"] < band["p90"], "tight means P50 within capacity, P90 above", rc, out, err)
    for key in ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes"):
        b = mem["bands"][key]
        expect(b["p10"] <= b["p50"] <= b["p90"], f"{key} band ordered", rc, out, err)


# The memory components in gpuplan::memory_component order (plan.hpp): the largest
# binds, ties going to the earlier one (largest_component).
COMPONENTS = ("weights", "master_weights", "gradients", "optimizer", "activations", "transient", "overhead", "kv_cache")


def largest_component(memory):
    best = COMPONENTS[0]
    for c in COMPONENTS[1:]:
        if memory.get(c + "_bytes", 0) > memory.get(best + "_bytes", 0):
            best = c
    return best


def case_fit_methods_json():
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090", "--method", "full,lora,qlora", "--json")
    expect(rc in (0, 1), "exit 0 or 1", rc, out, err)
    j = json.loads(out)
    # One binding term per result, at the top level: largest_component of its memory.
    for r in j["results"]:
        expect(r["binding"] == largest_component(r["memory"]), f"{r['method']}: binding = largest component", rc, out, err)
        expect("binding" not in r["limits"], "no second binding under limits", rc, out, err)
    for args in (("gpt2", "--gpu", "h100-sxm", "--seq", "1024"),
                 ("llama-2-7b", "--gpu", "a100-80gb", "--infer", "--infer-batch", "64", "--prompt-len", "4096"),
                 ("llama-3-8b", "--gpu", "a100-80gb", "--seq", "8192", "--batch", "4"),
                 ("llama-2-70b", "--gpu", "h100-sxm", "--gpus", "8", "--zero", "3")):
        rc2, out2, err2 = run("fit", *args, "--json")
        r = json.loads(out2)["results"][0]
        expect(r["binding"] == largest_component(r["memory"]), f"{args}: binding = largest component", rc2, out2, err2)
    expect([r["method"] for r in j["results"]] == ["full", "lora", "qlora"], "one result per method", rc, out, err)
    expect(j["fits"] == all(r["fits"] for r in j["results"]), "fits is the conjunction", rc, out, err)
    expect((rc == 0) == j["fits"], "exit code follows fits", rc, out, err)
    full, lora, qlora = (r["memory"]["weights_bytes"] for r in j["results"])
    # NF4 base (~4.1 bits) vs bf16 base (16 bits): QLoRA holds well under half of either.
    expect(qlora < 0.5 * lora and qlora < 0.5 * full, "QLoRA weights < half of LoRA's and full's", rc, out, err)
    expect(j["results"][0]["model"]["trainable_parameters"] > j["results"][1]["model"]["trainable_parameters"],
           "LoRA trains fewer parameters than full", rc, out, err)
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090", "--method", "full,lora,qlora")
    expect(all(m in out.splitlines()[3] for m in ("full", "lora", "qlora")), "one column per method", rc, out, err)


MEMORY_KEYS = {"weights_bytes", "master_weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
               "transient_bytes", "overhead_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes",
               "capacity_bytes", "headroom_bytes", "fits", "host_bytes", "stages"}
TIME_KEYS = {"step_seconds", "tokens_per_second_per_gpu", "tokens_per_second", "model_flops_per_step",
             "hardware_flops_per_step", "mfu", "hfu", "total_seconds", "gpu_hours", "cost", "energy_kwh", "breakdown"}
BREAKDOWN_KEYS = {"compute_seconds", "communication_seconds", "bubble_seconds", "optimizer_seconds", "offload_seconds"}


def estimate(scenario, *extra):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        return run("estimate", "--scenario", path, *extra)


def case_estimate_json_keys():
    rc, out, err = estimate({"model": "llama-2-13b", "gpu": "a100-80gb", "num_gpus": 8, "parallel": {"pp": 2},
                             "tokens": "1T", "price_per_gpu_hour": 2.0}, "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    expect(j["model"]["parameters"] == 13015864320, "model.parameters", rc, out, err)
    expect(j["model"]["trainable_parameters"] == 13015864320, "full fine-tuning trains everything", rc, out, err)
    expect(MEMORY_KEYS <= set(j["memory"]), f"memory keys: missing {MEMORY_KEYS - set(j['memory'])}", rc, out, err)
    expect(len(j["memory"]["stages"]) == 2, "one entry per pipeline stage", rc, out, err)
    expect(TIME_KEYS <= set(j["time"]), f"time keys: missing {TIME_KEYS - set(j['time'])}", rc, out, err)
    expect(BREAKDOWN_KEYS <= set(j["time"]["breakdown"]), "time.breakdown keys", rc, out, err)
    expect(isinstance(j["warnings"], list), "warnings is a list", rc, out, err)
    expect(j["scenario"]["tokens"] == 1e12, "the scenario is echoed with tokens resolved", rc, out, err)
    # Same file, text report: memory and time tables.
    rc, out, err = estimate({"model": "llama-2-13b", "gpu": "a100-80gb"})
    expect(rc == 0 and "Peak allocated" in out and "Step time" in out, "text report", rc, out, err)


def case_estimate_infer_keys():
    rc, out, err = estimate({"model": "llama-2-7b", "gpu": "a100-80gb", "workload": "infer",
                             "inference": {"batch": 4, "prompt_len": 1024, "gen_len": 256}}, "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    for k in ("kv_cache_bytes", "max_concurrent_sequences"):
        expect(k in j["memory"], f"memory.{k}", rc, out, err)
    for k in ("time_to_first_token_seconds", "decode_tokens_per_second"):
        expect(k in j["time"], f"time.{k}", rc, out, err)
    # KV cache of llama-2-7b (32 layers, 32 kv heads x 128, bf16): 2*32*4096*2 B = 524,288 B
    # per token; 4 sequences x 1280 tokens = 2.68 GB. The figure must be at least that.
    expect(j["memory"]["kv_cache_bytes"] >= 524288 * 4 * 1280 * 0.99, "KV cache size", rc, out, err)
    # The same run from flags instead of a file.
    rc, out, err = run("estimate", "llama-2-7b", "--gpu", "a100-80gb", "--infer", "--infer-batch", "4",
                       "--prompt-len", "1024", "--gen-len", "256", "--json")
    expect(rc == 0 and json.loads(out)["memory"]["kv_cache_bytes"] == j["memory"]["kv_cache_bytes"],
           "flags and file agree", rc, out, err)


def case_time_tokens_suffix():
    for tokens, value in (("1T", 1e12), ("300B", 3e11), ("2e9", 2e9)):
        rc, out, err = run("time", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tokens", tokens, "--json")
        expect(rc == 0, f"--tokens {tokens}: exit 0", rc, out, err)
        expect(json.loads(out)["scenario"]["tokens"] == value, f"--tokens {tokens} = {value}", rc, out, err)
    rc, out, err = run("time", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tokens", "1T", "--price", "2")
    expect(rc == 0, "exit 0", rc, out, err)
    for label in ("Step time", "Tokens/s per GPU", "MFU", "HFU", "Time to train", "GPU-hours", "Cost", "Energy"):
        expect(label in out, f"'{label}' row", rc, out, err)
    # Money in dollars (the price catalog's currency), and "1 GPU", not "1 GPUs".
    expect(re.search(r"Cost +\$[0-9,]+ \(at \$2\.00 per GPU-hour\)", out) is not None, "cost in dollars", rc, out, err)
    rc, out, err = run("time", "llama-2-7b", "--gpu", "a100-80gb", "--method", "qlora")
    expect(rc == 0 and "Tokens/s (1 GPU)" in out and "1 GPUs" not in out, "singular GPU", rc, out, err)


def case_explain_terms():
    rc, out, err = run("explain", "llama-2-13b", "--gpu", "rtx-4090", "--method", "qlora")
    expect(rc == 0, "exit 0", rc, out, err)
    for label in ("Weights", "Optimizer state", "Activations", "Device", "Step time", "MFU"):
        expect(label in out, f"term '{label}'", rc, out, err)
    expect(out.count("formula:") == out.count("source:") and out.count("formula:") >= 20, "formula + source per term",
           rc, out, err)
    rc, out, err = run("explain", "llama-2-13b", "--gpu", "rtx-4090", "--json")
    terms = json.loads(out)["terms"]
    expect(all(t["formula"] and t["source"] for t in terms), "every JSON term has a formula and a source", rc, out, err)
    expect({"weights_bytes", "optimizer_bytes", "step_seconds", "mfu"} <= {t["key"] for t in terms}, "keys", rc, out, err)


def case_explain_framework_rules():
    """explain names the framework profile and, for each term a profile rule (or a mechanism every
    framework shares) changes, the rule and its source."""
    base7 = ["llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8"]
    cases = [
        # FSDP full shard with parameter offload: gradients and the optimizer step go with the parameters.
        ([*base7, "--framework", "fsdp", "--zero", "3", "--offload-params", "cpu"], "fsdp",
         {"fsdp.param_offload_moves_optimizer": "optimizer_bytes", "fsdp.sharded_fp32_is_master": "master_weights_bytes",
          "all frameworks: ZeRO-3 / FSDP stream pools": "peak_reserved_bytes",
          "fsdp.root_unit_stays_gathered": "transient_bytes",
          "fsdp.gradients_allocated_in_backward": "gradients_bytes",
          "all frameworks: ZeRO-3 / FSDP per micro-batch": "communication_seconds"}),
        # DeepSpeed ZeRO-3 gathers module by module.
        ([*base7, "--framework", "deepspeed", "--zero", "3"], "deepspeed",
         {"all frameworks: ZeRO-3 / FSDP all-gather buffers": "transient_bytes"}),
        # DeepSpeed ZeRO-2 with the optimizer on the CPU.
        ([*base7, "--framework", "deepspeed", "--zero", "2", "--offload-optimizer", "cpu"], "deepspeed",
         {"all frameworks: offload_optimizer": "host_bytes", "deepspeed.reserved_factor": "peak_reserved_bytes"}),
        # HF QLoRA with a paged optimizer.
        (["llama-2-7b", "--gpu", "rtx-4090", "--method", "qlora", "--optimizer", "paged-adamw-8bit"], "hf",
         {"hf.kbit_non_quantized_fp32": "weights_bytes", "all frameworks: optimizer paged-adamw-8bit": "optimizer_bytes",
          "all frameworks: quantized base": "compute_seconds", "all frameworks: eager cross-entropy": "transient_bytes"}),
        # Unsloth: offloaded gradient checkpointing, fused kernels.
        (["llama-3.1-8b", "--gpu", "rtx-4090", "--method", "qlora", "--framework", "unsloth"], "unsloth",
         {"unsloth.checkpoints_on_host": "activations_bytes", "unsloth.fused_kernels": "compute_seconds",
          "unsloth.reserved_factor": "peak_reserved_bytes", "unsloth.fused_linear_loss": "transient_bytes",
          "unsloth.fused_lora_kernels": "activations_bytes", "all frameworks: dequantized weight": "transient_bytes"}),
    ]
    for args, fw, want in cases:
        rc, out, err = run("explain", *args, "--json")
        expect(rc == 0, f"explain {args}", rc, out, err)
        f = json.loads(out)["framework"]
        expect(f["id"] == fw and f["summary"], "the profile by id", rc, out, err)
        rules = {r["rule"]: r for r in f["rules"]}
        for rule, term in want.items():
            expect(rule in rules, f"rule {rule}", rc, out, err)
            expect(term in rules[rule]["terms"].split(", ") and rules[rule]["source"] and rules[rule]["effect"],
                   f"{rule}: term {term}, effect and source", rc, out, err)
        rc, out, err = run("explain", *args)
        expect(rc == 0 and f"Framework profile: {fw} (" in out, "the profile named in text", rc, out, err)
        for rule in want:
            source = rules[rule]["source"]
            expect(f"rule: {rule} [{source}]" in out, f"text names {rule} with its source", rc, out, err)
    # Rules appear only where they apply: plain full training on one GPU under hf.
    rc, out, err = run("explain", "llama-2-7b", "--gpu", "a100-80gb", "--json")
    names = {r["rule"] for r in json.loads(out)["framework"]["rules"]}
    expect(names.isdisjoint({"hf.kbit_non_quantized_fp32", "all frameworks: offload_optimizer",
                             "all frameworks: ZeRO-3 / FSDP all-gather buffers", "all frameworks: quantized base"})
           and "hf.reserved_factor" in names, "only the rules that apply", rc, out, err)


def case_version():
    rc, out, err = run("--version")
    expect(rc == 0 and out.strip() == f"gpuplan {VERSION}", "gpuplan VERSION", rc, out, err)


def case_help_everywhere():
    rc, out, err = run("--help")
    expect(rc == 0 and "Exit codes" in out and "Examples" in out, "top-level help", rc, out, err)
    for sub in ("describe", "models", "gpus", "frameworks", "fit", "time", "estimate", "explain", "plan", "search", "recommend",
                "completion"):
        rc, out, err = run(sub, "--help")
        expect(rc == 0, f"{sub} --help exits 0", rc, out, err)
        expect("Exit codes: 0 ok" in out and "3 tight" in out, f"{sub} --help documents exit codes", rc, out, err)
        expect("Examples:" in out, f"{sub} --help has examples", rc, out, err)


def case_completion_bash():
    rc, out, err = run("completion", "bash")
    expect(rc == 0, "exit 0", rc, out, err)
    expect("rtx-4090" in out and "llama-2-13b" in out and "complete -F _gpuplan gpuplan" in out,
           "names from the catalogs", rc, out, err)
    p = subprocess.run(["bash", "-n"], input=out, capture_output=True, text=True)
    expect(p.returncode == 0, "valid bash syntax", p.returncode, out, p.stderr)
    # Drive the function as bash would: `gpuplan fit llama-2-13b --gpu rtx-40<TAB>`.
    script = out + '\nCOMP_WORDS=(gpuplan fit llama-2-13b --gpu rtx-40); COMP_CWORD=4; _gpuplan; echo "${COMPREPLY[@]}"\n'
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    expect("rtx-4090" in p.stdout.split(), "completes --gpu rtx-40 to rtx-4090", p.returncode, p.stdout, p.stderr)
    # Enum values come from the name tables: every value the scenario file accepts.
    for flag, word, expected in (("--optimizer", "paged", {"paged-adamw-8bit", "paged-adamw-32bit"}),
                                 ("--lora-targets", "a", {"all-linear"}), ("--quant", "f", {"fp4", "fp8", "fp16", "fp32"}),
                                 ("--objective", "", {"time", "cost"})):
        script = out + f'\nCOMP_WORDS=(gpuplan fit m {flag} "{word}"); COMP_CWORD=4; _gpuplan; echo "${{COMPREPLY[@]}}"\n'
        p = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
        expect(set(p.stdout.split()) == expected, f"completes {flag} {word}", p.returncode, p.stdout, p.stderr)


def case_fit_suggestions_own_card_first():
    # Owners first: a 24 GB GeForce owner (rtx-4090, rtx-3090) and a T4 owner whose 7B/13B
    # run does not fit get changes on their own card first; every listed row fits with the
    # margin (P90 + max(5%, 1 GiB)); other GPUs come last, cheapest first.
    order = {"own_card": 0, "more_cards": 1, "other_gpu": 2}
    runs = [("llama-2-13b", "rtx-4090", ["--method", "qlora", "--seq", "4096", "--batch", "8"]),
            ("llama-2-13b", "rtx-3090", ["--method", "lora"]),
            ("llama-2-7b", "rtx-4090", ["--method", "full"]),
            ("llama-2-7b", "t4", ["--method", "lora"]),
            ("llama-2-7b", "t4", ["--method", "qlora", "--seq", "4096", "--batch", "8"])]
    for model, gpu, extra in runs:
        rc, out, err = run("fit", model, "--gpu", gpu, *extra, "--json")
        what = f"{model} on {gpu} {extra}"
        expect(rc in (1, 3), f"{what}: does not fit with the margin", rc, out, err)
        sug = json.loads(out)["results"][0]["suggestions"]
        expect(sug and sug[0]["scope"] == "own_card" and sug[0]["gpu"] == gpu and sug[0]["num_gpus"] == 1,
               f"{what}: first suggestion on the own card", rc, out, err)
        expect(all(s["fits"] and s["device_quantile_bytes"] + s["headroom_kept_bytes"] <= s["capacity_bytes"]
                   for s in sug), f"{what}: every row fits", rc, out, err)
        scopes = [order[s["scope"]] for s in sug]
        expect(scopes == sorted(scopes), f"{what}: own card, more cards, other GPUs", rc, out, err)
        prices = [s["price_per_gpu_hour"] for s in sug if s["scope"] == "other_gpu" and s["price_per_gpu_hour"]]
        expect(prices == sorted(prices), f"{what}: other GPUs cheapest first", rc, out, err)
    # The text table says where each change happens and what it costs in time.
    rc, out, err = run("fit", "llama-2-7b", "--gpu", "t4", "--method", "lora")
    expect("your card" in out and "Free at margin" in out and "% time" in out, "table columns", rc, out, err)
    # --confidence / --headroom change the verdict: 7B LoRA at 12k tokens on a 4090 is tight at
    # P90 (exit 3) and fits at P50 with no headroom (exit 0); a bad value is a one-line error.
    base = ["fit", "llama-2-7b", "--gpu", "rtx-4090", "--method", "lora", "--seq", "12288"]
    rc, out, err = run(*base, "--confidence", "0.5", "--headroom", "0%")
    expect(rc == 0, "P50 without headroom fits: exit 0", rc, out, err)
    rc, out, err = run(*base, "--confidence", "0.99")
    expect(rc == 3, "P99 is tight: exit 3", rc, out, err)
    expect_error(base + ["--confidence", "0.8"], "--confidence", "0.5, 0.9 or 0.99", "'0.8'")
    expect_error(base + ["--headroom", "2x"], "--headroom", "'2x'")
    expect_error(base + ["--headroom", "80%"], "--headroom", "'80%'")
    expect_error(["search", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--headroom", "-1GiB"], "--headroom")
    expect_error(["recommend", "llama-2-7b", "--tokens", "1B", "--confidence", "nan"], "--confidence")


def case_fit_suggestions():
    # llama-2-13b full fine-tuning (bf16 weights 26 GB + fp32 master/Adam 156 GB) cannot fit a
    # 24 GB card: exit 1 and the ranked "what would make it fit" list, QLoRA among the changes.
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090")
    expect(rc == 1, "does not fit: exit 1", rc, out, err)
    expect("What would make full fit" in out, "suggestion table after the verdict", rc, out, err)
    expect(out.index("What would make") > out.index("DOES NOT FIT"), "after the verdict", rc, out, err)
    for label in ("Largest micro-batch", "Longest sequence", "Min GPUs, ZeRO-0", "Min GPUs, ZeRO-3"):
        expect(label in out, f"fit limits row '{label}'", rc, out, err)
    expect("QLoRA" in out and "Free at margin" in out and "GiB" in out, "QLoRA row, margin, GiB", rc, out, err)
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090", "--json")
    expect(rc == 1, "--json keeps exit 1", rc, out, err)
    res = json.loads(out)["results"][0]
    sug = res["suggestions"]
    expect(isinstance(sug, list) and sug, "suggestions array", rc, out, err)
    expect([s["rank"] for s in sug] == list(range(1, len(sug) + 1)), "ranks 1..n", rc, out, err)
    keys = {"changes", "description", "fits", "scope", "effect", "device_bytes", "device_quantile_bytes",
            "headroom_bytes", "headroom_kept_bytes", "step_seconds", "time_cost", "time_change", "price_per_gpu_hour",
            "run_cost", "num_gpus", "gpu", "scenario"}
    expect(all(keys <= set(s) for s in sug), "suggestion keys", rc, out, err)
    # Only rows that fit with the margin: the P90 plus the headroom kept within capacity.
    expect(all(s["fits"] for s in sug), "only fitting rows", rc, out, err)
    expect(all(s["device_quantile_bytes"] + s["headroom_kept_bytes"] <= s["capacity_bytes"] for s in sug),
           "quantile + headroom within capacity", rc, out, err)
    qlora_fit = [s for s in sug if "qlora" in s["changes"] and s["fits"]]
    expect(qlora_fit, "a fitting row with QLoRA", rc, out, err)
    # A suggestion's scenario is a valid scenario file: re-estimating it gives the same device bytes.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        with open(path, "w") as f:
            json.dump(qlora_fit[0]["scenario"], f)
        rc2, out2, err2 = run("estimate", "--scenario", path, "--json")
        expect(rc2 == 0 and json.loads(out2)["memory"]["device_bytes"] == qlora_fit[0]["device_bytes"],
               "suggestion scenario round-trips", rc2, out2, err2)
    limits = res["limits"]
    expect(len(limits["min_gpus"]) == 4 and [g["zero"] for g in limits["min_gpus"]] == [0, 1, 2, 3], "min_gpus", rc, out, err)
    # A run that fits has no suggestions but its limits: gpt2 on an H100 trains micro-batch >= 1 at seq 1024.
    rc, out, err = run("fit", "gpt2", "--gpu", "h100-sxm", "--seq", "1024", "--json")
    res = json.loads(out)["results"][0]
    expect(rc == 0 and res["suggestions"] is None, "no suggestions when it fits", rc, out, err)
    expect(res["limits"]["max_micro_batch"] >= 1 and res["limits"]["max_seq_len"] == 1024,
           "gpt2: max seq = learned-position limit 1024", rc, out, err)
    expect(res["limits"]["min_gpus"][0]["gpus"] == 1, "gpt2 fits on one GPU", rc, out, err)


SEARCH = ("search", "llama-2-13b", "--gpu", "a100-80gb", "--gpus", "16", "--global-batch", "64", "--top", "5")


def case_search_footer_and_json():
    rc, out, err = run(*SEARCH)
    expect(rc == 0, "exit 0", rc, out, err)
    for h in ("tp", "pp", "dp", "mb", "ga", "ckpt", "zero", "sp", "offload", "Device memory", "Step time", "Tokens/s", "MFU"):
        expect(h in out, f"column {h}", rc, out, err)
    foot = [l for l in out.splitlines() if l.startswith("evaluated ")]
    expect(len(foot) == 1 and "configurations in" in foot[0] and " s " in foot[0], "footer", rc, out, err)
    rc, out, err = run(*SEARCH, "--json")
    j = json.loads(out)
    for k in ("evaluated", "seconds", "rows", "global_batch", "fitting", "infeasible", "pruned_time", "threads"):
        expect(k in j, f"--json key {k}", rc, out, err)
    expect(j["evaluated"] > 0 and j["seconds"] >= 0 and j["global_batch"] == 64, "counts", rc, out, err)
    rows = j["rows"]
    expect(1 <= len(rows) <= 5, "top 5", rc, out, err)
    steps = [r["step_seconds"] for r in rows]
    expect(steps == sorted(steps), "fastest first", rc, out, err)
    for r in rows:
        l = r["layout"]
        expect(l["tp"] * l["pp"] * l["dp"] == 16, "tp*pp*dp = 16", rc, out, err)
        expect(l["micro_batch"] * l["grad_accum"] * l["dp"] == 64, "global batch held", rc, out, err)
        expect(r["device_bytes"] <= r["device_bytes"] + r["headroom_bytes"], "fits", rc, out, err)
    # The best row equals the estimator on the same layout (scenario round trip).
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        with open(path, "w") as f:
            json.dump(rows[0]["scenario"], f)
        rc2, out2, err2 = run("estimate", "--scenario", path, "--json")
        e = json.loads(out2)
        expect(e["memory"]["device_bytes"] == rows[0]["device_bytes"] and
               e["time"]["step_seconds"] == rows[0]["step_seconds"], "row = estimate of its layout", rc2, out2, err2)
    # Deterministic; identical rows with two threads; `plan` is an alias.
    rc3, out3, _ = run(*SEARCH, "--json", "--threads", "2")
    rc4, out4, _ = run("plan", *SEARCH[1:], "--json")
    strip = lambda s: [r["layout"] for r in json.loads(s)["rows"]]
    expect(strip(out3) == strip(out) and strip(out4) == strip(out), "threads and alias agree", rc3, out3)
    rc, out, err = run(*SEARCH, "--objective", "cost", "--json")
    expect(rc == 0 and json.loads(out)["objective"] == "cost", "cost objective", rc, out, err)


def case_recommend_rows():
    args = ("recommend", "llama-2-7b", "--method", "lora", "--tokens", "2B", "--global-batch", "16",
            "--gpus-list", "rtx-4090,a100-80gb,h100-sxm", "--max-gpus", "8",
            "--price", "rtx-4090=0.4,a100-80gb=1.8,h100-sxm=3", "--top", "100")
    rc, out, err = run(*args, "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    rows = j["rows"]
    expect(rows and j["tokens"] == 2e9 and j["deadline_seconds"] == 86400, "rows, tokens, default deadline 24h", rc, out, err)
    expect({r["gpu"] for r in rows} <= {"rtx-4090", "a100-80gb", "h100-sxm"}, "only listed GPUs", rc, out, err)
    sys_keys = {"cpu_cores_min", "cpu_cores", "host_ram_bytes", "psu_watts", "cuda_min", "nvlink_present",
                "nvlink_needed", "ecc", "notes"}
    for r in rows:
        expect(sys_keys <= set(r["system"]), "system keys", rc, out, err)
        # Sizing rules (docs/planner.md): 4 (minimum) / 8 (recommended) cores per GPU of a node
        # (counts <= 8 are one node; 8 x 8 = 64 is under every platform's cap but the desktop's 24 at <= 2 GPUs).
        expect(r["system"]["cpu_cores_min"] == 4 * r["count"] and r["system"]["cpu_cores"] == 8 * r["count"],
               "cores per GPU", rc, out, err)
        expect(abs(r["cost"] - r["gpu_hours"] * {"rtx-4090": 0.4, "a100-80gb": 1.8, "h100-sxm": 3}[r["gpu"]]) <= 1e-9 * r["cost"],
               "cost = GPU-hours x price", rc, out, err)
        expect(abs(r["gpu_hours"] - r["wall_seconds"] / 3600 * r["count"]) <= 1e-9 * r["gpu_hours"], "GPU-hours", rc, out, err)
    # Order: deadline met first, then (all priced) cost ascending within each group.
    met = [r["meets_deadline"] for r in rows]
    expect(met == sorted(met, reverse=True), "deadline first", rc, out, err)
    for flag in (True, False):
        costs = [r["cost"] for r in rows if r["meets_deadline"] == flag]
        expect(costs == sorted(costs), "cheapest first", rc, out, err)
    cuda = {r["gpu"]: r["system"]["cuda_min"] for r in rows}
    expect(cuda.get("h100-sxm", "12.0") == "12.0" and cuda.get("a100-80gb", "11.0") == "11.0", "CUDA floors", rc, out, err)
    rc2, out2, _ = run(*args, "--json")
    expect(out2 == out, "deterministic", rc2, out2)
    rc, out, err = run(*args)
    for h in ("GPU", "Count", "Wall-clock", "Cost", "$/h", "Rent", "Machine", "RAM", "PSU", "CUDA", "driver"):
        expect(h in out, f"column {h}", rc, out, err)
    rc, out, err = run("recommend", "llama-2-7b", "--method", "qlora", "--epochs", "2", "--dataset-tokens", "500M",
                       "--gpus-list", "rtx-4090", "--max-gpus", "2", "--json")
    expect(rc == 0 and json.loads(out)["tokens"] == 1e9, "epochs x dataset tokens", rc, out, err)


def case_planner_bad_options():
    cases = [
        (["search", "llama-2-13b", "--gpus", "8", "--top", "0"], "--top:", "(got 0)"),
        (["search", "llama-2-13b", "--gpus", "8", "--threads", "0"], "--threads:", "(got 0)"),
        (["search", "llama-2-13b", "--gpus", "8", "--objective", "speed"], "--objective:", "speed"),
        (["search", "llama-2-13b", "--gpus", "8", "--global-batch", "0"], "--global-batch:", "(got 0)"),
        (["search", "llama-2-13b", "--gpus", "8", "--top", "x"], "--top:", "(got x)"),
        (["plan", "llama-2-13b", "--gpus", "0"], "--gpus:", "(got 0)"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--deadline", "soon"], "--deadline:", "soon"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--deadline", "-3h"], "--deadline:", "-3h"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--deadline", "5x"], "--deadline:", "a duration such as"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--price", "rtx-4090"], "--price:", "GPU=PRICE"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--price", "rtx-409=0.4"], "--price:", "rtx-4090"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--price", "rtx-4090=cheap"], "--price:", "cheap"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--gpus-list", "a100,,h100-sxm"], "--gpus-list:", "empty"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--budget", "-5"], "--budget:", "-5"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--rank", "speed"], "--rank:", "speed"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--max-gpus", "0"], "--max-gpus:", "(got 0)"),
        (["recommend", "llama-2-7b"], "--tokens:", "needs"),
        (["recommend", "llama-2-7b", "--epochs", "2"], "--epochs:", "--dataset-tokens"),
        (["recommend", "llama-2-7b", "--dataset-tokens", "lots"], "--dataset-tokens:", "lots"),
    ]
    for args, path, needle in cases:
        expect_error(args, path, needle)


def case_markdown_and_no_color():
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090", "--format", "markdown")
    expect(rc in (0, 1) and "|---|" in out and "| Weights |" in out, "markdown pipe table", rc, out, err)
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090")
    expect("\033[" not in out, "no colour when stdout is not a terminal", rc, out, err)
    # On a terminal: colour, unless NO_COLOR is set (https://no-color.org).
    import pty
    def on_tty(extra_env):
        master, slave = pty.openpty()
        e = dict(os.environ)
        e.pop("NO_COLOR", None)
        e.update(extra_env)
        p = subprocess.Popen([BIN, "fit", "gpt2", "--gpu", "h100-sxm", "--seq", "1024"], stdout=slave,
                             stderr=subprocess.PIPE, env=e)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        p.wait(timeout=60)
        os.close(master)
        return b"".join(chunks).decode()
    expect("\033[1;32mFITS" in on_tty({}), "green verdict on a terminal", out=on_tty({}))
    expect("\033[" not in on_tty({"NO_COLOR": "1"}), "NO_COLOR disables colour", out=on_tty({"NO_COLOR": "1"}))
    rc, out, err = run("fit", "llama-2-13b", "--gpu", "rtx-4090", "--format", "json")
    expect(json.loads(out)["results"][0]["method"] == "full", "--format json", rc, out, err)


def case_frameworks_listed():
    # One row per framework profile (include/gpuplan/framework.hpp), read from the profiles.
    rc, out, err = run("frameworks", "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    fw = {f["name"]: f for f in json.loads(out)}
    expect(set(fw) == {"hf", "deepspeed", "fsdp", "torchtune", "megatron", "unsloth"}, "every profile", rc, out, err)
    expect(fw["hf"]["peft_checkpointing"] == "full", "PEFT/TRL recipes checkpoint LoRA", rc, out, err)
    expect(fw["megatron"]["sequence_parallel_with_tp"] and fw["megatron"]["tensor_parallel"], "Megatron TP+SP", rc, out, err)
    expect(fw["unsloth"]["max_gpus"] == 1 and not fw["torchtune"]["tensor_parallel"], "launchable layouts", rc, out, err)
    rc, out, err = run("frameworks")
    expect(rc == 0 and "megatron" in out and "yes (+SP)" in out, "table", rc, out, err)


def case_models_and_gpus():
    rc, out, err = run("models", "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    models = {m["name"]: m for m in json.loads(out)}
    expect(models["llama-2-13b"]["parameters"] == 13015864320, "llama-2-13b listed", rc, out, err)
    rc, out, err = run("gpus", "--json")
    gpus = {g["id"]: g for g in json.loads(out)}
    expect("rtx-4090" in gpus and "h100-sxm" in gpus, "catalog ids", rc, out, err)
    # Entries are GPU objects named by the catalog's columns: one is a valid --gpu file.
    h100 = gpus["h100-sxm"]
    expect(h100["bandwidth_gb_s"] == 3350 and h100["bf16_tflops"] == 989.4 and h100["gpu_link"] == "nvlink4",
           "catalog column names and units", rc, out, err)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gpu.json")
        with open(path, "w") as f:
            json.dump(h100, f)
        rc1, out1, err1 = run("fit", "gpt2", "--seq", "1024", "--gpu", path, "--json")
        rc2, out2, err2 = run("fit", "gpt2", "--seq", "1024", "--gpu", "h100-sxm", "--json")
        expect(rc1 == rc2 == 0 and json.loads(out1)["results"][0]["memory"] == json.loads(out2)["results"][0]["memory"],
               "a gpus --json entry round-trips as --gpu FILE", rc1, out1, err1)
    rc, out, err = run("gpus")
    expect(rc == 0 and "rtx-4090" in out and "GB" in out, "gpus table", rc, out, err)



# ---------------------------------------------------------------- recommend with prices

README_RECOMMEND = ("recommend", "llama-3.1-8b", "--method", "lora", "--tokens", "2B", "--deadline", "24h")


def significant_digits(number):
    digits = number.replace(",", "").replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." not in number else len(digits)


def case_recommend_readme_example():
    rc, out, err = run(*README_RECOMMEND, "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    first = j["rows"][0]
    # A plan a practitioner recognises: a few GPUs for an 8B LoRA on 2B tokens in a day, with a cost.
    expect(first["count"] <= 8 and first["meets_deadline"], "<= 8 GPUs meeting the 24 h deadline", rc, out, err)
    expect(first["cost"] is not None and first["cost"] > 0 and first["rent"] is not None, "a cost and a rental", rc, out, err)
    # Cost = wall-clock hours x the rented instances' price per hour.
    expect(abs(first["cost"] - first["wall_seconds"] / 3600 * first["rent"]["price_per_hour"]) <= 1e-9 * first["cost"],
           "cost = hours x $/h", rc, out, err)
    # Fine-tuning default: ~64k tokens per step at seq 2048 = 32 sequences, stated.
    expect(j["global_batch"] == 32 and "fine-tuning default" in j["global_batch_source"], "global batch 32", rc, out, err)
    expect(all(r["layout"]["tp"] == 1 and r["layout"]["pp"] == 1 for r in j["rows"]), "hf: data parallel only", rc, out, err)
    rc, out, err = run(*README_RECOMMEND)
    expect(rc == 0 and "global batch 32 sequences" in out and "$" in out, "stated batch and $ cost", rc, out, err)
    expect_human_units(rc, out, err)


def expect_human_units(rc, out, err):
    """No printed figure with more than 4 significant digits next to a unit or a $."""
    import re
    for m in re.finditer(r"(\$?)([0-9][0-9,]*(?:\.[0-9]+)?) ?(GB|GiB|TiB|TB|W|kW|h|min|days|s)\b", out):
        expect(significant_digits(m.group(2)) <= 4, f"at most 4 significant digits: {m.group(0)}", rc, out, err)
    for m in re.finditer(r"\$([0-9][0-9,]*(?:\.[0-9]+)?)", out):
        expect(significant_digits(m.group(1)) <= 4, f"at most 4 significant digits: {m.group(0)}", rc, out, err)


def case_recommend_prices_and_buy():
    base = ("recommend", "llama-2-7b", "--method", "qlora", "--tokens", "100M", "--max-gpus", "2", "--top", "100", "--json")
    # Catalog on-demand vs --spot: one A100 40GB from GCP's a2-highgpu-1g (src/data/prices.csv):
    # 3.673385 on-demand, 1.293355 spot (a whole 8-GPU Lambda instance at 1.99/GPU costs 15.92/h).
    for extra, price, kind in (((), 3.673385, "on-demand"), (("--spot",), 1.293355, "spot")):
        rc, out, err = run(*base, "--gpus-list", "a100-40gb", *extra)
        expect(rc == 0, "exit 0", rc, out, err)
        j = json.loads(out)
        one = [r for r in j["rows"] if r["count"] == 1][0]
        expect(j["price_kind"] == kind and abs(one["rent"]["price_per_gpu_hour"] - price) < 1e-9, f"{kind} price", rc, out, err)
    # --prices FILE overrides the catalog; rent vs buy with --kwh-price:
    # break-even = 1599 / (0.25 - 450 W x 0.30 / 1000) = 1599 / 0.115 = 13,904 h.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mine.csv")
        with open(path, "w") as f:
            f.write("gpu_id,price_per_gpu_hour_usd\nrtx-4090,0.25\n")
        rc, out, err = run(*base, "--gpus-list", "rtx-4090", "--prices", path, "--kwh-price", "0.30")
        expect(rc == 0, "exit 0", rc, out, err)
        for r in json.loads(out)["rows"]:
            expect(abs(r["rent"]["price_per_gpu_hour"] - 0.25) < 1e-12, "user price", rc, out, err)
            expect(abs(r["break_even_hours"] - 1599 / (0.25 - 0.45 * 0.30)) < 1e-6, "break-even hours", rc, out, err)
            expect(abs(r["purchase"] - 1599 * r["count"]) < 1e-9, "purchase", rc, out, err)
        # Renting cheaper than the electricity: buying never pays off (null in JSON, "never" in text).
        rc, out, err = run(*base, "--gpus-list", "rtx-4090", "--price", "rtx-4090=0.01")
        expect(all(r["break_even_hours"] is None for r in json.loads(out)["rows"]), "never pays off", rc, out, err)
    # Default candidates: only GPUs one can rent, each row priced.
    rc, out, err = run(*base)
    expect(rc == 0 and all(r["cost"] is not None for r in json.loads(out)["rows"]), "priced candidates", rc, out, err)


def case_recommend_owned_card():
    # A GeForce owner: --gpu names the card to rank (not a template for H100 rows); with no
    # rental price the rows rank by purchase + electricity, the fewest cards meeting the
    # deadline first, and the counts stop at one workstation's four cards.
    rc, out, err = run("recommend", "llama-2-7b", "--method", "qlora", "--tokens", "100M", "--gpu", "rtx-3060", "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    rows = json.loads(out)["rows"]
    expect(rows and all(r["gpu"] == "rtx-3060" and r["count"] <= 4 for r in rows), "only the named card, one machine",
           rc, out, err)
    first = rows[0]
    expect(first["meets_deadline"] and first["own_cost"] is not None and first["cost"] is None, "priced to buy", rc, out, err)
    expect(all(first["count"] <= r["count"] for r in rows if r["meets_deadline"]), "fewest cards meeting the deadline",
           rc, out, err)
    expect_error(["recommend", "llama-2-7b", "--tokens", "100M", "--gpu", "rtx-3060", "--gpus-list", "rtx-4090"],
                 "--gpu", "give one of --gpu or --gpus-list")


def case_recommend_deadline_and_bad_inputs():
    # Nothing meets 1 hour on 2 GPUs: the answer says how many would.
    rc, out, err = run("recommend", "llama-2-7b", "--method", "lora", "--tokens", "2B", "--gpus-list", "h100-sxm",
                       "--max-gpus", "2", "--deadline", "1h", "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    x = json.loads(out)["deadline_extrapolation"]
    expect(x is not None and x["gpu"] == "h100-sxm" and x["count"] and x["count"] > 2, "GPUs needed", rc, out, err)
    rc, out, err = run("recommend", "llama-2-7b", "--method", "lora", "--tokens", "2B", "--gpus-list", "h100-sxm",
                       "--max-gpus", "2", "--deadline", "1h")
    expect("No row meets the deadline" in out and "h100-sxm" in out, "stated in text", rc, out, err)
    expect_human_units(rc, out, err)
    # A 70B pre-training run: large costs, TiB of host RAM and kW still print in human units.
    rc, out, err = run("recommend", "llama-2-70b", "--method", "full", "--tokens", "100B", "--gpus-list", "h100-sxm",
                       "--max-gpus", "64", "--framework", "megatron", "--top", "3")
    expect(rc == 0 and "TiB RAM" in out and "kW PSU" in out, "human units", rc, out, err)
    expect_human_units(rc, out, err)
    cases = [
        (["recommend", "llama-2-7b", "--tokens", "2B", "--gpus-list", "rtx-4090,rtx-3060", "--budget", "100"],
         "--budget:", "rtx-3060"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--kwh-price", "-1"], "--kwh-price:", "-1"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--global-batch", "0"], "--global-batch:", "(got 0)"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--prices", "/nonexistent/prices.csv"], "--prices: /nonexistent/prices.csv"),
    ]
    for args, path, *needles in cases:
        expect_error(args, path, *needles)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bad.csv")
        with open(path, "w") as f:
            f.write("gpu_id,price_per_gpu_hour_usd\nrtx-4090,-3\n")
        expect_error(["recommend", "llama-2-7b", "--tokens", "2B", "--prices", path], "--prices: " + path, "-3")


def case_recommend_nothing_fits_footer():
    """Nothing fits at or below --max-gpus: the deadline answer is said once, with thousands separators."""
    args = ["recommend", "llama-2-70b", "--tokens", "100B", "--framework", "megatron", "--gpus-list", "h100-sxm",
            "--max-gpus", "2", "--deadline", "24h"]
    rc, out, err = run(*args, "--json")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    x = j["deadline_extrapolation"]
    # 70B full training needs more than 2 x 80 GB: no row, and the model's own layout at a larger count answers.
    expect(j["total_rows"] == 0 and x is not None and not x["extrapolated"] and x["count"] > 2, "modelled answer", rc, out, err)
    rc, out, err = run(*args)
    expect(rc == 0, "exit 0", rc, out, err)
    lines = [line for line in out.splitlines() if line.startswith("No row")]
    expect(len(lines) == 1, "one deadline line", rc, out, err)
    line = lines[0]
    count = f"{int(x['count']):,}"  # 1,024
    expect(line.startswith("No row at or below --max-gpus 2 meets the deadline: " + count + "×h100-sxm would, in "),
           "the answer, formatted like the rest of the output", rc, out, err)
    expect(line.count("×h100-sxm") == 1 and line.count(" in ") == 1, "said once", rc, out, err)
    # With rows at or below --max-gpus, the answer and the largest measured count are two different counts.
    rc, out, err = run("recommend", "llama-2-7b", "--method", "lora", "--tokens", "2B", "--gpus-list", "h100-sxm",
                       "--max-gpus", "2", "--deadline", "1h")
    line = [line for line in out.splitlines() if line.startswith("No row meets the deadline")]
    expect(len(line) == 1, "deadline line", rc, out, err)
    counts = [c.split()[-1] for c in line[0].split("×h100-sxm")[:-1]]
    expect(len(counts) == 2 and counts[0] != counts[1], "needed and measured counts differ", rc, out, err)


# The serving commands' model: `gpuplan serve` and `gpuplan recommend --serve` of llama-3.1-8b.
SERVE_8B = ("serve", "llama-3.1-8b")
RECOMMEND_SERVE_8B = ("recommend", "llama-3.1-8b", "--serve")


def recommend_serve(rps, *extra, gpus="a100-80gb"):
    """`gpuplan recommend llama-3.1-8b --serve` at `rps` requests/s over --gpus-list `gpus`."""
    return [*RECOMMEND_SERVE_8B, "--requests-per-second", rps, "--gpus-list", gpus, *extra]


def case_serve_engines():
    # vLLM on an A100-80GB: pool = 0.9 x 80 GiB - 16.06e9 B weights - 0.35 GiB - the 8192-token
    # profile (~0.97e9 B) = ~58.4e9 B; 2 MiB blocks of 16 tokens -> ~27.8k blocks.
    rc, out, err = run(*SERVE_8B, "--gpu", "a100-80gb", "--engine", "vllm", "--prompt-len", "1024",
                       "--output-len", "256", "--latency-target", "50ms", "--json")
    expect(rc == 0, "serve exit 0", rc, out, err)
    j = json.loads(out)
    expect(abs(j["pool_bytes"] - 58.36e9) < 0.02 * 58.36e9 and j["block_tokens"] == 16, "vLLM pool", rc, out, err)
    expect(j["pool_tokens"] == 16 * j["pool_blocks"] and j["max_concurrency"] == j["pool_tokens"] // 1280, "concurrency", rc, out, err)
    curve = j["curve"]
    expect([p["concurrency"] for p in curve][:3] == [1, 2, 4] and curve[-1]["concurrency"] == j["max_concurrency"], "curve", rc, out, err)
    expect(all(a["inter_token_latency_s"] <= b["inter_token_latency_s"] for a, b in zip(curve, curve[1:])), "ITL grows", rc, out, err)
    expect(1 <= j["concurrency_for_target"] <= j["max_concurrency"], "target concurrency", rc, out, err)
    # The typed batch changes nothing: --infer-batch is not a serve option; the same pool every time.
    rc, out, err = run(*SERVE_8B, "--gpu", "rtx-4090", "--engine", "llama.cpp", "--gguf", "Q4_K_M", "--gpu-layers", "20")
    expect(rc == 0 and "llama.cpp" in out and "tok/s" in out, "llama.cpp table", rc, out, err)
    expect_error([*SERVE_8B, "--engine", "vllm", "--gguf", "Q4_K_M"], "", "only applies to engine llama.cpp")
    expect_error([*SERVE_8B, "--engine", "vllm", "--latency-target", "fast"], "--latency-target")

def case_recommend_graph_models():
    """gpuplan recommend for image and diffusion models: DDP rows from the published recipe."""
    rc, out, err = run("recommend", "resnet-50", "--gpus-list", "a100-80gb,rtx-4090", "--max-gpus", "2", "--json")
    expect(rc == 0, "recommend resnet-50 exit 0", rc, out, err)
    j = json.loads(out)
    # He et al. 2016: batch 256, 90 epochs over ImageNet-1k's 1,281,167 images.
    expect(j["global_batch"] == 256 and j["samples"] == 1281167 * 90, "resnet-50 recipe", rc, out, err)
    expect(len(j["rows"]) == 4 and j["total_rows"] == 4, "2 GPU types x counts 1, 2", rc, out, err)
    for r in j["rows"]:
        expect(r["micro_batch"] * r["grad_accum"] * r["count"] >= 256, "the global batch is covered", rc, out, err)
        expect(abs(r["wall_seconds"] * r["samples_per_second"] / j["samples"] - 1) < 1e-9, "wall = samples / rate",
               rc, out, err)
    # The one-GPU A100 row is `gpuplan vision` at batch 256.
    rc, out2, err = run("vision", "resnet-50", "--gpu", "a100-80gb", "--batch", "256", "--json")
    v = json.loads(out2)["time"]["images_per_second"]
    a1 = next(r for r in j["rows"] if r["gpu"] == "a100-80gb" and r["count"] == 1)
    expect(abs(a1["samples_per_second"] / v - 1) < 1e-9, "1-GPU row = vision", rc, out, err)
    rc, out, err = run("recommend", "sd-2.1", "--gpus-list", "rtx-4090", "--max-gpus", "1")
    expect(rc == 0 and "60,000 images" in out and "EMA" in out and "rtx-4090" in out, "sd-2.1 table", rc, out, err)
    rc, out, err = run("recommend", "sd-1.5", "--method", "lora", "--gpus-list", "t4", "--ema", "false", "--json")
    expect(rc == 0 and json.loads(out)["method"] == "lora", "sd-1.5 lora", rc, out, err)
    rc, out, err = run("recommend", "vit-l-16", "--checkpointing", "full", "--gpus-list", "t4", "--max-gpus", "1", "--json")
    expect(rc == 0 and json.loads(out)["checkpointing"] is True, "recommend --checkpointing full", rc, out, err)
    rc, out, err = run("recommend", "sdxl", "--gpus-list", "a100-80gb", "--max-gpus", "1", "--json")
    expect(rc == 0 and json.loads(out)["model"] == "sdxl-base" and "summary" in json.loads(out), "recommend sdxl", rc, out, err)
    expect_error(["recommend", "vgg-16", "--checkpointing", "full"], "--checkpointing", "no residual blocks")
    expect_error(["recommend", "sd-1.5", "--batch", "5000"], "--batch", "between 1 and 4096")
    expect_error(["recommend", "resnet-50", "--images", "1e12", "--epochs", "1e6"], "--epochs", "images x epochs")
    expect_error(["recommend", "resnet-50", "--seq", "512"], "--seq", "does not apply to image and diffusion models")
    expect_error(["recommend", "resnet-50", "--method", "qlora"], "--method", "(got qlora)")
    expect_error(["recommend", "resnet-50", "--global-batch", "0"], "--global-batch", "(got 0)")
    expect_error(["recommend", "sd-1.5", "--image", "512"], "--image", "use --resolution")
    expect_error(["recommend", "sd-1.5", "--method", "lora", "--ema", "true"], "--ema", "full fine-tuning only")
    expect_error(["recommend", "llama-2-7b", "--images", "1M"], "--images", "image and diffusion models only")
    expect_error(["recommend", "resnet-50", "--dataset-tokens", "1B"], "--dataset-tokens", "give --images")
    expect_error(["recommend", "resnet-50", "--gpu", "t4"], "--gpu", "--gpus-list")
    expect_error(["recommend", "--graph", "/nonexistent.json"], "graph")


def case_vision_models():
    """gpuplan vision: a torchvision image model on one GPU (docs/vision.md)."""
    rc, out, err = run("vision", "resnet-50", "--gpu", "a100-80gb", "--batch", "256", "--json")
    expect(rc == 0, "vision exit 0", rc, out, err)
    j = json.loads(out)
    # torchvision's table: ResNet-50 has 25,557,032 parameters and 4.09 GMACs per 224x224 image.
    expect(j["params"] == 25557032, "resnet-50 params", rc, out, err)
    expect(abs(j["forward_macs_per_image"] / 4.089e9 - 1) < 0.02, "resnet-50 MACs", rc, out, err)
    # NVIDIA DeepLearningExamples (row NR1): 2470 images/s on one A100 80GB with AMP at batch 256; 15% tolerance on the step time (the estimate is 13% short).
    expect(abs(2470 / j["time"]["images_per_second"] - 1) < 0.15, "resnet-50 step time", rc, out, err)
    expect(j["memory"]["fits"] is True, "fits", rc, out, err)
    rc, out, err = run("vision", "resnet-50", "--gpu", "t4", "--batch", "64", "--image", "224")
    expect(rc == 0 and "25,557,032" in out and "images/s" in out, "vision table", rc, out, err)
    # ViT-H/14 at batch 64 needs ~20 GiB of saved activations alone: exit 1 on a 16 GB T4.
    rc, out, err = run("vision", "vit-h-14", "--gpu", "t4", "--batch", "64")
    expect(rc == 1 and "does not fit" in out, "vit-h-14 on t4", rc, out, err)
    rc, out, err = run("vision", "convnext-tiny", "--gpu", "a100-80gb", "--images", "1.28M", "--epochs", "300", "--json")
    expect(rc == 0 and j is not None, "time to train", rc, out, err)
    t = json.loads(out)["time"]
    expect(abs(t["to_train_seconds"] - 1.28e6 * 300 / t["images_per_second"]) < 1e-6 * t["to_train_seconds"],
           "to_train = images x epochs / rate", rc, out, err)
    rc, out, err = run("vision", "resnet-50", "--gpu", "a100-80gb", "--gpus", "8", "--batch", "256", "--json")
    expect(rc == 0 and json.loads(out)["num_gpus"] == 8, "vision --gpus", rc, out, err)
    # NR2: 16,621 images/s measured on 8 A100s; the estimate is ~37% higher (docs/vision.md), checked loosely.
    expect(1.3 < json.loads(out)["time"]["images_per_second"] / 16621 < 1.45, "vision 8 GPUs", rc, out, err)
    # Checkpointing every residual branch: ViT-L/16 keeps under a fifth of its activations.
    rc, out, err = run("vision", "vit-l-16", "--gpu", "a100-80gb", "--batch", "64", "--json")
    plain = json.loads(out)["memory"]["activations"]
    rc, out, err = run("vision", "vit-l-16", "--gpu", "a100-80gb", "--batch", "64", "--checkpointing", "--json")
    expect(rc == 0 and json.loads(out)["checkpointing"] is True and json.loads(out)["memory"]["activations"] < 0.2 * plain,
           "vision --checkpointing", rc, out, err)
    expect_error(["vision", "vit-l-16", "--infer", "--checkpointing"], "checkpointing", "training only")
    expect_error(["vision", "vgg-16", "--checkpointing"], "checkpointing", "no residual blocks")
    expect_error(["vision", "resnet-50", "--gpus", "0"], "num_gpus", "(got 0)")
    expect_error(["vision", "resnet-51", "--gpu", "t4"], "model", "unknown vision model 'resnet-51'")
    expect_error(["vision", "resnet-50", "--gpu", "t5"], "--gpu")
    expect_error(["vision", "resnet-50", "--batch", "0"], "batch", "(got 0)")
    expect_error(["vision", "resnet-50", "--image", "8"], "image", "(got 8)")
    expect_error(["vision", "vit-b-16", "--image", "100"], "image", "patch size 16")
    expect_error(["vision", "resnet-50", "--precision", "fp12"], "--precision", "(got fp12)")
    expect_error(["vision", "resnet-50", "--images", "lots"], "--images")
    expect_error(["vision", "resnet-50", "--images", "1M", "--epochs", "-1"], "epochs", "(got -1)")
    # EfficientNet-B3 without --image: the 300x300 crop of its torchvision weights; torchvision 0.14.1
    # efficientnet_b3: 12,233,232 parameters, 1.83 GMACs at 300x300 (its table's GFLOPS column).
    rc, out, err = run("vision", "efficientnet-b3", "--gpu", "a100-80gb", "--json")
    expect(rc == 0, "efficientnet-b3 exit 0", rc, out, err)
    j = json.loads(out)
    expect(j["image"] == 300 and j["input"]["h"] == 300, "efficientnet-b3 default image", rc, out, err)
    expect(j["params"] == 12233232 and abs(j["forward_macs_per_image"] / 1.83e9 - 1) < 0.02, "efficientnet-b3 figures",
           rc, out, err)
    rc, out, err = run("vision", "efficientnet_b3", "--gpu", "a100-80gb", "--image", "224", "--json")
    expect(rc == 0 and json.loads(out)["image"] == 224, "efficientnet-b3 --image 224", rc, out, err)
    rc, out, err = run("vision", "efficientnet-b4", "--gpu", "a100-80gb")
    expect(rc == 0 and "380x380" in out and "19,341,616" in out, "efficientnet-b4 table", rc, out, err)
    expect_error(["vision", "efficientnet-b7"], "model", "unknown vision model 'efficientnet-b7'")


def case_diffusion_pipelines():
    """gpuplan diffusion: a Stable Diffusion pipeline on one GPU (docs/diffusion.md)."""
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "t4", "--json")
    expect(rc == 0, "diffusion exit 0", rc, out, err)
    d = json.loads(out)
    comps = {c["name"]: c for c in d["components"]}
    # diffusers: SD 1.5 UNet 859,520,964 parameters, AutoencoderKL 83,653,863, CLIP ViT-L/14 text 123,060,480
    expect(comps["unet"]["params"] == 859520964 and comps["vae"]["params"] == 83653863
           and comps["text_encoder"]["params"] == 123060480, "exact parameters", rc, out, err)
    # guidance: the UNet runs on 2 x batch, 50 times; fp16 weights: 2 B per parameter of every component
    expect(comps["unet"]["batch"] == 2 and comps["unet"]["calls"] == 50, "unet calls", rc, out, err)
    expect(d["memory"]["weights"] == 2 * d["params"], "fp16 weights", rc, out, err)
    expect(d["memory"]["device"] > d["memory"]["peak_allocated"] > d["memory"]["weights"], "memory order", rc, out, err)
    t = d["time"]
    expect(math.isclose(t["pipeline_seconds"], t["text_encode_seconds"] + 50 * t["step_seconds"] + t["vae_decode_seconds"]
                        + t["safety_check_seconds"], rel_tol=1e-9), "pipeline time", rc, out, err)
    expect(math.isclose(t["images_per_second"], 1 / t["pipeline_seconds"], rel_tol=1e-9), "images/s", rc, out, err)
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "t4", "--steps", "25")
    expect(rc == 0 and "859,520,964" in out and "denoising step" in out and "images/s" in out and "fits" in out,
           "diffusion table", rc, out, err)
    # SDXL at batch 64 on a 16 GB card does not fit: exit 1
    rc, out, err = run("diffusion", "sdxl-base", "--gpu", "t4", "--batch", "64")
    expect(rc == 1 and "does not fit" in out, "sdxl does not fit", rc, out, err)
    # A diffusers folder gives the catalog's figures
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "diffusers", "sd-1.5")
    rc, out2, err = run("diffusion", "--config", data, "--gpu", "t4", "--json")
    expect(rc == 0 and json.loads(out2)["params"] == d["params"], "diffusion --config", rc, out2, err)
    expect_error(["diffusion", "sd-9", "--gpu", "t4"], "model", "unknown diffusion pipeline 'sd-9'")
    expect_error(["diffusion", "sd-1.5", "--gpu", "t5"], "--gpu")
    expect_error(["diffusion", "sd-1.5", "--batch", "0"], "--batch", "(got 0)")
    expect_error(["diffusion", "sd-1.5", "--steps", "0"], "--steps", "(got 0)")
    expect_error(["diffusion", "sd-1.5", "--resolution", "500"], "--resolution", "multiple of 64")
    expect_error(["diffusion", "sd-1.5", "--precision", "fp12"], "--precision", "(got fp12)")
    expect_error(["diffusion", "--gpu", "t4"], "model", "got neither")
    expect_error(["diffusion", "--config", "/nonexistent-folder"], "config", "no such directory")
    # Fine-tuning the UNet: full (fp32 weights 4 B + autocast copies 2 B, fp32 gradients 4 B,
    # AdamW 8 B per parameter under fp16 AMP) and LoRA rank 4
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "a100-80gb", "--train", "full", "--batch", "4", "--json")
    expect(rc == 0, "train full", rc, out, err)
    full = json.loads(out)
    m = full["memory"]
    expect(full["trainable_params"] == 859520964
           and math.isclose(m["trainable_weights"] + m["gradients"] + m["optimizer"], 18 * 859520964, rel_tol=1e-12),
           "full fine-tuning states", rc, out, err)
    # DreamBooth (examples/dreambooth/README.md, "Training on a 16GB GPU"): fits a T4, exit 0
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "t4", "--train", "full", "--prior-preservation",
                       "--checkpointing", "--optimizer", "adamw-8bit", "--keep-grads")
    expect(rc == 0 and "1 class images" in out and "gradients kept between steps" in out, "dreambooth", rc, out, err)
    expect_error(["diffusion", "sd-1.5", "--prior-preservation"], "--prior-preservation", "applies to fine-tuning only")
    expect_error(["diffusion", "sd-1.5", "--checkpointing"], "--checkpointing", "applies to fine-tuning only")
    expect_error(["diffusion", "sd-1.5", "--train", "full", "--optimizer", "adam9"], "--optimizer", "(got adam9)")
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "a100-80gb", "--train", "lora", "--rank", "4", "--batch", "4",
                       "--checkpointing", "--json")
    lora = json.loads(out)
    expect(rc == 0 and lora["trainable_params"] == 797184 and lora["memory"]["activations"] < m["activations"],
           "train lora", rc, out, err)
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "t4", "--train", "lora")
    expect(rc == 0 and "trainable parameters" in out and "797,184" in out, "train lora table", rc, out, err)
    expect_error(["diffusion", "sd-1.5", "--train", "dreambooth"], "--train", "(got dreambooth)")
    expect_error(["diffusion", "sd-1.5", "--train", "lora", "--rank", "0"], "--rank", "(got 0)")
    expect_error(["diffusion", "sd-1.5", "--train", "full", "--precision", "fp32"], "--precision")


def case_vision_graph_file():
    """gpuplan vision --graph FILE: a layer graph file estimates exactly as the catalog model it was
    exported from (--export-graph); bad files are one-line errors naming the field (docs/trace.md)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r50.json")
        rc, out, err = run("vision", "resnet-50", "--image", "128", "--export-graph", path)
        expect(rc == 0 and "Wrote the layer graph of resnet-50" in out, "export-graph", rc, out, err)
        g = json.load(open(path))
        expect(g["name"] == "resnet-50" and g["input"] == {"c": 3, "h": 128, "w": 128}, "exported input", rc, out, err)
        # conv1, bn1, relu, maxpool + 16 bottlenecks of 10 layers (3 conv, 3 bn, 3 relu, add; +2 for the 4
        # downsamples) + avgpool, flatten, fc
        expect(len(g["layers"]) == 4 + 16 * 10 + 4 * 2 + 3, "exported layer count", rc, out, err)
        rc, out, err = run("vision", "--graph", path, "--gpu", "a100-80gb", "--batch", "64", "--json")
        expect(rc == 0, "vision --graph exit 0", rc, out, err)
        a = json.loads(out)
        rc, out, err = run("vision", "resnet-50", "--image", "128", "--gpu", "a100-80gb", "--batch", "64", "--json")
        b = json.loads(out)
        expect(a["params"] == b["params"] == 25557032, "same params as the catalog", rc, out, err)
        expect(a["memory"] == b["memory"] and a["time"] == b["time"], "same memory and time as the catalog", rc, out, err)
        expect(a["input"] == {"c": 3, "d": 1, "h": 128, "w": 128} and "image" not in a, "graph input reported", rc, out, err)
        rc, out, err = run("vision", "--graph", path, "--gpu", "t4", "--batch", "8")
        expect(rc == 0 and "input 3x128x128" in out and "25,557,032" in out, "vision --graph table", rc, out, err)
        # --export-graph - writes the JSON to stdout; it reads back as the same graph.
        rc, out, err = run("vision", "vit-b-16", "--export-graph", "-")
        expect(rc == 0 and json.loads(out)["layers"][0] == {"kind": "conv", "out": 768, "kernel": 16, "stride": 16,
                                                              "name": "conv_proj"}, "export to stdout", rc, out, err)
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            json.dump({"input": {"c": 3, "h": 8, "w": 8}, "layers": [{"kind": "conv", "out": 4, "kernel": 0}]}, f)
        expect_error(["vision", "--graph", bad], "layers[0].kernel", "must be in [1, 16777216] (got 0)")
        with open(bad, "w") as f:
            json.dump({"input": {"c": 3}, "layers": [{"kind": "convolution"}]}, f)
        expect_error(["vision", "--graph", bad], "layers[0].kind", "must be one of linear, conv,", '(got "convolution")')
        expect_error(["vision", "--graph", os.path.join(d, "missing.json")], "graph", "cannot open file")
        expect_error(["vision", "resnet-50", "--graph", path], "--graph", "not both")
        expect_error(["vision", "--graph", path, "--image", "64"], "--image", "does not apply to a graph")
        expect_error(["vision", "--gpu", "t4"], "--model", "or --graph FILE.json")
    rc, out, err = run("vision", "--help")
    expect(rc == 0 and "--graph" in out and "optional with --graph" in out and "--export-graph" in out, "help", rc, out, err)


def case_calibrate_round_trip():
    """calibrate from one measured run, save, reuse with --profile: the estimate
    moves toward the measurement, the bands come from the profile, errors name flags."""
    base = ["llama-2-7b", "--gpu", "a100-80gb", "--method", "lora", "--seq", "2048"]
    rc, out, err = run("estimate", *base, "--json")
    expect(rc == 0, "estimate", rc, out, err)
    plain = json.loads(out)
    reserved = plain["memory"]["peak_reserved_bytes"]
    # A measured pool 20% above the estimate (bytes), and a step 1.5x slower.
    measured = 1.2 * reserved
    step = 1.5 * plain["time"]["step_seconds"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.json")
        rc, out, err = run("calibrate", *base, "--measured-reserved", f"{measured:.0f}B",
                           "--measured-step", f"{step}", "--name", "a100-lora", "--out", path)
        expect(rc == 0 and "profile 'a100-lora'" in out and os.path.exists(path), "calibrate", rc, out, err)
        with open(path) as f:
            prof = json.load(f)
        expect(prof["gpuplan_profile"] == 1 and prof["memory"]["points"] == 1 and prof["time"]["points"] == 1,
               "profile file", rc, json.dumps(prof), err)
        rc, out, err = run("estimate", *base, "--profile", path, "--json")
        expect(rc == 0, "estimate --profile", rc, out, err)
        cal = json.loads(out)
        # The calibrated estimate reproduces the measured point within 3% (the priors keep a little of the defaults).
        got = cal["memory"]["peak_reserved_bytes"]
        expect(abs(got / measured - 1) < 0.03, f"calibrated reserved {got} vs measured {measured}", rc, out, err)
        expect(abs(cal["time"]["step_seconds"] / step - 1) < 0.03, "calibrated step", rc, out, err)
        expect(cal["profile"]["name"] == "a100-lora", "profile in --json", rc, out, err)
        expect(cal["memory"]["bands"]["regime"]["calibrated"] is True, "calibrated bands", rc, out, err)
        # Another GPU keeps the constants but not the bands.
        rc, out, err = run("estimate", "llama-2-7b", "--gpu", "h100-sxm", "--method", "lora", "--profile", path, "--json")
        expect(rc == 0 and json.loads(out)["memory"]["bands"]["regime"]["calibrated"] is False, "other GPU", rc, out, err)
        with open(path, "w") as f:
            f.write('{"gpuplan_profile": 1, "name": "x", "memory": {"states_scale": "big", "activation_scale": 1, '
                    '"reserved_factor": 1.1, "cuda_context_bytes": 1e9, "points": 1}}')
        expect_error(["fit", *base, "--profile", path], "--profile: profile.memory.states_scale", "must be a number")
    expect_error(["calibrate", *base, "--measured-device", "-3GB"], "--measured-device", "positive size")
    expect_error(["calibrate", *base, "--measured-step", "soon"], "--measured-step", "duration")
    expect_error(["calibrate", *base], "--measured-device", "at least one --measured-*")
    expect_error(["calibrate"], "--measurements", "is required")
    expect_error(["calibrate", "--measurements", "/nonexistent/m.json"], "--measurements: measurements", "cannot open")


CAL_BASE = ["llama-2-7b", "--gpu", "a100-80gb", "--method", "lora", "--seq", "2048"]


def expect_refused(args, path_prefix, *needles, existing=None):
    """calibrate ARGS --out FILE is a one-line error (exit 2) naming the field and the value, and
    writes nothing: no FILE, no temporary file beside it, and an existing FILE keeps its bytes."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.json")
        extra = ["--out", path]
        if existing is not None:
            with open(path, "w") as f:
                f.write(existing)
            extra.append("--force")
        line = expect_error([*args, *extra], path_prefix, *needles)
        if existing is None:
            expect(not os.path.exists(path), f"{args}: no profile written", err=line)
        else:
            with open(path) as f:
                expect(f.read() == existing, f"{args}: the existing file is not overwritten", err=line)
        expect(sorted(os.listdir(d)) == ([] if existing is None else ["p.json"]), f"{args}: nothing left behind", err=line)
        return line


def case_calibrate_needs_units():
    """A bare memory figure is an error naming the unit to add; a step may stay in bare seconds."""
    line = expect_refused(["calibrate", *CAL_BASE, "--measured-reserved", "21.3"], "--measured-reserved",
                          "needs a unit", "21.3GiB, 21.3GB or 21800MiB", "(got 21.3)")
    expect(line == "gpuplan: --measured-reserved: needs a unit: 21.3GiB, 21.3GB or 21800MiB (got 21.3)", "message", err=line)
    expect_refused(["calibrate", *CAL_BASE, "--measured-allocated", "20"], "--measured-allocated", "needs a unit", "(got 20)")
    expect_refused(["calibrate", *CAL_BASE, "--measured-device", "22870687744"], "--measured-device",
                   "22870687744B for bytes", "(got 22870687744)")
    # Units given (GiB, MiB, GB, bytes): accepted; a bare step is seconds.
    for reserved in ("17.5GiB", "17920MiB", "18.8GB", "18790481920B"):
        rc, out, err = run("calibrate", *CAL_BASE, "--measured-reserved", reserved, "--measured-step", "0.6", "--json")
        expect(rc == 0 and json.loads(out)["memory"]["points"] == 1, f"--measured-reserved {reserved}", rc, out, err)


def case_calibrate_impossible_measurements():
    """Measurements no run can produce: one-line errors naming the figure and its value; nothing written."""
    cal = ["calibrate", *CAL_BASE]
    expect_refused([*cal, "--measured-reserved", "1MiB"], "--measured-reserved", "below the weights alone", "12.559 GiB",
                   "(got 1 MiB)")
    expect_refused([*cal, "--measured-reserved", "21.3B"], "--measured-reserved", "below the weights", "(got 21.3 bytes)")
    expect_refused([*cal, "--measured-allocated", "30GiB", "--measured-reserved", "25GiB", "--measured-device", "20GiB"],
                   "--measured-reserved", "must be at least --measured-allocated (30 GiB)", "(got 25 GiB)")
    expect_refused([*cal, "--measured-reserved", "25GiB", "--measured-device", "20GiB"], "--measured-device",
                   "must be at least --measured-reserved (25 GiB)", "(got 20 GiB)")
    expect_refused([*cal, "--measured-reserved", "500GiB"], "--measured-reserved", "exceeds the memory of one a100-80gb",
                   "(got 500 GiB)")
    expect_refused([*cal, "--measured-step", "1e300"], "--measured-step", "between 0.0001 and 10^7 seconds", "(got 1e+300 s)")
    expect_refused([*cal, "--measured-step", "1e-300"], "--measured-step", "between 0.0001 and 10^7 seconds", "(got 1e-300 s)")
    expect_refused([*cal, "--measured-tokens-per-second", "1e-300"], "--measured-tokens-per-second", "implies a step",
                   "(got 1e-300)")
    expect_refused([*cal, "--measured-tokens-per-second", "1e300"], "--measured-tokens-per-second", "implies a step",
                   "(got 1e+300)")
    # An existing file is not touched by a refused calibration, even with --force.
    expect_refused([*cal, "--measured-reserved", "500GiB"], "--measured-reserved", "(got 500 GiB)", existing='{"keep": 1}')
    # The measurements file: the same checks, naming the key as written.
    scen = {"model": "llama-2-7b", "gpu": "a100-80gb", "method": "lora", "seq_len": 2048}
    cases = [({"peak_reserved_bytes": 1048576}, "measurements[0].peak_reserved_bytes", "below the weights", "(got 1 MiB)"),
             ({"peak_allocated_gib": 30, "peak_reserved_gib": 25}, "measurements[0].peak_reserved_gib", "at least", "(got 25 GiB)"),
             ({"device_gib": 500}, "measurements[0].device_gib", "exceeds the memory", "(got 500 GiB)"),
             ({"step_seconds": 1e-300}, "measurements[0].step_seconds", "between 0.0001", "(got 1e-300 s)")]
    with tempfile.TemporaryDirectory() as d:
        for figures, path, *needles in cases:
            mfile = os.path.join(d, "m.json")
            with open(mfile, "w") as f:
                json.dump([{"scenario": scen, **figures}], f)
            expect_refused(["calibrate", "--measurements", mfile], "--measurements: " + path, *needles)


def case_calibrate_contradictions():
    """Points that contradict each other, or that no constants within their bounds explain, name the points."""
    scen = lambda seq: {"model": "llama-2-7b", "gpu": "a100-80gb", "method": "lora", "seq_len": seq}  # noqa: E731
    with tempfile.TemporaryDirectory() as d:
        mfile = os.path.join(d, "m.json")

        def refused(points, path, *needles):
            with open(mfile, "w") as f:
                json.dump(points, f)
            return expect_refused(["calibrate", "--measurements", mfile], path, *needles)

        refused([{"scenario": scen(2048), "peak_reserved_gib": 16}, {"scenario": scen(2048), "peak_reserved_gib": 24}],
                "measurements[1].peak_reserved_gib", "contradicts measurements[0].peak_reserved_gib of the same run",
                "(got 24 GiB)")
        refused([{"scenario": scen(2048), "step_seconds": 1}, {"scenario": scen(2048), "tokens_per_second_per_gpu": 1024}],
                "measurements[1].tokens_per_second_per_gpu", "contradicts measurements[0].step_seconds", "(got 1024 tokens/s")
        refused([{"scenario": scen(2048), "peak_reserved_gib": 16}, {"scenario": scen(4096), "peak_reserved_gib": 14}],
                "measurements[1].peak_reserved_gib", "activation_scale (0.1 to 10) beyond its bounds",
                "measurements[0].peak_reserved_gib", "(got 14 GiB)")
    expect_refused(["calibrate", *CAL_BASE, "--measured-reserved", "60GiB"], "--measured-reserved",
                   "its calibrated estimate", "more than 1.5x off after the fit", "(got 60 GiB)")
    expect_refused(["calibrate", *CAL_BASE, "--measured-step", "0.001"], "--measured-step",
                   "matmul_scale (0.05 to 1.5) beyond its bounds", "(got 0.001 s)")


def case_calibrate_out_force():
    """--out never replaces an existing file without --force; with it, the file is replaced by a profile that reads back."""
    good = ["calibrate", *CAL_BASE, "--measured-reserved", "17.5GiB", "--measured-step", "0.6"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.json")
        with open(path, "w") as f:
            f.write("keep")
        line = expect_error([*good, "--out", path], "--out", f"{path} exists; add --force to replace it")
        expect(line == f"gpuplan: --out: {path} exists; add --force to replace it", "message", err=line)
        with open(path) as f:
            expect(f.read() == "keep", "not overwritten")
        rc, out, err = run(*good, "--out", path, "--force")
        expect(rc == 0 and "Saved to" in out, "--force replaces", rc, out, err)
        with open(path) as f:
            expect(json.load(f)["memory"]["points"] == 1, "a profile now", rc, out, err)
        expect(os.listdir(d) == ["p.json"], "no temporary file left", rc, out, err)
        rc, out, err = run("fit", *CAL_BASE, "--profile", path)
        expect(rc in (0, 3), "the profile reads back", rc, out, err)
    expect_error([*good, "--force"], "--force", "needs --out")


def case_fit_verdict_and_fits_agree():
    """fits == (verdict != does_not_fit) in fit's JSON (top level, each result, its memory), estimate's JSON and
    the exit code; the text never prints FITS or TIGHT beside 'short by'. Over runs below, near and above
    capacity, with the table's bands and with profiles whose bands are sensible or absurd."""
    runs = [["llama-2-7b", "--gpu", "rtx-4090", "--method", "lora", "--seq", str(s)] for s in (2048, 10240, 12288, 14336, 16384)]
    runs += [["llama-2-13b", "--gpu", "a100-80gb", "--method", "full,lora,qlora"], ["gpt2", "--gpu", "t4", "--seq", "1024"]]
    words = {"fits": "FITS", "tight": "TIGHT", "does_not_fit": "DOES NOT FIT"}
    exits = {"fits": 0, "tight": 3, "does_not_fit": 1}
    seen = set()
    with tempfile.TemporaryDirectory() as d:
        profiles = [None]
        for i, band in enumerate(([0.96, 1.0, 1.04], [1e-9, 1e-9, 1e-9], [0.5, 2.0, 99])):
            path = os.path.join(d, f"p{i}.json")
            with open(path, "w") as f:
                json.dump({"gpuplan_profile": 1, "name": "band", "measured": {"model": "llama-2-7b", "gpu": "rtx-4090",
                           "framework": "hf"}, "memory": {"states_scale": 1, "activation_scale": 1, "reserved_factor": 1.1,
                           "cuda_context_bytes": 1.4e9, "points": 1, "band": band}}, f)
            profiles.append(path)
        for args in runs:
            for prof in profiles:
                extra = ["--profile", prof] if prof else []
                rc, out, err = run("fit", *args, *extra, "--json")
                j = json.loads(out)
                expect(rc == exits[j["verdict"]], f"{args} {prof}: exit code follows the verdict", rc, out, err)
                expect(j["fits"] == (j["verdict"] != "does_not_fit"), f"{args} {prof}: top-level fits", rc, out, err)
                for r in j["results"]:
                    expect(r["fits"] == (r["verdict"] != "does_not_fit"), f"{args} {prof}: result fits", rc, out, err)
                    expect(r["memory"]["fits"] == r["fits"], f"{args} {prof}: memory.fits is the answer's", rc, out, err)
                    expect(r["memory"]["fits"] == (r["memory"]["verdict"] != "does_not_fit"), "memory fits/verdict", rc, out, err)
                    seen.add(r["verdict"])
                rc2, text, err2 = run("fit", *args, *extra)
                expect(rc2 == rc, f"{args} {prof}: text and --json exit alike", rc2, text, err2)
                lines = [l for l in text.splitlines() if any(w in l for w in ("FITS:", "TIGHT:", "DOES NOT FIT:"))]
                expect(len(lines) == len(j["results"]), f"{args} {prof}: one verdict line per result", rc2, text, err2)
                for line, r in zip(lines, j["results"]):
                    expect(words[r["verdict"]] + ":" in line, f"{args} {prof}: the line's word", rc2, text, err2)
                    expect(("short by" in line) == (not r["fits"]), f"{args} {prof}: short by iff not fits", rc2, text, err2)
                one = [a if a != "full,lora,qlora" else "lora" for a in args]  # estimate takes one method
                rc3, out3, err3 = run("estimate", *one, *extra, "--json")
                m = json.loads(out3)["memory"]
                expect(rc3 == 0 and m["fits"] == (m["verdict"] != "does_not_fit"), f"{args} {prof}: estimate", rc3, out3, err3)
    expect(seen == {"fits", "tight", "does_not_fit"}, f"every verdict occurs (saw {sorted(seen)})")


def case_search_export():
    # --export deepspeed on the DeepSpeed profile: the first layout's stage, micro-batch and
    # accumulation, with train_batch_size = mb × ga × dp = the global batch (64).
    ds = ("plan", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--framework", "deepspeed", "--global-batch", "64",
          "--top", "3")
    rc, out, err = run(*ds, "--json", "--export", "deepspeed")
    expect(rc == 0, "exit 0", rc, out, err)
    j = json.loads(out)
    first = j["rows"][0]["layout"]
    cfg = j["export"]["config"]
    expect(j["export"]["target"] == "deepspeed" and j["export"]["layout"] == 1, "export member", rc, out, err)
    expect(json.loads(j["export"]["text"]) == cfg, "text is the config", rc, out, err)
    expect(cfg["zero_optimization"]["stage"] == first["zero"], "stage", rc, out, err)
    expect(cfg["train_micro_batch_size_per_gpu"] == first["micro_batch"], "micro-batch", rc, out, err)
    expect(cfg["gradient_accumulation_steps"] == first["grad_accum"], "grad accumulation", rc, out, err)
    expect(cfg["train_batch_size"] == first["micro_batch"] * first["grad_accum"] * first["dp"] == 64, "train batch", rc, out, err)
    # Text: the table, then the config; --export-file writes it instead.
    rc, out, err = run(*ds, "--export", "deepspeed")
    expect(rc == 0 and '"zero_optimization"' in out and out.index("evaluated ") < out.index('"zero_optimization"'),
           "config after the table", rc, out, err)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ds.json")
        rc, out, err = run(*ds, "--export", "deepspeed", "--export-file", path)
        expect(rc == 0 and "Wrote the deepspeed config" in out and '"zero_optimization"' not in out, "file message", rc, out, err)
        with open(path) as f:
            expect(json.load(f)["train_batch_size"] == 64, "file content", rc, out, err)
        expect_error([*ds, "--export", "deepspeed", "--export-file", os.path.join(d, "no", "such", "dir.json")],
                     "--export-file", "cannot write")
    # accelerate FSDP YAML and a torchrun command line.
    rc, out, err = run(*ds, "--export", "accelerate-fsdp")
    expect(rc == 0 and "distributed_type: FSDP" in out and "num_processes: 8" in out, "accelerate yaml", rc, out, err)
    expect("Checked against accelerate " in out and "Fill in:\n  - train.py" in out, "notes after the config", rc, out, err)
    mega = ("plan", "llama-2-70b", "--gpu", "h100-sxm", "--gpus", "64", "--framework", "megatron", "--global-batch", "128",
            "--top", "1")
    rc, out, err = run(*mega, "--json", "--export", "torchrun")
    expect(rc == 0, "torchrun exit 0", rc, out, err)
    j = json.loads(out)
    l = j["rows"][0]["layout"]
    text = j["export"]["text"]
    # validate_args refuses tensor parallelism without CUDA_DEVICE_MAX_CONNECTIONS=1 in the environment.
    launcher = "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun" if l["tp"] > 1 else "torchrun"
    expect(text.startswith(launcher + " --nnodes 8 --nproc_per_node 8 "), "torchrun nodes", rc, out, err)
    expect(j["export"]["checked_against"].startswith("Megatron-LM ") and
           any(f.startswith("MASTER_ADDR") for f in j["export"]["fill_in"]), "checked version, fill-in", rc, out, err)
    expect(f"--tensor-model-parallel-size {l['tp']} " in text and f"--pipeline-model-parallel-size {l['pp']} " in text
           and "--global-batch-size 128 " in text, "megatron arguments", rc, out, err)
    # vllm: a serving run is exported as given.
    rc, out, err = run("plan", "llama-2-13b", "--gpu", "l40s", "--gpus", "2", "--tp", "2", "--infer", "--export", "vllm")
    expect(rc == 0 and out.startswith("vllm serve meta-llama/Llama-2-13b-hf --tensor-parallel-size 2 "), "vllm", rc, out, err)
    # Errors: unknown target, a layout the target cannot express, --export-file alone.
    expect_error([*ds, "--export", "megatron"], "--export", "must be deepspeed")
    if l["tp"] > 1:
        expect_error([*mega, "--export", "deepspeed"], "--export", "deepspeed cannot express tensor parallelism")
    expect_error([*ds, "--export", "vllm"], "--export", "vllm cannot express a training run")
    expect_error([*ds, "--export-file", "x.json"], "--export-file", "needs --export")


def case_recommend_serve():
    """recommend --serve: GPU x TP rows meeting the ITL target, replicas by Little's law, cost."""
    rc, out, err = run(*recommend_serve("5", "--prompt-len", "512", "--output-len", "256", "--itl-target", "50ms",
                                        "--price", "a100-80gb=2,l40s=1,rtx-4060-ti-16gb=0.3", "--max-gpus", "2", "--json",
                                        gpus="a100-80gb,l40s,rtx-4060-ti-16gb"))
    expect(rc == 0, "recommend --serve exit 0", rc, out, err)
    j = json.loads(out)
    expect(j["engine"] == "vllm" and j["workload"]["itl_target_s"] == 0.05, "engine default vllm, target", rc, out, err)
    rows = j["rows"]
    expect(len(rows) == 6, "3 GPUs x TP 1, 2", rc, out, err)
    for r in rows:
        if not r["meets"]:
            expect(r["reason"] != "", "a reason for a miss", rc, out, err)
            continue
        # Little's law: C in flight, each TTFT + 256 x ITL long; replicas = ceil(5 / rps).
        rps = r["concurrency"] / (r["time_to_first_token_s"] + 256 * r["inter_token_latency_s"])
        expect(abs(r["requests_per_second"] / rps - 1) < 1e-9 and r["replicas"] == math.ceil(5 / rps), "replicas", rc, out, err)
        expect(r["inter_token_latency_s"] <= 0.05, "meets the target", rc, out, err)
        # 5 req/s x 256 tokens x 3600 s = 4.608 M output tokens an hour.
        expect(abs(r["cost_per_million_tokens"] - r["cost_per_hour"] / 4.608) < 1e-9, "cost per M tokens", rc, out, err)
    rc, out, err = run(*recommend_serve("5", "--price", "a100-80gb=2", "--engine", "sglang"))
    expect(rc == 0 and "served by sglang" in out and "Replicas" in out, "table, --engine", rc, out, err)
    expect_error([*RECOMMEND_SERVE_8B, "--gpus-list", "a100-80gb"], "--requests-per-second", "needs")
    expect_error(recommend_serve("-1"), "--requests-per-second", "above 0")
    expect_error(recommend_serve("nan"), "--requests-per-second")
    expect_error(recommend_serve("1e300"), "--requests-per-second", "at most")
    expect_error(recommend_serve("1", "--output-len", "0"), "--output-len")
    expect_error(recommend_serve("1", "--itl-target", "soon"), "--itl-target")
    expect_error(recommend_serve("1", gpus="a100-80gb-mig-9g.1gb"), "--gpus-list", "unknown GPU")
    # A MIG slice is a GPU: the 8B model in bf16 does not fit 1g.10gb, it fits 3g.40gb.
    rc, out, err = run(*recommend_serve("1", "--max-gpus", "1", "--json", gpus="a100-80gb-mig-1g.10gb,a100-80gb-mig-3g.40gb"))
    expect(rc == 0, "MIG slices", rc, out, err)
    got = {r["gpu"]: r["meets"] for r in json.loads(out)["rows"]}
    expect(got == {"a100-80gb-mig-1g.10gb": False, "a100-80gb-mig-3g.40gb": True}, "MIG fit", rc, out, err)


# A training-only flag with a serving run is refused as a serving flag without --infer is.
TRAINING_ONLY = "only applies to workload train (got workload infer)"


def case_infer_refuses_training_flags():
    """--infer: every flag only a training run reads is an error naming it (run_options.cpp)."""
    m = "llama-3.1-8b"
    for args, flag in ((["fit", m, "--infer", "--optimizer", "adamw"], "--optimizer"),
                       (["estimate", m, "--infer", "--batch", "4"], "--batch"),
                       (["time", m, "--infer", "--seq", "4096"], "--seq"),
                       (["time", m, "--infer", "--tokens", "1B"], "--tokens"),
                       (["explain", m, "--infer", "--gpus", "2", "--zero", "3"], "--zero"),
                       (["fit", m, "--infer", "--method", "full,lora", "--grad-accum", "4"], "--grad-accum"),
                       (["search", m, "--infer", "--gpus", "2", "--compile"], "--compile"),
                       (["estimate", m, "--infer", "--fused-linear-loss"], "--fused-linear-loss"),
                       (["estimate", m, "--infer", "--tiled-mlp"], "--tiled-mlp"),
                       (["recommend", m, "--infer", "--checkpointing", "full"], "--checkpointing"),
                       # search's own --global-batch with a serving run (plan --export vllm exports it).
                       (["plan", "llama-2-13b", "--gpu", "l40s", "--gpus", "2", "--tp", "2", "--infer", "--export", "vllm",
                         "--global-batch", "8"], "--global-batch")):
        expect_error(args, flag + ":", TRAINING_ONLY)
    # workload infer from the scenario file: the flag is refused the same way.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "infer.json")
        with open(path, "w") as f:
            json.dump({"model": m, "workload": "infer"}, f)
        expect_error(["estimate", "--scenario", path, "--chunked-loss"], "--chunked-loss:", TRAINING_ONLY)


def case_serve_refuses_training_flags():
    """serve and recommend --serve are serving runs: training-only flags are errors naming them."""
    expect_error([*SERVE_8B, "--optimizer", "sgd"], "--optimizer:", TRAINING_ONLY)
    expect_error([*SERVE_8B, "-b", "8"], "--batch:", TRAINING_ONLY)
    expect_error([*SERVE_8B, "--gpus", "2", "--offload-params", "cpu"], "--offload-params:", TRAINING_ONLY)
    expect_error(recommend_serve("5", "--tokens", "1B"), "--tokens:", TRAINING_ONLY)
    expect_error(recommend_serve("5", "--deadline", "2h"), "--deadline:", TRAINING_ONLY)
    expect_error(recommend_serve("5", "--epochs", "3"), "--epochs:", TRAINING_ONLY)


def case_diffusion_rank_needs_train():
    """diffusion --rank is LoRA fine-tuning's, --steps text-to-image's; vision --infer has no optimizer."""
    expect_error(["diffusion", "sd-1.5", "--rank", "8"], "--rank:", "add --train lora (got inference)")
    expect_error(["diffusion", "sd-1.5", "--train", "full", "--rank", "8"], "--rank:", "(got --train full)")
    expect_error(["diffusion", "sd-1.5", "--train", "lora", "--steps", "10"], "--steps:", "inference only")
    expect_error(["vision", "vit-b-16", "--infer", "--optimizer", "adamw"], "--optimizer:", "training only (got inference)")
    expect_error(["vision", "vit-b-16", "--infer", "--images", "1M"], "--images:", "training only (got inference)")
    rc, out, err = run("diffusion", "sd-1.5", "--gpu", "a100-80gb", "--train", "lora", "--rank", "8", "--json")
    expect(rc == 0 and json.loads(out)["lora_rank"] == 8, "--train lora --rank 8", rc, out, err)


def case_infer_keeps_serving_flags():
    """Control: the flags the serving model reads stay accepted with --infer and in serve."""
    rc, out, err = run("estimate", "llama-3.1-8b", "--infer", "--gpu", "h100-sxm", "--gpus", "2", "--tp", "2",
                       "--gpus-per-node", "8", "--precision", "bf16-pure", "--attention", "eager", "--method", "qlora",
                       "--lora-rank", "16", "--quant", "nf4", "--engine", "vllm", "--kv-dtype", "fp8",
                       "--infer-batch", "4", "--prompt-len", "256", "--gen-len", "64", "--json")
    expect(rc == 0, "serving flags accepted", rc, out, err)
    s = json.loads(out)["scenario"]
    expect(s["lora"]["rank"] == 16 and s["parallel"]["tp"] == 2 and s["inference"]["batch"] == 4
           and s["engine"] == "vllm", "the flags reach the run", rc, out, err)
    rc, out, err = run(*SERVE_8B, "--gpu", "a100-80gb", "--method", "lora", "--lora-rank", "64", "--precision", "bf16-pure",
                       "--json")
    expect(rc == 0 and "pool_bytes" in json.loads(out), "serve --lora-rank", rc, out, err)
    # The same training flags are accepted for training.
    rc, out, err = run("estimate", "llama-3.1-8b", "--optimizer", "sgd", "--seq", "1024", "--batch", "2", "--compile",
                       "--tokens", "1B", "--price", "2", "--json")
    expect(rc == 0 and json.loads(out)["scenario"]["optimizer"] == "sgd", "training keeps them", rc, out, err)


def case_loss_and_mlp_kernel_flags():
    """--fused-linear-loss and --tiled-mlp reach the scenario; the fused loss refuses chunked/in-place loss."""
    rc, out, err = run("estimate", "llama-3.1-8b", "--fused-linear-loss", "--tiled-mlp", "--seq", "8192", "--json")
    expect(rc == 0, "both flags accepted for training", rc, out, err)
    s = json.loads(out)["scenario"]
    expect(s["fused_linear_loss"] is True and s["tiled_mlp"] is True, "the flags reach the run", rc, out, err)
    for other in ("--chunked-loss", "--inplace-loss"):
        expect_error(["estimate", "llama-3.1-8b", "--fused-linear-loss", other], "--fused-linear-loss:",
                     "the fused head and loss replace chunked_loss and inplace_loss", other[2:].replace("-", "_"))


if __name__ == "__main__":
    globals()["case_" + CASE]()
    print(f"ok: {CASE}")
