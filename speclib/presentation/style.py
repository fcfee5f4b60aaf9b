"""One look for every figure in the book: size, resolution, colours, fonts.

Figures are built in two ways that share this module:

* :func:`new_figure` (static figures): created through pyplot so that, inside
  a Jupyter kernel, pyplot's inline integration is active and a cell ending in
  the Figure shows it; the figure is then closed (removed from pyplot's list),
  so the inline backend does not show it a second time at the end of the cell.
* :func:`new_canvas_figure` (live widgets): a bare Agg-backed Figure outside
  pyplot, re-rendered to PNG bytes on every control move.
"""
from __future__ import annotations

import io
from contextlib import contextmanager

import matplotlib as mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

FIGSIZE = (7.0, 4.2)
DPI = 100
#: The smallest type a static figure draws, in points: static.py raises a smaller size to it. At DPI it is
#: SMALLEST_TEXT_PT * DPI / 72 pixels of the PNG, so a page that shows a figure at no less than
#: 9 / (SMALLEST_TEXT_PT * DPI / 72) of its natural width shows all its text at 9 CSS px or more
#: (_static/speclib_layout.css: a phone's screen; tests/browser/test_phone.py measures it).
SMALLEST_TEXT_PT = 8.0

#: Colours (matplotlib's tab10, named by role so figures agree with each other).
COLORS = {
    "dense": "#1f77b4",
    "moe": "#d62728",
    "ridge": "#555555",
    "total": "#111111",
    "attn_proj": "#1f77b4",
    "attention": "#2ca02c",
    "drafter": "#9467bd",
    "gutter": "#d62728",
    "mla": "#d62728",
    "gqa": "#1f77b4",
    "mha": "#17becf",
    "hca": "#ff7f0e",
    "csa": "#2ca02c",
    "indexer": "#9467bd",
    # the sequel's chapters
    "gdn": "#2ca02c",
    "mtp": "#1f77b4",
    "dflash": "#ff7f0e",
    "policy": "#d62728",
    "aggregate": "#111111",
    "per-component": "#9467bd",
    "memory": "#7f7f7f",  # batches whose weights and caches do not fit in HBM
    "gamma_zero": "#f4cccc",  # gamma* = 0: plain decoding wins
}
#: How the batches that cannot fit in HBM are drawn.
MEMORY_HATCH = "///"
#: A sequence for families of curves (batches, verify widths).
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")

#: Ramps the browser samples (33 stops): viridis for draft lengths, a
#: diverging one for signed ratios.
VIRIDIS = [mpl.colors.to_hex(mpl.colormaps["viridis"](i / 32)) for i in range(33)]
DIVERGING = [mpl.colors.to_hex(mpl.colormaps["PuOr"](i / 32)) for i in range(33)]

RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 2.0,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    # No date or user in saved files: the same figure gives the same bytes.
    "svg.hashsalt": "speclib",
    "pdf.compression": 6,
}


@contextmanager
def style():
    """rcParams for building a figure (artists read most of them on creation)."""
    with mpl.rc_context(RC):
        yield


def new_figure(figsize=FIGSIZE) -> Figure:
    """A pyplot-made figure, already closed in pyplot (see the module docstring)."""
    import matplotlib.pyplot as plt

    with style():
        fig = plt.figure(figsize=figsize, dpi=DPI, layout="constrained")
    plt.close(fig)
    return fig


def new_canvas_figure(figsize=FIGSIZE) -> Figure:
    """A figure on its own Agg canvas, never registered with pyplot."""
    with style():
        return FigureCanvasAgg(Figure(figsize=figsize, dpi=DPI, layout="constrained")).figure


def png_bytes(fig: Figure) -> bytes:
    """Render ``fig`` to PNG with no metadata that changes between runs."""
    buf = io.BytesIO()
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.print_png(buf, metadata={"Software": None})
    return buf.getvalue()


def encode_jpeg(canvas: FigureCanvasAgg, quality: int = 95) -> bytes:
    """JPEG of what ``canvas`` holds now, without drawing it again: these
    images are streamed to a live widget on every move, not stored, and JPEG
    encodes an order of magnitude faster than PNG."""
    from PIL import Image

    buf = io.BytesIO()
    rgba = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    rgba.convert("RGB").save(buf, format="jpeg", quality=quality)  # PIL drops the alpha at half numpy's cost
    return buf.getvalue()


def thousands(x, _pos=None) -> str:
    """Tick formatter: 11000 -> '11,000'; 0.5 -> '0.5'."""
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:g}"


def context_label(x, _pos=None) -> str:
    """Log-axis tick formatter for context lengths in tokens: 512, 1k, 64k, 1M (1,048,576 tokens)."""
    for unit, suffix in ((1024 ** 2, "M"), (1024, "k")):
        if x >= unit:
            return f"{x / unit:g}{suffix}"
    return f"{x:g}"


def batch_label(x, _pos=None) -> str:
    """Log-axis tick formatter for batch sizes: 1, 10, 100, 1k, 10k."""
    if x >= 1000 and float(x / 1000).is_integer():
        return f"{int(x / 1000)}k"
    return thousands(x)
