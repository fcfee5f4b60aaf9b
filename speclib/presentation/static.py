"""The matplotlib renderer: any :class:`~.definition.Figure` as an image.

One function, :func:`draw`, turns a definition and its computed data into a
matplotlib Figure; the book's static images, the PDF and the kernel's live
widgets (:mod:`.interactive`, which calls it again on every control move)
all go through it. Artists carry the series' ``gid`` so tests can find them
(:func:`artist`).
"""
from __future__ import annotations

import html
import math

import matplotlib as mpl
import numpy as np
from matplotlib.colors import BoundaryNorm, LinearSegmentedColormap, ListedColormap
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, PercentFormatter

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
    widget keep its frame between moves."""
    panels = defn.panels(data) if callable(defn.panels) else defn.panels
    if len(panels) == 1 and panels[0].series and panels[0].series[0].kind == "table":
        return table(panels[0].series[0], data)
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
        for ax, panel in zip(axes, panels):
            _panel(fig, ax, panel, data, live)
        if defn.keys and not fig.legends:
            handles = [Line2D([], [], color=color(k.color), marker=k.marker or None, linestyle=_DASH[k.dash] if not
                              k.marker else "none", mfc=None if k.filled else "none", label=fill(k.label, data))
                       for k in defn.keys]
            fig.legend(handles=handles, loc="outside lower center", ncol=min(7, len(handles)), fontsize=8)
        title = fill(_first_line(defn.title) if live else defn.title, data)
        if title:
            fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    return fig


def _first_line(template: str) -> str:
    return template.split("\n")[0]


def _panel(fig, ax, panel, data, live=False):
    ax.clear()
    for i, s in enumerate(panel.series):
        if getattr(s, "when", "") and not bool(value_of(s.when, data)):
            continue
        _SERIES[s.kind](fig, ax, s, data, i)
    _axis(ax, "x", panel.x, data)
    _axis(ax, "y", panel.y, data)
    ax.grid(panel.grid)
    if panel.title:
        ax.set_title(fill(_first_line(panel.title) if live else panel.title, data), loc="left")
    handles, labels = ax.get_legend_handles_labels()
    if panel.legend and handles:
        ax.legend(handles, labels, loc=panel.legend)


def _axis(ax, which, axis, data):
    set_scale, set_lim = getattr(ax, f"set_{which}scale"), getattr(ax, f"set_{which}lim")
    target = getattr(ax, f"{which}axis")
    getattr(ax, f"set_{which}label")(fill(axis.label, data))
    scale = axis.scale if axis.scale in ("linear", "log", "log2") else value_of(axis.scale, data)
    if scale == "log":
        set_scale("log")
    elif scale == "log2":
        set_scale("log", base=2)
    lo, hi = value_of(axis.lo, data), value_of(axis.hi, data)
    if lo is not None or hi is not None:
        set_lim(None if lo is None else float(lo), None if hi is None else float(hi))
    if isinstance(axis.ticks, tuple):
        target.set_major_locator(FixedLocator(axis.ticks))
        target.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        target.set_minor_formatter(NullFormatter())
    elif axis.ticks == "context":
        target.set_major_formatter(FuncFormatter(lambda v, _p: f"{v / 1024:g}k" if v >= 1024 else f"{v:g}"))
    elif axis.ticks == "batch":
        target.set_major_formatter(FuncFormatter(style.batch_label))
    elif axis.ticks == "percent":
        target.set_major_formatter(PercentFormatter(1.0))
    else:
        target.set_major_formatter(FuncFormatter(style.thousands))


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
    for r, (x, y, c) in enumerate(_rows(s, data, i, cycle=True)):
        kwargs = dict(color=c, linestyle=_DASH[s.dash], linewidth=s.width, alpha=s.alpha, gid=s.gid or None,
                      label=labels[r] if (s.labels or r == 0) else None)
        if s.marker:
            kwargs.update(marker=s.marker, markersize=12 if s.marker == "*" else 4)
        if s.step:
            kwargs.update(where="mid")
        (ax.step if s.step else ax.plot)(x, y, **kwargs)


def _points(fig, ax, s, data, i):
    for r, (x, y, c) in enumerate(_rows(s, data, i, cycle=False)):
        ax.plot(x, y, s.marker, color=c, markersize=s.size, linestyle="none", mfc=c if s.filled else "none",
                alpha=s.alpha, label=(fill(s.label, data) or None) if r == 0 else None, gid=s.gid or None)


def _area(fig, ax, s, data, i):
    x, y = _xy(data, s)
    y0 = np.broadcast_to(np.asarray(value_of(s.y0, data), dtype=float), x.shape)
    where = np.asarray(data[s.where], dtype=bool) if s.where else None
    ax.fill_between(x, y0, y, where=where, color=color(s.color, i), alpha=s.alpha, linewidth=0,
                    hatch=s.hatch or None, label=fill(s.label, data) or None, gid=s.gid or None)


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


def _bands(fig, ax, s, data, i):
    x = np.asarray(value_of(s.x, data), dtype=float)
    mask = np.asarray(data[s.mask], dtype=bool)
    label = fill(s.label, data) or None
    c = color(s.color, i)
    for start, stop in runs(mask):
        lo, hi = band_edges(x, start, stop, log=True)
        ax.axvspan(lo, hi, facecolor=mpl.colors.to_rgba(c, s.alpha), edgecolor=c if s.hatch else "none",
                   hatch=s.hatch or None, linewidth=0, label=label, gid=s.gid or None)
        label = None
        inner = 0 < start and stop < len(x)
        text = fill(s.inner_text if (inner and s.inner_text) else s.text, data)
        if text:
            ax.text(math.sqrt(lo * hi), 0.97, text, transform=ax.get_xaxis_transform(), ha="center", va="top",
                    fontsize=9, color=c, gid=(s.gid + "_label") if s.gid else None)


def _rule(fig, ax, s, data, i):
    """An :class:`~.spec.HLine` or a :class:`~.spec.VLine` across the panel, with its note."""
    vertical = s.kind == "vline"
    at = float(value_of(s.x if vertical else s.y, data))
    if not math.isfinite(at):
        return
    c = color(s.color or "ridge", i)
    (ax.axvline if vertical else ax.axhline)(at, color=c, linestyle=_DASH[s.dash], linewidth=s.width,
                                             label=fill(s.label, data) or None, gid=s.gid or None)
    if s.text and vertical:
        ax.text(at, 0.98, " " + fill(s.text, data), transform=ax.get_xaxis_transform(), va="top", fontsize=9,
                color=c)
    elif s.text:
        ax.text(0.99, at, fill(s.text, data), transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                fontsize=9, color=c, gid=(s.gid + "_label") if s.gid else None)


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


def _heatmap(fig, ax, s, data, i):
    x, y, z = (np.asarray(data[name], dtype=float) for name in (s.x, s.y, s.z))
    vmin, vmax = value_of(s.vmin, data), value_of(s.vmax, data)
    if s.colors == "gamma":
        top = int(np.nanmax(z)) if vmax is None else int(vmax)
        cmap, norm = gamma_colormap(top)
        kwargs = dict(cmap=cmap, norm=norm)
    elif s.colors == "diverging":
        cmap = LinearSegmentedColormap.from_list("speclib_diverging", style.DIVERGING)
        lim = float(vmax) if vmax is not None else float(np.nanmax(np.abs(z)))
        kwargs = dict(cmap=cmap, vmin=-lim, vmax=lim)
    else:
        kwargs = dict(cmap="viridis", vmin=vmin, vmax=vmax)
    mesh = ax.pcolormesh(cell_edges(x, not _even(x)), cell_edges(y, not _even(y)), z, shading="flat", gid=s.gid or None,
                         rasterized=True, **kwargs)
    if s.mask and np.any(data[s.mask]):
        ax.contourf(x, y, np.asarray(data[s.mask], dtype=float), levels=[0.5, 1.5], colors="none",
                    hatches=[style.MEMORY_HATCH])
    if not s.colorbar:
        return
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
    if s.colors == "gamma":
        bar.set_ticks(range(0, top + 1, max(1, (top + 1) // 8)))


def _text(fig, ax, s, data, i):
    x, y = value_of(s.x, data), value_of(s.y, data)
    if x is None or y is None or not (math.isfinite(float(x)) and math.isfinite(float(y))):
        return
    x, y = float(x), float(y)
    if s.marker:
        ax.plot([x], [y], s.marker, color="black", markersize=5, zorder=5, gid=(s.gid + "_point") if s.gid else None)
    arrow = dict(arrowstyle="->", lw=0.8, color="black") if s.arrow else None
    ax.annotate(fill(s.text, data), (x, y), xycoords="axes fraction" if s.coords == "axes" else "data",
                xytext=(s.dx, s.dy), textcoords="offset points", color=s.color, fontsize=s.size, ha=s.align,
                va="center" if s.coords == "axes" else "baseline", arrowprops=arrow, gid=s.gid or None)


_SERIES = {"points": _points, "line": _line, "area": _area, "bands": _bands, "hline": _rule, "vline": _rule,
           "heatmap": _heatmap, "text": _text}
