"""The paper's figures and table, and the extra figures the main chapters use.

Every figure is a small class that builds its artists once (``_build``) and
then changes their data in place (``update(**params)``): the static figure
functions below make one and return its Figure; the live widgets in
:mod:`speclib.widgets` keep one and call ``update`` on every control move.
All numbers come from speclib's vectorised API; nothing here re-derives the
model. Artists carry a ``gid`` (for example ``"total"``, ``"moe"``) so tests
and the HTML layer can find them with :func:`artist`.
"""
from __future__ import annotations

import dataclasses
import html
from functools import partial

import matplotlib as mpl
import numpy as np
from matplotlib.colors import BoundaryNorm
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..._checks import checked_array, checked_choice, checked_int
from ...core import attention as _attention
from ...core import capacity as _capacity
from ...core import cost as _cost
from ...core import moe as _moe
from ...core import speculation as _speculation
from ...presets import hardware_names, resolve
from . import _style
from ._style import BAND_ALPHA, COLORS, CYCLE, MEMORY_ALPHA, MEMORY_HATCH, RIDGE_STYLE

#: The paper's batch axis for Figures 2 and 3 (sequences).
BATCH_RANGE = (1, 30_000)
#: The paper's Table 1 grid.
TABLE_CONTEXTS = (512, 1024, 8192, 16384, 1_048_576)
TABLE_WIDTHS = (1, 2, 4, 8)
#: Expert weight formats a reader can pick in Figure 1: bytes per parameter as
#: stored, and the GEMM precision the experts then run in.
WEIGHT_FORMATS = {"mxfp4": (0.53, "fp4"), "fp8": (1.0, "fp8"), "bf16": (2.0, "bf16")}


def seq_len_from_slider(u):
    """The paper's sequence-length slider: S = 512 * 2**(8u), u in [0, 1]."""
    u_arr = checked_array("u", u, lo=0, hi=1)
    out = 512.0 * 2.0 ** (8.0 * u_arr)
    return float(out) if out.ndim == 0 else out


def artist(fig, gid):
    """The first artist of ``fig`` whose gid is ``gid`` (None if there is none)."""
    found = fig.findobj(lambda a: a.get_gid() == gid)
    return found[0] if found else None


def artists(fig, gid):
    """Every artist of ``fig`` whose gid is ``gid``."""
    return fig.findobj(lambda a: a.get_gid() == gid)


def _fmt_int(x) -> str:
    return f"{x:,.0f}"


def _batch_grid(lo, hi, n):
    """``n`` log-spaced batches from ``lo`` to ``hi`` (inclusive)."""
    lo = float(checked_array("batch_min", lo, lo=0, lo_open=True))
    hi = float(checked_array("batch_max", hi, lo=lo, lo_open=True))
    return np.geomspace(lo, hi, checked_int("points", n, lo=2, hi=100_000))


def integer_batches(lo=BATCH_RANGE[0], hi=BATCH_RANGE[1], n=600):
    """Whole-sequence batches, about ``n`` of them log-spaced from ``lo`` to
    ``hi`` (duplicates at small batch removed)."""
    return np.unique(np.round(_batch_grid(lo, hi, n)))


def zero_gamma_bands(batches, gamma_star):
    """Runs of consecutive ``batches`` where ``gamma_star`` is 0, as a list of
    ``(first, last, kind)``; ``kind`` is ``"gutter"`` when speculation pays on
    both sides of the run, ``"edge"`` otherwise (the run touches either end
    of the range)."""
    batches = np.asarray(batches, dtype=float)
    zero = np.asarray(gamma_star) == 0
    if batches.shape != zero.shape or batches.ndim != 1:
        raise ValueError("batches and gamma_star must be 1-D arrays of the same length")
    edges = np.flatnonzero(np.diff(np.concatenate([[0], zero.astype(np.int8), [0]])))
    bands = []
    for start, stop in zip(edges[::2], edges[1::2]):
        inner = start > 0 and stop < zero.size
        bands.append((float(batches[start]), float(batches[stop - 1]), "gutter" if inner else "edge"))
    return bands


def _nice_ceiling(x):
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 (times a power of
    ten) that is >= x: axis tops that change rarely as data moves."""
    x = float(x)
    if x <= 0:
        return 1.0
    power = 10.0 ** np.floor(np.log10(x))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * power >= x * (1 - 1e-12):
            return step * power
    return 10 * power  # pragma: no cover


def gamma_regions(alpha=0.75, S=4096, c_draft=0.10, model=None, hardware=None, batches=None, gamma_max=64):
    """Where speculation pays along the batch axis of Figure 3, on whole
    batches (default every batch from 1 to 30,000).

    Returns a dict: ``bands`` (the runs with gamma* = 0, as from
    :func:`zero_gamma_bands`), ``gutters`` (the runs with speculation paying
    on both sides), ``best_gamma`` and ``best_batch`` (the largest gamma*
    and the first batch reaching it), ``last_speculating`` (the largest
    batch with gamma* > 0, None if there is none).
    """
    B = np.arange(BATCH_RANGE[0], BATCH_RANGE[1] + 1, dtype=float) if batches is None else np.asarray(batches, float)
    g, _ = _speculation.optimal_gamma(alpha, B, S, c_draft, model, hardware, gamma_max)
    bands = zero_gamma_bands(B, g)
    positive = np.flatnonzero(g > 0)
    return {
        "bands": bands,
        "gutters": [(lo, hi) for lo, hi, kind in bands if kind == "gutter"],
        "best_gamma": int(g.max()),
        "best_batch": float(B[int(np.argmax(g))]),
        "last_speculating": float(B[positive[-1]]) if positive.size else None,
    }


#: The legend label of the batches that cannot fit in HBM.
MEMORY_LABEL = "does not fit in HBM (weights + KV cache)"


def memory_limit(model, hardware, S, tp=1):
    """The largest batch that fits at context(s) ``S`` (see
    :func:`speclib.capacity.max_batch`), or None when the model or chip
    lacks what the check needs (then nothing is shaded)."""
    try:
        return _capacity.max_batch(model, hardware, S, tp)
    except ValueError:
        return None


def memory_patch(ax, xy, gid="memory_band"):
    """A hatched grey polygon over ``xy`` (data coordinates): batches that cannot fit."""
    from matplotlib.patches import Polygon

    patch = Polygon(xy, closed=True, facecolor=mpl.colors.to_rgba(COLORS["memory"], MEMORY_ALPHA),
                    edgecolor=COLORS["memory"], hatch=MEMORY_HATCH, linewidth=0.0, gid=gid, label=MEMORY_LABEL,
                    zorder=2.5)
    ax.add_patch(patch)
    return patch


def _check_keys(params, allowed, figure_name):
    unknown = set(params) - set(allowed)
    if unknown:
        raise ValueError(
            f"{figure_name}() got unknown parameter(s) {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


class Plot:
    """Base of every figure: build artists once, then ``update`` data in place.

    ``defaults`` lists every parameter ``update`` accepts (besides ``model``
    and ``hardware``); ``params`` holds the current values.
    """

    name = ""
    defaults: dict = {}
    figsize = _style.FIGSIZE

    def __init__(self, figure=None, live=False, **params):
        #: Live (widget) figures keep their titles to what the controls do not
        #: show, so that titles stay fixed while a slider moves.
        self.live = bool(live)
        self._live_titles = {}
        self.figure = figure if figure is not None else _style.new_figure(self.figsize)
        self.params = {"model": None, "hardware": None, **self.defaults}
        self.model, self.hardware = resolve(None, None)
        with _style.style():
            self._build()
        self.update(**params)

    def update(self, **params):
        _check_keys(params, self.params, self.name)
        merged = {**self.params, **params}
        self.model, self.hardware = resolve(merged["model"], merged["hardware"])
        values = {k: v for k, v in merged.items() if k not in ("model", "hardware")}
        with _style.style():
            self._draw(**values)
            for ax, text in self._live_titles.items():
                ax.set_title(text, loc="left", pad=6 + 14 * self._legend_rows)
        self.params = merged
        return self

    # subclasses -------------------------------------------------------------
    def _build(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _draw(self, **params):  # pragma: no cover - abstract
        raise NotImplementedError

    # helpers ------------------------------------------------------------------
    def _title(self, ax, text):
        """A left title; its second line (the control values) is dropped when live."""
        if self.live:
            # Padded above the legend rows; the padding is settled in update(),
            # after _draw has made the legend.
            self._live_titles[ax] = text.split("\n")[0]
        else:
            ax.set_title(text, loc="left")

    _legend_rows = 0

    def _legend(self, ax, handles, labels=None, live_ncols=3, **static_kwargs):
        """A legend inside the axes; when live, a frameless one just above the
        axes instead, where no data is drawn over it (so the live view can
        keep it in its cached frame)."""
        labels = [h.get_label() for h in handles] if labels is None else labels
        if not self.live:
            return ax.legend(handles=handles, labels=labels, **static_kwargs)
        ncols = min(live_ncols, len(handles))
        self._legend_rows = -(-len(handles) // ncols)
        leg = ax.legend(handles=handles, labels=labels, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=ncols,
                        frameon=False, fontsize=8.5, borderaxespad=0.2, handlelength=1.6, columnspacing=1.2)
        leg.set_gid("frame_legend")
        return leg


# --- Figure 1: the expert tax ----------------------------------------------------


def moe_what_if(model=None, *, experts=None, top_k=None, weights=None):
    """``model`` with its routed-expert count, top-k or expert weight format
    changed (None keeps the model's own)."""
    model, _ = resolve(model, None)
    ffn = model.ffn
    if not ffn.is_moe:
        raise ValueError(f"model must be a mixture-of-experts model; {model.name} has a dense FFN")
    changes = {}
    if experts is not None:
        changes["n_routed"] = checked_int("experts", experts, lo=1, hi=1_000_000)
    if top_k is not None:
        changes["top_k"] = checked_int("top_k", top_k, lo=1, hi=1_000_000)
    n_routed = changes.get("n_routed", ffn.n_routed)
    if changes.get("top_k", ffn.top_k) > n_routed:
        raise ValueError(f"top_k must be in [1, experts={n_routed}]; got {changes.get('top_k', ffn.top_k)}")
    if weights is not None:
        fmt = checked_choice("weights", weights, tuple(WEIGHT_FORMATS))
        changes["weight_bytes"], changes["precision"] = WEIGHT_FORMATS[fmt]
    if not changes:
        return model
    return dataclasses.replace(model, ffn=dataclasses.replace(ffn, **changes))


class ExpertTaxPlot(Plot):
    """Figure 1: FFN arithmetic intensity against batch, dense versus MoE, both
    capped at the ridge of the experts' precision, memory-bound bands shaded."""

    name = "expert_tax"
    defaults = {
        "experts": None,
        "top_k": None,
        "weights": None,
        "scale": "linear",
        "batch_max": 11_000,
        "intensity_max": 1_200,
        "points": 2_000,
    }

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.dense_line = ax.plot([], [], color=COLORS["dense"], gid="dense")[0]
        self.moe_line = ax.plot([], [], color=COLORS["moe"], gid="moe")[0]
        self.dense_band = ax.fill_between([0, 1], 0, 0, color=COLORS["dense"], alpha=BAND_ALPHA, lw=0, gid="dense_band")
        self.moe_band = ax.fill_between([0, 1], 0, 0, color=COLORS["moe"], alpha=BAND_ALPHA, lw=0, gid="moe_band")
        self.ridge_line = ax.axhline(0, **RIDGE_STYLE, gid="ridge")
        self.ridge_text = ax.text(0.01, 0, "", transform=ax.get_yaxis_transform(), va="bottom", fontsize=9,
                                  color=COLORS["ridge"], gid="ridge_label")
        self.knee_markers = ax.plot([], [], "o", color="black", ms=5, zorder=5, gid="knees")[0]
        self.knee_texts = []
        ax.set_ylabel("arithmetic intensity (FLOP/byte)")

    def _draw(self, experts, top_k, weights, scale, batch_max, intensity_max, points):
        scale = checked_choice("scale", scale, ("linear", "log"))
        model = moe_what_if(self.model, experts=experts, top_k=top_k, weights=weights)
        self.effective_model = model
        hw = self.hardware
        ffn = model.ffn
        ridge = hw.ridge(ffn.precision)
        knees = _moe.knees(model, hw)
        self.knees = knees
        ax = self.ax
        n = checked_int("points", points, lo=10, hi=100_000)
        batch_max = float(checked_array("batch_max", batch_max, lo=10))
        if scale == "linear":
            grid = np.linspace(1.0, batch_max, n)
        else:
            grid = np.geomspace(1.0, batch_max, n)
        # The corners of the capped lines fall exactly on grid points.
        corners = [v for v in (knees["dense_knee"], knees["moe_ridge"], knees["expert_knee"]) if 1 < v < batch_max]
        B = np.unique(np.concatenate([grid, corners]))
        self.batches = B
        dense = _moe.dense_equivalent_intensity(B, model, hw)
        moe = _moe.ffn_intensity(B, model, hw)
        self.dense_line.set_data(B, dense)
        self.moe_line.set_data(B, moe)
        floor = 0.0 if scale == "linear" else 1e-3
        self.dense_band.set_data(B, floor, dense, where=dense < ridge)
        self.moe_band.set_data(B, floor, moe, where=moe < ridge)
        self.ridge_line.set_ydata([ridge, ridge])
        prec = {"fp4": "fp4", "fp8": "fp8", "bf16": "bf16"}[ffn.precision]
        native = "" if hw.native(ffn.precision) else f" (no native {prec}: runs at the next wider precision's peak)"
        self.ridge_text.set_text(f"{hw.name} {prec} ridge: {ridge:,.0f} FLOP/byte{native}")
        self.ridge_text.set_y(ridge)
        self.ridge_text.set_x(0.3 if scale == "linear" else 0.01)
        self.dense_line.set_label(f"dense FFN, same weights")
        shared = f" + {ffn.n_shared} shared" if ffn.n_shared else ""
        self.moe_line.set_label(f"MoE: top-{ffn.top_k} of {ffn.n_routed}{shared}")
        self.dense_band.set_label("memory-bound: dense")
        self.moe_band.set_label("memory-bound: MoE")

        for t in self.knee_texts:
            t.remove()
        self.knee_texts = []
        pts = []
        ek = knees["expert_knee"]
        # Text offsets (points) per scale, placed clear of the lines and legend.
        offsets = {
            "linear": {"dense": (40, -55), "expert": (30, 60),
                       "moe": (-200, -40) if knees["moe_ridge"] > 0.55 * batch_max else (40, -60)},
            "log": {"dense": (-130, -40), "expert": (25, 45), "moe": (-75, -95)},
        }[scale]
        annotations = [
            (knees["dense_knee"], ridge, f"dense meets the ridge\nat {_fmt_int(knees['dense_knee'])} tokens", offsets["dense"]),
            (ek, float(_moe.ffn_intensity(ek, model, hw)), f"E/k = {ek:,.1f} tokens: past here\nmost experts are already loaded",
             offsets["expert"]),
        ]
        if knees["moe_ridge"] <= batch_max:
            annotations.append((knees["moe_ridge"], ridge, f"MoE meets the ridge\nat {_fmt_int(knees['moe_ridge'])} tokens",
                                offsets["moe"]))
        else:
            self.knee_texts.append(ax.text(0.99, 0.5, f"MoE meets the ridge at {_fmt_int(knees['moe_ridge'])} tokens\n(off this chart) \u2192",
                                           transform=ax.transAxes, ha="right", va="center", fontsize=9, gid="knee_label"))
        for x, y, text, offset in annotations:
            pts.append((x, y))
            self.knee_texts.append(ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=8.5,
                                               arrowprops=dict(arrowstyle="->", lw=0.8, color="black"), gid="knee_label"))
        xs, ys = zip(*pts)
        self.knee_markers.set_data(xs, ys)

        ax.set_xscale(scale)
        ax.set_yscale(scale)
        if scale == "linear":
            ax.set_xlim(0, batch_max)
            ax.set_ylim(0, intensity_max)
            ax.xaxis.set_major_formatter(FuncFormatter(_style.thousands))
            ax.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        else:
            ax.set_xlim(1, batch_max)
            ax.set_ylim(1, max(intensity_max, ridge * 1.6))
            ax.xaxis.set_major_formatter(FuncFormatter(_style.batch_label))
            ax.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.set_xlabel("batch (tokens in the step)")
        self._title(ax, f"The expert tax: {model.name} FFN on {hw.name}, "
                        f"{ffn.weight_bytes:g} bytes/param")
        if self.live:
            self.moe_line.set_label("MoE (routed + shared experts)")
        self._legend(ax, [self.dense_line, self.moe_line, self.dense_band, self.moe_band, self.ridge_line],
                     [h.get_label() for h in (self.dense_line, self.moe_line, self.dense_band, self.moe_band)]
                     + ["ridge"], loc="lower right")


def expert_tax(model=None, hardware=None, **params):
    """Figure 1. Parameters: ``experts`` (E), ``top_k`` (k), ``weights``
    ("mxfp4", "fp8", "bf16"; None keeps the model's), ``scale`` ("linear",
    as the paper, or "log"), ``batch_max`` (11,000), ``intensity_max`` (1,200)."""
    return ExpertTaxPlot(model=model, hardware=hardware, **params).figure


# --- Table 1: attention intensity ---------------------------------------------


@dataclasses.dataclass(frozen=True)
class IntensityTable:
    """Attention arithmetic intensity over context lengths (rows) and verify
    widths (columns), with the cells above the ridge marked compute-bound."""

    model: str
    hardware: str
    variant: str
    query_bytes: bool
    contexts: tuple
    widths: tuple
    values: np.ndarray  # shape (len(contexts), len(widths)), FLOP/byte
    ridge: float

    @property
    def compute_bound(self) -> np.ndarray:
        return self.values > self.ridge

    def _caption(self) -> str:
        qb = "" if self.query_bytes else ", query bytes left out"
        return (
            f"Attention arithmetic intensity (FLOP/byte): {self.model}, variant {self.variant}{qb}. "
            f"Rows: context S; columns: query tokens per sequence T. "
            f"Compute-bound (above the {self.hardware} bf16 ridge, {self.ridge:,.2f} FLOP/byte) in bold."
        )

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="text-align:right">{t:,}</th>' for t in self.widths)
        rows = []
        for s, row, bound in zip(self.contexts, self.values, self.compute_bound):
            cells = []
            for v, hot in zip(row, bound):
                if hot:
                    cells.append(
                        f'<td class="compute-bound" style="text-align:right;font-weight:bold;'
                        f'background-color:#fde0dd"><b>{v:,.0f}</b></td>'
                    )
                else:
                    cells.append(f'<td class="memory-bound" style="text-align:right">{v:,.0f}</td>')
            rows.append(f'<tr><th style="text-align:right">{s:,}</th>{"".join(cells)}</tr>')
        return (
            '<table class="speclib-intensity-table">'
            f"<caption>{html.escape(self._caption())}</caption>"
            f'<thead><tr><th style="text-align:right">S \\ T</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def __repr__(self) -> str:
        width = max(9, max(len(f"{s:,}") for s in self.contexts) + 1)
        lines = [self._caption().replace(" in bold.", " marked *."), ""]
        corner = "S \\ T"
        lines.append(f"{corner:>{width}}" + "".join(f"{t:>8,}" for t in self.widths))
        for s, row, bound in zip(self.contexts, self.values, self.compute_bound):
            cells = "".join(f"{f'{v:,.0f}' + ('*' if hot else ' '):>8}" for v, hot in zip(row, bound))
            lines.append(f"{s:>{width},}" + cells)
        return "\n".join(line.rstrip() for line in lines)


def attention_table(model=None, hardware=None, *, variant=None, contexts=TABLE_CONTEXTS, widths=TABLE_WIDTHS,
                    query_bytes=True):
    """Table 1: ``speclib.attention_intensity`` over ``contexts`` x ``widths``.

    ``variant`` as in :func:`speclib.attention_intensity` ("mla", "hca", "csa",
    "indexer"; "gqa" for a GQA model such as "Llama-3-70B"); the ridge is the
    hardware's ridge at the model's attention precision (bf16).
    """
    m, hw = resolve(model, hardware)
    S = checked_array("contexts", contexts, lo=0, lo_open=True, integer=True)
    T = checked_array("widths", widths, lo=0, lo_open=True, integer=True)
    if S.ndim != 1 or T.ndim != 1:
        raise ValueError("contexts and widths must be 1-D sequences of positive integers")
    values = np.asarray(_attention.attention_intensity(T[None, :], S[:, None], m, variant, query_bytes=query_bytes))
    kind = m.attention.kind if variant is None else checked_choice("variant", variant, _attention.VARIANTS)
    return IntensityTable(
        model=m.name,
        hardware=hw.name,
        variant=kind,
        query_bytes=bool(query_bytes),
        contexts=tuple(int(s) for s in S),
        widths=tuple(int(t) for t in T),
        values=np.broadcast_to(values, (S.size, T.size)).copy(),
        ridge=hw.ridge(m.attention_precision),
    )


# --- Figure 2: the ledger --------------------------------------------------------

LEDGER_COMPONENTS = (
    ("attn_proj", "attention projections"),
    ("moe", "FFN (MoE experts)"),
    ("attention", "attention"),
    ("drafter", "drafter"),
)


class LedgerPlot(Plot):
    """Figure 2: the cost of one speculated token, as a multiple of a token
    already in the batch, against batch; optionally split into the
    components' shares (stacked, so their top is the total)."""

    name = "ledger"
    defaults = {
        "S": 8192,
        "c_draft": 0.10,
        "components": False,
        "query_bytes": False,
        "batch_range": BATCH_RANGE,
        "points": 400,
    }

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.bands = {}
        for key, label in LEDGER_COMPONENTS:
            self.bands[key] = ax.fill_between([1, 2], 0, 0, color=COLORS[key], alpha=0.35, lw=0, label=label, gid=f"band_{key}")
        self.full_price = ax.axhline(1.0, **RIDGE_STYLE, label="full price (1\u00d7 a real token)", gid="full_price")
        ax.text(0.99, 0.985, "full price", transform=ax.get_yaxis_transform(), ha="right", va="top",
                fontsize=9, color=COLORS["ridge"])
        self.total_line = ax.plot([], [], color=COLORS["total"], label="speculated token (total)", gid="total")[0]
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_style.batch_label))
        ax.set_xlabel("batch (sequences)")
        ax.set_ylabel("cost of a speculated token (\u00d7 a real token)")

    def _draw(self, S, c_draft, components, query_bytes, batch_range, points):
        S = float(checked_array("S", S, lo=0, lo_open=True))
        c = float(checked_array("c_draft", c_draft, lo=0))
        B = _batch_grid(batch_range[0], batch_range[1], points)
        model, hw = self.model, self.hardware
        cost = _cost.marginal_cost(B, S, c, model, hw, query_bytes=query_bytes)
        shares = _cost.cost_shares(B, S, model, hw, query_bytes=query_bytes)
        self.batches, self.cost, self.shares = B, cost, shares
        # Each component's contribution r_i * share_i; the drafter adds c flat.
        parts = {key: np.broadcast_to(cost[key] * shares[key], B.shape) for key in ("attn_proj", "moe", "attention")}
        parts["drafter"] = np.full(B.shape, c)
        self.contributions = parts
        bottom = np.zeros_like(B)
        for key, _ in LEDGER_COMPONENTS:
            top = bottom + parts[key]
            self.bands[key].set_data(B, bottom, top)
            self.bands[key].set_visible(bool(components))
            bottom = top
        self.total_line.set_data(B, cost["total"])
        self.bands["moe"].set_label("FFN (MoE experts)" if model.ffn.is_moe else "FFN (dense)")
        ax = self.ax
        ax.set_xlim(B[0], B[-1])
        # The paper's 0-1.3, grown in steps of 0.1 only when a costly drafter
        # pushes the total above it (steps keep the live view's frame still).
        peak = float(np.max(cost["total"]))
        ax.set_ylim(0, 1.3 if peak <= 1.25 else np.ceil((peak + 0.05) * 10) / 10)
        qb = ", query bytes counted" if query_bytes else ""
        self._title(ax, f"Price of a speculated token: {model.name} on {hw.name}\n"
                        f"S = {S:,.0f} tokens, drafter {c:.0%} of a step{qb}")
        handles = [self.total_line, self.full_price]
        # Live, the legend always lists the components so that it (and the
        # layout around it) does not change when they are toggled.
        if components or self.live:
            handles += [self.bands[key] for key, _ in LEDGER_COMPONENTS]
        self._legend(ax, handles, loc="upper left", ncols=2 if components else 1)


def ledger(model=None, hardware=None, **params):
    """Figure 2. Parameters: ``S`` (average sequence length, 8,192), ``c_draft``
    (drafter cost per drafted token as a fraction of a decode step, 0.10),
    ``components`` (stack each component's contribution, False),
    ``query_bytes`` (count attention's query bytes, False as in the paper),
    ``batch_range`` ((1, 30000)), ``points`` (400)."""
    return LedgerPlot(model=model, hardware=hardware, **params).figure


# --- Figure 3: optimal draft length --------------------------------------------


class OptimalGammaPlot(Plot):
    """Figure 3: the draft length gamma* maximising throughput, against batch,
    with the batches where speculation does not pay (gamma* = 0) shaded."""

    name = "optimal_gamma"
    defaults = {
        "S": 4096,
        "alpha": 0.75,
        "c_draft": 0.10,
        "gamma_max": 64,
        "query_bytes": False,
        "batch_range": BATCH_RANGE,
        "points": 600,
        "capacity": True,
    }

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        tf = ax.get_xaxis_transform()
        self.zero_band = ax.fill_between([1, 2], 0, 1, transform=tf, color=COLORS["gutter"], alpha=0.12, lw=0,
                                         label="\u03b3* = 0: plain decoding wins", gid="zero_band")
        self.memory_band = None
        self.memory_text = None
        self.gamma_line = ax.plot([], [], color=COLORS["total"], drawstyle="steps-mid", label="optimal draft length \u03b3*",
                                  gid="gamma_star")[0]
        self.band_texts = []
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_style.batch_label))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("batch (sequences)")
        ax.set_ylabel("optimal draft length \u03b3*")

    def _draw(self, S, alpha, c_draft, gamma_max, query_bytes, batch_range, points, capacity):
        S = float(checked_array("S", S, lo=0, lo_open=True))
        B = integer_batches(batch_range[0], batch_range[1], points)
        g, sp = _speculation.optimal_gamma(alpha, B, S, c_draft, self.model, self.hardware, gamma_max,
                                           query_bytes=query_bytes)
        self.batches, self.gamma_star, self.best_speedup = B, g, sp
        zero = g == 0
        self.gamma_line.set_data(B, g)
        # Shade each zero run out to the midpoints (in log B) between batches,
        # matching the steps-mid line.
        mids = np.sqrt(B[1:] * B[:-1])
        left = np.concatenate([[B[0]], mids])
        right = np.concatenate([mids, [B[-1]]])
        xs = np.ravel(np.column_stack([left, right]))
        self.zero_band.set_data(xs, 0, 1, where=np.repeat(zero, 2))
        ax = self.ax
        for t in self.band_texts:
            t.remove()
        self.band_texts = []
        self.bands = zero_gamma_bands(B, g)
        for lo, hi, kind in self.bands:
            label = "gutter" if kind == "gutter" else "\u03b3* = 0"
            self.band_texts.append(ax.text(np.sqrt(lo * hi), 0.97, label, transform=ax.get_xaxis_transform(),
                                           ha="center", va="top", fontsize=9, color=COLORS["gutter"], gid="band_label"))
        ax.set_xlim(B[0], B[-1])
        ax.set_ylim(0, max(6, 4 * int(np.ceil((int(g.max()) + 2) / 4))))
        # The batches whose weights and KV caches cannot fit in the chip's HBM.
        for artist_ in (self.memory_band, self.memory_text):
            if artist_ is not None:
                artist_.remove()
        self.memory_band = self.memory_text = None
        self.max_batch = memory_limit(self.model, self.hardware, S) if capacity else None
        handles = [self.gamma_line, self.zero_band]
        if self.max_batch is not None and self.max_batch < B[-1]:
            lo = max(float(B[0]), self.max_batch + 0.5)
            self.memory_band = memory_patch(ax, [(lo, 0), (B[-1], 0), (B[-1], 1), (lo, 1)])
            self.memory_band.set_transform(ax.get_xaxis_transform())
            self.memory_text = ax.text(np.sqrt(lo * B[-1]), 0.62, f"does not fit:\nB > {self.max_batch:,}",
                                       transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=9,
                                       color="#444444", gid="memory_label",
                                       bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1.5))
            handles.append(self.memory_band)
        self._title(ax, f"Optimal draft length: {self.model.name} on {self.hardware.name}\n"
                        f"S = {S:,.0f}, \u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%} of a step")
        self._legend(ax, handles, loc="upper center")


def optimal_gamma(model=None, hardware=None, **params):
    """Figure 3. Parameters: ``S`` (4,096), ``alpha`` (0.75), ``c_draft``
    (0.10), ``gamma_max`` (64), ``query_bytes`` (False), ``batch_range``,
    ``points`` (about 600 whole-sequence batches)."""
    return OptimalGammaPlot(model=model, hardware=hardware, **params).figure


class SpeedupCurvesPlot(Plot):
    """The curves behind Figure 3: speedup against draft length at a few
    batches, each curve's maximum (gamma*) marked."""

    name = "speedup_curves"
    defaults = {
        "S": 4096,
        "alpha": 0.75,
        "c_draft": 0.10,
        "batches": (1, 8, 64, 512, 4096),
        "gamma_max": 64,
        "query_bytes": False,
    }

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.curves, self.peaks = [], []
        ax.axhline(1.0, **RIDGE_STYLE, gid="no_speculation")
        ax.text(0.99, 1.0, "no speculation", transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                fontsize=9, color=COLORS["ridge"])
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("draft length \u03b3 (tokens proposed per verify)")
        ax.set_ylabel("throughput speedup over plain decoding (\u00d7)")

    def _draw(self, S, alpha, c_draft, batches, gamma_max, query_bytes):
        S = float(checked_array("S", S, lo=0, lo_open=True))
        Bs = checked_array("batches", batches, lo=1, integer=True)
        if Bs.ndim != 1 or Bs.size > len(CYCLE):
            raise ValueError(f"batches must be a 1-D sequence of at most {len(CYCLE)} batch sizes")
        gamma_max = checked_int("gamma_max", gamma_max, lo=1, hi=4096)
        gammas = np.arange(gamma_max + 1)
        table = _speculation.speedup(alpha, gammas[:, None], Bs[None, :], S, c_draft, self.model, self.hardware,
                                     query_bytes=query_bytes)
        g_star, best = _speculation.optimal_gamma(alpha, Bs, S, c_draft, self.model, self.hardware, gamma_max,
                                                  query_bytes=query_bytes)
        self.gammas, self.table, self.gamma_star, self.best_speedup = gammas, table, g_star, best
        ax = self.ax
        if len(self.curves) != Bs.size:
            for a in self.curves + self.peaks:
                a.remove()
            self.curves = [ax.plot([], [], color=CYCLE[i], marker="o", ms=3, lw=1.6, gid=f"speedup_{i}")[0]
                           for i in range(Bs.size)]
            self.peaks = [ax.plot([], [], "*", color=CYCLE[i], ms=13, mec="black", mew=0.6, zorder=5,
                                  gid=f"peak_{i}")[0] for i in range(Bs.size)]
        for i, b in enumerate(Bs):
            self.curves[i].set_data(gammas, table[:, i])
            self.curves[i].set_label(f"B = {b:,.0f}" if self.live else f"B = {b:,.0f}: \u03b3* = {g_star[i]}")
            self.peaks[i].set_data([g_star[i]], [best[i]])
        # Axis limits move in coarse steps so that small control moves keep the
        # frame (and the live view's cached background) unchanged.
        x_hi = min(gamma_max, max(10, 8 * int(np.ceil((int(g_star.max()) + 4) / 8))))
        ax.set_xlim(-0.3, x_hi + 0.3)
        ax.set_ylim(0, _nice_ceiling(1.08 * float(table[: x_hi + 1].max())))
        self._title(ax, f"Speedup against draft length: {self.model.name} on {self.hardware.name}\n"
                        f"S = {S:,.0f}, \u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%}; \u2605 = best \u03b3 at each batch")
        self._legend(ax, self.curves, live_ncols=len(self.curves), loc="best", title="batch (sequences)")


def speedup_curves(model=None, hardware=None, **params):
    """The speedup-against-gamma curves behind Figure 3. Parameters: ``S``
    (4,096), ``alpha`` (0.75), ``c_draft`` (0.10), ``batches`` ((1, 8, 64,
    512, 4096)), ``gamma_max`` (64), ``query_bytes`` (False)."""
    return SpeedupCurvesPlot(model=model, hardware=hardware, **params).figure


# --- extra figures for the attention chapter --------------------------------------


def mha_counterpart(model="Llama-3-70B"):
    """A GQA model with one KV head per query head: its MHA counterpart."""
    m, _ = resolve(model, None)
    if m.attention.kind != "gqa":
        raise ValueError(f"model must use GQA attention; {m.name} uses {m.attention.kind.upper()}")
    attn = dataclasses.replace(m.attention, n_kv_heads=m.attention.n_heads)
    return dataclasses.replace(m, name=f"{m.name} as MHA", attention=attn, aliases=())


class AttentionWidthPlot(Plot):
    """Attention intensity against verify width T at one context length, for
    MHA, GQA (Llama-3-70B) and MLA (DeepSeek-V4-Flash), with the bf16 ridge."""

    name = "attention_width"
    defaults = {"S": 8192, "query_bytes": True, "gqa_model": "Llama-3-70B", "mla_model": "DeepSeek-V4-Flash",
                "width_max": 256, "points": 200}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.lines = {
            key: ax.plot([], [], color=COLORS[key], gid=key)[0] for key in ("mha", "gqa", "mla")
        }
        self.ridge_line = ax.axhline(1, **RIDGE_STYLE, gid="ridge")
        self.ridge_text = ax.text(0.99, 1, "", transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                                  fontsize=9, color=COLORS["ridge"])
        self.cross_markers = ax.plot([], [], "o", color="black", ms=5, zorder=5, gid="ridge_crossings")[0]
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.set_xlabel("query tokens per sequence T (1 = decode, 1 + \u03b3 when verifying)")
        ax.set_ylabel("attention intensity (FLOP/byte)")

    def _draw(self, S, query_bytes, gqa_model, mla_model, width_max, points):
        S = float(checked_array("S", S, lo=0, lo_open=True))
        T = np.geomspace(1, float(checked_array("width_max", width_max, lo=2)), checked_int("points", points, lo=2))
        self.widths = T
        gqa, _ = resolve(gqa_model, None)
        mla, _ = resolve(mla_model, None)
        models = {"mha": mha_counterpart(gqa), "gqa": gqa, "mla": mla}
        ridge = self.hardware.ridge("bf16")
        self.intensity = {}
        xs, ys = [], []
        for key, m in models.items():
            ai = np.asarray(_attention.attention_intensity(T, S, m, query_bytes=query_bytes))
            self.intensity[key] = ai
            attn = m.attention
            if key == "mla":
                desc = f"{m.name}: MLA, {attn.n_heads} heads share one latent"
            else:
                desc = f"{m.name}: {attn.n_heads} query / {attn.n_kv_heads} KV heads"
            self.lines[key].set_data(T, ai)
            self.lines[key].set_label(desc)
            above = np.flatnonzero(ai > ridge)
            if above.size and above[0] > 0:
                xs.append(T[above[0]])
                ys.append(ai[above[0]])
        self.cross_markers.set_data(xs, ys)
        self.ridge_line.set_ydata([ridge, ridge])
        self.ridge_text.set_text(f"{self.hardware.name} bf16 ridge {ridge:,.0f}")
        self.ridge_text.set_y(ridge)
        ax = self.ax
        ax.set_xlim(1, T[-1])
        lo = min(float(min(v.min() for v in self.intensity.values())), ridge) / 1.5
        hi = max(float(max(v.max() for v in self.intensity.values())), ridge) * 1.5
        ax.set_ylim(10 ** np.floor(np.log10(lo)), 10 ** np.ceil(np.log10(hi)))
        qb = "" if query_bytes else ", query bytes left out"
        self._title(ax, f"Attention intensity against verify width\nS = {S:,.0f}{qb}")
        self._legend(ax, list(self.lines.values()), live_ncols=2, loc="lower right")


def attention_width(model=None, hardware=None, **params):
    """Intensity against T for MHA, GQA and MLA. Parameters: ``S`` (8,192),
    ``query_bytes`` (True, as Table 1), ``gqa_model``, ``mla_model``,
    ``width_max`` (256). ``model`` is unused (the comparison fixes its models)."""
    return AttentionWidthPlot(model=model, hardware=hardware, **params).figure


def v4_attention_what_if(model=None, *, hca_ratio=None, csa_ratio=None, csa_top_k=None):
    """``model`` with DeepSeek-V4's compression knobs changed (None keeps them)."""
    m, _ = resolve(model, None)
    attn = m.attention
    if getattr(attn, "hca_ratio", None) is None:
        raise ValueError(f"model must have DeepSeek-V4 HCA/CSA attention; {m.name} has none")
    changes = {}
    if hca_ratio is not None:
        changes["hca_ratio"] = float(checked_array("hca_ratio", hca_ratio, lo=1))
    if csa_ratio is not None:
        changes["csa_ratio"] = float(checked_array("csa_ratio", csa_ratio, lo=1))
    if csa_top_k is not None:
        changes["csa_top_k"] = checked_int("csa_top_k", csa_top_k, lo=1, hi=10_000_000)
    if not changes:
        return m
    return dataclasses.replace(m, attention=dataclasses.replace(attn, **changes))


V4_VARIANTS = (("hca", "HCA (MLA over S/128)"), ("csa", "CSA main (MLA over top-512)"), ("indexer", "CSA indexer (score only)"))


class CompressedAttentionPlot(Plot):
    """DeepSeek-V4's attention variants: intensity against the original
    context length for a few verify widths, one panel per variant."""

    name = "compressed_attention"
    defaults = {"widths": (1, 2, 4), "hca_ratio": None, "csa_ratio": None, "csa_top_k": None, "query_bytes": True,
                "context_range": (512, 1_048_576), "points": 300}

    def _build(self):
        axes = self.axes = self.figure.subplots(1, 3, sharey=True)
        self.lines = {}
        self.ridge_lines = []
        for ax, (key, title) in zip(axes, V4_VARIANTS):
            ax.set_xscale("log", base=2)
            ax.set_title(title, fontsize=10)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"))
            self.ridge_lines.append(ax.axhline(1, **RIDGE_STYLE, gid="ridge"))
            ax.set_xlabel("context S (tokens)")
        axes[0].set_ylabel("attention intensity (FLOP/byte)")

    def _draw(self, widths, hca_ratio, csa_ratio, csa_top_k, query_bytes, context_range, points):
        model = v4_attention_what_if(self.model, hca_ratio=hca_ratio, csa_ratio=csa_ratio, csa_top_k=csa_top_k)
        self.effective_model = model
        T = checked_array("widths", widths, lo=0, lo_open=True)
        if T.ndim != 1 or T.size > len(CYCLE):
            raise ValueError(f"widths must be a 1-D sequence of at most {len(CYCLE)} verify widths")
        S = _batch_grid(context_range[0], context_range[1], points)
        self.contexts = S
        ridge = self.hardware.ridge(model.attention_precision)
        self.intensity = {}
        for ax, (key, _title) in zip(self.axes, V4_VARIANTS):
            ai = np.asarray(_attention.attention_intensity(T[:, None], S[None, :], model, key, query_bytes=query_bytes))
            self.intensity[key] = ai
            lines = self.lines.get(key, [])
            if len(lines) != T.size:
                for line in lines:
                    line.remove()
                lines = [ax.plot([], [], color=CYCLE[i], gid=f"{key}_{i}")[0] for i in range(T.size)]
                self.lines[key] = lines
            for i, t in enumerate(T):
                lines[i].set_data(S, ai[i])
                lines[i].set_label(f"T = {t:g}")
            ax.set_xlim(S[0], S[-1])
        for line in self.ridge_lines:
            line.set_ydata([ridge, ridge])
        top = max(float(max(v.max() for v in self.intensity.values())), ridge) * 1.1
        self.axes[0].set_ylim(0, _nice_ceiling(top))
        self.axes[0].legend(handles=self.lines["hca"] + [self.ridge_lines[0]],
                            labels=[f"T = {t:g}" for t in T] + [f"bf16 ridge {ridge:,.0f}"], loc="upper left",
                            fontsize=8)
        attn = model.attention
        titles = {
            "hca": f"HCA: MLA over S/{attn.hca_ratio:g}",
            "csa": f"CSA main: MLA over top {attn.csa_top_k:,}",
            "indexer": f"CSA indexer: scores S/{attn.csa_ratio:g}",
        }
        for ax, (key, title) in zip(self.axes, V4_VARIANTS):
            ax.set_title(title.split(" (")[0] if self.live else titles[key], fontsize=10)
        qb = "" if query_bytes else ", query bytes left out"
        self.figure.suptitle(f"{model.name} attention variants on {self.hardware.name}{qb}", fontsize=11, x=0.01,
                             ha="left")


def compressed_attention(model=None, hardware=None, **params):
    """Intensity against context for HCA, CSA main attention and the CSA
    indexer. Parameters: ``widths`` ((1, 2, 4)), ``hca_ratio``, ``csa_ratio``,
    ``csa_top_k`` (None keeps the model's), ``query_bytes`` (True)."""
    return CompressedAttentionPlot(model=model, hardware=hardware, **params).figure


# --- extra figure for the draft-length chapter ----------------------------------------


class GammaMapPlot(Plot):
    """gamma* over batch and context length at once: Figure 3 for every S."""

    name = "gamma_map"
    defaults = {"alpha": 0.75, "c_draft": 0.10, "gamma_max": 64, "query_bytes": False, "batch_range": BATCH_RANGE,
                "context_range": (512, 131_072), "batch_points": 160, "context_points": 90, "capacity": True,
                "tp": 1}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(_style.batch_label))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"))
        ax.set_xlabel("batch (sequences)")
        ax.set_ylabel("average sequence length S (tokens)")
        ax.grid(False)
        self.mesh = None
        self.colorbar = None
        self._vmax = None
        self.memory_band = None

    def _draw(self, alpha, c_draft, gamma_max, query_bytes, batch_range, context_range, batch_points, context_points,
              capacity, tp):
        B = _batch_grid(batch_range[0], batch_range[1], batch_points)
        S = _batch_grid(context_range[0], context_range[1], context_points)
        g, _ = _speculation.optimal_gamma(alpha, B[None, :], S[:, None], c_draft, self.model, self.hardware, gamma_max,
                                          query_bytes=query_bytes)
        self.batches, self.contexts, self.gamma_star = B, S, g
        ax = self.ax
        # Cell edges halfway (in log) between grid points.
        def edges(v):
            mid = np.sqrt(v[1:] * v[:-1])
            return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])
        vmax = max(6, int(g.max()))
        # One colour per whole draft length; gamma* = 0 falls under the lowest
        # bin and is drawn in the "under" colour.
        if self.mesh is None or self.mesh.get_array().shape != g.shape or self._vmax != vmax:
            if self.mesh is not None:
                self.mesh.remove()
            cmap = mpl.colormaps["viridis"].resampled(vmax).with_extremes(under="#f4cccc")
            norm = BoundaryNorm(np.arange(0.5, vmax + 1.0), cmap.N)
            self.mesh = ax.pcolormesh(edges(B), edges(S), g, cmap=cmap, norm=norm, shading="flat", gid="gamma_map",
                                      rasterized=True)
            self._vmax = vmax
            if self.colorbar is None:
                self.colorbar = self.figure.colorbar(self.mesh, ax=ax, extend="min", pad=0.02)
                self.colorbar.set_label("\u03b3* (pink: 0, plain decoding wins)")
            else:
                self.colorbar.update_normal(self.mesh)
            self.colorbar.set_ticks(np.arange(1, vmax + 1, max(1, vmax // 8)))
        else:
            self.mesh.set_array(g)
        ax.set_xlim(B[0], B[-1])
        ax.set_ylim(S[0], S[-1])
        # Hatch the cells whose batch cannot fit at that context: a staircase
        # along each row's limit, out to the right edge.
        if self.memory_band is not None:
            self.memory_band.remove()
            self.memory_band = None
        tp = checked_int("tp", tp, lo=1, hi=_capacity.MAX_TP)
        limits = memory_limit(self.model, self.hardware, S, tp) if capacity else None
        self.max_batch = limits
        where = "" if tp == 1 else f" x {tp}"
        if limits is not None and np.any(limits < B[-1]):
            ye, right = edges(S), edges(B)[-1]
            left = np.clip(limits + 0.5, edges(B)[0], right)
            steps = [(x, y) for x, y0, y1 in zip(left, ye[:-1], ye[1:]) for y in (y0, y1)]
            self.memory_band = memory_patch(ax, steps + [(right, ye[-1]), (right, ye[0])])
            self.memory_band.set_label(f"{MEMORY_LABEL}, {self.hardware.name}{where}")
            ax.legend(handles=[self.memory_band], loc="lower left", fontsize=8, framealpha=0.9)
        elif ax.get_legend() is not None:
            ax.get_legend().remove()
        self._title(ax, f"\u03b3* over batch and sequence length: {self.model.name} on {self.hardware.name}{where}\n"
                        f"\u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%} of a step")


def gamma_map(model=None, hardware=None, **params):
    """gamma* as a map over batch (x) and sequence length (y). Parameters:
    ``alpha`` (0.75), ``c_draft`` (0.10), ``gamma_max`` (64), ranges and
    grid sizes."""
    return GammaMapPlot(model=model, hardware=hardware, **params).figure


#: Every figure of the main chapters by its cell-tag name (``figure-<name>``):
#: the Plot class that draws it and the parameters the chapter uses.
FIGURES = {
    "expert_tax": (ExpertTaxPlot, {}),
    "expert_tax_log": (ExpertTaxPlot, {"scale": "log", "batch_max": 30_000}),
    "attention_width": (AttentionWidthPlot, {}),
    "compressed_attention": (CompressedAttentionPlot, {}),
    "ledger": (LedgerPlot, {}),
    "optimal_gamma": (OptimalGammaPlot, {}),
    "speedup_curves": (SpeedupCurvesPlot, {}),
    "gamma_map": (GammaMapPlot, {}),
}

expert_tax_log = partial(expert_tax, scale="log", batch_max=30_000)
expert_tax_log.__doc__ = "Figure 1 on log-log axes out to 30,000 tokens, where the expert knee E/k shows."

__all__ = [
    "BATCH_RANGE",
    "FIGURES",
    "IntensityTable",
    "Plot",
    "artist",
    "artists",
    "attention_table",
    "attention_width",
    "compressed_attention",
    "expert_tax",
    "expert_tax_log",
    "gamma_map",
    "hardware_names",
    "integer_batches",
    "ledger",
    "mha_counterpart",
    "moe_what_if",
    "optimal_gamma",
    "seq_len_from_slider",
    "speedup_curves",
    "v4_attention_what_if",
    "zero_gamma_bands",
]
