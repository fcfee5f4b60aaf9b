"""The ipywidgets renderer: any :class:`~.definition.Figure` live in a kernel.

:class:`LiveFigure` builds one control per entry of the definition's
``controls`` (a slider, a menu, a checkbox: nothing figure-specific), and on
every move recomputes the figure's data with numpy and redraws it with the
matplotlib renderer (:func:`.static.draw`) onto an Agg canvas shown as an
image. Without a browser, ``w.controls`` maps each control's name to its
widget and ``w.update(S=4096, alpha=0.6)`` sets controls as a reader would
and redraws once; ``w.figure`` is the matplotlib Figure and ``w.data`` what
it shows.

A move draws only what it can have changed: the renderer updates the
figure's artists in place (``draw(..., live=True)``); the frame (axes,
ticks, grid) is drawn again only when a limit or a label changed; a text or
legend that did not change, over pixels that did not change, has its pixels
put back; and the canvas draws a text it drew before from the glyph images
it kept. Each is exact: after any moves the figure draws what a fresh draw
at those values draws, and the image differs from that only where the
cached frame lies under the data instead of between fills and lines
(tests/test_widgets.py holds every live figure to both).
"""
from __future__ import annotations

import math

import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.collections import Collection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from . import style
from .spec import Choice, Slider, Toggle
from .static import draw

_WIDE = W.Layout(width="420px")
_LABEL = {"description_width": "initial"}


def control(spec):
    """The ipywidget for one control of a definition."""
    if isinstance(spec, Slider):
        common = dict(description=spec.label, style=_LABEL, layout=_WIDE)
        if spec.scale == "log2":
            return W.FloatLogSlider(value=spec.value, base=2, min=math.log2(spec.lo), max=math.log2(spec.hi),
                                    step=spec.step, readout_format=spec.format or ".3g", **common)
        if spec.integer:
            return W.IntSlider(value=int(spec.value), min=int(spec.lo), max=int(spec.hi), step=max(1, int(spec.step)),
                               **common)
        return W.FloatSlider(value=spec.value, min=spec.lo, max=spec.hi, step=spec.step,
                             readout_format=spec.format or ".3g", **common)
    if isinstance(spec, Choice):
        return W.Dropdown(options=list(spec.options), value=spec.value, description=spec.label, style=_LABEL)
    if isinstance(spec, Toggle):
        return W.Checkbox(value=spec.value, description=spec.label, indent=False)
    raise TypeError(f"no widget for control {spec!r}")  # pragma: no cover


class LiveFigure(W.VBox):
    """A figure definition with its controls; a change of any control redraws once."""

    #: What a notebook shows where the controls cannot be drawn: a chapter
    #: opened in JupyterLab before it is run, or a viewer with no kernel.
    NOT_LIVE_HINT = "(a live figure: run this cell to get its controls)"

    def __init__(self, definition, **values):
        self.definition = definition
        start = definition.resolve(**values)
        self.fixed = {k: v for k, v in start.items() if k in definition.params}
        self.controls = {spec.name: control(spec) for spec in definition.controls}
        for name, widget in self.controls.items():
            widget.value = start[name]
        self._hold = False
        self.data = definition.data(**start)
        if definition.panels[0].series[0].kind == "table":
            self.figure, self.image = None, W.HTML(value=draw(definition, self.data).html)
        else:
            self.figure = _LiveCanvas(style.new_canvas_figure(definition.size)).figure
            self._frame = self._background = None
            self._kept = {}
            draw(definition, self.data, self.figure, live=True)
            self.figure.canvas.draw()
            # Keep the first layout: re-solving constrained layout on every move would double a redraw.
            self.figure.set_layout_engine("none")
            self.figure._speclib_relayout = None
            self.image = W.Image(value=self._render(), format="jpeg",
                                 layout=W.Layout(width=f"{int(definition.size[0] * style.DPI)}px"))
        widgets = list(self.controls.values())
        rows = [W.HBox(widgets[i:i + 2]) for i in range(0, len(widgets), 2)]
        super().__init__(children=[*rows, self.image])
        for widget in widgets:
            widget.observe(self._on_change, names="value")

    def values(self) -> dict:
        """The controls' current values by name."""
        return {name: w.value for name, w in self.controls.items()}

    def _on_change(self, _change):
        if not self._hold:
            self.redraw()

    def update(self, **values):
        """Set controls (as a reader moving them would) and redraw once."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {', '.join(sorted(unknown))}; controls: {', '.join(self.controls)}")
        self._hold = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._hold = False
        self.redraw()
        return self

    def redraw(self):
        self.data = self.definition.data(**self.fixed, **self.values())
        if self.figure is None:  # a table
            self.image.value = draw(self.definition, self.data).html
            return
        draw(self.definition, self.data, self.figure, live=True)
        before = getattr(self.figure, "_speclib_relayout", None)
        if before is not None:
            # A legend below a panel was made again at another height (its entries changed), and the
            # figure's height with it. Each row of panels keeps its size and moves up by what the
            # legends at and below it grew (the figure grows at the bottom); a figure this cannot
            # move exactly (a colorbar, a legend of the figure's own) has its layout solved again,
            # by the frame's draw in _render (a figure draws its layout engine's layout first).
            self.figure._speclib_relayout = None
            self._frame = None
            if not _move_rows(self.figure, *before):
                self.figure.set_layout_engine("constrained")
                try:
                    self.image.value = self._render()
                finally:
                    self.figure.set_layout_engine("none")
                return
        self.image.value = self._render()

    def _render(self) -> bytes:
        """JPEG bytes of the figure as it stands: the frame (axes, ticks, grid)
        is drawn again only when it changed, the data on top of it each time;
        a text or legend that did not change, over pixels that did not change,
        is not drawn again but its pixels from the last move put back (:func:`_draw_or_keep`)."""
        fig = self.figure
        canvas = fig.canvas
        dynamic = _dynamic_artists(fig)
        for a in dynamic:
            a.set_animated(True)
        frame = _frame_signature(fig)
        if frame != self._frame:
            canvas.draw()  # everything but the animated (data) artists
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._frame = frame
            self._kept = {}
        else:
            canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        pixels = np.asarray(canvas.buffer_rgba())
        kept = {}
        for a in dynamic:
            if _keepable(a):
                kept[a] = _draw_or_keep(a, renderer, pixels, self._kept.get(a))
            else:
                a.draw(renderer)
        self._kept = kept
        return style.encode_jpeg(canvas)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v!r}" for k, v in self.values().items())
        return f"LiveFigure({self.definition.name}: {shown})"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{self!r}\n{self.NOT_LIVE_HINT}"
        return bundle


_DYNAMIC = (Line2D, Collection, Text, Legend, Patch)


def _dynamic_artists(fig):
    """What a control move can change, in drawing order: every line, fill,
    text (titles included), patch and legend of every axes, and the figure's title."""
    out = []
    for ax in sorted(fig.axes, key=lambda a: a.get_zorder()):
        frame = {ax.patch, *ax.spines.values()}
        kids = [a for a in ax.get_children() if isinstance(a, _DYNAMIC) and a not in frame and a.get_visible()]
        out.extend(sorted(kids, key=lambda a: a.get_zorder()))
    return out + ([fig._suptitle] if fig._suptitle is not None else [])


def _frame_signature(fig):
    """What the cached frame depends on: axes placement, limits, scales and
    labels, and the figure's legends' texts (titles are drawn with the data,
    so a title that spells out a control's value does not throw the frame away)."""
    return tuple((tuple(ax.get_position().bounds), ax.get_xlim(), ax.get_ylim(), ax.get_xscale(), ax.get_yscale(),
                  ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes), tuple(
        text.get_text() for legend in fig.legends for text in legend.get_texts())


#: Pixels around a text's or legend's extent that drawing it may still touch
#: (antialiasing, the legend frame's line), and the band around those checked
#: to be untouched before its pixels are kept.
_PAD, _RING = 3, 6


class _Kept:
    """An artist's pixels from its last draw: where (``box``, rows and columns),
    what lay there before it was drawn (``under``), what it left (``over``, None
    if it drew outside that box) and its extent then."""

    def __init__(self, box, under, over, extent):
        self.box, self.under, self.over, self.extent = box, under, over, extent


def _draw_or_keep(artist, renderer, pixels, kept):
    """Draw ``artist`` over ``pixels`` (the canvas, drawn up to it), or, where that
    gives the same pixels, put back the ones it left last time: when it has not
    changed since (matplotlib marks a changed artist ``stale``; a legend placed
    "best" may also move with the data, so its extent is compared too) and the
    pixels it was drawn over are the same. Drawing is a function of those two,
    so the image is the one drawing it would give. What it keeps for next time."""
    extent = None
    keep = kept is not None and kept.over is not None and not artist.stale
    if keep and isinstance(artist, Legend) and getattr(artist, "_loc", 0) == 0:  # placed "best"
        extent = _extent(artist, renderer)
        keep = extent == kept.extent
    if keep and np.array_equal(pixels[kept.box], kept.under):
        pixels[kept.box] = kept.over
        return kept
    extent = extent or _extent(artist, renderer)
    if not all(map(math.isfinite, extent)) or _pixel_box(extent, _PAD, pixels.shape) is None:
        artist.draw(renderer)  # nowhere, or not on the canvas
        return None
    inner, outer = _pixel_box(extent, _PAD, pixels.shape), _pixel_box(extent, _PAD + _RING, pixels.shape)
    before = pixels[outer].copy()
    artist.draw(renderer)
    changed = (pixels[outer] != before).any(axis=2)
    within = tuple(slice(i.start - o.start, i.stop - o.start) for i, o in zip(inner, outer))
    changed[within] = False
    over = None if changed.any() else pixels[inner].copy()
    return _Kept(inner, before[within], over, extent)


def _pixel_box(extent, pad, shape):
    """The rows and columns of the canvas pixels within ``pad`` of a display-space extent (None if none)."""
    height, width = shape[:2]
    x0, y0 = max(0, math.floor(extent[0]) - pad), max(0, math.floor(extent[1]) - pad)
    x1, y1 = min(width, math.ceil(extent[2]) + pad), min(height, math.ceil(extent[3]) + pad)
    if x0 >= x1 or y0 >= y1:
        return None
    return slice(height - y1, height - y0), slice(x0, x1)  # pixel rows run downwards


def _keepable(artist):
    """A legend, or a text with no arrow: costly to draw, cheap to place (an arrow's extent costs
    about what drawing it does)."""
    if isinstance(artist, Legend):
        return True
    return isinstance(artist, Text) and bool(artist.get_text()) and getattr(artist, "arrow_patch", None) is None


def _extent(artist, renderer):
    return tuple(artist.get_window_extent(renderer).extents)


class _LiveCanvas(FigureCanvasAgg):
    """A widget's Agg canvas, drawing with a :class:`_TextCache`."""

    def get_renderer(self):
        size = (*self.get_width_height(physical=True), self.figure.dpi)
        if getattr(self, "_text_cache_size", None) != size:
            self.renderer = _TextCache(*size)
            self._text_cache_size = size
        return self.renderer


class _TextCache(RendererAgg):
    """An Agg renderer that draws a text it drew before (the same string, at the same
    place, angle and size, in the same font) from the glyph images it drew then: the
    same pixels, without laying the text out and rasterizing its glyphs again, which
    is most of what a widget's legend or title costs to draw."""

    #: Texts remembered; past this many, the cache starts again.
    LIMIT = 4096

    def __init__(self, width, height, dpi):
        super().__init__(width, height, dpi)
        self._glyphs = {}

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath:  # mathtext draws boxes too: not cached
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        key = (s, x, y, angle, self._prepare_font(prop), prop.get_size_in_points(), gc.get_antialiased(),
               get_hinting_flag(), None if mtext is None else (tuple(mtext.get_fontfeatures() or ()),
                                                             mtext.get_language()))
        glyphs = self._glyphs.get(key)
        if glyphs is None:
            agg = self._renderer
            self._renderer = recorder = _GlyphRecorder(agg)
            try:
                super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
            finally:
                self._renderer = agg
            if len(self._glyphs) >= self.LIMIT:
                self._glyphs.clear()
            self._glyphs[key] = recorder.glyphs
        else:
            for image, gx, gy, gangle in glyphs:
                self._renderer.draw_text_image(image, gx, gy, gangle, gc)  # the colour, alpha and clip: this gc's


class _GlyphRecorder:
    """Stands for the Agg renderer while a text is drawn, keeping a copy of each glyph image drawn."""

    def __init__(self, agg):
        self.agg, self.glyphs = agg, []

    def draw_text_image(self, image, x, y, angle, gc):
        self.glyphs.append((np.array(image, copy=True), x, y, angle))
        self.agg.draw_text_image(image, x, y, angle, gc)

    def __getattr__(self, name):
        return getattr(self.agg, name)


def _move_rows(fig, before: dict, height: float) -> bool:
    """Move a live figure's panels for the legends below them that changed height: each row of panels
    keeps its size in inches and moves up by the growth of the legends at and below it, and the
    suptitle keeps its distance from the top (``before``: the rows' legend heights before, by row;
    ``height``: the figure's height before, in inches). False, and nothing moved, where a panel has
    no row (a colorbar) or the figure has a legend of its own."""
    after = getattr(fig, "_speclib_below_rows", {})
    specs = [ax.get_subplotspec() for ax in fig.axes]
    if fig.legends or any(spec is None for spec in specs):
        return False
    new = fig.get_figheight()
    for ax, spec in zip(fig.axes, specs):
        row = spec.rowspan.start
        up = sum(after.get(q, 0.0) - before.get(q, 0.0) for q in set(after) | set(before) if q >= row)
        for which in ("original", "active"):
            box = ax.get_position(original=which == "original")
            ax.set_position([box.x0, (box.y0 * height + up) / new, box.width, box.height * height / new],
                            which=which)
    if fig._suptitle is not None:
        fig._suptitle.set_y(1.0 - (1.0 - fig._suptitle.get_position()[1]) * height / new)
    return True
