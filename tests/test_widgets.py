"""The live figures in a kernel (:mod:`speclib.presentation.interactive`):
controls made from each definition, a move redraws once with speclib's
numbers, the frame is kept while nothing but data changes, and the cell says
how to bring it to life where no kernel drew it. (Every definition's widget
is also built and moved in tests/test_figure_definitions.py.)"""
import ipywidgets as W
import numpy as np
import pytest

import speclib
from speclib.presentation.figures import attention, draft_length, expert_tax, pricing
from speclib.presentation.interactive import LiveFigure


def test_controls_are_the_definitions_with_the_papers_ranges():
    w = draft_length.optimal_gamma.widget()
    S, alpha, c = (w.controls[n] for n in ("S", "alpha", "c_draft"))
    assert isinstance(S, W.FloatLogSlider) and (S.base, S.min, S.max, S.value) == (2, 9, 17, 4096)
    assert (alpha.min, alpha.max, alpha.value) == (0.01, 0.99, 0.75)
    assert (c.min, c.max, c.value) == (0, 0.5, 0.1)
    assert isinstance(pricing.ledger.widget().controls["components"], W.Checkbox)
    assert isinstance(expert_tax.expert_tax.widget().controls["weights"], W.Dropdown)
    assert isinstance(expert_tax.expert_tax.widget().controls["experts"], W.IntSlider)


def test_a_move_redraws_once_with_speclibs_numbers():
    w = pricing.ledger.widget()
    redraws = []
    w.observe(lambda change: redraws.append(change), names="children")
    before = w.image.value
    w.controls["S"].value = 1024  # as a reader moving the slider
    assert w.image.value != before
    np.testing.assert_allclose(w.data["total"], speclib.marginal_cost(w.data["B"], 1024, 0.1)["total"], rtol=1e-12)
    w.update(S=2048, c_draft=0.3)
    np.testing.assert_allclose(w.data["total"], speclib.marginal_cost(w.data["B"], 2048, 0.3)["total"], rtol=1e-12)
    g = draft_length.optimal_gamma.widget().update(alpha=0.6, S=16384).data
    np.testing.assert_array_equal(g["gamma_star"], speclib.optimal_gamma(0.6, g["B"], 16384, 0.1)[0])


def test_unknown_control_is_rejected():
    with pytest.raises(ValueError, match="unknown control"):
        pricing.ledger.widget().update(seq_len=4)


def test_the_widget_keeps_the_fixed_parameters_and_the_coarser_live_grid():
    w = pricing.ledger_dense.widget()
    assert w.data["params"]["model"] == "Llama-3-70B"
    m = draft_length.gamma_map.widget()
    assert m.data["gamma_star"].shape == (50, 100)  # the live grid, not the static figure's 90 x 160


def test_a_table_figure_is_live_as_html():
    w = attention.attention_table.widget()
    assert isinstance(w.image, W.HTML) and "<table" in w.image.value
    w.update(model="Llama-3-70B")
    assert "gqa" in w.image.value


def test_the_frame_is_kept_while_only_data_moves_and_redrawn_when_an_axis_changes():
    w = pricing.ledger.widget()
    frame = w._frame
    w.update(S=2048)
    assert w._frame == frame  # the same axes: only the data was drawn again
    w.update(c_draft=0.5)  # a costly drafter grows the y axis
    assert w._frame != frame


def test_a_cell_without_a_kernel_says_how_to_bring_it_to_life():
    bundle = LiveFigure(pricing.ledger)._repr_mimebundle_()
    assert LiveFigure.NOT_LIVE_HINT in bundle["text/plain"]
