"""No two tick labels of an axis touch: in every figure the book draws, as its chapter draws it, and
in every figure definition at its defaults (tick labels that run together read as one number:
"512 1024 2048" printed as "51210242048"). The check is tested on an axis made to fail it."""
from __future__ import annotations

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from speclib.presentation.definition import REGISTRY, Axis, Figure, Line, Panel
from speclib.presentation.static import HtmlTable

from test_legends import CHAPTER_CALLS, _computed_calls

matplotlib.use("Agg")

#: The space, in pixels at the figure's dpi, that two neighbouring tick labels keep at the least.
GAP = 2.0


def touching_ticks(fig) -> list:
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for n, ax in enumerate(fig.axes):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text().strip()]
            boxes = sorted(((t.get_window_extent(renderer), t.get_text()) for t in labels),
                           key=lambda b: b[0].x0 if name == "x" else b[0].y0)
            for (a, ta), (b, tb) in zip(boxes, boxes[1:]):
                apart = b.x0 - a.x1 if name == "x" else b.y0 - a.y1
                if apart < GAP:
                    found.append(f"panel {n} {name}: {ta!r} and {tb!r} ({apart:.1f} px apart)")
    return found


def _draw(name, kwargs):
    fig = REGISTRY[name](**kwargs)
    return None if isinstance(fig, HtmlTable) else fig


@pytest.mark.parametrize("chapter, name, kwargs", CHAPTER_CALLS,
                         ids=[f"{c}-{n}-{i}" for i, (c, n, _) in enumerate(CHAPTER_CALLS)])
def test_tick_labels_keep_apart_as_the_chapters_draw(chapter, name, kwargs):
    fig = _draw(name, kwargs)
    if fig is not None:
        assert touching_ticks(fig) == [], f"{chapter}: {name}({kwargs})"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_tick_labels_keep_apart_at_the_defaults(name):
    if "schedule" in REGISTRY[name].params:
        return
    fig = _draw(name, {})
    if fig is not None:
        assert touching_ticks(fig) == [], name


def test_tick_labels_keep_apart_in_the_schedules():
    for name, kwargs in _computed_calls():
        assert touching_ticks(REGISTRY[name](**kwargs)) == [], name


def test_the_check_finds_labels_that_run_together():
    def compute(p, xp):
        x = xp.asarray([512.0, 1024.0, 2048.0, 4096.0])
        return {"x": x, "y": x}

    made = Figure(name="_tick_check", title="", compute=compute, size=(2.0, 2.0),
                  panels=(Panel(Axis("x", ticks=(512, 1024, 2048, 4096)), Axis("y"), (Line("x", "y"),)),))
    try:
        assert any("'1024'" in f or "'1,024'" in f for f in touching_ticks(made())), touching_ticks(made())
    finally:
        REGISTRY.pop("_tick_check", None)
