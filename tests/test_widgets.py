"""Live widgets: every control changes the figure, and what is drawn after a
move is speclib's value at the new settings."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import speclib  # noqa: E402
from speclib import widgets  # noqa: E402
from speclib.presentation.figures.paper import artist  # noqa: E402

# A move for every control of every widget (a value different from the default).
MOVES = {
    "expert_tax": {"experts": 64, "top_k": 2, "weights": "fp8", "hardware": "H100-SXM"},
    "expert_tax_log": {"experts": 128, "top_k": 8, "weights": "bf16", "hardware": "MI300X"},
    # (variant before model: a GQA model has no variants to pick)
    "attention_table": {"variant": "hca", "hardware": "H100-SXM", "query_bytes": False, "model": "Llama-3-70B"},
    "attention_width": {"S": 1024.0, "query_bytes": False, "hardware": "H200"},
    "compressed_attention": {"hca_ratio": 32, "csa_top_k": 2048, "csa_ratio": 8, "query_bytes": False},
    "ledger": {"S": 512.0, "c_draft": 0.3, "components": True, "query_bytes": True},
    "optimal_gamma": {"S": 32768.0, "alpha": 0.9, "c_draft": 0.02},
    "speedup_curves": {"S": 65536.0, "alpha": 0.5, "c_draft": 0.25},
    "gamma_map": {"alpha": 0.4, "c_draft": 0.3},
    # the chapters on the sequel
    "drafter_cost": {"gamma": 9, "roofline": "per-component", "hardware": "H100-SXM"},
    "drafter_crossover": {"roofline": "per-component", "hardware": "MI300X"},
    "hybrid_intensity": {"S": 1024.0, "query_bytes": False, "hardware": "H200"},
    "kv_state_bytes": {"full_attention_layers": 20, "kv_format": "fp8"},
    "concurrency_gamma": {"roofline": "per-component", "acceptance": "geometric"},
    "concurrency_throughput": {"roofline": "per-component", "relative": False},
    "throughput_tpot": {"roofline": "per-component", "acceptance": "geometric"},
    "pricing_ratio": {"S": 16384.0, "hardware": "H200", "model": "Llama-3-70B"},
    "pricing_gamma": {"drafter": "mtp", "acceptance": "geometric"},
}


def snapshot(w):
    """Everything a reader sees: the picture (or table) bytes."""
    return w.image.value if hasattr(w, "image") else w.html.value


def test_every_factory_has_its_moves():
    assert set(MOVES) == set(widgets.FACTORIES)


@pytest.mark.parametrize("name", sorted(MOVES))
def test_factory_returns_a_container_with_controls(name):
    w = widgets.FACTORIES[name]()
    assert isinstance(w, ipywidgets.VBox)
    assert set(w.controls) == set(MOVES[name])
    for control in w.controls.values():
        assert isinstance(control, ipywidgets.ValueWidget)
        assert control in _descendants(w)
    text = repr(w)
    assert text.startswith(type(w).__name__) and "0x" not in text
    assert repr(widgets.FACTORIES[name]()) == text  # deterministic
    # A notebook opened without running it shows the text: it says what the cell is and how to make it live.
    bundle = w._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    assert bundle["text/plain"].splitlines() == [text, "(a live figure: run this cell to get its controls)"]


def _descendants(box):
    out = []
    for child in box.children:
        out.append(child)
        if isinstance(child, ipywidgets.Box):
            out.extend(_descendants(child))
    return out


@pytest.mark.parametrize("name", sorted(MOVES))
def test_each_control_changes_what_is_shown(name):
    w = widgets.FACTORIES[name]()
    for control, value in MOVES[name].items():
        before = snapshot(w)
        w.update(**{control: value})
        assert w.controls[control].value == value
        assert snapshot(w) != before, f"moving {control} did not change {name}"


def test_moving_a_control_directly_redraws():
    # What a reader's slider drag does: set the value, the observer redraws.
    w = widgets.ledger()
    before = snapshot(w)
    w.controls["c_draft"].value = 0.4
    assert snapshot(w) != before
    _, total = artist(w.figure, "total").get_data()
    assert total.max() == pytest.approx(1.4)


def test_unknown_control_is_rejected():
    with pytest.raises(ValueError, match="unknown control"):
        widgets.ledger().update(alpha=0.5)


def test_sequence_length_slider_is_the_papers_mapping():
    s = widgets.ledger().controls["S"]
    # S = 512 * 2**(8u), u in [0, 1]: 512 ... 131,072, default 8,192 (u = 0.5).
    assert s.base ** s.min == 512 and s.base ** s.max == 131_072
    assert s.value == 8192
    assert s.step == pytest.approx(8 * 0.01)
    assert widgets.optimal_gamma().controls["S"].value == 4096


def test_paper_slider_ranges():
    g = widgets.optimal_gamma().controls
    assert (g["alpha"].min, g["alpha"].max, g["alpha"].value) == (0.01, 0.99, 0.75)
    assert (g["c_draft"].min, g["c_draft"].max, g["c_draft"].value) == (0.0, 0.5, 0.1)


def test_ledger_after_moves_is_marginal_cost():
    w = widgets.ledger().update(S=2048.0, c_draft=0.2)
    B, total = artist(w.figure, "total").get_data()
    np.testing.assert_allclose(total, speclib.marginal_cost(B, 2048.0, 0.2)["total"], rtol=1e-12)
    assert not artist(w.figure, "band_moe").get_visible()
    w.update(components=True)
    assert artist(w.figure, "band_moe").get_visible()


def test_optimal_gamma_after_moves_is_optimal_gamma():
    w = widgets.optimal_gamma().update(S=16384.0, alpha=0.6, c_draft=0.05)
    B, g = artist(w.figure, "gamma_star").get_data()
    expected, _ = speclib.optimal_gamma(0.6, B, 16384.0, 0.05)
    np.testing.assert_array_equal(g, expected)


def test_speedup_curves_after_moves():
    w = widgets.speedup_curves().update(alpha=0.9)
    gam, sp = artist(w.figure, "speedup_2").get_data()
    np.testing.assert_allclose(sp, speclib.speedup(0.9, gam, 64, 4096, 0.1), rtol=1e-12)


def test_expert_tax_clips_top_k_to_the_expert_count():
    w = widgets.expert_tax().update(experts=8, top_k=16)
    assert w.plot.effective_model.ffn.top_k == 8


def test_attention_table_widget_uses_gqa_for_a_gqa_model():
    w = widgets.attention_table().update(model="Llama-3-70B", variant="csa")
    assert w.table.variant == "gqa"
    assert w.controls["variant"].disabled
    assert 'class="compute-bound"' not in w.html.value
    w.update(model="DeepSeek-V4-Flash")
    assert w.table.variant == "csa" and not w.controls["variant"].disabled


def test_live_frame_is_redrawn_when_axes_change():
    # A move that changes the axis limits must not leave stale tick labels:
    # the result equals a fresh widget built at the new settings.
    w = widgets.ledger()
    w.update(c_draft=0.5)  # total up to 1.5: the y axis grows
    fresh = widgets.ledger().update(c_draft=0.5)
    assert w.figure.axes[0].get_ylim() == fresh.figure.axes[0].get_ylim()
    assert snapshot(w) == snapshot(fresh)
    w.update(c_draft=0.1)
    assert snapshot(w) == snapshot(widgets.ledger())


def test_sequel_widgets_after_moves_are_speclibs():
    from speclib.core import drafters
    from speclib.evidence import sequel
    from speclib.presentation.figures import sequel as fig

    w = widgets.drafter_cost().update(gamma=6, roofline="per-component", hardware="H200")
    B, mtp = artist(w.figure, "draft_mtp").get_data()
    np.testing.assert_allclose(mtp, drafters.draft_time(6, B, "mtp", "H200", roofline="per-component") * 1e6,
                               rtol=1e-12)
    w = widgets.pricing_gamma().update(drafter="mtp")
    _, loss = artist(w.figure, "loss_per-component").get_data()
    np.testing.assert_allclose(loss, 100 * sequel.compare(roofline="per-component")["mtp"].policy_shortfall,
                               rtol=1e-12, atol=1e-13)
    w = widgets.kv_state_bytes().update(full_attention_layers=5)
    assert w.plot.crossing == fig.kv_state_crossing(fig.hybrid_architecture(full_attention_layers=5))


def test_sequel_widget_slider_moves_keep_the_frame():
    # a slider move changes only data: the cached frame is reused (fast redraws)
    for name, control, values in [("drafter_cost", "gamma", (5, 6, 7)), ("hybrid_intensity", "S", (2048.0, 4096.0)),
                                  ("pricing_ratio", "S", (2048.0, 8192.0))]:
        w = widgets.FACTORIES[name]()
        w.update(**{control: values[0]})
        frame = w._frame
        for v in values[1:]:
            w.update(**{control: v})
            assert w._frame == frame, (name, v)
