"""gp.sweep: the C++ loop over the cartesian product must give, row by row, what
gp.estimate gives for the same scenario, in the documented order."""

import itertools

import numpy as np
import pandas as pd
import pytest

import gpuplan as gp


def test_shape_order_and_columns():
    gpus, methods, mbs, seqs = ["rtx-4090", "a100-80gb"], ["full", "lora", "qlora"], [1, 2, 4], [512, 2048]
    df = gp.sweep("llama-2-7b", gpu=gpus, method=methods, micro_batch=mbs, seq_len=seqs)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(gpus) * len(methods) * len(mbs) * len(seqs)
    expected = list(itertools.product(gpus, methods, mbs, seqs))  # gpu-major, seq_len fastest
    got = list(zip(df["gpu"].astype(str), df["method"].astype(str), df["micro_batch"], df["seq_len"]))
    assert got == expected
    assert list(df.columns[:7]) == ["gpu", "method", "num_gpus", "micro_batch", "seq_len", "global_batch", "fits"]
    for col in ("device_bytes", "capacity_bytes", "headroom_bytes", "step_seconds", "tokens_per_second_per_gpu", "cost"):
        assert df[col].dtype == np.float64, col
    assert df["fits"].dtype == bool
    assert df.attrs["model"] == "llama-2-7b"


def test_rows_equal_single_estimates():
    df = gp.sweep("llama-2-13b", gpu=["rtx-4090", "h100-sxm"], method=["full", "qlora"], micro_batch=[1, 3],
                  seq_len=[1024, 4096], checkpointing="full", tokens="1B", price_per_gpu_hour=2.5)
    for row in df.itertuples():
        e = gp.estimate("llama-2-13b", gpu=str(row.gpu), method=str(row.method), micro_batch=int(row.micro_batch),
                        seq_len=int(row.seq_len), checkpointing="full", tokens="1B", price_per_gpu_hour=2.5)
        assert row.device_bytes == e.memory.device_bytes
        assert row.activations_bytes == e.memory.activations_bytes
        assert row.fits == e.memory.fits
        assert row.step_seconds == e.time.step_seconds
        assert row.total_seconds == e.time.total_seconds
        assert row.cost == e.time.cost


def test_num_gpus_axis_and_global_batch():
    # With global_batch, grad_accum = global_batch / (micro_batch · dp): each row's
    # global_batch column must stay 64 while grad_accum (hence step time) changes.
    df = gp.sweep("llama-2-7b", gpu="a100-80gb", num_gpus=[1, 2, 4], micro_batch=[1, 2, 4], seq_len=2048,
                  global_batch=64, tokens=1e9)
    assert (df["global_batch"] == 64).all()
    assert len(df) == 9
    for row in df.itertuples():
        e = gp.estimate("llama-2-7b", gpu="a100-80gb", num_gpus=int(row.num_gpus), micro_batch=int(row.micro_batch),
                        global_batch=64, tokens=1e9)
        assert e.scenario.grad_accum == 64 // (row.micro_batch * row.num_gpus)
        assert row.step_seconds == e.time.step_seconds


def test_scenario_as_base():
    s = gp.Scenario("llama-2-7b", gpu="rtx-4090", method="lora", lora={"rank": 64})
    df = gp.sweep(s, micro_batch=[1, 2])
    assert list(df["method"].astype(str)) == ["lora", "lora"]
    assert df["device_bytes"].iloc[0] == gp.estimate(s, micro_batch=1).memory.device_bytes


def test_errors_name_the_axis_and_value():
    with pytest.raises(gp.ConfigError, match=r"^scenario\.micro_batch: must be at least 1 \(got 0\)$"):
        gp.sweep("llama-2-7b", micro_batch=[1, 0])
    with pytest.raises(gp.ConfigError, match=r"^scenario\.gpu: unknown GPU 'rtx-9999'"):
        gp.sweep("llama-2-7b", gpu=["rtx-4090", "rtx-9999"])
    with pytest.raises(gp.ConfigError, match=r"^sweep\.seq_len: must not be empty$"):
        gp.sweep("llama-2-7b", seq_len=[])
    with pytest.raises(gp.ConfigError, match=r"^sweep\.micro_batch: must be integers \(got 1\.5\)$"):
        gp.sweep("llama-2-7b", micro_batch=[1, 1.5])
    with pytest.raises(gp.ConfigError, match=r"^scenario\.bogus: unknown key"):
        gp.sweep("llama-2-7b", bogus=1)


def test_numpy_axes_and_large_product():
    mbs = np.arange(1, 51)
    seqs = np.arange(256, 256 * 41, 256)
    df = gp.sweep("llama-2-7b", gpu=["rtx-4090", "a100-80gb"], method=["lora", "qlora"], micro_batch=mbs, seq_len=seqs)
    assert len(df) == 2 * 2 * 50 * 40
    # Device memory grows with micro_batch at fixed everything else (activations are linear in it).
    g = df[(df.gpu == "a100-80gb") & (df.method == "lora") & (df.seq_len == 2048)]
    assert np.all(np.diff(g["device_bytes"].to_numpy()) > 0)
