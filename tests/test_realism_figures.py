"""The deployment-realism chapters' figures and tables (what fits, the
calibrated step time, skewed routing, the engines) draw what speclib
computes (each checked through a figure's data, an artist or a table row)."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import speclib  # noqa: E402
from speclib.core import capacity  # noqa: E402
from speclib.core import moe  # noqa: E402
from speclib.evidence import validation  # noqa: E402
from speclib.evidence import engines  # noqa: E402
from speclib.presentation.figures import (engine_step_time, deployment_capacity, draft_length,  # noqa: E402
                                          engines_vs_model, skewed_routing)
from speclib.presentation.static import artist  # noqa: E402


def test_capacity_figure_plots_max_batch_and_notes_models_that_cannot_fit():
    fig = deployment_capacity.capacity_limits()
    x, y = artist(fig, "capacity_DeepSeek-V4-Flash").get_data()
    np.testing.assert_array_equal(y, capacity.max_batch(None, "B200", x).astype(float))
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "DeepSeek-V3: weights alone" in texts


def test_capacity_rows():
    rows = deployment_capacity.capacity_rows(models=("DeepSeek-V4-Flash",), chips=("B200",))
    name, weights, per_seq, fits, plain, split = rows[0]
    # under plain tensor parallelism every GPU holds all 30,000 latents (560 GB): no group does; split by
    # sequence, eight B200s hold 8 x 162 GB against the 714 GB needed, four do not
    assert fits == capacity.max_batch(None, "B200", 4096) and plain is None and split == 8
    assert weights == pytest.approx(capacity.weight_bytes() / 1e9)


def test_the_capacity_chapter_s_edges_table_names_its_step_model_and_keeps_figure_3_s_rows():
    table = deployment_capacity.served_attention_edges((4096,))
    assert "ledger" in table.caption and "roofline" in table.caption
    assert table.rows == draft_length.served_attention_edges((4096,)).rows
    # the last batch with gamma* > 0 under the paper's attention, pointwise
    last = int(table.rows[0][3].replace(",", ""))
    paper = speclib.Deployment(attention="paper")
    assert speclib.optimal_gamma(0.75, last, 4096, 0.1, deployment=paper)[0] > 0 == \
        speclib.optimal_gamma(0.75, last + 1, 4096, 0.1, deployment=paper)[0]


def test_calibrated_figure_shows_held_out_predictions():
    from speclib.calibration import held_out, step_fit

    held = held_out.stored_decode_by_workload()
    runs, _ = step_fit.decode_rows()
    fig = engine_step_time.calibrated_tpot(held=held)
    data = engine_step_time.calibrated_tpot.data(held=held)
    k = data["layouts"].index("TP1")
    idx = [i for i, r in enumerate(runs) if r.family == "Llama" and r.chip == "B200" and r.engine == "vLLM"
           and r.weights == "fp8" and r.workload == "1k8k" and r.tp == 1]
    by_conc = {runs[i].concurrency: held[i] for i in idx}  # the held-out prediction of each concurrency's run
    _, y = artist(fig, f"calibrated_{k}").get_data()
    np.testing.assert_allclose(y, [by_conc[c] * 1e3 for c in sorted(by_conc)])


def test_held_out_and_ablation_tables():
    from speclib.calibration import held_out, step_features

    rows = engine_step_time.held_out_rows()
    # Llama-3.3-70B on every chip and width it ran (23 combinations) and DeepSeek-R1 on every chip it ran
    assert len([r for r in rows if r[0] == "Llama-3.3-70B"]) == 23
    assert {r[1] for r in rows if r[0] == "DeepSeek-R1"} == {"B200", "B300", "H200", "MI300X", "MI325X", "MI355X"}
    assert all(row[-2] < 40 for row in rows)
    ablation = engine_step_time.ablation_rows()
    assert [row[0] for row in ablation] == [label for label, _ in held_out.DECODE_VARIANTS] + [
        "the collectives not charged"]
    # each variant is another form than the shipped one
    assert all(form != step_features.SHIPPED_FORM for _, form in held_out.DECODE_VARIANTS[1:])
    # the stored rows are what the hold-outs give now (the shipped form's, recomputed)
    chip = held_out.held_out("chip", choose=False, intervals=False)
    model = held_out.held_out("model", choose=False, intervals=False)
    assert ablation[0][1] == pytest.approx(100 * chip.decode_summary()["decode_median_abs_error"], rel=1e-9)
    assert ablation[0][5] == pytest.approx(100 * model.summary()["median_abs_error"], rel=1e-9)


def test_width_depth_figure():
    fig = skewed_routing.width_depth()
    N, e = artist(fig, "skewed").get_data()
    np.testing.assert_allclose(e, moe.experts_activated(N, 8, 256, routing=moe.measured_popularity()))


def test_skew_rows_reduce_to_uniform_when_the_popularity_is_uniform():
    uniform = np.full(256, 1 / 256)
    rows = skewed_routing.skew_rows(batches=(1, 64), popularity=uniform)
    for b, e_u, e_s, r_u, r_s, g_u, s_u, g_s, s_s in rows:
        assert e_u == pytest.approx(e_s) and r_u == pytest.approx(r_s) and g_u == g_s


def test_skew_effects_and_engine_figures_draw():
    fig = skewed_routing.skew_effects(batch_range=(1, 64), points=20)
    assert artist(fig, "gamma_skewed") is not None
    fig = engines_vs_model.engine_speedups()
    B, s = artist(fig, "docs_calibrated").get_data()
    np.testing.assert_allclose(s, engines.speedup(engines.run("sglang-docs"), "calibrated", B))


def test_engine_rows_format_ranges():
    rows = engines_vs_model.engine_rows()
    assert len(rows) == 10 and any("\u2013" in row[3] for row in rows)


def test_step_time_gamma_figure_and_widget():
    d = engine_step_time.step_time_gamma.data(points=60)
    # the live figure prices DeepSeek-V4's attention as the paper does, every batch at once, and shades those
    # memory does not hold (reserve=None)
    g, _ = speclib.optimal_gamma(0.75, d["B"], 4096, 0.1, deployment=speclib.Deployment(
        step_time="calibrated", attention="paper", reserve=None))
    np.testing.assert_array_equal(d["gamma_calibrated"], g)
    assert d["max_batch"] == capacity.max_batch(None, None, 4096)
    w = engine_step_time.step_time_gamma.widget(points=60)
    w.update(tp=8, c_draft=0.3)
    assert w.data["max_batch"] == capacity.max_batch(None, None, 4096, 8)
    g, _ = speclib.optimal_gamma(0.75, d["B"], 4096, 0.3, gamma_max=16,
                                 deployment=speclib.Deployment(step_time="calibrated", tp=8, attention="paper",
                                                               reserve=None))
    np.testing.assert_array_equal(w.data["gamma_calibrated"], g)
    v3 = engines_vs_model.step_time_gamma_v3.data(points=40)
    g, _ = speclib.optimal_gamma(0.68, v3["B"], 2048, 0.05, gamma_max=8, deployment=speclib.Deployment(
        "DeepSeek-V3", "H200", step_time="calibrated", tp=8, reserve=None))
    np.testing.assert_array_equal(v3["gamma_calibrated"], g)


def test_paper_vs_calibrated_draws_what_optimal_gamma_finds_under_either_step():
    # the figure prices through the array language (so the page can compute it); speclib prices through its
    # Deployment's pricing object: both must give the same gamma*, at tp 1 and 8 and at a slider's end
    for values in ({}, {"tp": 8, "S": 131072, "c_draft": 0.3}):
        d = engines_vs_model.paper_vs_calibrated.data(points=50, **values)
        S, c, tp = d["params"]["S"], d["params"]["c_draft"], d["params"]["tp"]
        for i, alpha in enumerate(engines_vs_model.PAPER_ALPHAS):
            # DeepSeek-V4's attention priced as the paper prices it, on both sides of the figure
            paper, _ = speclib.optimal_gamma(alpha, d["B"], S, c, gamma_max=16,
                                             deployment=speclib.Deployment(attention="paper"))
            calibrated, _ = speclib.optimal_gamma(alpha, d["B"], S, c, gamma_max=16, deployment=speclib.Deployment(
                step_time="calibrated", tp=tp, attention="paper", reserve=None))
            np.testing.assert_array_equal(d[f"paper{i}"], paper)
            np.testing.assert_array_equal(d[f"calibrated{i}"], calibrated)
        assert (d["calibrated0"] != d["paper0"]).any()


def test_a_figure_prices_the_papers_drafter_and_refuses_a_deployment_with_its_own():
    from speclib.presentation.arrays import numpy_ops
    from speclib.presentation.figures import common

    deployment = speclib.Deployment("Qwen3.6-35B-A3B", "B200", drafter="Qwen3.6-MTP")
    with pytest.raises(ValueError, match="c_draft .* or drafter .* not both"):
        common.deployed_speedups(deployment, numpy_ops, 0.7, np.arange(4.0)[:, None], np.array([1.0, 8.0]), 4096,
                                 0.1)


def test_paper_figures_hatch_what_cannot_fit():
    d = draft_length.optimal_gamma.data()
    assert d["max_batch"] == capacity.max_batch(None, None, 4096)
    assert artist(draft_length.optimal_gamma(), "memory_band") is not None
    assert not draft_length.optimal_gamma.data(capacity=False)["no_fit"].any()
    gmap = draft_length.gamma_map.data(batch_points=40, context_points=20)
    np.testing.assert_array_equal(gmap["no_fit"],
                                  gmap["B"][None, :] > capacity.max_batch(None, None, gmap["S"])[:, None])
