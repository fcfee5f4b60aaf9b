"""A figure a reader can read: no legend hides data, and no two tick labels of an axis touch.

No legend hides data: in every figure the book draws, as its chapter draws it,
and in every figure definition at its defaults, no line, marker, error bar, note
or heatmap lies under a panel's legend. An area (a band, a stacked share, a
hatched region) may pass under one: it spans the axes' height or sits under a
line drawn on its top edge, so its extent stays in view.

The check itself is tested on figures drawn to fail it (a legend placed over a
line, a marker, a note and a heatmap) and to pass it (the same data, the legend
in an empty corner or below the axes).

No two tick labels of an axis touch, in the same figures (tick labels that run together read as one
number: "512 1024 2048" printed as "51210242048"); that check is tested on an axis made to fail it.
Each figure is made and drawn once for both checks."""
from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection, QuadMesh
from matplotlib.image import AxesImage
from matplotlib.text import Annotation, Text

from speclib.presentation import figures  # noqa: F401 - fills the registry
from speclib.presentation.definition import REGISTRY, Axis, Figure, Line, Panel, Points
from speclib.presentation.static import BELOW, HtmlTable

matplotlib.use("Agg")

BOOK = Path(__file__).resolve().parents[1] / "book"


def _segments(xy: np.ndarray) -> np.ndarray:
    """Points along a polyline in display coordinates, one every pixel or so."""
    pts = [xy]
    for a, b in zip(xy[:-1], xy[1:]):
        n = int(min(2000, max(2, np.hypot(*(b - a)))))
        pts.append(a + (b - a) * np.linspace(0.0, 1.0, n)[:, None])
    return np.vstack(pts)


def _drawn_renderer(fig):
    """The renderer of ``fig`` drawn as it stands: drawn now unless an Agg canvas drew it and nothing
    changed since (both checks read one drawing of a figure)."""
    if not isinstance(fig.canvas, FigureCanvasAgg) or fig.stale or not getattr(fig.canvas, "_speclib_drawn", False):
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        fig.canvas._speclib_drawn = True
    return fig.canvas.get_renderer()


def hidden_under_legends(fig) -> list:
    """What each panel's legend covers inside its axes: lines (their vertices and the segments
    between them), markers, error bars, texts and annotation arrows, heatmaps."""
    renderer = _drawn_renderer(fig)
    found = []
    for n, ax in enumerate(fig.axes):
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        axes_box = ax.bbox

        def covered(points):
            points = points[np.isfinite(points).all(axis=1)]
            seen = ((points[:, 0] >= axes_box.x0) & (points[:, 0] <= axes_box.x1)
                    & (points[:, 1] >= axes_box.y0) & (points[:, 1] <= axes_box.y1))
            under = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1)
                     & (points[:, 1] > box.y0) & (points[:, 1] < box.y1))
            return bool((seen & under).any())

        name = f"panel {n} ({ax.get_title(loc='left')!r})"
        for line in ax.get_lines():
            if not line.get_visible() or len(line.get_xdata()) == 0:
                continue
            xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
            drawn = line.get_linestyle() not in ("None", "", " ", "none")
            if covered(_segments(xy) if drawn else xy):
                found.append(f"{name}: line {line.get_label()!r}")
        for c in ax.collections:
            if not c.get_visible():
                continue
            if isinstance(c, PathCollection) and len(c.get_offsets()):
                if covered(c.get_offset_transform().transform(np.asarray(c.get_offsets(), dtype=float))):
                    found.append(f"{name}: markers {c.get_label()!r}")
            elif isinstance(c, LineCollection):
                if any(covered(_segments(c.get_transform().transform(np.asarray(s, dtype=float))))
                       for s in c.get_segments() if len(s)):
                    found.append(f"{name}: error bars or segments {c.get_label()!r}")
            elif isinstance(c, QuadMesh) and c.get_window_extent(renderer).overlaps(box):
                found.append(f"{name}: heatmap")
        for image in ax.images:
            if isinstance(image, AxesImage) and image.get_visible() and image.get_window_extent(renderer).overlaps(box):
                found.append(f"{name}: heatmap")
        for text in ax.texts:
            if not text.get_visible() or not text.get_text().strip():
                continue
            if Text.get_window_extent(text, renderer).overlaps(box):  # the text itself, without an arrow
                found.append(f"{name}: text {text.get_text()[:40]!r}")
            elif isinstance(text, Annotation) and text.arrow_patch is not None:
                start = Text.get_window_extent(text, renderer)
                end = text._get_xy_display()
                if covered(_segments(np.array([[start.x0 + start.width / 2, start.y0 + start.height / 2], end]))):
                    found.append(f"{name}: arrow of {text.get_text()[:40]!r}")
    return found


#: The space, in pixels at the figure's dpi, that two neighbouring tick labels keep at the least.
GAP = 2.0


def touching_ticks(fig) -> list:
    renderer = _drawn_renderer(fig)
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


# --- the figures as the chapters draw them -------------------------------------------------


def _chapter_calls() -> list:
    """(chapter, figure, keyword arguments) of every call of a figure definition in a chapter's
    figure cells whose arguments are literals (a call with a computed argument is drawn at its
    defaults below)."""
    calls = []
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            if not any(t.startswith("figure-") for t in cell.get("metadata", {}).get("tags", [])):
                continue
            source = "".join(cell["source"])
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or node.args:
                    continue
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name not in REGISTRY:
                    continue
                try:
                    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                except ValueError:
                    continue
                calls.append((path.stem, name, kwargs))
    return calls


CHAPTER_CALLS = _chapter_calls()


def _computed_calls() -> list:
    """The calls whose arguments a chapter computes (engine_schedules' schedules), made as it makes them; the
    context figure is no longer drawn there (the chapter prints those schedules as a grid), but stays checked."""
    import speclib

    def schedule(contexts, tp, c_draft=None, **step):
        return speclib.schedule(seq=contexts, alpha=0.75, c_draft=c_draft, max_batch=8192 if tp == 2 else 4096,
                                deployment=speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=tp, **step))

    serving = dict(drafter="deepseek-v4-flash-mtp", attention="served")  # as the chapter serves it
    return [("schedule_ranges", dict(schedule=schedule(4096, 2, 0.1, reserve=None), max_ranges=(2, 3, 4))),
            ("schedule_ranges", dict(schedule=schedule(4096, 2, step_time="calibrated", **serving),
                                     max_ranges=(2, 3))),
            ("schedule_contexts", dict(schedule=schedule([1024, 8192, 65536], 8, **serving)))]


@functools.lru_cache(maxsize=None)
def _figure(name: str, kwargs: str):
    """Figure ``name`` made with the keyword arguments ``kwargs`` (their repr, so that every test of it
    here shares one figure): a matplotlib figure or, for a table, an HtmlTable."""
    return REGISTRY[name](**ast.literal_eval(kwargs))


def _drawn(name: str, kwargs: str):
    """Figure ``name`` drawn with the keyword arguments ``kwargs``; None for a table."""
    fig = _figure(name, kwargs)
    return None if isinstance(fig, HtmlTable) else fig


@functools.lru_cache(maxsize=None)
def _schedules() -> list:
    return [(name, REGISTRY[name](**kwargs), kwargs.get("max_ranges")) for name, kwargs in _computed_calls()]


def test_the_chapters_draw_figures():
    """The chapters' calls are found (a parse that found none would check nothing)."""
    assert len({name for _, name, _ in CHAPTER_CALLS}) >= 20, CHAPTER_CALLS


CHAPTER_IDS = [f"{c}-{n}-{i}" for i, (c, n, _) in enumerate(CHAPTER_CALLS)]
#: Figure definitions drawn at their defaults (one that needs a schedule is drawn as its chapter draws it).
DEFAULTS = [name for name in sorted(REGISTRY) if "schedule" not in REGISTRY[name].params]


def _needed(f) -> dict:
    """What a figure needs that it has no default for: a schedule (built by the tools layer above)."""
    if "schedule" in f.params:
        import speclib

        return {"schedule": speclib.schedule(model="Llama-3-70B", hardware="B200", seq=[1024, 8192], alpha=0.8,
                                             max_batch=64)}
    return {}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_figure_draws_with_its_defaults(name):
    """Every figure definition draws at its defaults (the same figure the checks below read)."""
    fig = _figure(name, "{}") if name in DEFAULTS else REGISTRY[name](**_needed(REGISTRY[name]))
    if isinstance(fig, HtmlTable):
        assert "<table" in fig._repr_html_() and repr(fig)
    else:
        assert fig.axes, f"{name} drew no axes"


def small_text(fig) -> list:
    """Every text the figure shows set smaller than style.SMALLEST_TEXT_PT, the size from which a page
    scales a figure so that a phone shows its text at 9 px or more (tests/browser/test_phone.py)."""
    from speclib.presentation import style

    return [f"{t.get_text()[:40]!r} at {t.get_fontsize():g} pt" for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and t.get_fontsize() < style.SMALLEST_TEXT_PT - 1e-9]


#: What a reader must be able to read in a figure: each check lists what fails it.
CHECKS = {"no legend hides data": hidden_under_legends, "tick labels keep apart": touching_ticks,
          "no text under the smallest type": small_text}


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("chapter, name, kwargs", CHAPTER_CALLS, ids=CHAPTER_IDS)
def test_as_the_chapters_draw(chapter, name, kwargs, check):
    fig = _drawn(name, repr(kwargs))
    if fig is not None:
        assert CHECKS[check](fig) == [], f"{chapter}: {name}({kwargs})"


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("name", DEFAULTS)
def test_at_the_defaults(name, check):
    fig = _drawn(name, "{}")
    if fig is not None:
        assert CHECKS[check](fig) == [], name


@pytest.mark.parametrize("check", CHECKS)
def test_in_the_schedules_as_engine_schedules_draws_them(check):
    for name, fig, ranges in _schedules():
        assert CHECKS[check](fig) == [], (name, ranges)


# --- the check, on figures made to fail it and to pass it ---------------------------------


def _made(legend, extra=()):
    def compute(p, xp):
        x = xp.linspace(1.0, 10.0, 50)
        return {"x": x, "rising": x, "px": xp.asarray([1.5, 4.0]), "py": xp.asarray([9.5, 9.5])}

    series = (Line("x", "rising", label="rising"), Points("px", "py", label="points"), *extra)
    return Figure(name="_legend_check", title="", compute=compute,
                  panels=(Panel(Axis("x", lo=0, hi=11), Axis("y", lo=0, hi=11), series, legend=legend),))


def test_the_check_finds_a_line_and_a_marker_under_a_legend():
    try:
        hidden = hidden_under_legends(_made("upper left")())  # over the marker at (1.5, 9.5)
        assert any("'points'" in h for h in hidden), hidden
        hidden = hidden_under_legends(_made("center")())  # over the rising line's middle
        assert any("line 'rising'" in h for h in hidden), hidden
    finally:
        REGISTRY.pop("_legend_check", None)


def test_the_check_finds_a_text_and_a_heatmap_under_a_legend():
    from speclib.presentation.definition import Text as NoteText

    try:
        hidden = hidden_under_legends(_made("lower right", (NoteText(9.0, 1.5, "a note"),))())
        assert any("text 'a note'" in h for h in hidden), hidden
    finally:
        REGISTRY.pop("_legend_check", None)
    fig = REGISTRY["drafter_crossover"]()
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left")
    assert any("heatmap" in h for h in hidden_under_legends(fig))


def test_the_check_passes_a_legend_in_an_empty_corner_or_below():
    try:
        assert hidden_under_legends(_made("lower right")()) == []
        fig = _made(BELOW)()
        assert hidden_under_legends(fig) == []
        # below: under the x axis's label, outside the axes
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend, label = ax.get_legend().get_window_extent(r), ax.xaxis.label.get_window_extent(r)
        assert legend.y1 <= label.y0 and legend.y0 >= 0
    finally:
        REGISTRY.pop("_legend_check", None)


def test_a_legend_below_leaves_the_panels_their_size():
    """The figure grows by the legend hung below: its panels are as tall as with no legend at all."""
    import dataclasses

    def axes_heights(f):
        fig = f()
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        return [ax.get_window_extent().height / fig.dpi for ax in fig.axes]

    for name in ("ledger_components", "engine_speedups", "roofline_excess"):
        f = REGISTRY[name]
        panels = f.panels if not callable(f.panels) else None
        if panels is None:
            made = f.panels
            bare = dataclasses.replace(f, name=f"_{name}_bare", panels=lambda data: tuple(
                dataclasses.replace(p, legend="") for p in made(data)))
        else:
            bare = dataclasses.replace(f, name=f"_{name}_bare", panels=tuple(
                dataclasses.replace(p, legend="") for p in panels))
        try:
            assert any(p.legend == BELOW for p in (panels or made(f.data()))), name
            assert axes_heights(f) == pytest.approx(axes_heights(bare), abs=0.08), name
        finally:
            REGISTRY.pop(f"_{name}_bare", None)


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


def test_a_figure_draws_no_text_under_the_smallest_type_and_the_check_finds_one():
    """A note defined at 5 pt and a figure-wide key are drawn at style.SMALLEST_TEXT_PT at the least; a
    text set smaller by hand afterwards is found."""
    from speclib.presentation import style
    from speclib.presentation.definition import Key
    from speclib.presentation.definition import Text as NoteText

    def compute(p, xp):
        x = xp.linspace(1.0, 10.0, 5)
        return {"x": x, "y": x}

    made = Figure(name="_small_text_check", title="", compute=compute, keys=(Key("a key", "dense"),),
                  panels=(Panel(Axis("x"), Axis("y"), (Line("x", "y"), NoteText(2.0, 8.0, "a small note", size=5))),))
    try:
        fig = made()
        sizes = {t.get_text(): t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip()}
        assert sizes["a small note"] == style.SMALLEST_TEXT_PT and sizes["a key"] >= style.SMALLEST_TEXT_PT
        assert small_text(fig) == []
        fig.axes[0].text(5.0, 5.0, "set by hand", fontsize=style.SMALLEST_TEXT_PT - 1)
        assert small_text(fig) == [f"'set by hand' at {style.SMALLEST_TEXT_PT - 1:g} pt"]
    finally:
        REGISTRY.pop("_small_text_check", None)
