"""The same input gives the same run through every door: Python's keyword form, Python's
dict form and the CLI's scenario file, over every expressible scenario in the validation
files. Defaults live in the run alone (include/gpuplan/run.hpp resolve_defaults); the C++
side of the comparison is tests/unit/test_run_defaults.cpp."""

import json
import os
import subprocess
from pathlib import Path

import pytest

FILES = ("cases.jsonl", "cases-2.jsonl", "cases-3.jsonl", "cases-4.jsonl", "cases-5.jsonl", "allocator.jsonl")


def _scenarios(repo: Path):
    for name in FILES:
        for line in (repo / "tests" / "data" / "validation" / name).read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                if "scenario" in case and "unexpressible" not in case:
                    yield case["id"], case["scenario"]


def test_python_and_cli_resolve_every_validation_scenario_alike(gp, repo, tmp_path):
    cli = Path(os.environ.get("GPUPLAN_CLI", repo / "build" / "dev" / "bin" / "gpuplan"))
    if not cli.exists():
        pytest.skip(f"the CLI is not built ({cli}); set GPUPLAN_CLI")
    cases = list(_scenarios(repo))
    assert len(cases) >= 150  # 213 rows, 17 unexpressible
    mismatches = []
    for cid, scenario in cases:
        from_dict = gp.Scenario.from_dict(scenario).to_dict()
        rest = dict(scenario)
        from_kwargs = gp.Scenario(rest.pop("model"), **rest).to_dict()
        path = tmp_path / f"{cid}.json"
        path.write_text(json.dumps(scenario))
        out = subprocess.run([str(cli), "estimate", "--scenario", str(path), "--json"],
                             capture_output=True, text=True, check=True)
        from_cli = json.loads(out.stdout)["scenario"]
        if not (from_dict == from_kwargs == from_cli):
            mismatches.append(cid)
        # Every default is explicit in the written scenario.
        assert {"precision", "checkpointing"} <= from_dict.keys(), cid
        assert {"tp", "sp"} <= from_dict["parallel"].keys(), cid
    assert mismatches == []


def test_defaults_follow_the_gpu_framework_and_engine(gp):
    # No bf16 tensor cores: fp16 AMP; Megatron's TP brings SP; a paged engine splits by TP.
    assert gp.Scenario("llama-2-7b", gpu="t4").to_dict()["precision"] == "fp16-mixed"
    assert gp.Scenario("llama-2-7b", gpu="t4", precision="bf16-mixed").to_dict()["precision"] == "bf16-mixed"
    mega = gp.Scenario("llama-2-70b", gpu="h100-sxm", num_gpus=8, framework="megatron", tp=8).to_dict()
    assert mega["parallel"]["sp"] is True
    served = gp.Scenario("llama-2-13b", workload="infer", engine="vllm", gpu="a100-80gb", num_gpus=4).to_dict()
    assert served["parallel"]["tp"] == 4
