"""The live figures in a kernel (:mod:`speclib.presentation.interactive`):
controls made from each definition, a move redraws once with speclib's
numbers, the frame is kept while nothing but data changes, and the cell says
how to bring it to life where no kernel drew it. After a tour of its controls,
every live figure shows what a fresh draw at those values shows; the tour's
first move also checks that the widget has one control per definition control
and redraws with the value moved (a live table's widget: in
tests/test_figure_definitions.py)."""
import ipywidgets as W
import numpy as np
import pytest
from matplotlib.axis import Axis as MplAxis

import speclib
from speclib.presentation import definition, style
from speclib.presentation.definition import (REGISTRY, Area, Axis, Bands, Choice, Heatmap, HLine, Line, Panel, Points,
                                             Slider, Text, Toggle, VLine)
from speclib.presentation.figures import attention, draft_length, expert_tax, pricing
from speclib.presentation.interactive import LiveFigure
from speclib.presentation.static import draw


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
    paper = dict(attention="paper")  # the paper's figures price DeepSeek-V4's attention as the paper does
    np.testing.assert_allclose(w.data["total"], speclib.marginal_cost(w.data["B"], 1024, 0.1, **paper)["total"],
                               rtol=1e-12)
    w.update(S=2048, c_draft=0.3)
    np.testing.assert_allclose(w.data["total"], speclib.marginal_cost(w.data["B"], 2048, 0.3, **paper)["total"],
                               rtol=1e-12)
    g = draft_length.optimal_gamma.widget().update(alpha=0.6, S=16384).data
    np.testing.assert_array_equal(g["gamma_star"], speclib.optimal_gamma(
        0.6, g["B"], 16384, 0.1, deployment=speclib.Deployment(**paper))[0])


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


# --- a widget's image after moves is a fresh draw's -------------------------------------------------------------
#
# A widget updates its artists in place and keeps the pixels of texts that did not change; these tests hold what it
# shows, after a tour of its controls, against a figure drawn afresh at the controls' values by the static renderer
# (the same layout: the widget keeps the one it had at its first draw).

def _synthetic_compute(p, xp):
    """Numbers for a definition that takes the paths the book's live figures (as they are) may not: limits fitted to
    data that move, a menu that changes an axis' scale, bands that split, a note that leaves the chart, a series that
    appears, legend labels and point colours that change, a map whose colour range follows its values."""
    a = float(p.a)
    x = np.geomspace(1.0, 1000.0, 40)
    rows = np.array([1.0 + a * np.sin(x / 50.0) ** 2, 2.0 + np.cos(a * x / 200.0)]) * (1.0 + a)
    band = np.sin(np.log(x) * a * 3.0) > 0.3
    grid_x, grid_y = np.linspace(0.0, 1.0, 12), np.linspace(0.0, 2.0, 9)
    z = np.cos(a * grid_x[None, :] * 4.0) * grid_y[:, None] * a
    return {"x": x, "rows": rows, "top": rows[0], "floor": np.full_like(x, 0.5), "fill_mask": x < 100.0 * a,
            "labels": [f"first (a = {a:.1f})", "second"], "band": band,
            "points_x": x[::8], "points_y": rows[0, ::8],
            "point_colors": ["#1f77b4" if a < 1.5 else "#d62728"] * 5,
            "row_colors": ["#1f77b4" if a < 2.0 else "#2ca02c", "#ff7f0e"],
            "h": 1.0 + 2.0 * a, "v": 10.0 ** (1.0 + a / 2.0), "note_x": 30.0 if a < 2.5 else np.nan,
            "note_y": float(rows[0, 20]), "extra_y": rows[1] * 1.5, "grid_x": grid_x, "grid_y": grid_y, "z": z,
            "hot": z > a * 0.8, "x3": np.linspace(0.0, 1.0, 30), "y3": np.linspace(0.1, 1.0, 30) ** a,
            "h3": 1.02, "h4": a / 2.0}


def _synthetic():
    name = "synthetic live figure (tests only)"
    f = definition.Figure(
        name=name, title="Synthetic at a = {a:.2f}\nthe second line is not live", compute=_synthetic_compute,
        controls=(Slider("a", "a", 0.1, 3.0, 1.0), Choice("scale", "y scale", ("linear", "log"), "linear"),
                  Toggle("extra", "extra line", False)),
        panels=(Panel(Axis("x", "log"), Axis("y = {a:.1f} things", "scale"), (
                    Area("x", "top", y0="floor", where="fill_mask", label="filled"),
                    Line("x", "rows", labels="labels", colors="row_colors"),
                    Points("points_x", "points_y", colors="point_colors", label="points"),
                    HLine("h", label="h", text="h = {h:.2f}"), VLine("v", text="v"),
                    # These change their artists' number, so they and the series after them are made again.
                    Bands("x", "band", label="bands", text="band", inner_text="inner"),
                    Text("note_x", "note_y", "a note at {a:.2f}", marker="o", arrow=True, dx=20, dy=20),
                    Line("x", "extra_y", label="extra", when="extra")), title="left {a:.1f}", legend="best"),
                Panel(Axis("grid x"), Axis("grid y"),
                      (Heatmap("grid_x", "grid_y", "z", mask="hot", label="z at {a:.1f}"),), title="map"),
                # A rule drawn last, inside the view the data before it give but outside their range: on a fresh
                # axes it leaves the view alone (unless the scale is log, which autoscales once more at the end).
                Panel(Axis("x3"), Axis("y3", "scale"), (Line("x3", "y3"), HLine("h3"))),
                # A rule alone: a fresh axes views 0..1 and moves only for a rule outside that.
                Panel(Axis("x4"), Axis("y4"), (HLine("h4"),))),
        size=(14.0, 4.0))
    definition.REGISTRY.pop(name)  # not one of the book's figures
    return f


def _still():
    """A definition whose moves change a legend's label and move a note while nothing else moves: the pixels under
    them stay the same, so only their having changed says they must be drawn again."""
    name = "still live figure (tests only)"
    f = definition.Figure(
        name=name, title="Still", controls=(Slider("a", "a", 0.0, 1.0, 0.5),),
        compute=lambda p, xp: {"x": np.array([0.0, 1.0]), "y": np.array([0.1, 0.2]), "at": 0.1 + 0.4 * p.a},
        panels=(Panel(Axis("x", lo=0, hi=1), Axis("y", lo=0, hi=1),
                      (Line("x", "y", label="a line at {a:.2f}"), Text("at", 0.8, "a note that moves")),
                      legend="upper left"),))
    definition.REGISTRY.pop(name)
    return f


SYNTHETIC, STILL = _synthetic(), _still()
LIVE_FIGURES = [f for f in REGISTRY.values() if f.controls and f.panels[0].series[0].kind != "table"] + [SYNTHETIC,
                                                                                                         STILL]


def _tour(f):
    """Moves as a reader makes them: each control in turn to another value (a slider to its top, a menu to its next
    option, a checkbox flipped), then the first slider to its bottom, two controls at once back to their defaults and
    the first slider halfway between its default and its top."""
    moves = []
    for c in f.controls:
        moves.append({c.name: c.hi if isinstance(c, Slider) else [v for v in c.values() if v != c.value][0]})
    sliders = [c for c in f.controls if isinstance(c, Slider)]
    if sliders:
        moves.append({sliders[0].name: sliders[0].lo})
    if len(f.controls) > 1:
        first, second = f.controls[:2]
        moves.append({first.name: first.value, second.name: second.value})
    if sliders:
        s = sliders[0]
        moves.append({s.name: round(s.value + (s.hi - s.value) / 2) if s.integer else s.value + (s.hi - s.value) / 2})
    return moves


def _artists(artist):
    """``artist`` and everything under it, an axis' ticks aside: an axis lists its ticks by making them (minor
    ones too), and the widget animates none of them (it animates its axes' own children and the figure's title)."""
    yield artist
    if isinstance(artist, MplAxis):
        yield from (artist.label, artist.offsetText)
        return
    for child in artist.get_children():
        yield from _artists(child)


def _pixels(fig, hide=()):
    """RGBA of a full draw of ``fig`` (every artist drawn in place, none animated), with ``hide`` hidden."""
    shown = {a: a.get_visible() for a in hide}
    for a in _artists(fig):
        a.set_animated(False)
    for a in hide:
        a.set_visible(False)
    try:
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba()).copy()
    finally:
        for a, visible in shown.items():
            a.set_visible(visible)


def _fresh_like(f, w):
    """A figure drawn afresh (the static renderer, a new canvas) at the widget's values, in the widget's layout."""
    fig = style.new_canvas_figure(f.size)
    draw(f, f.data(**{**f.live_params, **w.values()}), fig, live=True)
    fig.set_layout_engine("none")
    assert len(fig.axes) == len(w.figure.axes)
    for fresh, live in zip(fig.axes, w.figure.axes):
        fresh.set_position(live.get_position(original=True), which="original")
        fresh.set_position(live.get_position(original=False), which="active")
    if fig.get_suptitle():
        fig._suptitle.set_position(w.figure._suptitle.get_position())  # placed by the first layout
    return fig


def _data_artists(fig):
    """Everything but the axes' frames (background, spines, ticks, grid, axis labels): what a widget draws over its
    cached frame."""
    drawn = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        frame = {ax.patch, *ax.spines.values(), ax.xaxis, ax.yaxis}
        drawn += [a for a in ax.get_children() if a not in frame]
    return drawn


@pytest.mark.parametrize("f", LIVE_FIGURES, ids=lambda f: f.name)
def test_a_widget_after_moves_draws_what_a_fresh_draw_draws(f):
    w = f.widget()
    # one control per definition control, and the first move redraws with the value it set
    assert list(w.controls) == [c.name for c in f.controls]
    before = w.image.value
    for i, move in enumerate(_tour(f)):
        w.update(**move)
        if i == 0:
            c = f.controls[0]
            assert set(move) == {c.name} and w.data["params"][c.name] != c.value and w.image.value != before
        shown = np.asarray(w.figure.canvas.buffer_rgba()).copy()
        # The frame and the pixels it kept from the last move are the ones drawing it all again gives ...
        w._frame, w._kept = None, {}
        w._render()
        assert np.array_equal(np.asarray(w.figure.canvas.buffer_rgba()), shown), f"{move}: kept pixels differ"
        # ... and its artists, updated in place, draw byte for byte what a fresh draw's do.
        fresh = _fresh_like(f, w)
        expected = _pixels(fresh)
        assert np.array_equal(_pixels(w.figure), expected), f"{move}: its full draw differs from a fresh one"
    # What it shows differs from that only where the frame itself draws: the widget draws its cached frame (grid,
    # spines, ticks) under the data, where a full draw puts grid lines between fills and lines, spines over lines.
    frame = (_pixels(fresh, hide=_data_artists(fresh))[..., :3] != 255).any(axis=2)
    off = (shown != expected).any(axis=2) & ~frame
    assert not off.any(), f"{off.sum()} pixels off the frame differ from a fresh draw"


def test_a_move_keeps_the_pixels_of_what_did_not_change():
    w = pricing.ledger.widget()
    w.update(S=2048)
    kept = dict(w._kept)
    w.update(S=1024)  # the total line moves; the figure's title does not
    title = w.figure._suptitle
    assert w._kept[title] is kept[title]


def test_a_text_drawn_again_from_its_glyph_images_is_the_text_drawn_afresh():
    """The widget's canvas draws a text it drew before from the glyph images it kept: in another size, weight, colour
    or angle, or moved by a fraction of a pixel, it must still draw what a plain Agg canvas draws."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from speclib.presentation.interactive import _LiveCanvas

    def drawn(canvas, x, **kwargs):
        canvas.figure.texts.clear()
        canvas.figure.text(x, 0.4, "γ* = 0: plain decoding wins", **kwargs)
        canvas.draw()
        return np.asarray(canvas.buffer_rgba()).copy()

    live = _LiveCanvas(Figure(figsize=(3, 1), dpi=100))
    variants = [(0.1, {}), (0.1, {"size": 14}), (0.1, {"weight": "bold"}), (0.1, {"color": "red"}),
                (0.1, {"rotation": 10}), (0.1 + 0.3 / 300, {}), (0.1, {})]  # 0.3 of a pixel to the right
    for x, kwargs in variants:
        assert np.array_equal(drawn(live, x, **kwargs), drawn(FigureCanvasAgg(Figure(figsize=(3, 1), dpi=100)), x,
                                                                **kwargs)), (x, kwargs)
    # Drawn from kept glyphs: the red text (its colour is the drawing's, not the glyphs') and the last.
    assert len(live.get_renderer()._glyphs) == len(variants) - 2
