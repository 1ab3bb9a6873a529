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
    # What measure returns, with a scenario, is what calibrate takes. A sleep is no training
    # step: its time is set to 1.2x the estimate, which calibration accepts (a 20 ms step is
    # faster than gpt2's bandwidth-bound step at 150% of peak bandwidth, and is refused).
    s = gp.Scenario("gpt2", gpu="a100-80gb", seq_len=512)
    m = gp.measure(step, steps=1, warmup=0, scenario=s)
    assert set(m) <= {"step_seconds", "peak_allocated_bytes", "peak_reserved_bytes", "scenario"}
    m["step_seconds"] = 1.2 * s.estimate().time.step_seconds
    p = gp.calibrate([m])
    assert p.time_points == 1 and math.isfinite(p.to_dict()["time"]["matmul_scale"])


def test_calibrate_refuses_impossible_measurements(gp):
    # The same physics checks as the CLI: one-line errors naming the key and the value.
    s = gp.Scenario("llama-2-7b", **BASE)
    cases = [
        ({"peak_reserved_bytes": 21.3}, r"^measurements\[0\]\.peak_reserved_bytes: is below the weights alone.*\(got 21\.3 bytes\)$"),
        ({"peak_allocated_gib": 30, "peak_reserved_gib": 25},
         r"^measurements\[0\]\.peak_reserved_gib: must be at least measurements\[0\]\.peak_allocated_gib .*\(got 25 GiB\)$"),
        ({"device_gib": 500}, r"^measurements\[0\]\.device_gib: exceeds the memory of one a100-80gb, 80 GiB \(got 500 GiB\)$"),
        ({"step_seconds": 1e-300}, r"^measurements\[0\]\.step_seconds: must be between 0\.0001 and 10\^7 seconds"),
    ]
    for figures, message in cases:
        with pytest.raises(gp.InvalidInputError, match=message):
            gp.calibrate([{"scenario": s, **figures}])
    # Two measurements of one run 1.5x apart contradict each other.
    with pytest.raises(gp.InvalidInputError, match=r"^measurements\[1\]\.peak_reserved_gib: contradicts "
                                                   r"measurements\[0\]\.peak_reserved_gib of the same run"):
        gp.calibrate([{"scenario": s, "peak_reserved_gib": 16}, {"scenario": s, "peak_reserved_gib": 24}])


def test_save_never_replaces_a_file_without_force(gp, tmp_path):
    s = gp.Scenario("llama-2-7b", **BASE)
    p = gp.calibrate([{"scenario": s, "peak_reserved_gib": 17.5, "step_seconds": 0.6}], name="a")
    path = tmp_path / "p.json"
    path.write_text("keep")
    with pytest.raises(gp.InvalidInputError, match=r"^save: .*p\.json exists; pass force=True to replace it$"):
        p.save(path)
    assert path.read_text() == "keep"
    p.save(path, force=True)
    assert gp.load_profile(path) == p
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.json"]  # no temporary file left


def test_fits_is_the_verdict_not_does_not_fit(gp):
    # Estimate.fits, gp.fit(...).fits and their reprs agree with the verdict, for runs
    # that fit, are tight and do not fit (docs/planner.md, "Safety margin").
    seen = set()
    for seq in (2048, 12288, 16384):
        kw = dict(gpu="rtx-4090", method="lora", seq_len=seq)
        e = gp.estimate("llama-2-7b", **kw)
        assert e.fits == (e.verdict != "does_not_fit") == e.to_dict()["memory"]["fits"]
        assert e.verdict == e.to_dict()["memory"]["verdict"]
        assert ("short by" in repr(e)) == (not e.fits)
        f = gp.fit("llama-2-7b", **kw)
        assert f.fits == (f.verdict != "does_not_fit") == f.to_dict()["memory"]["fits"]
        line = repr(f).splitlines()[0]
        assert line.startswith({"fits": "FITS", "tight": "TIGHT", "does_not_fit": "DOES NOT FIT"}[f.verdict])
        assert ("short by" in line) == (not f.fits)
        seen.add(f.verdict)
    assert seen == {"fits", "tight", "does_not_fit"}
