#!/usr/bin/python3
"""CLI tests of hostile input, as a careless user types it: a directory, a FIFO or
/dev/zero where a file is expected, names with terminal escapes, numbers past any
physical meaning or past 64 bits. Each must be one stderr line naming the flag and the
value (exit 2, nothing on stdout), never a hang, a crash or raw escapes on the terminal.

Usage: test_cli_hostile.py BINARY VERSION CASE (registered one case per CTest test by
tests/cli/CMakeLists.txt); the helpers are test_cli.py's.
"""
import contextlib
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import CASE, expect, expect_error, run  # noqa: E402

ESC = "\x1b"


@contextlib.contextmanager
def bad_files():
    """A directory, a FIFO and /dev/zero, each named like the JSON file a flag expects."""
    with tempfile.TemporaryDirectory() as d:
        folder = os.path.join(d, "folder.json")
        os.mkdir(folder)
        fifo = os.path.join(d, "fifo.json")
        os.mkfifo(fifo)
        yield d, [(folder, "is a directory"), (fifo, "is a FIFO (named pipe)"), ("/dev/zero", "is a character device")]


def case_hostile_files():
    """Every flag that reads a file refuses what is not a regular file, at once (no hang, no 2 GB)."""
    with bad_files() as (d, files):
        for path, what in files:
            flags = [
                (["fit", "llama-2-7b", "--profile", path], "--profile: profile: "),
                (["estimate", "--scenario", path], "--scenario: "),
                (["fit", "llama-2-7b", "--gpu", path], "--gpu: "),
                (["fit", "llama-2-7b", "--gpu-file", path], "--gpu-file: "),
                (["calibrate", "--measurements", path], "--measurements: measurements: "),
                (["recommend", "llama-2-7b", "--tokens", "2B", "--prices", path], "--prices: "),
                (["vision", "--graph", path], "graph: "),
            ]
            if path != os.path.join(d, "folder.json"):  # a directory as MODEL is a checkpoint folder
                flags.append((["fit", path], "model: "))
            for args, prefix in flags:
                expect_error(args, prefix, f"'{path}' {what}, not a regular file")
        # Past the 16 MiB cap (sparse: no disk used): refused before it is read.
        big = os.path.join(d, "big.json")
        with open(big, "wb") as f:
            f.truncate((16 << 20) + 1)
        expect_error(["estimate", "--scenario", big], "--scenario: ", "larger than 16 MiB (got 16777217 bytes)")
        expect_error(["fit", "llama-2-7b", "--profile", big], "--profile: ", "larger than 16 MiB")


def case_hostile_names():
    """Names from a GPU file, a profile and --name print without their control characters."""
    with tempfile.TemporaryDirectory() as d:
        gpu = os.path.join(d, "evil.json")
        with open(gpu, "w") as f:
            json.dump({"base": "a100-80gb", "id": "evil\x1b[2J", "name": "Evil\x1b[2J\x1b[31mRED\x07"}, f)
        for args in (["fit", "llama-2-7b", "--gpu", gpu], ["time", "llama-2-7b", "--gpu", gpu],
                     ["serve", "llama-2-7b", "--gpu", gpu], ["gpus", "--gpu-file", gpu], ["fit", "llama-2-7b", "--gpu", gpu, "--format", "md"]):
            rc, out, err = run(*args)
            expect(rc in (0, 1, 3), f"{args}: runs", rc, out, err)
            expect(ESC not in out and "\x07" not in out, f"{args}: no raw escape on stdout", rc, out, err)
            expect("evil[2J" in out or "Evil[2J" in out, f"{args}: the name, without its escapes", rc, out, err)
        rc, out, err = run("fit", "llama-2-7b", "--gpu", gpu, "--json")
        expect(json.loads(out)["results"][0]["scenario"]["gpu"]["id"] == "evil\x1b[2J", "JSON keeps the name (escaped)", rc, out, err)
        prof = os.path.join(d, "p.json")
        rc, out, err = run("calibrate", "llama-2-7b", "--gpu", "a100-80gb", "--method", "lora", "--measured-reserved", "21GiB",
                           "--name", "my\x1b[2Jrun\r\u202e", "--out", prof)
        expect(rc == 0 and ESC not in out and "\r" not in out and "\u202e" not in out, "--name printed clean", rc, out, err)
        expect("profile 'my[2Jrun'" in out, "--name without its escapes", rc, out, err)
        rc, out, err = run("estimate", "llama-2-7b", "--gpu", "a100-80gb", "--method", "lora", "--profile", prof)
        expect(rc == 0 and ESC not in out and "profile 'my[2Jrun'" in out, "a profile's name printed clean", rc, out, err)
        # An error quoting a user's string is one clean line too.
        line = expect_error(["fit", "llama-2-7b", "--gpu", "rtx\x1b[2J"], "--gpu:")
        expect(ESC not in line, "no escape in the error line", err=line)


def case_hostile_numbers():
    """Integers past 64 bits are errors (not saturated), octal/negative tricks are refused or read as typed,
    NaN and 1e400 are named, and figures past any physical meaning are one-line errors."""
    cases = [
        (["fit", "llama-2-7b", "--seq", "99999999999999999999"], "--seq:",
         "must be an integer from -9223372036854775808 to 9223372036854775807 (got 99999999999999999999)"),
        (["fit", "llama-2-7b", "--batch", "-99999999999999999999"], "--batch:", "(got -99999999999999999999)"),
        (["fit", "llama-2-7b", "--seq", "nan"], "--seq:", "must be an integer (got nan)"),
        (["fit", "llama-2-7b", "--seq", "0x800"], "--seq:", "must be an integer (got 0x800)"),
        (["search", "llama-2-7b", "--top", "-1"], "--top:", "must be a non-negative integer (got -1)"),
        (["fit", "llama-2-7b", "--method", "lora", "--lora-alpha", "1e400"], "--lora-alpha:", "must be a finite number (got 1e400)"),
        (["fit", "llama-2-7b", "--method", "lora", "--lora-alpha", "inf"], "--lora-alpha:", "(got inf)"),
        (["fit", "llama-2-7b", "--method", "lora", "--lora-alpha", "1e300"], "--lora-alpha:", "between 0.001 and 1e6"),
        (["time", "llama-2-7b", "--tokens", "1B", "--price", "1e-300"], "--price:", "at least 0.0001 per GPU-hour"),
        (["serve", "llama-2-7b", "--concurrency", "1000000000000"], "--concurrency:",
         "the requests the KV cache pool holds at once (got 1000000000000)"),
        (["serve", "llama-2-7b", "--concurrency", "1e12"], "--concurrency:", "must be an integer (got 1e12)"),
        (["serve", "llama-2-7b", "--latency-target", "1e-300ms"], "--latency-target:", "between 0.01ms and 3600s"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--deadline", "1e300"], "--deadline:", "between 1e-6 s and 100 years"),
        (["recommend", "llama-2-7b", "--tokens", "2B", "--budget", "1e300"], "--budget:", "between 0 and 1e12"),
        (["recommend", "llama-2-7b", "--serve", "--requests-per-second", "1e-300"], "--requests-per-second:",
         "at least one request a week"),
    ]
    for args, prefix, needle in cases:
        expect_error(args, prefix, needle)
    # "010" is ten, as typed (CLI11 alone reads it as octal 8).
    rc, out, err = run("fit", "llama-2-7b", "--seq", "010", "--json")
    expect(json.loads(out)["results"][0]["scenario"]["seq_len"] == 10, "--seq 010 is 10", rc, out, err)
    with tempfile.TemporaryDirectory() as d:
        gpu = os.path.join(d, "slow.json")
        with open(gpu, "w") as f:
            json.dump({"base": "rtx-4090", "id": "slow", "bf16_tflops": 1e-300}, f)
        expect_error(["time", "llama-2-7b", "--gpu", gpu], "scenario.gpu.bf16_tflops:", "must be at least 0.01 (got 1e-300)")


if __name__ == "__main__":
    globals()["case_" + CASE]()
    print(f"ok: {CASE}")
