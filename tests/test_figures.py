"""The book's figures: axes as MODEL.md specifies them, and plotted data equal
to speclib's public API at the plotted points.

Expected constants come from MODEL.md (the paper's printed values, B200
datasheet arithmetic) or from independent identities, not from the figure
code.
"""
import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import speclib  # noqa: E402
from speclib import figures  # noqa: E402
from speclib.presentation.figures import paper  # noqa: E402
from speclib.presentation.figures.paper import artist  # noqa: E402

# B200 ridges from the datasheet peaks over 8 TB/s (MODEL.md's table).
RIDGE_FP4 = 9e15 / 8e12  # 1125
RIDGE_BF16 = 2.25e15 / 8e12  # 281.25

# Table 1 as the paper prints it (MODEL.md), rows S, columns T = 1, 2, 4, 8.
PAPER_TABLE = np.array(
    [
        [193, 322, 484, 645],
        [215, 387, 645, 967],
        [238, 469, 910, 1719],
        [240, 476, 938, 1820],
        [242, 483, 967, 1932],
    ]
)


def only_axes(fig):
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 1
    return fig.axes[0]


def line_data(fig, gid):
    line = artist(fig, gid)
    assert line is not None, f"no artist with gid {gid!r}"
    x, y = line.get_data()
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def band_x_extent(collection):
    """x-range covered by a fill's polygons (None if it draws nothing)."""
    xs = [p.vertices[:, 0] for p in collection.get_paths() if len(p.vertices)]
    if not xs:
        return None
    allx = np.concatenate(xs)
    return float(allx.min()), float(allx.max())


# --- common properties --------------------------------------------------------------


ALL_FIGURES = [
    figures.expert_tax,
    figures.expert_tax_log,
    figures.attention_width,
    figures.compressed_attention,
    figures.ledger,
    figures.optimal_gamma,
    figures.speedup_curves,
    figures.gamma_map,
]


@pytest.mark.parametrize("make", ALL_FIGURES, ids=lambda f: getattr(f, "__name__", "expert_tax_log"))
def test_figure_style_and_pyplot_state(make):
    before = set(plt.get_fignums())
    fig = make()
    assert isinstance(fig, Figure)
    assert tuple(fig.get_size_inches()) == pytest.approx((7.0, 4.2))
    assert fig.dpi == 100
    # Closed in pyplot: a notebook cell ending in the call shows it once.
    assert set(plt.get_fignums()) == before


@pytest.mark.parametrize("make", [figures.ledger, figures.optimal_gamma, figures.expert_tax])
def test_figures_render_deterministically(make):
    assert figures.png_bytes(make()) == figures.png_bytes(make())


def test_every_registered_figure_builds():
    for name, (cls, params) in figures.FIGURES.items():
        plot = cls(**params)
        assert plot.name in name
        assert isinstance(plot.figure, Figure)


def test_unknown_parameter_is_rejected():
    with pytest.raises(ValueError, match="unknown parameter"):
        figures.ledger(seq_len=4096)


def test_seq_len_slider_mapping():
    assert figures.seq_len_from_slider(0.0) == 512
    assert figures.seq_len_from_slider(0.5) == 8192
    assert figures.seq_len_from_slider(1.0) == 131_072
    with pytest.raises(ValueError, match="u must be"):
        figures.seq_len_from_slider(1.5)


# --- Figure 1 ----------------------------------------------------------------------


def test_expert_tax_axes_match_model_md():
    fig = figures.expert_tax()
    ax = only_axes(fig)
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "linear"
    assert ax.get_xlim() == pytest.approx((0, 11_000))
    assert ax.get_ylim() == pytest.approx((0, 1_200))
    assert "batch" in ax.get_xlabel()
    assert "FLOP/byte" in ax.get_ylabel()
    ridge = artist(fig, "ridge")
    assert ridge.get_linestyle() == "--"
    assert ridge.get_ydata()[0] == pytest.approx(RIDGE_FP4)
    assert ax.get_legend() is not None


def test_expert_tax_lines_are_speclibs_intensities_capped_at_the_ridge():
    fig = figures.expert_tax()
    B, dense = line_data(fig, "dense")
    B2, moe = line_data(fig, "moe")
    assert B[0] >= 1 and B[-1] == pytest.approx(11_000)
    np.testing.assert_allclose(dense, speclib.moe.dense_equivalent_intensity(B), rtol=1e-12)
    np.testing.assert_allclose(moe, speclib.moe.ffn_intensity(B2), rtol=1e-12)
    assert dense.max() == pytest.approx(RIDGE_FP4)
    assert moe.max() <= RIDGE_FP4 * (1 + 1e-12)


def test_expert_tax_knees_and_bands():
    fig = figures.expert_tax()
    x, _ = line_data(fig, "knees")
    dense_knee = RIDGE_FP4 * 0.53 / 2  # MODEL.md: R4 * b / 2 ~ 298
    assert np.min(np.abs(x - dense_knee)) < 1e-6
    # MODEL.md: the MoE meets the ridge at ~10,950 tokens.
    assert np.min(np.abs(x / 10_950 - 1)) < 2e-3
    # The memory-bound band under the dense line stops at its knee; the MoE band
    # runs out to the MoE's.
    lo, hi = band_x_extent(artist(fig, "dense_band"))
    assert lo == pytest.approx(1) and dense_knee - 10 < hi <= dense_knee + 1e-9
    lo, hi = band_x_extent(artist(fig, "moe_band"))
    assert 10_900 < hi <= 10_950


def test_expert_tax_controls_change_the_moe_line():
    fig = figures.expert_tax(experts=64, top_k=4)
    B, moe = line_data(fig, "moe")
    base = speclib.presets.model("DeepSeek-V4-Flash")
    what_if = dataclasses.replace(base, ffn=dataclasses.replace(base.ffn, n_routed=64, top_k=4))
    np.testing.assert_allclose(moe, speclib.moe.ffn_intensity(B, what_if), rtol=1e-12)
    assert not np.allclose(moe, speclib.moe.ffn_intensity(B))


def test_expert_tax_weight_format_moves_the_ridge():
    fig = figures.expert_tax(weights="bf16")
    assert artist(fig, "ridge").get_ydata()[0] == pytest.approx(RIDGE_BF16)
    B, dense = line_data(fig, "dense")
    np.testing.assert_allclose(dense[B < 100], B[B < 100] * 2 / 2.0)  # 2 FLOP per 2-byte weight


def test_expert_tax_on_hopper_uses_the_fp8_peak():
    fig = figures.expert_tax(hardware="H100")
    assert artist(fig, "ridge").get_ydata()[0] == pytest.approx(1978.9e12 / 3.35e12)


def test_expert_tax_log_scale():
    fig = figures.expert_tax_log()
    ax = only_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlim() == pytest.approx((1, 30_000))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"experts": 0}, "experts"),
        ({"experts": 4, "top_k": 8}, "top_k"),
        ({"weights": "int3"}, "weights"),
        ({"scale": "symlog"}, "scale"),
    ],
)
def test_expert_tax_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        figures.expert_tax(**kwargs)


def test_expert_tax_rejects_a_dense_model():
    with pytest.raises(ValueError, match="mixture-of-experts"):
        figures.expert_tax(model="Llama-3-70B")


# --- Table 1 -----------------------------------------------------------------------


def test_attention_table_reproduces_the_paper():
    table = figures.attention_table()
    assert table.contexts == (512, 1024, 8192, 16384, 1_048_576)
    assert table.widths == (1, 2, 4, 8)
    np.testing.assert_array_equal(np.round(table.values), PAPER_TABLE)
    assert table.ridge == pytest.approx(RIDGE_BF16)


def test_attention_table_highlights_exactly_the_compute_bound_cells():
    table = figures.attention_table()
    html = table._repr_html_()
    # The paper bolds every T >= 2 cell and no T = 1 cell.
    expected = np.zeros(PAPER_TABLE.shape, dtype=bool)
    expected[:, 1:] = True
    np.testing.assert_array_equal(table.compute_bound, expected)
    assert html.count('class="compute-bound"') == expected.sum()
    assert html.count('class="memory-bound"') == (~expected).sum()
    rows = html.split("<tr>")[2:]
    for row, flags in zip(rows, expected):
        cells = row.split("<td")[1:]
        assert ["compute-bound" in c for c in cells] == list(flags)
        assert ["<b>" in c for c in cells] == list(flags)


def test_attention_table_text_repr_is_deterministic_and_marks_cells():
    a, b = repr(figures.attention_table()), repr(figures.attention_table())
    assert a == b
    assert "0x" not in a
    lines = a.splitlines()
    row_512 = next(line for line in lines if line.strip().startswith("512"))
    assert row_512.split() == ["512", "193", "322*", "484*", "645*"]


def test_attention_table_variants_and_custom_grid():
    S, T = (2048, 65_536), (1, 3)
    table = figures.attention_table(variant="hca", contexts=S, widths=T)
    expected = speclib.attention_intensity(np.array(T)[None, :], np.array(S)[:, None], variant="hca")
    np.testing.assert_allclose(table.values, expected)
    np.testing.assert_array_equal(table.compute_bound, expected > RIDGE_BF16)
    assert "hca" in repr(table)


def test_attention_table_gqa_contrast_is_memory_bound_near_8T():
    table = figures.attention_table(model="Llama-3-70B")
    assert table.variant == "gqa"
    assert not table.compute_bound.any()
    # MODEL.md: Llama-3's GQA goes as ~8T (8 query heads per KV head).
    np.testing.assert_allclose(table.values[-1], 8 * np.array(table.widths), rtol=1e-3)


def test_attention_table_bad_input():
    with pytest.raises(ValueError, match="variant"):
        figures.attention_table(variant="sliding")
    with pytest.raises(ValueError, match="contexts"):
        figures.attention_table(contexts=(0, 512))


# --- Figure 2 ----------------------------------------------------------------------


def test_ledger_axes_match_model_md():
    fig = figures.ledger()
    ax = only_axes(fig)
    assert ax.get_xscale() == "log"
    assert ax.get_xlim() == pytest.approx((1, 30_000))
    assert ax.get_ylim() == pytest.approx((0, 1.3))
    full = artist(fig, "full_price")
    assert full.get_linestyle() == "--" and full.get_ydata()[0] == 1.0
    assert "batch" in ax.get_xlabel() and "token" in ax.get_ylabel()


def test_ledger_total_is_marginal_cost():
    fig = figures.ledger()
    B, total = line_data(fig, "total")
    assert B.size == 400
    np.testing.assert_allclose(np.diff(np.log(B)), np.log(30_000) / 399)
    np.testing.assert_allclose(total, speclib.marginal_cost(B, 8192, 0.10)["total"], rtol=1e-12)


def test_ledger_controls():
    B, t_short = line_data(figures.ledger(S=512, c_draft=0.0), "total")
    _, t_long = line_data(figures.ledger(S=131_072, c_draft=0.0), "total")
    _, t_draft = line_data(figures.ledger(S=512, c_draft=0.3), "total")
    np.testing.assert_allclose(t_short, speclib.marginal_cost(B, 512, 0.0)["total"], rtol=1e-12)
    assert not np.allclose(t_short, t_long)
    # The drafter's cost is paid flat on top of the verify cost.
    np.testing.assert_allclose(t_draft - t_short, 0.3, atol=1e-12)


def test_ledger_components_stack_up_to_the_total():
    plot = paper.LedgerPlot(components=True)
    total = artist(plot.figure, "total").get_ydata()
    stacked = sum(plot.contributions.values())
    np.testing.assert_allclose(stacked, total, rtol=1e-12)
    for key in ("attn_proj", "moe", "attention", "drafter"):
        band = artist(plot.figure, f"band_{key}")
        assert band.get_visible()
    # The top band's upper edge is the total line.
    top = np.concatenate([p.vertices[:, 1] for p in artist(plot.figure, "band_drafter").get_paths()])
    assert top.max() == pytest.approx(total.max())
    hidden = figures.ledger()
    assert not artist(hidden, "band_moe").get_visible()


def test_ledger_contributions_are_slope_times_share():
    plot = paper.LedgerPlot(S=2048, c_draft=0.2)
    B = plot.batches
    slopes = speclib.marginal_cost(B, 2048, 0.2)
    shares = speclib.cost.cost_shares(B, 2048)
    for key in ("attn_proj", "moe", "attention"):
        np.testing.assert_allclose(plot.contributions[key], slopes[key] * shares[key], rtol=1e-12)
    np.testing.assert_allclose(plot.contributions["drafter"], 0.2)


def test_ledger_query_bytes_toggle():
    B, without = line_data(figures.ledger(), "total")
    _, with_q = line_data(figures.ledger(query_bytes=True), "total")
    np.testing.assert_allclose(with_q, speclib.marginal_cost(B, 8192, 0.1, query_bytes=True)["total"], rtol=1e-12)
    assert not np.allclose(with_q, without)


def test_ledger_axis_grows_for_an_expensive_drafter():
    ax = only_axes(figures.ledger(c_draft=0.5))
    assert ax.get_ylim()[1] > 1.5


# --- Figure 3 ----------------------------------------------------------------------


def test_optimal_gamma_axes_and_step_line():
    fig = figures.optimal_gamma()
    ax = only_axes(fig)
    assert ax.get_xscale() == "log"
    assert ax.get_xlim() == pytest.approx((1, 30_000))
    assert ax.get_ylim()[0] == 0
    line = artist(fig, "gamma_star")
    assert line.get_drawstyle().startswith("steps")
    assert "\u03b3" in ax.get_ylabel()


def test_optimal_gamma_line_is_speclibs_argmax():
    fig = figures.optimal_gamma()
    B, g = line_data(fig, "gamma_star")
    assert np.all(B == np.round(B))  # whole sequences
    expected, _ = speclib.optimal_gamma(0.75, B, 4096, 0.10)
    np.testing.assert_array_equal(g, expected)


def test_optimal_gamma_against_brute_force_at_a_few_batches():
    fig = figures.optimal_gamma(S=16_384, alpha=0.6, c_draft=0.05)
    B, g = line_data(fig, "gamma_star")
    for i in range(0, B.size, 97):
        sp = [speclib.speedup(0.6, gam, B[i], 16_384, 0.05) for gam in range(65)]
        assert g[i] == int(np.argmax(sp))


def test_optimal_gamma_shades_every_zero_run_and_labels_the_gutter():
    plot = paper.OptimalGammaPlot()
    B, g = plot.batches, plot.gamma_star
    kinds = [kind for _, _, kind in plot.bands]
    # The paper's headline at the defaults: a gutter at small batch, and gamma*
    # back at 0 at very large batch.
    assert "gutter" in kinds
    assert plot.bands[-1][2] == "edge" and plot.bands[-1][1] == B[-1]
    lo, hi = band_x_extent(artist(plot.figure, "zero_band"))
    first_zero = B[np.argmax(g == 0)]
    assert lo <= first_zero and hi == pytest.approx(B[-1])
    labels = [t.get_text() for t in plot.figure.findobj(lambda a: a.get_gid() == "band_label")]
    assert labels.count("gutter") == kinds.count("gutter")


def test_zero_gamma_bands_on_a_made_up_sequence():
    B = np.array([1, 2, 3, 4, 5, 6])
    g = np.array([2, 0, 0, 1, 0, 0])
    assert figures.zero_gamma_bands(B, g) == [(2.0, 3.0, "gutter"), (5.0, 6.0, "edge")]
    assert figures.zero_gamma_bands(B, np.zeros(6)) == [(1.0, 6.0, "edge")]
    assert figures.zero_gamma_bands(B, np.ones(6)) == []


def test_speedup_curves_match_speclib_and_mark_each_argmax():
    plot = paper.SpeedupCurvesPlot()
    batches = (1, 8, 64, 512, 4096)
    for i, b in enumerate(batches):
        gam, sp = line_data(plot.figure, f"speedup_{i}")
        np.testing.assert_allclose(sp, speclib.speedup(0.75, gam, b, 4096, 0.10), rtol=1e-12)
        px, py = line_data(plot.figure, f"peak_{i}")
        g_star, best = speclib.optimal_gamma(0.75, b, 4096, 0.10)
        assert px[0] == g_star and py[0] == pytest.approx(best)
        # Brute force over the plotted curve.
        assert px[0] == gam[np.argmax(sp)]
    assert sp[0] == 1.0  # gamma = 0 is plain decoding


def test_speedup_curves_respond_to_alpha():
    lo = paper.SpeedupCurvesPlot(alpha=0.3)
    hi = paper.SpeedupCurvesPlot(alpha=0.95)
    assert hi.gamma_star.sum() > lo.gamma_star.sum()


# --- extra figures -----------------------------------------------------------------


def test_attention_width_lines_and_the_T_and_8T_contrast():
    plot = paper.AttentionWidthPlot(S=1_048_576, query_bytes=False)
    T = plot.widths
    for key, model in (("gqa", "Llama-3-70B"), ("mla", "DeepSeek-V4-Flash")):
        _, y = line_data(plot.figure, key)
        np.testing.assert_allclose(y, speclib.attention_intensity(T, 1_048_576, model, query_bytes=False), rtol=1e-12)
    _, mha = line_data(plot.figure, "mha")
    _, gqa = line_data(plot.figure, "gqa")
    # MODEL.md: MHA goes as ~T, GQA with 8 query heads per KV head as ~8T.
    np.testing.assert_allclose(mha, T, rtol=1e-3)
    np.testing.assert_allclose(gqa, 8 * T, rtol=1e-3)
    ax = only_axes(plot.figure)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert artist(plot.figure, "ridge").get_ydata()[0] == pytest.approx(RIDGE_BF16)


def test_compressed_attention_panels():
    plot = paper.CompressedAttentionPlot()
    fig = plot.figure
    assert len(fig.axes) == 3
    S = plot.contexts
    for key in ("hca", "csa", "indexer"):
        for i, t in enumerate((1, 2, 4)):
            _, y = line_data(fig, f"{key}_{i}")
            np.testing.assert_allclose(y, speclib.attention_intensity(t, S, variant=key), rtol=1e-12)
    # CSA's main attention is MLA over the 512 kept positions: Table 1's S = 512
    # row (the paper's printed 193, 322, 484) once S/4 >= 512.
    long = S >= 4 * 512
    for i, printed in enumerate((193, 322, 484)):
        _, y = line_data(fig, f"csa_{i}")
        np.testing.assert_allclose(np.round(y[long]), printed)
    # MODEL.md: HCA's first speculated token (T = 2) crosses the bf16 ridge
    # at an original context of about 45k.
    _, y2 = line_data(fig, "hca_1")
    crossing = S[np.argmax(y2 > RIDGE_BF16)]
    assert 35_000 < crossing < 55_000


def test_compressed_attention_knobs():
    plot = paper.CompressedAttentionPlot(hca_ratio=16)
    _, y = line_data(plot.figure, "hca_0")
    m = plot.effective_model
    assert m.attention.hca_ratio == 16
    np.testing.assert_allclose(y, speclib.attention_intensity(1, plot.contexts, m, "hca"), rtol=1e-12)


def test_gamma_map_is_optimal_gamma_on_the_grid():
    plot = paper.GammaMapPlot(batch_points=40, context_points=20)
    g, _ = speclib.optimal_gamma(0.75, plot.batches[None, :], plot.contexts[:, None], 0.10)
    np.testing.assert_array_equal(plot.gamma_star, g)
    np.testing.assert_array_equal(np.asarray(plot.mesh.get_array()).reshape(g.shape), g)


# --- chapter helpers ------------------------------------------------------------------


def test_gamma_regions_match_a_brute_force_scan():
    batches = np.arange(1, 200)
    regions = figures.gamma_regions(0.75, S=4096, c_draft=0.10, batches=batches)
    # Brute force: speedup of every draft length, batch by batch.
    best = [int(np.argmax([speclib.speedup(0.75, g, b, 4096, 0.10) for g in range(65)])) for b in batches]
    zero = [b for b, g in zip(batches, best) if g == 0]
    assert regions["gutters"] == [(float(min(zero)), float(max(zero)))]
    assert regions["best_gamma"] == max(best)
    assert regions["best_batch"] == batches[best.index(max(best))]
    assert regions["last_speculating"] == max(b for b, g in zip(batches, best) if g > 0)


def test_gamma_regions_paper_headline():
    # MODEL.md: at the Figure 3 defaults there is a gutter at small batch and
    # gamma* falls back to 0 at very large batch.
    regions = figures.gamma_regions()
    assert len(regions["gutters"]) == 1
    lo, hi = regions["gutters"][0]
    assert 1 < lo and hi < 42.7  # below the expert knee E/k
    assert regions["last_speculating"] < 30_000


def test_number_table_text_and_html():
    table = figures.NumberTable(("B", "value"), ((1, 0.5), (12_345, 2.0), (3, None)), formats=("", ".2f"),
                                caption="demo")
    assert repr(table).splitlines() == ["demo", "     B  value", "     1   0.50", "12,345   2.00", "     3      \u2014"]
    html = table._repr_html_()
    assert html.count("<tr>") == 4 and "<caption>demo</caption>" in html


def test_ridge_crossing_interpolates_in_log_x():
    x = np.array([1.0, 10.0, 100.0])
    y = np.array([0.0, 1.0, 2.0])
    assert figures.ridge_crossing(x, y, 1.5) == pytest.approx(10 ** 1.5)
    assert figures.ridge_crossing(x, y, 5.0) is None
    assert figures.ridge_crossing(x, y, -1.0) == 1.0


def test_equation_renders_sympy_latex():
    math = figures.equation("A(B)", speclib.moe.experts_activated_expr)
    assert math.data == "A(B) = " + __import__("sympy").latex(speclib.moe.experts_activated_expr)
    both = figures.equations(("x", 1, 2), ("y", 3))
    assert both.data.startswith("\\begin{aligned}x &= 1 = 2 \\\\ y &= 3")


def test_knees_agree_with_sympy_solving_the_expressions():
    """moe.knees (closed forms printed to numpy, the exact crossing by
    bisection) against sympy: the knee expressions evaluated exactly and the
    crossing found by nsolve on the uncapped MoE intensity expression."""
    import sympy as sp

    f = speclib.formulas.moe
    for kwargs in ({}, {"experts": 8, "top_k": 1}, {"experts": 512, "top_k": 16}):
        model = paper.moe_what_if(**kwargs)
        for hw in ("B200", "H100"):
            ffn, ridge = model.ffn, speclib.presets.hardware(hw).ridge(model.ffn.precision)
            values = {f.k: ffn.top_k, f.E: ffn.n_routed, f.n_s: ffn.n_shared, f.b: ffn.weight_bytes, f.R: ridge}
            asymptotic = float(f.moe_ridge_batch_expr.subs(values))
            expected = {
                "expert_knee": float(f.expert_knee_expr.subs(values)),
                "dense_knee": float(f.dense_knee_expr.subs(values)),
                "moe_ridge_asymptotic": asymptotic,
                "moe_ridge": float(sp.nsolve((f.moe_intensity_uncapped_expr - f.R).subs(values), f.B, asymptotic)),
                "slope_ratio": float(f.moe_slope_ratio_expr.subs(values)),
            }
            got = speclib.moe.knees(model, hw)
            assert set(got) == set(expected)
            for key in expected:
                assert got[key] == pytest.approx(expected[key], rel=1e-9), key
