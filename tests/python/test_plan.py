"""The planner from Python: gp.fit, gp.suggest, gp.search, gp.recommend.

Expectations come from the estimators themselves (gp.estimate on the same run),
never from fixed timing numbers: others may still tune the time model.
"""

import math

import pytest

import gpuplan as gp

M13 = "llama-2-13b"


def test_fit_limits_agree_with_the_estimator():
    # gpt2 at seq 1024 on an H100: the largest micro-batch b fits with the margin (the P90
    # plus max(5%, 1 GiB)) and b + 1 does not (its verdict is not "fits"; `fits` is only
    # verdict != "does_not_fit", docs/planner.md "Safety margin").
    r = gp.fit("gpt2", gpu="h100-sxm", seq_len=1024)
    assert r.fits and r.binding and r.verdict == "fits"
    b = r.max_micro_batch
    assert b >= 1
    assert gp.estimate("gpt2", gpu="h100-sxm", seq_len=1024, micro_batch=b).fits
    assert gp.fit("gpt2", gpu="h100-sxm", seq_len=1024, micro_batch=b).fits
    assert gp.fit("gpt2", gpu="h100-sxm", seq_len=1024, micro_batch=b + 1).verdict != "fits"
    # Learned positions: the longest sequence is capped at max_position_embeddings = 1024.
    assert r.max_seq_len == 1024
    assert r.min_gpus[0] == 1
    assert set(r.min_gpus) == {0, 1, 2, 3}
    d = r.to_dict()
    assert d["max_micro_batch"] == b and d["memory"]["device_bytes"] == gp.estimate(
        "gpt2", gpu="h100-sxm", seq_len=1024).memory.device_bytes
    assert "Largest micro-batch" in repr(r) and repr(r).startswith("FITS")
    assert "<table>" in r._repr_html_()


def test_fit_13b_full_on_a_4090_does_not_fit():
    r = gp.fit(M13, gpu="rtx-4090", method="full")
    assert not r.fits and r.max_micro_batch is None and r.headroom_bytes < 0
    assert repr(r).startswith("DOES NOT FIT")


def test_suggest_has_a_fitting_qlora_row_for_13b_on_a_4090():
    s = gp.suggest(M13, gpu="rtx-4090", method="full")
    assert len(s) > 0
    qlora = [row for row in s if "qlora" in row.changes and row.fits]
    assert qlora, repr(s)
    row = qlora[0]
    # The row's memory is the estimator's for the changed run.
    est = gp.estimate(row.to_scenario())
    assert est.memory.device_bytes == row.device_bytes and est.fits
    assert row.device_bytes <= row.capacity_bytes
    # Only rows that fit with the margin; own card, then more cards, then other GPUs (docs/planner.md).
    assert all(r.fits for r in s)
    order = {"own_card": 0, "more_cards": 1, "other_gpu": 2}
    scopes = [order[r.to_dict()["scope"]] for r in s]
    assert scopes == sorted(scopes) and scopes[0] == 0
    assert [r.rank for r in s] == list(range(1, len(s) + 1))
    text = repr(s)
    assert "What would make it fit" in text and "QLoRA" in text and "GiB" in text
    assert "<table>" in s._repr_html_() and "QLoRA" in s._repr_html_()
    df = s.to_frame()
    assert len(df) == len(s) and {"changes", "description", "fits", "device_bytes", "time_cost"} <= set(df.columns)
    assert s.to_dict()[0]["rank"] == 1


def test_suggest_bigger_gpu_from_a_given_list():
    s = gp.suggest(M13, gpu="rtx-4090", method="lora", gpus=["a100-80gb"], pairs=False)
    big = [r for r in s if r.changes == ["bigger_gpu"]]
    assert len(big) == 1 and big[0].gpu == "a100-80gb"
    assert big[0].device_bytes == gp.estimate(M13, gpu="a100-80gb", method="lora").memory.device_bytes


def test_margin_keywords_change_the_verdict():
    # 7B LoRA at 12k tokens on a 24 GB card: the P50 fits with room, the P90 plus the
    # default headroom (1.2 GiB) does not (the CLI test's tight case).
    run = dict(gpu="rtx-4090", method="lora", seq_len=12288)
    assert gp.fit("llama-2-7b", **run).verdict == "tight"
    loose = gp.fit("llama-2-7b", confidence=0.5, headroom="0%", **run)
    assert loose.verdict == "fits" and loose.fits
    with pytest.raises(gp.ConfigError, match="fit.confidence"):
        gp.fit("llama-2-7b", confidence=0.8, **run)
    with pytest.raises(gp.ConfigError, match="suggest.headroom"):
        gp.suggest("llama-2-7b", headroom="2x", **run)
    res = gp.search("llama-2-7b", global_batch=8, top_k=2, confidence=0.99, headroom="2GiB", **SEARCH)
    assert all(r.device_bytes + 2 * 2**30 <= 80 * 1e9 for r in res)


SEARCH = dict(gpu="a100-80gb", num_gpus=8, seq_len=2048)


def test_search_rows_equal_estimate_for_the_same_layout():
    res = gp.search("llama-2-7b", global_batch=16, top_k=4, **SEARCH)
    assert 1 <= len(res) <= 4 and res.evaluated > 0 and res.seconds >= 0 and res.global_batch == 16
    steps = [r.step_seconds for r in res]
    assert steps == sorted(steps)
    for row in res:
        l = row.layout
        assert l["tp"] * l["pp"] * l["dp"] == 8 and l["micro_batch"] * l["grad_accum"] * l["dp"] == 16
        e = gp.estimate("llama-2-7b", tp=l["tp"], pp=l["pp"], virtual_stages=l["virtual_stages"], sp=l["sp"],
                        zero=l["zero"], offload_optimizer=l["offload_optimizer"], offload_params=l["offload_params"],
                        micro_batch=l["micro_batch"], grad_accum=l["grad_accum"], checkpointing=l["checkpointing"],
                        **SEARCH)
        assert e.fits
        assert e.memory.device_bytes == row.device_bytes
        assert e.time.step_seconds == row.step_seconds
        assert e.time.mfu == pytest.approx(row.mfu, rel=1e-12)
    assert "evaluated" in repr(res) and "configurations in" in repr(res)
    df = res.to_frame()
    assert {"tp", "pp", "dp", "micro_batch", "grad_accum", "checkpointing", "zero", "step_seconds", "mfu"} <= set(df.columns)


def test_search_threads_do_not_change_the_result():
    one = gp.search("llama-2-7b", global_batch=16, top_k=5, **SEARCH)
    two = gp.search("llama-2-7b", global_batch=16, top_k=5, threads=2, **SEARCH)
    assert [r.layout for r in one] == [r.layout for r in two]
    assert one.evaluated == two.evaluated


def recommend_small():
    return gp.recommend("llama-2-7b", method="qlora", tokens="1B", global_batch=8,
                        gpus=["rtx-4090", "a100-80gb"], max_gpus=4,
                        prices={"rtx-4090": 0.4, "a100-80gb": 1.8}, deadline="24h")


def test_recommend_order_is_deterministic_and_documented():
    a, b = recommend_small(), recommend_small()
    assert a.to_dict() == b.to_dict()
    assert len(a) > 0 and {r.gpu for r in a} <= {"rtx-4090", "a100-80gb"}
    met = [r.meets_deadline for r in a]
    assert met == sorted(met, reverse=True)
    for flag in (True, False):
        costs = [r.cost for r in a if r.meets_deadline == flag]
        assert costs == sorted(costs)
    price = {"rtx-4090": 0.4, "a100-80gb": 1.8}
    for r in a:
        assert r.cost == pytest.approx(r.gpu_hours * price[r.gpu], rel=1e-12)
        assert r.wall_seconds <= 86400 if r.meets_deadline else r.wall_seconds > 86400
        assert r.system["cpu_cores_min"] == 4 * r.count  # 4 cores per GPU, one node (docs/planner.md)
        assert r.system["cuda_min"] == {"rtx-4090": "11.8", "a100-80gb": "11.0"}[r.gpu]
    df = a.to_frame()
    assert {"gpu", "count", "wall_seconds", "cost", "system_cpu_cores", "system_host_ram_bytes",
            "system_psu_watts", "system_nvlink_present", "system_ecc"} <= set(df.columns)
    assert "GPU recommendation" in repr(a) and "<table>" in a._repr_html_()


def test_recommend_epochs_times_dataset_and_deadline_seconds():
    r = gp.recommend("llama-2-7b", method="qlora", epochs=2, dataset_tokens="500M", deadline=3600.0,
                     gpus=["rtx-4090"], max_gpus=1)
    assert len(r) == 1
    # Wall-clock: tokens / (global batch x seq) steps x step time of the estimator; no batch
    # given: the fine-tuning default, 65,536 tokens / 2048 = 32 sequences per step.
    row = r[0]
    assert row.global_batch == 32
    assert row.wall_seconds == pytest.approx(1e9 / (32 * 2048) * row.step_seconds, rel=1e-12)
    assert row.meets_deadline == (row.wall_seconds <= 3600)


@pytest.mark.parametrize("call, path", [
    (lambda: gp.suggest(M13, gpu="rtx-4090", micro_bach=2), "scenario.micro_bach"),
    (lambda: gp.fit(M13, gpu="rtx-4090", max_gpus=0), "fit.max_gpus"),
    (lambda: gp.search(M13, num_gpus=8, top_k=0), "search.top_k"),
    (lambda: gp.search(M13, num_gpus=8, threads="2"), "search.threads"),
    (lambda: gp.search(M13, num_gpus=8, objective="speed"), "search.objective"),
    (lambda: gp.suggest(M13, gpu="rtx-4090", gpus=["a100"]), "suggest.gpus"),
    (lambda: gp.recommend(M13, tokens="1B", deadline="soon"), "recommend.deadline"),
    (lambda: gp.recommend(M13, tokens="1B", prices={"rtx-409": 1.0}), "recommend.price_per_gpu_hour"),
    (lambda: gp.recommend(M13, tokens="1B", budget=-1.0, gpus=["rtx-4090"]), "recommend.budget"),
    (lambda: gp.recommend(M13), "recommend.tokens"),
])
def test_errors_are_config_errors_with_a_path(call, path):
    with pytest.raises(gp.ConfigError) as e:
        call()
    assert str(e.value).startswith(path), str(e.value)
    assert isinstance(e.value, ValueError)


# --------------------------------------------------------------------------- typed results


def _same_fields(row, data):
    """Every field of a typed row equals the CLI JSON object's value; nested rows too."""
    assert set(row.keys()) == set(data)
    for k, v in data.items():
        attr = getattr(row, k)
        if isinstance(attr, gp.PlanRow):
            _same_fields(attr, v)
        else:
            assert attr == v, k
        assert row[k] == v, k  # the mapping view: the JSON value


def test_fit_result_is_typed():
    r = gp.fit("gpt2", gpu="h100-sxm", seq_len=1024)
    assert isinstance(r, gp.FitResult) and gp.FitReport is gp.FitResult
    d = r.to_dict()
    assert r.fits is True and r.fits == d["fits"]
    assert r.headroom_bytes == d["headroom_bytes"] and isinstance(r.headroom, gp.Bytes)
    assert r.headroom.bytes == d["headroom_bytes"]
    assert (r.binding, r.max_micro_batch, r.max_seq_len, r.seq_step, r.seq_limit) == (
        d["binding"], d["max_micro_batch"], d["max_seq_len"], d["seq_step"], d["seq_limit"])
    assert isinstance(r.memory, gp.MemoryBreakdown)
    assert r.memory.device_bytes == d["memory"]["device_bytes"]
    assert r.min_gpus == {g["zero"]: g["gpus"] for g in d["min_gpus"]}
    d["fits"] = None  # to_dict() is a copy
    assert r.fits is True


def test_suggestions_are_typed_rows():
    s = gp.suggest(M13, gpu="rtx-4090", method="full", gpus=["a100-80gb"])
    assert isinstance(s, gp.Suggestions) and len(s) > 0
    data = s.to_dict()
    for row, d in zip(s, data):
        assert isinstance(row, gp.Suggestion) and isinstance(row, gp.PlanRow)
        _same_fields(row, d)
        assert row.to_dict() == d
        assert gp.Suggestion.from_dict(d) == row
        assert isinstance(row.changes, list) and all(isinstance(c, str) for c in row.changes)
        assert row.device.bytes == row.device_bytes and row.step.seconds == row.step_seconds
        assert "<table>" in row._repr_html_() and row.description in row._repr_html_()
    assert isinstance(s[0], gp.Suggestion) and all(isinstance(x, gp.Suggestion) for x in s[:2])
    df = s.to_frame()
    assert set(df.columns) == set(data[0]) - {"scenario"}
    assert list(df["rank"]) == [r.rank for r in s]


def test_search_rows_are_typed_with_a_layout():
    res = gp.search("llama-2-7b", global_batch=16, top_k=3, **SEARCH)
    assert isinstance(res, gp.SearchResult) and res.objective == "time"
    data = res.to_dict()
    assert [r.to_dict() for r in res] == data["rows"]
    for row, d in zip(res, data["rows"]):
        assert isinstance(row, gp.SearchRow) and isinstance(row.layout, gp.Layout)
        _same_fields(row, d)
        assert gp.SearchRow.from_dict(d) == row
        assert row.layout == gp.Layout.from_dict(d["layout"])
        assert row.layout.dp == row.layout.gpus // (row.layout.tp * row.layout.pp)
        # The layout's keywords rebuild the run the row was estimated on.
        e = gp.estimate("llama-2-7b", **{**SEARCH, **row.layout.scenario_keys()})
        assert e.memory.device_bytes == row.device_bytes and e.time.step_seconds == row.step_seconds
        assert row.to_scenario().to_dict() == gp.Scenario.from_dict(d["scenario"]).to_dict()
    df = res.to_frame()
    assert {"rank", "gpus", "tp", "pp", "virtual_stages", "dp", "micro_batch", "grad_accum", "checkpointing", "zero",
            "sp", "offload_optimizer", "offload_params", "score", "step_seconds", "mfu"} == set(df.columns) - {
        "device_bytes", "headroom_bytes", "tokens_per_second", "tokens_per_second_per_gpu"}


def test_recommendations_are_typed_with_system_sizing():
    a = recommend_small()
    assert isinstance(a, gp.Recommendations) and len(a) > 0
    for row, d in zip(a, a.to_dict()):
        assert isinstance(row, gp.Recommendation)
        assert isinstance(row.layout, gp.Layout) and isinstance(row.system, gp.SystemSizing)
        _same_fields(row, d)
        assert gp.Recommendation.from_dict(d) == row and row.to_dict() == d
        assert row.layout.gpus == row.count
        assert row.wall.seconds == row.wall_seconds and row.system.host_ram.bytes == row.system.host_ram_bytes
        assert row.system["psu_watts"] == row.system.psu_watts
        assert isinstance(row.system.notes, list)
    df = a.to_frame()
    assert len(df) == len(a) and list(df["count"]) == [r.count for r in a]


def test_typed_rows_keep_keys_they_do_not_know():
    d = {"gpus": 8, "tp": 2, "pp": 1, "virtual_stages": 1, "dp": 4, "micro_batch": 2, "grad_accum": 2,
         "checkpointing": "full", "zero": 1, "sp": True, "offload_optimizer": "none", "offload_params": "none",
         "new_key": [1, 2]}
    l = gp.Layout.from_dict(d)
    assert l.to_dict() == d and l["new_key"] == [1, 2] and len(l) == len(d)
    with pytest.raises(KeyError):
        gp.Layout.from_dict({"gpus": 8})


def test_planner_names_are_exported():
    for name in ("FitResult", "FitReport", "Suggestion", "Suggestions", "Layout", "SearchRow", "SearchResult",
                 "Recommendation", "Recommendations", "SystemSizing", "PlanRow"):
        assert name in gp.__all__ and hasattr(gp, name)


def test_recommend_prices_from_the_catalog_by_default():
    # No prices given: the dated catalog prices every row (the CLI's default); spot,
    # where published, is never dearer than on-demand for the same run.
    kw = dict(method="qlora", tokens="100M", gpus=["rtx-4090"], max_gpus=1)
    on_demand = gp.recommend("llama-2-7b", **kw)
    assert len(on_demand) == 1 and on_demand[0].cost is not None and 0 < on_demand[0].cost < 1e6
    spot = gp.recommend("llama-2-7b", spot=True, **kw)
    assert spot[0].cost <= on_demand[0].cost
    # A user price overrides the catalog: cost = GPU-hours x that price.
    mine = gp.recommend("llama-2-7b", prices={"rtx-4090": 0.1}, **kw)
    assert mine[0].cost == pytest.approx(mine[0].gpu_hours * 0.1, rel=1e-9)
    with pytest.raises(gp.FileError):
        gp.recommend("llama-2-7b", prices_file="/nonexistent/prices.csv", **kw)
