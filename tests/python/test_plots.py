"""Charts render headless (Agg) and draw what they claim."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import gpuplan as gp  # noqa: E402


def _png(fig, path):
    fig.savefig(path, format="png", dpi=60)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    return data


@pytest.fixture(scope="module")
def three():
    m = gp.model("llama-2-13b")
    return {k: gp.estimate(m, gpu="rtx-4090", method=k, seq_len=2048, checkpointing="full") for k in ("full", "lora", "qlora")}


def test_memory_breakdown_bars(three, tmp_path):
    fig = gp.plot_memory(three)
    ax = fig.axes[0]
    # One bar per estimate for every component that is non-zero in at least one of them.
    nonzero = [c for c in list(gp.MemoryBreakdown.COMPONENTS) + ["allocator"]
               if any(e.memory.components()[c] > 0 for e in three.values())]
    assert len(ax.patches) == 3 * len(nonzero)
    # Bar tops equal device memory in GiB.
    tops = [max(p.get_y() + p.get_height() for p in ax.patches if abs(p.get_x() + p.get_width() / 2 - i) < 1e-9)
            for i in range(3)]
    for top, e in zip(tops, three.values()):
        assert top == pytest.approx(max(e.memory.device_bytes, sum(e.memory.components().values())) / gp.GiB, rel=1e-9)
    assert len(ax.collections) == 3  # one capacity segment per bar
    assert [t.get_text() for t in ax.get_xticklabels()] == ["full", "lora", "qlora"]
    _png(fig, tmp_path / "breakdown.png")
    single = gp.plot_memory(three["qlora"])
    assert single.axes[0].get_title() == "llama-2-13b on rtx-4090"


def test_memory_vs_batch_with_capacity(tmp_path):
    df = gp.sweep("llama-2-13b", gpu="rtx-4090", method=["lora", "qlora"], micro_batch=range(1, 9),
                  checkpointing="full")
    fig = gp.plot_memory_sweep(df, x="micro_batch")
    ax = fig.axes[0]
    data_lines = [ln for ln in ax.lines if len(ln.get_xdata()) == 8 and ln.get_linestyle() != "None"]
    assert len(data_lines) == 2
    assert list(data_lines[0].get_ydata()) == pytest.approx(list(df[df.method == "lora"]["device_bytes"] / gp.GiB))
    cap = gp.gpu("rtx-4090").usable_memory_bytes / gp.GiB
    assert any(list(ln.get_ydata()) == [cap, cap] for ln in ax.lines)  # the capacity line
    _png(fig, tmp_path / "batch.png")
    fig2 = gp.plot_memory_sweep(gp.sweep("llama-2-7b", gpu="a100-80gb", seq_len=[512, 1024, 2048, 4096, 8192]),
                                x="seq_len")
    assert fig2.axes[0].get_xscale() == "log"
    with pytest.raises(gp.ConfigError, match="^plot_memory_sweep.x: must be"):
        gp.plot_memory_sweep(df, x="tokens")


def test_time_and_cost_vs_gpus(tmp_path):
    df = gp.sweep("llama-2-7b", gpu=["a100-80gb", "h100-sxm"], method="lora", num_gpus=[1, 2, 4, 8], tokens="10B")
    assert df["fits"].all() and (df["total_seconds"] > 0).all()
    fig = gp.plot_time_cost(df, price_per_gpu_hour={"a100-80gb": 1.8, "h100-sxm": 3.0})
    ax_t, ax_c = fig.axes
    assert len(ax_t.lines) == 2 and len(ax_c.lines) == 2
    a100 = df[df.gpu == "a100-80gb"].sort_values("num_gpus")
    assert list(ax_t.lines[0].get_xdata()) == [1, 2, 4, 8]
    assert list(ax_t.lines[0].get_ydata()) == pytest.approx(list(a100["total_seconds"] / 3600))
    assert list(ax_c.lines[0].get_ydata()) == pytest.approx(list(a100["gpu_hours"] * 1.8))
    _png(fig, tmp_path / "time_cost.png")
