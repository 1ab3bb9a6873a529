"""gp.calibrate / gp.load_profile / gp.measure and Scenario(profile=): the Python side
of calibration (docs/calibration.md), checked against the C++ estimates."""

import math
import time

import pytest

BASE = dict(gpu="a100-80gb", method="lora", seq_len=2048)


def test_calibrate_moves_the_estimate_to_the_measurement(gp, tmp_path):
    s = gp.Scenario("llama-2-7b", **BASE)
    plain = s.estimate()
    # A measured pool 20% above the estimate and a step 1.5x slower than estimated.
    measured_reserved = 1.2 * plain.memory.peak_reserved_bytes
    measured_step = 1.5 * plain.time.step_seconds
    p = gp.calibrate([{"scenario": s, "peak_reserved_bytes": measured_reserved, "step_seconds": measured_step}],
                     name="a100-lora")
    assert p.name == "a100-lora" and p.memory_points == 1 and p.time_points == 1
    assert (p.model, p.gpu, p.framework) == ("llama-2-7b", "a100-80gb", "hf")
    cal = gp.estimate("llama-2-7b", profile=p, **BASE)
    # One point, a prior toward the defaults: within 3% of what was measured.
    assert cal.memory.peak_reserved_bytes == pytest.approx(measured_reserved, rel=0.03)
    assert cal.time.step_seconds == pytest.approx(measured_step, rel=0.03)
    assert cal.scenario.profile == p
    # Saved and reloaded: equal profile, identical estimates.
    path = tmp_path / "p.json"
    p.save(path)
    back = gp.load_profile(path)
    assert back == p
    again = gp.Scenario("llama-2-7b", profile=str(path), **BASE).estimate()
    assert again.memory.device_bytes == cal.memory.device_bytes
    assert again.time.step_seconds == cal.time.step_seconds
    # replace() keeps the profile unless told otherwise.
    assert cal.scenario.replace(seq_len=1024).profile == p
    assert cal.scenario.replace(profile=None).profile is None


def test_calibrate_errors_name_the_field(gp):
    s = gp.Scenario("llama-2-7b", **BASE)
    with pytest.raises(gp.InvalidInputError, match=r"^measurements\[0\]\.step_seconds: must be positive"):
        gp.calibrate([{"scenario": s, "step_seconds": -1}])
    with pytest.raises(gp.InvalidInputError, match=r"^measurements: must not be empty"):
        gp.calibrate([])
    with pytest.raises(gp.UnknownNameError, match=r"^measurements\[0\]\.colour: unknown key"):
        gp.calibrate([{"scenario": s, "colour": 1}])
    with pytest.raises(gp.InvalidInputError, match=r"^measurements\[0\]\.device_bytes: must be a finite number"):
        gp.calibrate([{"scenario": s, "device_bytes": float("nan")}])
    with pytest.raises(gp.ConfigError, match=r"^profile\.gpuplan_profile: is required"):
        gp.load_profile({"name": "x"})
    with pytest.raises(gp.FileError):
        gp.load_profile("/nonexistent/profile.json")
    with pytest.raises(gp.InvalidInputError, match=r"^profile: must be a gp.Profile or a profile file path"):
        gp.Scenario("llama-2-7b", profile=3, **BASE)


def test_measure_times_steps_without_a_gpu(gp):
    calls = []

    def step():
        calls.append(1)
        time.sleep(0.02)

    m = gp.measure(step, steps=3, warmup=1)
    assert len(calls) == 4  # one warm-up, three measured
    # The median of three ~20 ms sleeps: at least 20 ms, well under 200 ms on a loaded machine.
    assert 0.02 <= m["step_seconds"] < 0.2
    try:
        import torch
        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    assert ("peak_reserved_bytes" in m) == has_cuda
    with pytest.raises(gp.InvalidInputError, match=r"^measure\.steps: must be an integer from 1"):
        gp.measure(step, steps=0)
    with pytest.raises(TypeError):
        gp.measure(3)
    # What measure returns, with a scenario, is what calibrate takes.
    s = gp.Scenario("gpt2", gpu="a100-80gb", seq_len=512)
    p = gp.calibrate([gp.measure(step, steps=1, warmup=0, scenario=s)])
    assert p.time_points == 1 and math.isfinite(p.to_dict()["time"]["matmul_scale"])
