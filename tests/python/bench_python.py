"""Python-side performance figures (printed, never asserted): the overhead of one
gp.estimate(...) call and gp.sweep throughput. Run with the interpreter that has the
package you want to measure, e.g.  build/dev/venv/bin/python tests/python/bench_python.py
(a Release module: GPUPLAN_PY_FROM_SOURCE=1 scripts/test-python.sh builds one).
"""

import time

import gpuplan as gp
from gpuplan import _core


def best_of(fn, repeat=5, number=1):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def main():
    m = gp.model("llama-2-13b")
    kw = dict(gpu="rtx-4090", method="qlora", seq_len=2048, micro_batch=1)
    n = 2000
    t_est = best_of(lambda: gp.estimate(m, **kw), number=n)
    run = _core.read_scenario({"model": "llama-2-13b", **kw})
    t_read = best_of(lambda: _core.read_scenario({"model": "llama-2-13b", **kw}), number=n)
    t_core = best_of(lambda: (_core.estimate_memory(run), _core.estimate_time(run)), number=n)
    print(f"gp.estimate(...) one call:              {t_est * 1e6:8.1f} us")
    print(f"  of which read_scenario (JSON+validate): {t_read * 1e6:8.1f} us")
    print(f"  of which estimate_memory+estimate_time: {t_core * 1e6:8.1f} us")

    gpus = ["rtx-4090", "a100-80gb", "h100-sxm", "l40s"]
    methods = ["full", "lora", "qlora"]
    mbs = list(range(1, 65))
    seqs = [256 * k for k in range(1, 131)]  # 4 * 3 * 64 * 130 = 99,840 scenarios
    rows = len(gpus) * len(methods) * len(mbs) * len(seqs)
    gp.sweep(m, gpu=gpus[:1], method=methods[:1], micro_batch=mbs[:2], seq_len=seqs[:2])  # warm up
    t_sweep = best_of(lambda: gp.sweep(m, gpu=gpus, method=methods, micro_batch=mbs, seq_len=seqs), repeat=3)
    print(f"gp.sweep over {rows:,} scenarios:       {t_sweep:8.3f} s  ({rows / t_sweep:,.0f} scenarios/s, "
          f"{t_sweep / rows * 1e6:.2f} us each, DataFrame included)")


if __name__ == "__main__":
    main()
