"""The deployments chapter's figures and tables: map data against pointwise
calls, zero regions against a brute-force scan, knees against the paper."""
import numpy as np
import pytest

import speclib
from speclib import presets
from speclib.core import attention, speculation
from speclib.presentation.figures import deployments as dep
from speclib.presentation.figures.common import NOT_HELD


def test_map_data_equals_pointwise_calls():
    data = dep.gamma_maps.data(models=("qwen3-235b",), chips=("mi355x",), batch_points=7, context_points=5, alpha=0.8,
                               c_draft=0.05)
    *_, B, S, g = data["speclib_maps"][0]
    assert g.shape == (5, 7)
    for i, s in enumerate(S):
        for j, b in enumerate(B):
            assert g[i, j] == speclib.optimal_gamma(0.8, float(b), float(s), 0.05, "qwen3-235b", "mi355x")[0]


def test_maps_share_one_colour_scale_and_keep_their_data():
    params = dict(models=("DeepSeek-V4-Flash", "Llama-3-70B"), chips=("B200", "H200"), batch_points=12,
                  context_points=6)
    fig, data = dep.gamma_maps(**params), dep.gamma_maps.data(**params)
    assert [(m.name, h.name) for m, h, *_ in data["speclib_maps"]] == [
        ("DeepSeek-V4-Flash", "B200"), ("DeepSeek-V4-Flash", "H200"), ("Llama-3-70B", "B200"), ("Llama-3-70B", "H200"),
    ]
    meshes = [a for ax in fig.axes for a in ax.collections if (a.get_gid() or "").startswith("gamma_map:")]
    assert len(meshes) == 4
    assert len({tuple(m.norm.boundaries) for m in meshes}) == 1  # one colour scale
    for mesh, (*_, g) in zip(meshes, data["speclib_maps"]):
        np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(g.shape), g)
    # gamma* = 0 is drawn in its own colour, the first of the scale
    from matplotlib.colors import to_hex
    from speclib.presentation.style import COLORS
    assert to_hex(meshes[0].cmap(meshes[0].norm(0))) == COLORS["gamma_zero"]


def test_model_and_chip_maps_default_to_the_chapters_sets():
    assert [m.name for m, *_ in dep.model_maps.data(batch_points=4, context_points=3)["speclib_maps"]] == list(dep.MODELS)
    assert [h.name for _, h, *_ in dep.chip_maps.data(batch_points=4, context_points=3)["speclib_maps"]] == list(dep.CHIPS)


def _paper(model, chip):
    """The chapter's deployments: DeepSeek-V4's attention priced as the paper prices it."""
    return speclib.Deployment(model, chip, attention="paper")


def brute_force_zero_runs(model, chip, batches, seq=4096):
    paper = _paper(model, chip)
    gamma = [speclib.optimal_gamma(0.75, float(b), seq, 0.1, deployment=paper)[0] for b in batches]
    runs, start = [], None
    for i, g in enumerate(gamma + [1]):
        if g == 0 and start is None:
            start = i
        elif g != 0 and start is not None:
            runs.append((batches[start], batches[i - 1]))
            start = None
    return runs


def zero_regions(model, chip, seq=4096, batch_range=(1, 30_000), points=600):
    """gamma* = 0 along the gutter table's batch grid (:func:`speclib.core.speculation.gamma_regions`)."""
    batches = np.unique(np.round(np.geomspace(*batch_range, points)))
    return speculation.gamma_regions(0.75, seq, 0.1, batches=batches, deployment=_paper(model, chip))


@pytest.mark.parametrize("model", ["DeepSeek-V4-Flash", "Qwen3-235B-A22B", "Llama-3-70B", "Mixtral-8x7B"])
def test_zero_regions_match_a_scan_over_every_batch(model):
    z = zero_regions(model, "B200", batch_range=(1, 200), points=400)  # every integer batch 1..200
    runs = brute_force_zero_runs(model, "B200", list(range(1, 201)))
    found = ([z["low_edge"]] if z["low_edge"] else []) + z["gutters"] + ([z["high_edge"]] if z["high_edge"] else [])
    assert found == runs


def test_the_dense_model_has_no_gutter_and_the_paper_model_has_one():
    assert zero_regions("Llama-3-70B", "B200")["gutters"] == []
    assert zero_regions("Llama-3-70B", "B200")["low_edge"] is None
    assert zero_regions("DeepSeek-V4-Flash", "B200")["gutters"] != []


def test_gqa_what_if_keeps_everything_but_attention():
    base = presets.DEEPSEEK_V4_FLASH
    variant = attention.with_gqa_attention(base, n_kv_heads=8, head_dim=128)
    assert variant.ffn == base.ffn and variant.hidden_size == base.hidden_size
    assert variant.attention.kind == "gqa"
    assert variant.context_bytes == 2 * 8 * 128 * base.attention.kv_bytes
    with pytest.raises(ValueError, match="n_kv_heads must divide"):
        attention.with_gqa_attention(base, n_kv_heads=7)


def test_knee_table_on_b200_gives_the_papers_knees():
    table = dep.knee_table(("B200",))
    row = dict(zip(table.columns, table.rows[0]))
    # docs/model.md: ridges 281 / 563 / 1125; MoE meets the fp4 ridge at ~10,950 tokens;
    # dense bf16 FFN knee R/2 * 2 B = 281; MLA compute-bound from T ~ 1.16
    assert (row["ridge bf16"], row["ridge fp8"], row["ridge fp4"]) == ("281", "562", "1,125")
    assert abs(float(row["MoE compute knee"].replace(",", "")) - 10_950) / 10_950 < 0.01
    assert row["dense FFN knee"] == "281"
    assert row["T, DeepSeek-V4-Flash"] == "1.16"
    # V4-Pro: 128 heads on the same 576-byte latent -> twice the FLOPs per byte, half the T
    assert row["T, DeepSeek-V4-Pro"] == f"{1.16 / 2:.2f}"
    # GQA 64/8 in bf16: f / m_c = 2*64*256 / (2*8*128*2) = 8 FLOP/B -> T = 281.25 / 8
    assert row["T, Llama-3-70B"] == f"{281.25 / 8:.2f}"


def test_tables_render_as_html_and_text():
    table = dep.gutter_table(("Llama-3-70B", "Mixtral-8x7B"), ("B200",))
    text, page = repr(table), table._repr_html_()
    # Mixtral on one B200 cannot hold 30,000 sequences of 4,096 tokens, so the batch carries the mark
    for name in ("Llama-3-70B", "Mixtral-8x7B", f"30,000{NOT_HELD} (every batch)", "the roofline per layer"):
        assert name in text and name in page
    assert 'class="speclib-number-table' in page  # the book's padded table style
    assert page.startswith("<table") and "<caption>" in page
    lines = text.splitlines()[1:]  # after the caption: header and one line per row
    assert len(lines) == 3


@pytest.mark.parametrize("kwargs, message", [
    (dict(models=(), chips=("B200",)), "at least one preset"),
    (dict(ncols=0), "ncols"),
    (dict(batch_points=1), "batch_points"),
    (dict(context_range=(4096, 512)), "context_range\\[1\\]"),
])
def test_bad_figure_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dep.gamma_maps(**kwargs)


# --- the chapter's statements, so that they stay true as the model changes -------------
def small_batch_zero(model, chip, seq=4096):
    z = zero_regions(model, chip, seq=seq)
    return ([z["low_edge"]] if z["low_edge"] else []) + z["gutters"]


@pytest.mark.parametrize("chip", dep.CHIPS)
def test_claim_dense_model_never_has_a_gutter(chip):
    assert small_batch_zero("Llama-3-70B", chip) == []


def test_claim_gutter_grows_with_experts_per_active_expert():
    ends = [small_batch_zero(m, "B200")[-1][1] for m in ("DeepSeek-V3", "DeepSeek-V4-Flash", "DeepSeek-V4-Pro")]
    assert ends[0] < ends[1] < ends[2]  # E/k = 32, 42.7, 64


def test_claim_coarse_experts_leave_only_a_lone_sequence():
    assert small_batch_zero("Mixtral-8x7B", "B200") == [(1.0, 1.0)]
    assert small_batch_zero("Mixtral-8x7B", "B200", seq=32768) == []
    assert small_batch_zero("Qwen3-235B-A22B", "B200", seq=32768) == []


def test_claim_the_gutter_hardly_moves_between_chips():
    gutters = [zero_regions("DeepSeek-V4-Flash", chip)["gutters"] for chip in dep.CHIPS]
    assert all(len(g) == 1 for g in gutters)
    starts, ends = [g[0][0] for g in gutters], [g[0][1] for g in gutters]
    assert max(starts) - min(starts) <= 2 and max(ends) - min(ends) <= 2


def test_claim_the_large_batch_edge_follows_the_expert_ridge():
    edge = {chip: zero_regions("DeepSeek-V4-Flash", chip)["high_edge"] for chip in dep.CHIPS}
    assert edge["MI355X"] is None and edge["GB300"] is None
    assert edge["H200"][0] < edge["B200"][0] and edge["MI325X"][0] < edge["B200"][0]
    assert edge["H100-SXM"][0] < edge["B200"][0]


def test_claim_mla_attention_is_compute_bound_in_plain_decode_on_h200_and_mi325x():
    from speclib.core.attention import compute_bound_width

    width = {chip: compute_bound_width("DeepSeek-V4-Flash", chip) for chip in dep.CHIPS}
    assert width["H200"] < 1 and width["MI325X"] < 1
    assert all(width[c] > 1 for c in ("H100-SXM", "B200", "MI355X", "GB300"))
    assert all(1 < width[c] < 2 for c in ("H100-SXM", "B200", "MI355X", "GB300"))  # one speculated token crosses
    assert all(compute_bound_width("DeepSeek-V4-Pro", c) < 1 for c in dep.CHIPS)
    assert all(compute_bound_width("Llama-3-70B", c) > 10 for c in dep.CHIPS)


def test_claim_gqa_in_place_of_mla_closes_the_gutter_at_long_context():
    gqa = attention.with_gqa_attention("DeepSeek-V4-Flash")
    assert small_batch_zero("DeepSeek-V4-Flash", "B200", seq=32768) != []
    assert small_batch_zero(gqa, "B200", seq=32768) == []
    assert zero_regions(gqa, "B200")["high_edge"] is None


def test_claim_a_draft_of_one_survives_long_context_on_high_bf16_ridge_chips():
    batches = [2000, 10000, 30000]
    for chip, expected in [("H100-SXM", 1), ("MI355X", 1), ("GB300", 1), ("B200", 0), ("H200", 0), ("MI325X", 0)]:
        gamma_star, _ = speclib.optimal_gamma(0.75, batches, 131072, 0.1, deployment=_paper("DeepSeek-V4-Flash", chip))
        assert list(gamma_star) == [expected] * 3, chip


def test_the_gutter_table_gives_the_last_batch_where_speculation_pays_on_every_whole_batch():
    """Figure 3's grid, every whole batch: the table's last batch speculates, the
    next one does not, and no batch past it does (pointwise optimal_gamma)."""
    table = dep.gutter_table(("DeepSeek-V4-Flash",), ("B200",))
    last = int(table.rows[0][3].replace(",", "").rstrip(NOT_HELD))
    paper = _paper("DeepSeek-V4-Flash", "B200")

    def gamma(b):
        return speclib.optimal_gamma(0.75, float(b), 4096, 0.1, deployment=paper)[0]

    assert gamma(last) > 0 and gamma(last + 1) == 0
    assert all(gamma(b) == 0 for b in range(last + 1, 30_001, 97))
    (a, b), = brute_force_zero_runs("DeepSeek-V4-Flash", "B200", list(range(1, 201)))
    assert table.rows[0][2] == f"{a}\u2013{b}"


def test_the_gutter_table_refuses_a_batch_range_that_is_not_whole_batches():
    with pytest.raises(ValueError, match=r"batch_range\[1\]"):
        dep.gutter_table(("Llama-3-70B",), ("B200",), batch_range=(1, 0.5))
