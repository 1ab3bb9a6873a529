"""Hostile input through the Python API, as a careless user gives it: a directory, a FIFO
or /dev/zero where a file is expected (Graph.load used to hang and grow to GBs), NaN where
an integer belongs, figures past any physical meaning, names with terminal escapes.
Each must be a ConfigError naming the field and the value, at once."""

import os
import re
import signal

import pytest


@pytest.fixture
def no_hang():
    """A reader that blocks or loops fails the test instead of stalling the suite."""
    def alarm(signum, frame):
        raise TimeoutError("the reader did not return within 20 s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def bad_files(tmp_path):
    folder = tmp_path / "folder.json"
    folder.mkdir()
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    return [(str(folder), "is a directory"), (str(fifo), "is a FIFO (named pipe)"), ("/dev/zero", "is a character device")]


def test_graph_load_and_scenario_from_json_refuse_what_is_not_a_file(gp, bad_files, no_hang):
    for path, what in bad_files:
        tail = re.escape(f"file '{path}' {what}, not a regular file")
        with pytest.raises(gp.FileError, match=rf"^graph: {tail}$"):
            gp.Graph.load(path)
        with pytest.raises(gp.FileError, match=rf"^scenario: {tail}$"):
            gp.Scenario.from_json(path)


def test_graph_load_caps_the_size_and_needs_utf8(gp, tmp_path, no_hang):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((16 << 20) + 1)  # sparse
    with pytest.raises(gp.FileError, match=r"^graph: file '.*big.json' is larger than 16 MiB \(got 16777217 bytes\)$"):
        gp.Graph.load(big)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(gp.ConfigError, match=r"^graph: file is not UTF-8 text \(byte 13\)$"):
        gp.Graph.load(latin)
    with pytest.raises(gp.FileError, match=r"^graph: cannot open file '/nonexistent/g.json'$"):
        gp.Graph.load("/nonexistent/g.json")
    # A good file still loads, from a path-like too.
    good = tmp_path / "g.json"
    good.write_text('{"input": {"c": 8}, "layers": [{"kind": "linear", "out": 4}]}')
    assert gp.Graph.load(good).layers[0]["kind"] == "linear"


@pytest.mark.parametrize("key,value,shown", [("seq_len", float("nan"), "nan"), ("seq_len", float("inf"), "inf"),
                                             ("micro_batch", float("-inf"), "-inf")])
def test_nan_where_an_integer_belongs_is_named(gp, key, value, shown):
    with pytest.raises(gp.ConfigError, match=rf"^scenario.{key}: must be a finite number \(got {shown}\)$"):
        gp.estimate("gpt2", gpu="a100-80gb", **{key: value})


def test_gpu_figures_below_any_real_part(gp):
    gpu = {"base": "rtx-4090", "id": "slow", "bf16_tflops": 1e-300}
    with pytest.raises(gp.ConfigError, match=r"^scenario.gpu.bf16_tflops: must be at least 0.01 \(got 1e-300\)$"):
        gp.estimate("gpt2", gpu=gpu)
    with pytest.raises(gp.ConfigError, match=r"^scenario.gpu.memory_gb: must be at least 0.25 \(got 0.001\)$"):
        gp.estimate("gpt2", gpu={"base": "rtx-4090", "memory_gb": 0.001})


def test_serving_figures_are_bounded(gp):
    with pytest.raises(gp.ConfigError, match=r"^serve.concurrency: must be at most \d+, the requests the KV cache pool "
                                              r"holds at once \(got 1000000000000\)$"):
        gp.serve("llama-2-7b", gpu="a100-80gb", concurrency=10**12)
    with pytest.raises(gp.ConfigError, match=r"^serve.latency_target: must be between 0.01ms and 3600s"):
        gp.serve("llama-2-7b", gpu="a100-80gb", latency_target=1e-300)
    with pytest.raises(gp.ConfigError, match=r"^serve.latency_target: must be between 0.01ms and 3600s \(got '1e-300ms'\)$"):
        gp.serve("llama-2-7b", gpu="a100-80gb", latency_target="1e-300ms")
    r = gp.serve("llama-2-7b", gpu="a100-80gb", concurrency=8)
    assert r.at.concurrency == 8


def test_names_print_without_control_characters(gp):
    gpu = {"base": "a100-80gb", "id": "evil\x1b[2J", "name": "Evil\x1b[2J\x1b[31mRED\x07"}
    e = gp.estimate("gpt2", gpu=gpu, seq_len=1024)
    text = repr(e)
    assert "\x1b" not in text and "\x07" not in text
    assert "evil[2J" in text
    assert e.to_dict()["scenario"]["gpu"]["id"] == "evil\x1b[2J"  # data keeps the name as given
    served = repr(gp.serve("llama-2-7b", gpu=gpu))
    assert "\x1b" not in served and "Evil[2J" in served


def test_error_messages_print_without_control_characters(gp):
    # A name from the user's GPU JSON quoted in an error (fp8 on a GPU without FP8) comes back
    # to Python as the CLI prints it: no escape sequence reaches the terminal or notebook.
    gpu = {"base": "a100-80gb", "id": "evil\x1b[2J", "name": "Evil\x1b[2J"}
    with pytest.raises(gp.ConfigError) as e:
        gp.estimate("gpt2", gpu=gpu, seq_len=1024, precision="fp8-mixed")
    assert "\x1b" not in str(e.value) and "evil[2J" in str(e.value)
    assert e.value.path == "scenario.precision"
