"""The matplotlib renderer: any :class:`~.definition.Figure` as an image.

One function, :func:`draw`, turns a definition and its computed data into a
matplotlib Figure; the book's static images, the PDF and the kernel's live
widgets (:mod:`.interactive`, which calls it again on every control move)
all go through it. Artists carry the series' ``gid`` so tests can find them
(:func:`artist`).

A live figure (``draw(..., live=True)``) remembers the artists each series
made. Drawn again, it updates them in place (line and fill data, mesh
values, texts, the data limits and view, a legend only when its entries
change) instead of clearing its panels, so its axes keep their tick locators
and formatters; a series whose artists cannot be updated (a band that splits
in two, a note that leaves the chart) is made again with those after it, in
their order. The result draws as a fresh draw at the same values does.
"""
from __future__ import annotations

import html
import math

import matplotlib as mpl
import numpy as np
from matplotlib.colors import BoundaryNorm, LinearSegmentedColormap, ListedColormap
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, PercentFormatter
from matplotlib.transforms import Bbox

from . import style
from .spec import fill, value_of

_DASH = {"solid": "-", "dashed": "--", "dotted": ":", "dashdot": "-."}


def color(name: str, i: int = 0) -> str:
    """A role colour (``"moe"``), a literal colour, or the cycle's ``i``-th."""
    if not name:
        return style.CYCLE[i % len(style.CYCLE)]
    return style.COLORS.get(name, name)


def artist(fig, gid):
    """The first artist of ``fig`` whose gid is ``gid`` (None if there is none)."""
    return next(iter(artists(fig, gid)), None)


def artists(fig, gid):
    """Every artist of ``fig`` whose gid is ``gid``."""
    return fig.findobj(lambda a: a.get_gid() == gid)


class HtmlTable:
    """A figure that is a table: HTML for the notebook and the book, text for a terminal."""

    def __init__(self, html_text: str, text: str, data: dict):
        self.html, self.text, self.data = html_text, text, data

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def table(s, data) -> HtmlTable:
    """A :class:`~.definition.Table` series as HTML (and text)."""
    rows, cols = list(value_of(s.rows, data)), list(value_of(s.columns, data))
    values = np.asarray(data[s.values], dtype=float)
    hot = np.asarray(data[s.highlight], dtype=bool) if s.highlight else np.zeros(values.shape, bool)
    caption = fill(s.caption, data)
    num = lambda v: format(v, s.format)  # noqa: E731
    head = "".join(f'<th style="text-align:right">{num(c)}</th>' for c in cols)
    width = max(9, max(len(num(r)) for r in rows) + 1)
    lines = [caption.replace(" in bold.", " marked *."), "",
             f"{s.corner:>{width}}" + "".join(f"{num(c):>8}" for c in cols)]
    body = []
    for r, row, bold in zip(rows, values, hot):
        cells = "".join(
            f'<td class="compute-bound" style="text-align:right;font-weight:bold;background-color:#fde0dd">'
            f"<b>{num(v)}</b></td>" if b else f'<td class="memory-bound" style="text-align:right">{num(v)}</td>'
            for v, b in zip(row, bold))
        body.append(f'<tr><th style="text-align:right">{num(r)}</th>{cells}</tr>')
        lines.append(f"{num(r):>{width}}" + "".join(f"{num(v) + ('*' if b else ' '):>8}" for v, b in zip(row, bold)))
    html_text = (f'<table class="speclib-intensity-table"><caption>{html.escape(caption)}</caption>'
                 f'<thead><tr><th style="text-align:right">{html.escape(s.corner)}</th>{head}</tr></thead>'
                 f"<tbody>{''.join(body)}</tbody></table>")
    return HtmlTable(html_text, "\n".join(line.rstrip() for line in lines), data)


def draw(defn, data: dict, fig=None, live=False):
    """``defn`` drawn from ``data`` onto ``fig`` (a new pyplot-closed figure if None);
    a figure whose one panel is a :class:`~.definition.Table` is an :class:`HtmlTable`.
    ``live`` (a widget's figure): titles keep their first line only, since the
    controls show the values the others spell out, and a still title lets the
    widget keep its frame between moves; a live figure drawn before is updated
    in place (see the module docstring)."""
    panels = defn.panels(data) if callable(defn.panels) else defn.panels
    if len(panels) == 1 and panels[0].series and panels[0].series[0].kind == "table":
        return table(panels[0].series[0], data)
    state = getattr(fig, "_speclib_live", None) if live else None
    if state is not None and state.definition is defn:
        with style.style():
            _update(fig, defn, panels, data, state)
        return fig
    if fig is None:
        fig = style.new_figure(defn.size)
    with style.style():
        n = len(panels)
        cols = min(defn.columns or n, n)
        if len(fig.axes) < n:
            fig.clear()
            for ax in fig.subplots(math.ceil(n / cols), cols, squeeze=False).ravel()[n:]:
                ax.remove()
        axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"][:n]
        drawn = [_panel(fig, ax, panel, data, live) for ax, panel in zip(axes, panels)]
        _fit_below(fig, defn)
        if defn.keys and not fig.legends:
            handles = [Line2D([], [], color=color(k.color), marker=k.marker or None, linestyle=_DASH[k.dash] if not
                              k.marker else "none", mfc=None if k.filled else "none", label=fill(k.label, data))
                       for k in defn.keys]
            fig.legend(handles=handles, loc="outside lower center", ncol=min(7, len(handles)), fontsize=style.SMALLEST_TEXT_PT)
        title = fill(_first_line(defn.title) if live else defn.title, data)
        if title:
            fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    if live:
        fig._speclib_live = _Live(defn, axes, drawn)
    return fig


class _Live:
    """What a live figure remembers between draws: its definition, its panels'
    axes and, per panel, what each series drew (:class:`_PanelDrawn`)."""

    def __init__(self, definition, axes, panels):
        self.definition, self.axes, self.panels = definition, axes, panels


class _PanelDrawn:
    """One panel's series' artists (a list of ``(artist, limits, extra)`` per series: how the
    artist's Axes method set the data limits, see :data:`_LIMITS`, and what its update
    compares), its axes' scales and what its legend was made from."""

    def __init__(self, series, scales, legend):
        self.series, self.scales, self.legend = series, scales, legend


def _first_line(template: str) -> str:
    return template.split("\n")[0]


def _panel(fig, ax, panel, data, live=False):
    ax.clear()
    _reset_data_limits(ax)
    drawn = [_series(fig, ax, s, data, i) for i, s in enumerate(panel.series)]
    scales = (_axis(ax, "x", panel.x, data), _axis(ax, "y", panel.y, data))
    ax.grid(panel.grid)
    if panel.title:
        ax.set_title(fill(_first_line(panel.title) if live else panel.title, data), loc="left")
    handles, labels = ax.get_legend_handles_labels()
    if panel.legend and handles:
        _legend(ax, handles, labels, panel.legend)
    return _PanelDrawn(drawn, scales, _legend_key(handles, labels))


#: ``Panel.legend`` for a legend under the panel, below its x axis's label, where it can hide no data
#: (any other value is a matplotlib location inside the axes; "" draws none). The figure grows by the
#: legend's height, so that its panels keep the size the definition gives them.
BELOW = "below"


def _legend(ax, handles, labels, where):
    """The panel's legend: at matplotlib's location ``where`` inside the axes, or ``BELOW`` them.

    Below, it hangs under the x axis at a distance in points (the ticks, their labels and the axis
    label are sized in points, so the constrained layout, which makes room for it, keeps the gap), its
    entries in as many columns as the panel's width holds; :func:`_fit_below` then makes the figure
    taller by its height."""
    if where != BELOW:
        return ax.legend(handles, labels, loc=where)
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    rc = mpl.rcParams
    points = lambda size: FontProperties(size=size).get_size_in_points()  # noqa: E731
    gap = 4.0
    if ax.xaxis.get_visible():
        gap += rc["xtick.major.size"] + rc["xtick.major.pad"] + 1.25 * points(rc["xtick.labelsize"])
        if ax.get_xlabel():
            gap += ax.xaxis.labelpad + 1.25 * points(rc["axes.labelsize"]) * (ax.get_xlabel().count("\n") + 1)
    size = points(rc["legend.fontsize"])
    prop = FontProperties(size=size)
    # an entry: its handle, the pad to its text, the text, the space to the next column (all in font sizes)
    entry = max(text_to_path.get_text_width_height_descent(label, prop, ismath=False)[0] for label in labels)
    entry += size * (rc["legend.handlelength"] + rc["legend.handletextpad"] + rc["legend.columnspacing"])
    width = ax.get_position().width * ax.figure.get_figwidth() * 72
    columns = max(1, min(len(labels), int(width // entry)))
    rows = math.ceil(len(labels) / columns)
    legend = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=gap / size,
                       ncol=math.ceil(len(labels) / rows))
    # its height (a row is a line of text and the space between rows; the frame's pad above and below)
    # and a little air under it, in inches: what the figure grows by
    height = size * (rows * (1.15 + rc["legend.labelspacing"]) - rc["legend.labelspacing"] + 2 * rc["legend.borderpad"])
    legend._speclib_below = (height + 6.0) / 72
    return legend


def _fit_below(fig, defn):
    """The figure's height: the definition's, and the legends hung below its panels (the tallest of
    each row of panels). A figure whose height changed is marked for a new layout
    (``_speclib_relayout``: the rows' legend heights, by row, and the figure's height before; None
    while it has not changed since a live figure last laid itself out)."""
    rows = {}
    for ax in fig.axes:
        legend, spec = ax.get_legend(), ax.get_subplotspec()
        row = spec.rowspan.start if spec is not None else 0
        rows[row] = max(rows.get(row, 0.0), getattr(legend, "_speclib_below", 0.0) if legend is not None else 0.0)
    height = defn.size[1] + sum(rows.values())
    if abs(fig.get_figheight() - height) > 1e-9:
        # what the height was made of before, for a live figure that moves its panels itself
        fig._speclib_relayout = getattr(fig, "_speclib_below_rows", {}), fig.get_figheight()
        fig.set_figheight(height)
    fig._speclib_below_rows = rows


def _series(fig, ax, s, data, i):
    """Draw series ``s`` (``i``-th of its panel) unless its ``when`` is false; what it drew."""
    if getattr(s, "when", "") and not bool(value_of(s.when, data)):
        return []
    return _SERIES[s.kind](fig, ax, s, data, i)


def _scale(axis, data):
    return axis.scale if axis.scale in ("linear", "log", "log2") else value_of(axis.scale, data)


def _axis(ax, which, axis, data, fresh=True):
    """Label, scale, limits, tick locator and formatter of one axis of a fresh panel; of a live
    panel drawn before (``fresh`` false), whose scale is the same, its label and limits only.
    Its scale."""
    target = getattr(ax, f"{which}axis")
    label = fill(axis.label, data)
    if fresh or label != target.get_label_text():
        getattr(ax, f"set_{which}label")(label)
    scale = _scale(axis, data)
    if scale in ("log", "log2") and fresh:
        getattr(ax, f"set_{which}scale")("log", **({"base": 2} if scale == "log2" else {}))
    elif scale in ("log", "log2"):
        # set_*scale("log") on a fresh (linear) axis autoscales it at once: so does this.
        ax.autoscale_view(scalex=which == "x", scaley=which == "y")
    lo, hi = value_of(axis.lo, data), value_of(axis.hi, data)
    if lo is not None or hi is not None:
        getattr(ax, f"set_{which}lim")(None if lo is None else float(lo), None if hi is None else float(hi))
    if not fresh:
        return scale
    if isinstance(axis.ticks, tuple):
        target.set_major_locator(FixedLocator(axis.ticks))
        target.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        target.set_minor_formatter(NullFormatter())
    elif axis.ticks == "context":
        target.set_major_formatter(FuncFormatter(style.context_label))
    elif axis.ticks == "batch":
        target.set_major_formatter(FuncFormatter(style.batch_label))
    elif axis.ticks == "percent":
        target.set_major_formatter(PercentFormatter(1.0))
    else:
        target.set_major_formatter(FuncFormatter(style.thousands))
    return scale


def _update(fig, defn, panels, data, state):
    """A live figure drawn before, brought to ``data`` in place (see the module docstring)."""
    for k, (ax, panel, drawn) in enumerate(zip(state.axes, panels, state.panels)):
        if (_scale(panel.x, data), _scale(panel.y, data)) != drawn.scales:
            state.panels[k] = _panel(fig, ax, panel, data, live=True)  # another scale: the panel made again
        else:
            _update_panel(fig, ax, panel, data, drawn)
    if defn.keys and fig.legends:
        for text, k in zip(fig.legends[0].get_texts(), defn.keys):
            if text.get_text() != fill(k.label, data):
                text.set_text(fill(k.label, data))
                fig.legends[0].stale = True  # a legend is not told when its texts change
    title = fill(_first_line(defn.title), data)
    if title != fig.get_suptitle():
        fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    _fit_below(fig, defn)


def _update_panel(fig, ax, panel, data, drawn):
    """Each series' artists updated in place; from the first that cannot be, those and the
    ones after them made again (so they keep their order); then the limits, titles and legend."""
    remade = False
    for i, s in enumerate(panel.series):
        if not remade:
            shown = not getattr(s, "when", "") or bool(value_of(s.when, data))
            before = drawn.series[i]
            if (not shown and not before) or (shown and before and _UPDATE[s.kind](fig, ax, s, data, i, before)):
                continue
            for artists in drawn.series[i:]:
                for a, _, _ in artists:
                    a.remove()
            remade = True
        drawn.series[i] = _series(fig, ax, s, data, i)
    _replay_limits(ax, drawn)
    _axis(ax, "x", panel.x, data, fresh=False)
    _axis(ax, "y", panel.y, data, fresh=False)
    if panel.title and ax.get_title(loc="left") != fill(_first_line(panel.title), data):
        ax.set_title(fill(_first_line(panel.title), data), loc="left")
    handles, labels = ax.get_legend_handles_labels()
    legend = _legend_key(handles, labels)
    if legend != drawn.legend:
        made = ax.get_legend()
        if made is not None and legend[1] == drawn.legend[1]:  # the same entries: new labels only
            for text, label in zip(made.get_texts(), labels):
                if text.get_text() != label:
                    text.set_text(label)
            made.stale = True  # a legend is not told when its texts change
        else:
            if made is not None:
                made.remove()
            if panel.legend and handles:
                _legend(ax, handles, labels, panel.legend)
        drawn.legend = legend


def _legend_key(handles, labels):
    """What a legend is made from: its labels and how each entry's artist looks."""
    return tuple(labels), tuple(_look(h) for h in handles)


def _look(a):
    if isinstance(a, Line2D):
        return ("line", str(a.get_color()), a.get_linestyle(), a.get_linewidth(), a.get_marker(), a.get_markersize(),
                str(a.get_markerfacecolor()), str(a.get_markeredgecolor()), a.get_alpha(), a.get_drawstyle())
    return (type(a).__name__, np.asarray(a.get_facecolor()).tobytes(), np.asarray(a.get_edgecolor()).tobytes(),
            a.get_hatch(), str(a.get_linewidth()), a.get_alpha())


def _reset_data_limits(ax):
    """No data limits, as on a fresh Axes (``Axes.clear`` keeps the old ones for the next first update)."""
    ax.dataLim.set_points(Bbox.null().get_points())
    ax.dataLim.minposx = ax.dataLim.minposy = np.inf
    ax.ignore_existing_data_limits = True


def _replay_limits(ax, drawn):
    """The data limits and autoscaled view a fresh draw of these artists gives: a fresh
    Axes' limits (a linear axis viewing 0..1), then, artist by artist in drawing order,
    what the Axes method that made it does to them (:data:`_LIMITS`); the log axes are
    then autoscaled as ``set_*scale`` does, by :func:`_axis`."""
    for which, scale in zip("xy", drawn.scales):
        if scale == "linear":
            getattr(ax, f"set_{which}lim")(0, 1, auto=True)
        else:
            getattr(ax, f"set_autoscale{which}_on")(True)
    _reset_data_limits(ax)
    ax._tight = None
    for artists in drawn.series:
        for artist, how, extra in artists:
            if how:
                _LIMITS[how](ax, artist, extra)


def _limits_plot(ax, line, _):  # Axes.plot (and step): add_line, then both axes autoscale
    ax._update_line_limits(line)
    ax._request_autoscale_view("x")
    ax._request_autoscale_view("y")


def _limits_hline(ax, line, _):  # Axes.axhline: y autoscales only if the line is outside the view so far
    lo, hi = ax.get_ybound()
    y = line.get_ydata()[0]
    ax._update_line_limits(line)
    if y < lo or y > hi:
        ax._request_autoscale_view("y")


def _limits_vline(ax, line, _):  # Axes.axvline
    lo, hi = ax.get_xbound()
    x = line.get_xdata()[0]
    ax._update_line_limits(line)
    if x < lo or x > hi:
        ax._request_autoscale_view("x")


def _limits_span(ax, patch, _):  # Axes.axvspan: x limits only
    iy, my = ax.dataLim.intervaly.copy(), ax.dataLim.minposy
    ax._update_patch_limits(patch)
    ax.dataLim.intervaly, ax.dataLim.minposy = iy, my
    ax._request_autoscale_view("x")


def _limits_fill(ax, collection, _):  # Axes.fill_between: add_collection(autolim=True)
    ax._unstale_viewLim()
    ax._update_collection_limits(collection)
    ax._request_autoscale_view()


def _limits_mesh(ax, mesh, _):  # Axes.pcolormesh: its cells' corners
    ax.update_datalim(mesh.get_coordinates().reshape(-1, 2))
    ax._request_autoscale_view()


def _limits_contour(ax, contours, corners):  # Axes.contourf: its grid's corners, autoscaled tight
    ax.update_datalim(corners)
    ax.autoscale_view(tight=True)


_LIMITS = {"plot": _limits_plot, "hline": _limits_hline, "vline": _limits_vline, "span": _limits_span,
           "fill": _limits_fill, "mesh": _limits_mesh, "contour": _limits_contour}


def _xy(data, s):
    return np.asarray(value_of(s.x, data), dtype=float), np.asarray(value_of(s.y, data), dtype=float)


def _rows(s, data, i, cycle):
    """(x, y, colour) for each row of a 1-D or 2-D ``y``: the colours are the output ``colors``, else ``color``,
    else the cycle's colour of the row (``cycle`` and a 2-D y) or of the series' place ``i``."""
    x, y = _xy(data, s)
    rows = y if y.ndim == 2 else y[None, :]
    colors = list(data[s.colors]) if s.colors else [color(s.color, r if cycle and y.ndim == 2 else i)
                                                    for r in range(len(rows))]
    return [(x[r] if x.ndim == 2 else x, row, colors[r]) for r, row in enumerate(rows)]


def _line(fig, ax, s, data, i):
    labels = list(data[s.labels]) if s.labels else [fill(s.label, data)]
    drawn = []
    for r, (x, y, c) in enumerate(_rows(s, data, i, cycle=True)):
        kwargs = dict(color=c, linestyle=_DASH[s.dash], linewidth=s.width, alpha=s.alpha, gid=s.gid or None,
                      label=labels[r] if (s.labels or r == 0) else None)
        if s.marker:
            kwargs.update(marker=s.marker, markersize=12 if s.marker == "*" else 4)
        if s.step:
            kwargs.update(where="mid")
        drawn += [(line, "plot", None) for line in (ax.step if s.step else ax.plot)(x, y, **kwargs)]
    return drawn


def _line_update(fig, ax, s, data, i, drawn):
    rows = _rows(s, data, i, cycle=True)
    if len(rows) != len(drawn):
        return False
    labels = list(data[s.labels]) if s.labels else [fill(s.label, data)]
    for r, ((x, y, c), (line, _, _)) in enumerate(zip(rows, drawn)):
        line.set_data(x, y)
        if not mpl.colors.same_color(line.get_color(), c):
            line.set_color(c)
        _relabel(line, labels[r] if (s.labels or r == 0) else None)
    return True


def _points(fig, ax, s, data, i):
    drawn = []
    for r, (x, y, c) in enumerate(_rows(s, data, i, cycle=False)):
        drawn += [(line, "plot", None) for line in ax.plot(
            x, y, s.marker, color=c, markersize=s.size, linestyle="none", mfc=c if s.filled else "none",
            alpha=s.alpha, label=(fill(s.label, data) or None) if r == 0 else None, gid=s.gid or None)]
    return drawn


def _points_update(fig, ax, s, data, i, drawn):
    rows = _rows(s, data, i, cycle=False)
    if len(rows) != len(drawn):
        return False
    for r, ((x, y, c), (line, _, _)) in enumerate(zip(rows, drawn)):
        line.set_data(x, y)
        if not mpl.colors.same_color(line.get_color(), c):
            line.set_color(c)
            line.set_markerfacecolor(c if s.filled else "none")
        _relabel(line, (fill(s.label, data) or None) if r == 0 else None)
    return True


def _area_args(s, data):
    x, y = _xy(data, s)
    y0 = np.broadcast_to(np.asarray(value_of(s.y0, data), dtype=float), x.shape)
    where = np.asarray(data[s.where], dtype=bool) if s.where else None
    return x, y0, y, where


def _area(fig, ax, s, data, i):
    x, y0, y, where = _area_args(s, data)
    area = ax.fill_between(x, y0, y, where=where, color=color(s.color, i), alpha=s.alpha, linewidth=0,
                           hatch=s.hatch or None, label=fill(s.label, data) or None, gid=s.gid or None)
    return [(area, "fill", None)]


def _area_update(fig, ax, s, data, i, drawn):
    (fill_, _, _), = drawn
    x, y0, y, where = _area_args(s, data)
    fill_.set_data(x, y0, y, where=where)
    _relabel(fill_, fill(s.label, data) or None)
    return True


def runs(mask):
    """(start, stop) index pairs of the runs where ``mask`` is true."""
    m = np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]])
    edges = np.flatnonzero(np.diff(m))
    return list(zip(edges[::2], edges[1::2]))


def band_edges(x, start, stop, log):
    """The band over x[start:stop] reaches halfway (in log x on a log axis) to its neighbours."""
    t = np.log(x) if log else np.asarray(x, dtype=float)
    lo = t[start] - (t[start] - t[start - 1]) / 2 if start > 0 else t[start]
    hi = t[stop - 1] + (t[stop] - t[stop - 1]) / 2 if stop < len(t) else t[stop - 1]
    return (math.exp(lo), math.exp(hi)) if log else (lo, hi)


def _band_runs(s, data):
    """(lo, hi, text) of each band: its x extent and its note ("" for none)."""
    x = np.asarray(value_of(s.x, data), dtype=float)
    out = []
    for start, stop in runs(np.asarray(data[s.mask], dtype=bool)):
        lo, hi = band_edges(x, start, stop, log=True)
        inner = 0 < start and stop < len(x)
        out.append((lo, hi, fill(s.inner_text if (inner and s.inner_text) else s.text, data)))
    return out


def _bands(fig, ax, s, data, i):
    label = fill(s.label, data) or None
    c = color(s.color, i)
    drawn = []
    for lo, hi, text in _band_runs(s, data):
        drawn.append((ax.axvspan(lo, hi, facecolor=mpl.colors.to_rgba(c, s.alpha), edgecolor=c if s.hatch else "none",
                                 hatch=s.hatch or None, linewidth=0, label=label, gid=s.gid or None), "span", None))
        label = None
        if text:
            note = ax.text(math.sqrt(lo * hi), 0.97, text, transform=ax.get_xaxis_transform(), ha="center", va="top",
                           fontsize=9, color=c, gid=(s.gid + "_label") if s.gid else None)
            drawn.append((note, None, None))
    return drawn


def _bands_update(fig, ax, s, data, i, drawn):
    bands = _band_runs(s, data)
    if [how for _, how, _ in drawn] != [h for *_, text in bands for h in (("span", None) if text else ("span",))]:
        return False
    artists = iter(a for a, _, _ in drawn)
    for n, (lo, hi, text) in enumerate(bands):
        span = next(artists)
        if (span.get_x(), span.get_width()) != (lo, hi - lo):
            span.set_x(lo)
            span.set_width(hi - lo)
        if n == 0:
            _relabel(span, fill(s.label, data) or None)
        if text:
            _set_text(next(artists), text, (math.sqrt(lo * hi), 0.97))
    return True


def _rule_at(s, data):
    return float(value_of(s.x if s.kind == "vline" else s.y, data))


def _rule(fig, ax, s, data, i):
    """An :class:`~.spec.HLine` or a :class:`~.spec.VLine` across the panel, with its note."""
    vertical = s.kind == "vline"
    at = _rule_at(s, data)
    if not math.isfinite(at):
        return []
    c = color(s.color or "ridge", i)
    drawn = [((ax.axvline if vertical else ax.axhline)(at, color=c, linestyle=_DASH[s.dash], linewidth=s.width,
                                                       label=fill(s.label, data) or None, gid=s.gid or None),
              s.kind, None)]
    if s.text and vertical:
        drawn.append((ax.text(at, 0.98, " " + fill(s.text, data), transform=ax.get_xaxis_transform(), va="top",
                              fontsize=9, color=c), None, None))
    elif s.text:
        drawn.append((ax.text(0.99, at, fill(s.text, data), transform=ax.get_yaxis_transform(), ha="right",
                              va="bottom", fontsize=9, color=c, gid=(s.gid + "_label") if s.gid else None), None, None))
    return drawn


def _rule_update(fig, ax, s, data, i, drawn):
    at = _rule_at(s, data)
    if not math.isfinite(at):
        return False
    line = drawn[0][0]
    if s.kind == "vline":
        if line.get_xdata()[0] != at:
            line.set_xdata([at, at])
    elif line.get_ydata()[0] != at:
        line.set_ydata([at, at])
    _relabel(line, fill(s.label, data) or None)
    if s.text:
        note = drawn[1][0]
        if s.kind == "vline":
            _set_text(note, " " + fill(s.text, data), (at, 0.98))
        else:
            _set_text(note, fill(s.text, data), (0.99, at))
    return True


def cell_edges(centres, log):
    """Edges of cells centred on ``centres`` (geometric midpoints on a log axis)."""
    c = np.log(centres) if log else np.asarray(centres, dtype=float)
    mid = (c[1:] + c[:-1]) / 2
    edges = np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])
    return np.exp(edges) if log else edges


def _even(v):
    """Evenly spaced centres (a linear axis) rather than log-spaced ones."""
    d = np.diff(v)
    return d.size == 0 or bool(np.allclose(d, d[0]))


def gamma_colormap(vmax: int):
    """Draft lengths 0..vmax: 0 in its own colour, then viridis."""
    vmax = max(int(vmax), 1)
    colors = [style.COLORS["gamma_zero"]] + [mpl.colormaps["viridis"](v) for v in np.linspace(0, 1, vmax)]
    return ListedColormap(colors), BoundaryNorm(np.arange(-0.5, vmax + 1.5), vmax + 1)


def _colors(s, data, z):
    """The colour map and its norm (as pcolormesh keywords) of a heatmap, and a key that changes with them."""
    vmin, vmax = value_of(s.vmin, data), value_of(s.vmax, data)
    if s.colors == "gamma":
        top = int(np.nanmax(z)) if vmax is None else int(vmax)
        cmap, norm = gamma_colormap(top)
        return dict(cmap=cmap, norm=norm), ("gamma", top)
    if s.colors == "diverging":
        cmap = LinearSegmentedColormap.from_list("speclib_diverging", style.DIVERGING)
        lim = float(vmax) if vmax is not None else float(np.nanmax(np.abs(z)))
        return dict(cmap=cmap, vmin=-lim, vmax=lim), ("diverging", lim)
    # A bound left to the data follows the data.
    return dict(cmap="viridis", vmin=vmin, vmax=vmax), ("viridis", vmin, vmax,
                                                        *((np.nanmin(z), np.nanmax(z)) if None in (vmin, vmax) else ()))


def _heatmap_key(s, data):
    """What a heatmap's mesh and hatching are made from, but its values: its cells, colours and mask."""
    x, y, z = (np.asarray(data[name], dtype=float) for name in (s.x, s.y, s.z))
    mask = np.asarray(data[s.mask], dtype=bool) if s.mask else None
    key = (x.tobytes(), y.tobytes(), _colors(s, data, z)[1], None if mask is None else mask.tobytes())
    return x, y, z, key


def _heatmap(fig, ax, s, data, i):
    x, y, z, key = _heatmap_key(s, data)
    kwargs, (kind, top, *_) = _colors(s, data, z)
    mesh = ax.pcolormesh(cell_edges(x, not _even(x)), cell_edges(y, not _even(y)), z, shading="flat", gid=s.gid or None,
                         rasterized=True, **kwargs)
    drawn = [(mesh, "mesh", key)]
    if s.mask and np.any(data[s.mask]):
        hatched = ax.contourf(x, y, np.asarray(data[s.mask], dtype=float), levels=[0.5, 1.5], colors="none",
                              hatches=[style.MEMORY_HATCH])
        drawn.append((hatched, "contour", ([x.min(), y.min()], [x.max(), y.max()])))
    if not s.colorbar:
        return drawn
    bar = getattr(ax, "_speclib_colorbar", None)
    if bar is None:  # made once; a redraw (a widget's) points it at the new mesh
        # One colour bar for every panel (a figure of several maps shares one scale).
        panels = [a for a in fig.axes if a.get_label() != "<colorbar>"]
        bar = ax._speclib_colorbar = fig.colorbar(mesh, ax=panels if len(panels) > 1 else ax, pad=0.01)
        bar.ax.set_label("<colorbar>")
    else:
        bar.update_normal(mesh)
    if s.label:
        bar.set_label(fill(s.label, data))
    if kind == "gamma":
        bar.set_ticks(range(0, top + 1, max(1, (top + 1) // 8)))
    return drawn


def _heatmap_update(fig, ax, s, data, i, drawn):
    x, y, z, key = _heatmap_key(s, data)
    mesh, _, before = drawn[0]
    if key != before:
        return False
    mesh.set_array(z)
    bar = getattr(ax, "_speclib_colorbar", None) if s.colorbar else None
    if bar is not None and s.label and bar.ax.get_ylabel() != fill(s.label, data):
        bar.set_label(fill(s.label, data))
    return True


def _text_at(s, data):
    x, y = value_of(s.x, data), value_of(s.y, data)
    if x is None or y is None or not (math.isfinite(float(x)) and math.isfinite(float(y))):
        return None
    return float(x), float(y)


def _text(fig, ax, s, data, i):
    at = _text_at(s, data)
    if at is None:
        return []
    x, y = at
    drawn = []
    if s.marker:
        drawn += [(point, "plot", None) for point in ax.plot([x], [y], s.marker, color="black", markersize=5, zorder=5,
                                                             gid=(s.gid + "_point") if s.gid else None)]
    arrow = dict(arrowstyle="->", lw=0.8, color="black") if s.arrow else None
    drawn.append((ax.annotate(fill(s.text, data), (x, y), xycoords="axes fraction" if s.coords == "axes" else "data",
                              xytext=(s.dx, s.dy), textcoords="offset points", color=s.color, fontsize=max(s.size, style.SMALLEST_TEXT_PT),
                              ha=s.align, va="center" if s.coords == "axes" else "baseline", arrowprops=arrow,
                              gid=s.gid or None), None, None))
    return drawn


def _text_update(fig, ax, s, data, i, drawn):
    at = _text_at(s, data)
    if at is None:
        return False
    x, y = at
    if s.marker:
        drawn[0][0].set_data([x], [y])
    note = drawn[-1][0]
    if tuple(note.xy) != (x, y):
        note.xy = (x, y)
        note.stale = True  # xy is a plain attribute: say the note moved
    if note.get_text() != fill(s.text, data):
        note.set_text(fill(s.text, data))
    return True


def _set_text(text, value, position):
    if text.get_text() != value:
        text.set_text(value)
    if text.get_position() != position:
        text.set_position(position)


def _relabel(artist, label):
    """``artist``'s legend label, as a fresh draw gives it (no label: one the legend leaves out)."""
    if label:
        if artist.get_label() != label:
            artist.set_label(label)
    elif not artist.get_label().startswith("_"):
        artist.set_label("_nolegend_")


_SERIES = {"points": _points, "line": _line, "area": _area, "bands": _bands, "hline": _rule, "vline": _rule,
           "heatmap": _heatmap, "text": _text}
_UPDATE = {"points": _points_update, "line": _line_update, "area": _area_update, "bands": _bands_update,
           "hline": _rule_update, "vline": _rule_update, "heatmap": _heatmap_update, "text": _text_update}
