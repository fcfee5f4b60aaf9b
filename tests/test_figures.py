"""The main chapters' figures (expert tax, attention, pricing, draft length):
axes as the paper draws them, and drawn data equal to speclib's public API
at the drawn points.

Expected constants are the paper's printed values (Finn, "The economics of
speculative decoding", 2026) or datasheet arithmetic, or come from
independent identities, never from the figure code.
"""
import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import speclib  # noqa: E402
from speclib.presentation import style  # noqa: E402
from speclib.presentation.equations import equation, equations  # noqa: E402
from speclib.presentation.figures import attention, common, draft_length, expert_tax, pricing  # noqa: E402
from speclib.presentation.static import artist, artists  # noqa: E402
from speclib.presentation.tables import NumberTable  # noqa: E402

#: The paper's figures price DeepSeek-V4's attention as the paper does: the library's calls they are held to say so.
PAPER = speclib.Deployment(attention="paper")

# B200 ridges from the datasheet peaks over 8 TB/s.
RIDGE_FP4 = 9e15 / 8e12  # 1125
RIDGE_BF16 = 2.25e15 / 8e12  # 281.25

# Table 1 as the paper prints it, rows S, columns T = 1, 2, 4, 8.
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

ALL_FIGURES = [expert_tax.expert_tax, expert_tax.expert_tax_log, attention.attention_width, pricing.ledger,
               draft_length.optimal_gamma, draft_length.speedup_curves, draft_length.gamma_map]


@pytest.mark.parametrize("make", ALL_FIGURES, ids=lambda f: f.name)
def test_figure_style_and_pyplot_state(make):
    before = set(plt.get_fignums())
    fig = make()
    assert isinstance(fig, Figure)
    # the definition's size, grown by a legend hung below the panel (drawn, its height in inches)
    below = fig.axes[0].get_legend() if make.panels[0].legend == "below" else None
    if below is not None:
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        tall = below.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
        assert fig.get_figwidth() == pytest.approx(7.0)
        assert fig.get_figheight() - 4.2 == pytest.approx(tall, abs=0.12)
    else:
        assert tuple(fig.get_size_inches()) == pytest.approx((7.0, 4.2))
    assert fig.dpi == 100
    # Closed in pyplot: a notebook cell ending in the call shows it once.
    assert set(plt.get_fignums()) == before


@pytest.mark.parametrize("make", [pricing.ledger, draft_length.optimal_gamma, expert_tax.expert_tax])
def test_figures_render_deterministically(make):
    assert style.png_bytes(make()) == style.png_bytes(make())


def test_unknown_parameter_is_rejected():
    with pytest.raises(ValueError, match="unknown parameter"):
        pricing.ledger(seq_len=4096)


def test_the_sequence_length_slider_is_the_papers():
    """S = 512 * 2**(8u) for u in [0, 1] in steps of 1/64: a log2 slider from 512 to 131,072 in steps of 2**(1/8)."""
    s = common.seq_slider()
    assert (s.lo, s.hi, s.scale) == (512, 131_072, "log2")
    u = np.arange(65) / 64
    assert np.allclose(s.lo * 2.0 ** (np.round(np.log2(512 * 2 ** (8 * u) / s.lo) / s.step) * s.step), 512 * 2 ** (8 * u))


# --- Figure 1 ----------------------------------------------------------------------


def test_expert_tax_axes_match_the_paper():
    fig = expert_tax.expert_tax()
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
    fig = expert_tax.expert_tax()
    B, dense = line_data(fig, "dense")
    B2, moe = line_data(fig, "moe")
    assert B[0] >= 1 and B[-1] == pytest.approx(11_000)
    np.testing.assert_allclose(dense, speclib.core.moe.dense_equivalent_intensity(B), rtol=1e-12)
    np.testing.assert_allclose(moe, speclib.core.moe.ffn_intensity(B2), rtol=1e-12)
    assert dense.max() == pytest.approx(RIDGE_FP4)
    assert moe.max() <= RIDGE_FP4 * (1 + 1e-12)


def test_expert_tax_knees_and_bands():
    d = expert_tax.expert_tax.data()
    dense_knee = RIDGE_FP4 * 0.53 / 2  # the paper: R4 * b / 2 ~ 298
    assert d["dense_knee"] == pytest.approx(dense_knee)
    # The paper: the MoE meets the ridge at ~10,950 tokens.
    assert abs(d["moe_ridge"] / 10_950 - 1) < 2e-3
    assert d["moe_ridge"] == pytest.approx(speclib.core.moe.knees()["moe_ridge"], rel=1e-10)
    fig = expert_tax.expert_tax()
    # The memory-bound band under the dense line stops at its knee; the MoE band runs out to the MoE's.
    lo, hi = band_x_extent(artist(fig, "dense_band"))
    assert lo == pytest.approx(1) and dense_knee - 10 < hi <= dense_knee + 1e-9
    lo, hi = band_x_extent(artist(fig, "moe_band"))
    assert 10_900 < hi <= 10_950
    points = [artist(fig, f"knee_{k}_point").get_xdata()[0] for k in ("dense", "expert", "moe")]
    assert points == pytest.approx([dense_knee, 256 / 6, float(d["moe_ridge"])])


def test_expert_tax_controls_change_the_moe_line():
    fig = expert_tax.expert_tax(experts=64, top_k=4)
    B, moe = line_data(fig, "moe")
    base = speclib.presets.model("DeepSeek-V4-Flash")
    what_if = dataclasses.replace(base, ffn=dataclasses.replace(base.ffn, n_routed=64, top_k=4))
    np.testing.assert_allclose(moe, speclib.core.moe.ffn_intensity(B, what_if), rtol=1e-12)
    assert not np.allclose(moe, speclib.core.moe.ffn_intensity(B))
    # More experts per token than there are experts: capped at E, as the widget does.
    d = expert_tax.expert_tax.data(experts=8, top_k=16)
    assert d["expert_knee"] == pytest.approx(1.0)


def test_expert_tax_weight_format_moves_the_ridge():
    fig = expert_tax.expert_tax(weights="bf16")
    assert artist(fig, "ridge").get_ydata()[0] == pytest.approx(RIDGE_BF16)
    B, dense = line_data(fig, "dense")
    np.testing.assert_allclose(dense[B < 100], B[B < 100] * 2 / 2.0)  # 2 FLOP per 2-byte weight


def test_expert_tax_on_hopper_uses_the_fp8_peak():
    fig = expert_tax.expert_tax(hardware="H100")
    assert artist(fig, "ridge").get_ydata()[0] == pytest.approx(1978.9e12 / 3.35e12)


def test_expert_tax_log_scale():
    ax = only_axes(expert_tax.expert_tax_log())
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlim() == pytest.approx((1, 30_000))


@pytest.mark.parametrize("kwargs, match", [({"experts": 0}, "experts"), ({"top_k": 40}, "top_k"),
                                           ({"weights": "int3"}, "weights")])
def test_expert_tax_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        expert_tax.expert_tax(**kwargs)


def test_expert_tax_rejects_a_dense_model():
    with pytest.raises(ValueError, match="mixture-of-experts"):
        expert_tax.expert_tax(model="Llama-3-70B")


# --- Table 1 -----------------------------------------------------------------------


def test_attention_table_reproduces_the_paper():
    d = attention.attention_table.data()
    assert d["contexts"] == [512, 1024, 8192, 16384, 1_048_576]
    assert d["widths"] == [1, 2, 4, 8]
    np.testing.assert_array_equal(np.round(d["values"]), PAPER_TABLE)
    assert d["ridge"] == pytest.approx(RIDGE_BF16)


def test_attention_table_highlights_exactly_the_compute_bound_cells():
    html = attention.attention_table()._repr_html_()
    # The paper bolds every T >= 2 cell and no T = 1 cell.
    expected = np.zeros(PAPER_TABLE.shape, dtype=bool)
    expected[:, 1:] = True
    np.testing.assert_array_equal(attention.attention_table.data()["hot"], expected)
    assert html.count('class="compute-bound"') == expected.sum()
    assert html.count('class="memory-bound"') == (~expected).sum()
    rows = html.split("<tr>")[2:]
    for row, flags in zip(rows, expected):
        cells = row.split("<td")[1:]
        assert ["compute-bound" in c for c in cells] == list(flags)
        assert ["<b>" in c for c in cells] == list(flags)


def test_attention_table_text_repr_is_deterministic_and_marks_cells():
    a, b = repr(attention.attention_table()), repr(attention.attention_table())
    assert a == b
    assert "0x" not in a
    row_512 = next(line for line in a.splitlines() if line.strip().startswith("512"))
    assert row_512.split() == ["512", "193", "322*", "484*", "645*"]


def test_attention_table_variants_and_custom_grid():
    S, T = (2048, 65_536), (1, 3)
    d = attention.attention_table.data(variant="hca", contexts=S, widths=T)
    expected = speclib.attention_intensity(np.array(T)[None, :], np.array(S)[:, None], variant="hca")
    np.testing.assert_allclose(d["values"], expected)
    np.testing.assert_array_equal(d["hot"], expected > RIDGE_BF16)
    assert "hca" in repr(attention.attention_table(variant="hca"))


def test_attention_table_gqa_contrast_is_memory_bound_near_8T():
    d = attention.attention_table.data(model="Llama-3-70B")
    assert d["kind"] == "gqa"
    assert not d["hot"].any()
    # Llama-3's GQA goes as ~8T (8 query heads per KV head).
    np.testing.assert_allclose(d["values"][-1], 8 * np.array(d["widths"]), rtol=1e-3)


def test_attention_table_bad_input():
    with pytest.raises(ValueError, match="variant"):
        attention.attention_table(variant="sliding")


# --- Figure 2 ----------------------------------------------------------------------


def test_ledger_axes_match_the_paper():
    fig = pricing.ledger()
    ax = only_axes(fig)
    assert ax.get_xscale() == "log"
    assert ax.get_xlim() == pytest.approx((1, 30_000))
    assert ax.get_ylim() == pytest.approx((0, 1.3))
    full = artist(fig, "full_price")
    assert full.get_linestyle() == "--" and full.get_ydata()[0] == 1.0
    assert "batch" in ax.get_xlabel() and "token" in ax.get_ylabel()


def test_ledger_total_is_marginal_cost():
    B, total = line_data(pricing.ledger(), "total")
    assert B.size == 400
    np.testing.assert_allclose(np.diff(np.log(B)), np.log(30_000) / 399)
    np.testing.assert_allclose(total, speclib.marginal_cost(B, 8192, 0.10, attention="paper")["total"], rtol=1e-12)


def test_ledger_controls():
    B, t_short = line_data(pricing.ledger(S=512, c_draft=0.0), "total")
    _, t_long = line_data(pricing.ledger(S=131_072, c_draft=0.0), "total")
    _, t_draft = line_data(pricing.ledger(S=512, c_draft=0.3), "total")
    np.testing.assert_allclose(t_short, speclib.marginal_cost(B, 512, 0.0, attention="paper")["total"], rtol=1e-12)
    assert not np.allclose(t_short, t_long)
    # The drafter's cost is paid flat on top of the verify cost.
    np.testing.assert_allclose(t_draft - t_short, 0.3, atol=1e-12)


def test_ledger_components_stack_up_to_the_total_and_are_slope_times_share():
    d = pricing.ledger.data(S=2048, c_draft=0.2, components=True)
    B = d["B"]
    slopes = speclib.marginal_cost(B, 2048, 0.2, attention="paper")
    shares = speclib.core.cost.cost_shares(B, 2048, attention="paper")
    for key in ("attn_proj", "moe", "attention"):
        np.testing.assert_allclose(d[f"{key}_hi"] - d[f"{key}_lo"], slopes[key] * shares[key], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(d["drafter_hi"] - d["drafter_lo"], 0.2)
    np.testing.assert_allclose(d["drafter_hi"], d["total"], rtol=1e-12)
    fig = pricing.ledger(components=True)
    assert all(artist(fig, f"band_{key}") is not None for key in ("attn_proj", "moe", "attention", "drafter"))
    assert artist(pricing.ledger(), "band_moe") is None


def test_ledger_query_bytes_toggle():
    B, without = line_data(pricing.ledger(), "total")
    _, with_q = line_data(pricing.ledger(query_bytes=True), "total")
    np.testing.assert_allclose(
        with_q, speclib.marginal_cost(B, 8192, 0.1, query_bytes=True, attention="paper")["total"], rtol=1e-12)
    assert not np.allclose(with_q, without)


def test_ledger_axis_grows_for_an_expensive_drafter():
    assert only_axes(pricing.ledger(c_draft=0.5)).get_ylim()[1] > 1.5


def test_the_dense_ledger_is_llama_with_its_components():
    d = pricing.ledger_dense.data()
    assert d["params"]["model"] == "Llama-3-70B" and d["params"]["components"] is True
    np.testing.assert_allclose(d["total"], speclib.marginal_cost(d["B"], 8192, 0.1, "Llama-3-70B")["total"])


def test_the_ledgers_attention_band_names_the_models_own_attention():
    """Llama-3-70B has grouped-query attention (64 query heads over 8 KV heads
    in its config), DeepSeek-V4-Flash latent attention: the legend says which."""
    def legend(fig):
        return [t.get_text() for t in only_axes(fig).get_legend().get_texts()]

    assert "attention (GQA at verify width 2)" in legend(pricing.ledger_dense())
    assert not any("MLA" in t for t in legend(pricing.ledger_dense()))
    assert "attention (MLA at verify width 2)" in legend(pricing.ledger_components())


# --- Figure 3 ----------------------------------------------------------------------


def test_optimal_gamma_axes_and_step_line():
    fig = draft_length.optimal_gamma()
    ax = only_axes(fig)
    assert ax.get_xscale() == "log"
    assert ax.get_xlim() == pytest.approx((1, 30_000))
    assert ax.get_ylim()[0] == 0
    assert artist(fig, "gamma_star").get_drawstyle().startswith("steps")
    assert "\u03b3" in ax.get_ylabel()


def test_optimal_gamma_line_is_speclibs_argmax():
    B, g = line_data(draft_length.optimal_gamma(), "gamma_star")
    assert np.all(B == np.round(B))  # whole sequences
    expected, _ = speclib.optimal_gamma(0.75, B, 4096, 0.10, deployment=PAPER)
    np.testing.assert_array_equal(g, expected)


def test_optimal_gamma_against_brute_force_at_a_few_batches():
    B, g = line_data(draft_length.optimal_gamma(S=16_384, alpha=0.6, c_draft=0.05), "gamma_star")
    for i in range(0, B.size, 97):
        sp = [speclib.speedup(0.6, gam, B[i], 16_384, 0.05, deployment=PAPER) for gam in range(65)]
        assert g[i] == int(np.argmax(sp))


def test_optimal_gamma_shades_every_zero_run_and_labels_the_gutter():
    d = draft_length.optimal_gamma.data()
    B, g = d["B"], d["gamma_star"]
    bands = speclib.core.speculation.zero_gamma_bands(B, g)
    kinds = [kind for _, _, kind in bands]
    # The paper's headline at the defaults: a gutter at small batch, and gamma* back at 0 at very large batch.
    assert "gutter" in kinds
    assert bands[-1][2] == "edge" and bands[-1][1] == B[-1]
    fig = draft_length.optimal_gamma()
    spans = artists(fig, "zero_band")
    assert len(spans) == len(bands)
    labels = [t.get_text() for t in artists(fig, "zero_band_label")]
    assert labels.count("gutter") == kinds.count("gutter")


def test_optimal_gamma_hatches_the_batches_that_do_not_fit():
    d = draft_length.optimal_gamma.data()
    limit = speclib.core.capacity.max_batch(None, None, 4096)
    assert d["max_batch"] == limit
    np.testing.assert_array_equal(d["no_fit"], d["B"] > limit)


def test_speedup_curves_match_speclib_and_mark_each_argmax():
    d = draft_length.speedup_curves.data()
    for i, b in enumerate((1, 8, 64, 512, 4096)):
        sp = d["speedup"][i]
        np.testing.assert_allclose(sp, speclib.speedup(0.75, d["gamma"], b, 4096, 0.10, deployment=PAPER), rtol=1e-12)
        g_star, best = speclib.optimal_gamma(0.75, b, 4096, 0.10, deployment=PAPER)
        assert d["gamma_star"][i, 0] == g_star and d["best"][i, 0] == pytest.approx(best)
        assert g_star == d["gamma"][np.argmax(sp)]  # brute force over the drawn curve
    assert sp[0] == 1.0  # gamma = 0 is plain decoding


def test_speedup_curves_respond_to_alpha():
    lo = draft_length.speedup_curves.data(alpha=0.3)["gamma_star"]
    hi = draft_length.speedup_curves.data(alpha=0.95)["gamma_star"]
    assert hi.sum() > lo.sum()


# --- extra figures -----------------------------------------------------------------


def test_attention_width_lines_and_the_T_and_8T_contrast():
    d = attention.attention_width.data(S=131_072, query_bytes=False)
    T = d["T"]
    for key, model in (("gqa", "Llama-3-70B"), ("mla", "DeepSeek-V4-Flash")):
        np.testing.assert_allclose(d[key], speclib.attention_intensity(T, 131_072, model, query_bytes=False),
                                   rtol=1e-12)
    # MHA goes as ~T, GQA with 8 query heads per KV head as ~8T.
    np.testing.assert_allclose(d["mha"], T, rtol=1e-2)
    np.testing.assert_allclose(d["gqa"], 8 * T, rtol=1e-2)
    fig = attention.attention_width()
    ax = only_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert artist(fig, "ridge").get_ydata()[0] == pytest.approx(RIDGE_BF16)


def test_compressed_attention_panels():
    d = attention.compressed_attention.data()
    S = d["S"]
    assert len(attention.compressed_attention().axes) == 3
    for key in ("hca", "csa", "indexer"):
        for i, t in enumerate((1, 2, 4)):
            np.testing.assert_allclose(d[key][i], speclib.attention_intensity(t, S, variant=key), rtol=1e-12)
    # CSA's main attention: each of T positions attends to its own top 512 of the S/4 compressed positions, and
    # the verify reads their union, counted here with DeepSeek-V4-Flash's MLA constants as docs/model.md prints
    # them (m_c 576, m_q 73,728, f 139,264): disjoint selections as long as they fit, all S/4 positions after.
    m_c, m_q, f = 576, 73_728, 139_264
    for i, t in enumerate((1, 2, 4)):
        kept = np.minimum(512, S / 4)
        union = np.minimum(S / 4, t * kept)
        np.testing.assert_allclose(d["csa"][i], f * t * kept / (m_c * union + m_q * t), rtol=1e-12)
        # once every position's 512 fit, the paper's printed T = 1 cell of Table 1's S = 512 row at every width
        np.testing.assert_allclose(np.round(d["csa"][i][S >= 4 * 512 * t]), 193)
    # HCA's first speculated token (T = 2) crosses the bf16 ridge at an original context of about 45k.
    crossing = S[np.argmax(d["hca"][1] > RIDGE_BF16)]
    assert 35_000 < crossing < 55_000


def test_split_attention_width_against_typed_architectures():
    # the verify width at which one GPU's long-context attention meets the bf16 ridge, T* = rho R m_c / f, with the
    # architecture numbers typed from the configs: DeepSeek-V3 (128 heads; bf16 latent 512 + rope 64) on H200,
    # DeepSeek-V4-Flash (docs/model.md's m_c 576, f 139,264) on B200, Llama-3-70B (64/8 heads of 128, bf16) on H200;
    # rho = tp for one MLA latent, max(1, tp / 8) for eight KV heads, 1 under data-parallel attention (dashed)
    d = attention.split_attention_width.data()
    tp = np.array([1, 2, 4, 8, 16], dtype=float)
    h200 = 989.4e12 / 4.8e12
    one = {"v3": h200 * 1152 / (2 * (2 * 512 + 64) * 128), "v4": RIDGE_BF16 * 576 / 139_264,
           "llama": h200 * (2 * 8 * 128 * 2) / (2 * 2 * 128 * 64)}
    np.testing.assert_allclose(d["tp"], tp)
    np.testing.assert_allclose(d["v3"], tp * one["v3"], rtol=1e-12)
    np.testing.assert_allclose(d["v4"], tp * one["v4"], rtol=1e-12)
    np.testing.assert_allclose(d["llama"], np.maximum(1, tp / 8) * one["llama"], rtol=1e-12)
    for key in ("v3", "v4", "llama"):
        np.testing.assert_allclose(d[f"{key}_dp"], one[key], rtol=1e-12)
    # one speculated token (T = 2) is compute-bound on one GPU of MLA, not from TP2 on for V4-Flash, TP4 for V3
    assert d["v4"][0] < 2 < d["v4"][1] and d["v3"][1] < 2 < d["v3"][2]
    fig = attention.split_attention_width()
    for gid in ("v3", "v4", "llama", "v3_dp", "v4_dp", "one_token"):
        assert artist(fig, gid) is not None
    assert only_axes(fig).get_xscale() == "log"


def test_compressed_attention_knobs():
    d = attention.compressed_attention.data(hca_ratio=16)
    m = speclib.core.attention.v4_attention_what_if(hca_ratio=16)
    np.testing.assert_allclose(d["hca"][0], speclib.attention_intensity(1, d["S"], m, "hca"), rtol=1e-12)


def test_gamma_map_is_optimal_gamma_on_the_grid():
    d = draft_length.gamma_map.data(batch_points=40, context_points=20)
    g, _ = speclib.optimal_gamma(0.75, d["B"][None, :], d["S"][:, None], 0.10, deployment=PAPER)
    np.testing.assert_array_equal(d["gamma_star"], g)
    limits = speclib.core.capacity.max_batch(None, None, d["S"])
    np.testing.assert_array_equal(d["no_fit"], d["B"][None, :] > limits[:, None])


# --- chapter helpers ------------------------------------------------------------------


def test_number_table_text_and_html():
    table = NumberTable(("B", "value"), ((1, 0.5), (12_345, 2.0), (3, None)), formats=("", ".2f"), caption="demo")
    assert repr(table).splitlines() == ["demo", "     B  value", "     1   0.50", "12,345   2.00", "     3      \u2014"]
    html = table._repr_html_()
    assert html.count("<tr>") == 4 and "<caption>demo</caption>" in html


def test_ridge_crossing_interpolates_in_log_x():
    x = np.array([1.0, 10.0, 100.0])
    y = np.array([0.0, 1.0, 2.0])
    assert common.ridge_crossing(x, y, 1.5) == pytest.approx(10 ** 1.5)
    assert common.ridge_crossing(x, y, 5.0) is None
    assert common.ridge_crossing(x, y, -1.0) == 1.0


def test_equation_renders_sympy_latex():
    import sympy as sp
    from speclib.formulas import moe as moe_forms

    assert equation("A(B)", moe_forms.experts_activated_expr).data == "A(B) = " + sp.latex(moe_forms.experts_activated_expr)
    assert equations(("x", 1, 2), ("y", 3)).data.startswith("\\begin{aligned}x &= 1 = 2 \\\\ y &= 3")


def test_knees_agree_with_sympy_solving_the_expressions():
    """moe.knees (closed forms printed to numpy, the exact crossing by
    bisection) against sympy: the knee expressions evaluated exactly and the
    crossing found by nsolve on the uncapped MoE intensity expression."""
    import sympy as sp

    from speclib.formulas import moe as f
    for kwargs in ({}, {"experts": 8, "top_k": 1}, {"experts": 512, "top_k": 16}):
        model = _what_if(**kwargs)
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
            got = speclib.core.moe.knees(model, hw)
            assert set(got) == set(expected)
            for key in expected:
                assert got[key] == pytest.approx(expected[key], rel=1e-9), key


def _what_if(experts=None, top_k=None):
    base = speclib.presets.model("DeepSeek-V4-Flash")
    if experts is None:
        return base
    return dataclasses.replace(base, ffn=dataclasses.replace(base.ffn, n_routed=experts, top_k=top_k))


# --- the part I chapters' tables ------------------------------------------------------


def _brute_gamma(alpha, B, S, c, model=None):
    """gamma* by trying every draft length with speclib.speedup, one batch at a time, priced as the paper prices
    DeepSeek-V4's attention (the part I tables' pricing)."""
    paper = PAPER.replace(model=speclib.presets.model(model)) if model else PAPER
    gains = [speclib.speedup(alpha, g, B, S, c, deployment=paper) for g in range(65)]
    return int(np.argmax(gains)), float(np.max(gains))


def test_break_even_table_speedup_exceeds_one_exactly_when_alpha_beats_the_secant():
    table = pricing.break_even()
    assert "ledger" in table.caption
    assert any(slope > 0.75 and gain > 1 for _, slope, _, gain in table.rows)  # the slope misleads there
    for B, slope, secant, gain in table.rows:
        assert (gain > 1) == (0.75 > secant)
        # the speedup of one drafted token, written out from N = 1 + alpha and Sp = N / (1 + p)
        assert gain == pytest.approx(1.75 / (1 + secant), rel=1e-12)


def test_required_acceptance_is_the_secant_at_its_ends():
    need = pricing.required_acceptance(S=8192, batches=np.arange(1, 3001))
    from speclib.core.cost import verify_price
    coarse = verify_price(np.unique(np.round(np.geomspace(1, 3000, 50))), 8192, 0.1, attention="paper")["total"]
    assert need["lowest"] <= coarse.min() + 1e-12 and need["highest"] >= coarse.max() - 1e-12
    assert need["lowest"] == pytest.approx(verify_price(need["lowest_at"], 8192, 0.1, attention="paper")["total"],
                                           rel=1e-12)
    assert need["ledger_highest"] >= need["highest"]


def test_gutter_table_is_where_no_draft_length_pays():
    table = draft_length.gutter_table()
    assert "ledger" in table.caption
    batches = [float(r[0].rstrip(common.NOT_HELD).replace(",", "")) for r in table.rows]
    for B, (_, price, one, g, best) in zip(batches, table.rows):
        assert (g, best) == pytest.approx(_brute_gamma(0.75, B, 4096, 0.1), rel=1e-12)
        if price > 0.75:
            assert one < 1
    assert [r[3] for B, r in zip(batches, table.rows) if 4 <= B <= 13] == [0] * 4  # Figure 3's gutter, 4 to 13


def test_first_look_names_its_step_model_and_matches_a_brute_force_search():
    table = draft_length.first_look(batches=(1, 256))
    assert "ledger" in table.caption
    llama_g, moe_g = table.rows[0][2:], table.rows[2][2:]
    def gamma(cell):
        return int(str(cell).rstrip(common.NOT_HELD))

    assert [gamma(x) for x in llama_g] == [_brute_gamma(0.75, B, 4096, 0.1, "Llama-3-70B")[0] for B in (1, 256)]
    assert [gamma(x) for x in moe_g] == [_brute_gamma(0.75, B, 4096, 0.1)[0] for B in (1, 256)]
    # Llama-3-70B's 256 sequences of 4,096 tokens need 336 GB of cache: one B200 does not hold them
    assert str(llama_g[1]).endswith(common.NOT_HELD) and not str(llama_g[0]).endswith(common.NOT_HELD)


def test_where_ahead_ends_where_the_brute_force_gains_cross():
    first, last = draft_length.where_ahead()
    for B, ahead in ((first - 1, False), (first, True), (last, True), (last + 1, False)):
        dense = _brute_gamma(0.75, B, 4096, 0.1, "Llama-3-70B")[1]
        moe = _brute_gamma(0.75, B, 4096, 0.1)[1]
        assert (moe > dense) == ahead


def test_hca_first_token_counted_by_hand():
    """At 8,192 tokens HCA reads 8192/128 = 64 latents of 576 bytes and a
    73,728-byte query per token, memory-bound at widths 1 and 2: the second
    token adds 73,728 / (64 x 576 + 73,728) = 2/3 of the first's bytes, and
    the slope at width 2 is 2 x 73,728 / (64 x 576 + 2 x 73,728) = 0.8."""
    rows = {r[0]: r for r in attention.hca_first_token().rows}
    assert rows[8192][2] == pytest.approx(0.8, rel=1e-12)
    assert rows[8192][3] == pytest.approx(2 / 3, rel=1e-12)
    assert rows[49152][1] == 1 and rows[49152][2] == pytest.approx(1.0)  # the first speculated token is compute-bound
    assert rows[49152][3] < 1
