"""The deployment-realism chapters' figures and tables draw what speclib
computes (each checked through an artist's data or a table row)."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import speclib
from speclib import capacity, moe, validation, widgets
from speclib.evidence import engines
from speclib.presentation.figures import artist, paper, realism


def test_capacity_figure_plots_max_batch_and_notes_models_that_cannot_fit():
    fig = realism.capacity_limits()
    x, y = artist(fig, "capacity_DeepSeek-V4-Flash").get_data()
    np.testing.assert_array_equal(y, capacity.max_batch(None, "B200", x).astype(float))
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "DeepSeek-V3: weights alone" in texts


def test_capacity_rows():
    rows = realism.capacity_rows(models=("DeepSeek-V4-Flash",), chips=("B200",))
    name, weights, per_seq, fits, smallest = rows[0]
    assert fits == capacity.max_batch(None, "B200", 4096) and smallest == 8
    assert weights == pytest.approx(capacity.weight_bytes() / 1e9)


def test_calibrated_figure_shows_held_out_predictions():
    held = validation.held_out()
    fig = realism.calibrated_tpot(held=held)
    idx = held.runs.select(chip="B200", framework="vLLM", precision="fp8", workload="1k8k", tp=1)
    order = np.argsort(held.runs.column("concurrency")[idx])
    _, y = artist(fig, "calibrated_tp1").get_data()
    np.testing.assert_allclose(y, held.predicted_s[idx][order] * 1e3)


def test_held_out_and_ablation_tables():
    rows = realism.held_out_rows()
    assert len(rows) == 23 and all(row[-2] < 20 for row in rows)
    ablation = realism.ablation_rows()
    assert ablation[0][1] == 0 and ablation[4][0].endswith("(kept)")
    assert ablation[4][2] < ablation[0][2] / 5


def test_width_depth_figure():
    fig = realism.width_depth()
    N, e = artist(fig, "skewed").get_data()
    np.testing.assert_allclose(e, moe.experts_activated(N, 8, 256, routing=moe.measured_popularity()))


def test_skew_rows_reduce_to_uniform_when_the_popularity_is_uniform():
    uniform = np.full(256, 1 / 256)
    rows = realism.skew_rows(batches=(1, 64), popularity=uniform)
    for b, e_u, e_s, r_u, r_s, g_u, s_u, g_s, s_s in rows:
        assert e_u == pytest.approx(e_s) and r_u == pytest.approx(r_s) and g_u == g_s


def test_skew_effects_and_engine_figures_draw():
    fig = realism.skew_effects(batch_range=(1, 64), points=20)
    assert artist(fig, "gamma_skewed") is not None
    fig = realism.engine_speedups()
    B, s = artist(fig, "docs_calibrated").get_data()
    np.testing.assert_allclose(s, engines.speedup(engines.run("sglang-docs"), "calibrated", B))


def test_engine_rows_format_ranges():
    rows = realism.engine_rows()
    assert len(rows) == 10 and any("\u2013" in row[3] for row in rows)


def test_step_time_gamma_plot_and_widget():
    plot = realism.StepTimeGammaPlot(points=60)
    g, _ = speclib.optimal_gamma(0.75, plot.batches, 4096, 0.1, step_time="calibrated")
    np.testing.assert_array_equal(plot.gamma_star["calibrated"], g)
    assert plot.max_batch == capacity.max_batch(None, None, 4096)
    w = widgets.step_time_gamma()
    w.update(tp=8)
    assert w.plot.max_batch == capacity.max_batch(None, None, 4096, 8)


def test_paper_figures_hatch_what_cannot_fit():
    plot = paper.OptimalGammaPlot()
    assert plot.max_batch == capacity.max_batch(None, None, 4096)
    assert artist(plot.figure, "memory_band") is not None
    free = paper.OptimalGammaPlot(capacity=False)
    assert free.memory_band is None
    gmap = paper.GammaMapPlot(batch_points=40, context_points=20)
    np.testing.assert_array_equal(gmap.max_batch, capacity.max_batch(None, None, gmap.contexts))
