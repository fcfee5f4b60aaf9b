"""Figures of the chapters on the sequel, "Adaptive speculative decoding"
(Finn, 2026): what each drafter costs, attention that stays memory-bound, the
draft length per concurrency, and the rule that composes a step's rooflines.

Every figure is a :class:`~speclib.presentation.figures.paper.Plot` (built
once, updated in place by the live widgets of :mod:`speclib.widgets`), with a
function of the same name that returns the static Figure. The numbers come
from :mod:`speclib.core` (the step in seconds, the drafters priced by their
own rooflines, the priced policy) and the simulated grid of
:mod:`speclib.evidence.sequel`; the few closed forms the model does not
evaluate itself (cache bytes, Little's law) are in
:mod:`speclib.formulas.sequel_figures`. The data helpers above the figures
(:func:`drafter_times`, :func:`policy`, ...) are what the figures plot, and
what the live HTML versions are tested against.

The target is Qwen3.6-35B-A3B as the sequel's simulator counts it
(:func:`speclib.evidence.sequel.simulated_model`), on one B200 unless a
figure offers other chips, at the simulated requests' mean context.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import matplotlib as mpl
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, Normalize
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

from ..._checks import checked_array, checked_choice, checked_int
from ...core import attention as _attention
from ...core import drafters as _drafters
from ...core import speculation as _spec
from ...core import step as _step
from ...evidence import sequel as _sequel
from ...formulas import numpy_functions as nf
from ...presets import drafter as drafter_preset
from ...presets import resolve
from . import _style
from ._style import COLORS, CYCLE, RIDGE_STYLE
from .paper import Plot, _batch_grid, _nice_ceiling, integer_batches

#: The drafters by the grid's keys (preset names), and how the book names them.
DRAFTERS = dict(_sequel.DRAFTERS)
DRAFTER_KEYS = tuple(DRAFTERS)
DRAFTER_LABELS = {"mtp": "MTP", "dflash": "DFlash"}
#: Acceptance: the drafter's measured survival curve, or the geometric curve
#: alpha**d with alpha its first position's survival.
ACCEPTANCES = ("measured", "geometric")
#: How a step's components compose into its time (speclib.core.step).
ROOFLINES = _step.ROOFLINES
ROOFLINE_LABELS = {"aggregate": "one roofline over the step", "per-component": "each component its own roofline"}
ROOFLINE_STYLES = {"aggregate": "-", "per-component": "--"}
#: The KV-cache formats a reader can pick for the hybrid's full attention:
#: bytes per cached element.
KV_FORMATS = {"bf16": 2.0, "fp8": 1.0}
#: The hybrid model of the attention chapter, and the MLA model it is held against.
HYBRID_MODEL = _sequel.MODEL
MLA_MODEL = "DeepSeek-V4-Flash"
#: Full-attention layer counts the KV/state figure offers (divisors of 40:
#: every 10th, 8th, 5th, 4th, 2nd layer, or every layer).
FULL_ATTENTION_LAYERS = (4, 5, 8, 10, 20, 40)
#: The batch axis of the drafter figures, sequences.
DRAFTER_BATCHES = (1, 4096)
#: The verify widths of the pricing-rule figure.
PRICING_WIDTHS = (1, 2, 4, 8, 16)
US, MS, MB = 1e6, 1e3, 1e-6  # seconds to microseconds, to milliseconds; bytes to megabytes

_VIRIDIS = mpl.colormaps["viridis"]


def dflash_block() -> int:
    """Positions one DFlash pass drafts: the longest draft either figure offers."""
    return int(drafter_preset(DRAFTERS["dflash"]).block)


def check_drafter(drafter) -> str:
    return checked_choice("drafter", drafter, DRAFTER_KEYS)


def check_acceptance(acceptance) -> str:
    return checked_choice("acceptance", acceptance, ACCEPTANCES)


def gamma_color(gamma, gamma_max):
    """The colour of a fixed draft length: viridis from 1 to ``gamma_max``."""
    return _VIRIDIS((gamma - 1) / max(gamma_max - 1, 1))


# --- the sequel's setting ------------------------------------------------------------


def target_model():
    """Qwen3.6-35B-A3B as the sequel's simulator counts it."""
    return _sequel.simulated_model()


def context() -> float:
    """The simulated requests' mean decode context."""
    return _sequel.context()


def grid():
    """The sequel's simulated grid (:func:`speclib.evidence.sequel.load_grid`)."""
    return _sequel.load_grid()


def acceptance_curve(drafter="dflash", acceptance="measured"):
    """The survival curve the policy uses for ``drafter``: its measured
    curve (a DFlash block's unmeasured last position counted as never
    surviving), or the geometric curve of the same first-position survival
    and length."""
    return _acceptance_curve(check_drafter(drafter), check_acceptance(acceptance))


@lru_cache(maxsize=None)
def _acceptance_curve(drafter, acceptance):
    curve = _spec.pricing(target_model(), _sequel.HARDWARE, drafter=_sequel.DRAFTERS[drafter]).measured_acceptance()
    return curve if acceptance == "measured" else curve.iid()


def _hardware(hardware):
    return resolve(None, _sequel.HARDWARE if hardware is None else hardware)[1]


# --- what drafting costs ---------------------------------------------------------------


def drafter_times(gamma, B, hardware=None, *, roofline="aggregate") -> dict:
    """Seconds each drafter takes to draft ``gamma`` tokens for ``B``
    sequences, ``{"mtp": ..., "dflash": ...}`` (speclib.core.drafters.draft_time)."""
    hw = _hardware(hardware)
    return {key: _drafters.draft_time(gamma, B, name, hw, roofline=roofline) for key, name in _sequel.DRAFTERS.items()}


def crossover_constants(hardware=None) -> dict:
    """The arguments of :func:`speclib.formulas.numpy_functions.drafter_crossover_batch`
    after gamma, by name, from the two drafter presets and the chip (as
    :func:`speclib.derivations.drafter_crossover` substitutes them)."""
    hw = _hardware(hardware)
    m, f = drafter_preset(_sequel.DRAFTERS["mtp"]), drafter_preset(_sequel.DRAFTERS["dflash"])
    values = {"b_d": m.step.dense_bytes, "P_MTP": m.step.dense_params, "w_MTP": m.step.ffn_params,
              "E": m.step.n_routed, "n_s": m.step.n_shared, "P_DF": f.step.dense_params, "D": f.block,
              "P": hw.peak_flops(f.step.dense_precision), "M": hw.memory_bandwidth}
    names = nf.ARGUMENTS["drafter_crossover_batch"][1:]
    return {name: float(values[name]) for name in names}


def closed_form_crossover(gamma, hardware=None):
    """The saturated closed form of the batch below which DFlash drafts
    ``gamma`` tokens faster than MTP (the sequel's B ~ 24 gamma on a B200)."""
    g = checked_array("gamma", gamma, lo=1)
    out = nf.drafter_crossover_batch(g, **crossover_constants(hardware))
    return float(out) if np.ndim(out) == 0 else out


def exact_crossover(gammas, hardware=None, *, roofline="aggregate") -> np.ndarray:
    """:func:`speclib.core.drafters.crossover_batch` at each whole ``gammas``."""
    g = checked_array("gammas", gammas, lo=1, integer=True)
    hw = _hardware(hardware)
    return np.array([_drafters.crossover_batch(int(v), hardware=hw, roofline=roofline) for v in np.ravel(g)])


# --- the draft length per concurrency ---------------------------------------------------


def _policy_args(drafter, roofline, acceptance):
    key = check_drafter(drafter)
    return dict(model=target_model(), hardware=_sequel.HARDWARE, drafter=_sequel.DRAFTERS[key],
                roofline=_step.check_roofline(roofline)), acceptance_curve(key, acceptance)


def policy(drafter, B, *, roofline="aggregate", acceptance="measured"):
    """The priced policy of ``drafter`` at each batch ``B``: gamma* (up to
    the grid's longest draft) and the committed tokens per second it
    reaches, at the simulated context."""
    kwargs, curve = _policy_args(drafter, roofline, acceptance)
    gamma_max = grid().drafters[check_drafter(drafter)].gamma_max
    g, _ = _spec.optimal_gamma(curve, B, context(), gamma_max=gamma_max, **kwargs)
    g = np.asarray(g)
    return g, np.asarray(_spec.throughput(B, g, context(), acceptance=curve, **kwargs))


def fixed_throughput(drafter, B, gammas, *, roofline="aggregate", acceptance="measured") -> np.ndarray:
    """Committed tokens per second at each fixed draft length in ``gammas``
    (rows) and batch in ``B`` (columns); gamma = 0 is plain decoding."""
    kwargs, curve = _policy_args(drafter, roofline, acceptance)
    gammas = np.asarray(gammas, dtype=float)[:, None]
    return np.asarray(_spec.throughput(np.asarray(B, dtype=float)[None, :], gammas, context(), acceptance=curve,
                                       **kwargs))


def tpot_ms(B, throughput):
    """Milliseconds per output token of each of ``B`` sequences in a closed
    loop that commits ``throughput`` tokens per second."""
    return nf.time_per_output_token(np.asarray(B, dtype=float), np.asarray(throughput, dtype=float)) * MS


def simulated_at(drafter, gamma) -> np.ndarray:
    """The simulator's throughput at each grid concurrency, at the draft
    length ``gamma`` chosen there (one per concurrency)."""
    rows = grid().drafters[check_drafter(drafter)]
    gamma = np.asarray(gamma)
    return rows.goodput[np.searchsorted(rows.gammas, gamma), np.arange(rows.goodput.shape[1])]


def rule_shortfall(drafter, *, acceptance="measured") -> dict:
    """Per pricing rule: the gamma* it picks at each grid concurrency, and the
    share of the simulator's best fixed-gamma throughput lost there
    (1 - simulated at that gamma / simulated best)."""
    rows = grid().drafters[check_drafter(drafter)]
    out = {}
    for rule in ROOFLINES:
        g, _ = policy(drafter, grid().concurrency, roofline=rule, acceptance=acceptance)
        out[rule] = (g, 1 - simulated_at(drafter, g) / rows.best_goodput)
    return out


# --- hybrid attention ----------------------------------------------------------------


def linear_intensity(T, model=HYBRID_MODEL):
    """:func:`speclib.core.attention.linear_intensity`, for the hybrid this chapter draws."""
    return _attention.linear_intensity(T, model)


def hybrid_architecture(model=HYBRID_MODEL, *, full_attention_layers=None, kv_format=None):
    """``model``'s whole-step architecture with ``full_attention_layers`` of
    its layers full attention (the rest linear) and its KV cache in
    ``kv_format`` (None keeps the model's own)."""
    m, _ = resolve(model, None)
    if not m.is_hybrid:
        raise ValueError(f"model must be a hybrid with linear-attention layers; {m.name} has none")
    arch = m.step_architecture()
    layers = arch.attention_layers + arch.linear_layers
    changes = {}
    if full_attention_layers is not None:
        n = checked_int("full_attention_layers", full_attention_layers, lo=1, hi=layers)
        changes.update(attention_layers=n, linear_layers=layers - n)
    if kv_format is not None:
        b_kv = KV_FORMATS[checked_choice("kv_format", kv_format, tuple(KV_FORMATS))]
        attn = m.attention
        changes["context_bytes"] = float(nf.gqa_context_bytes(attn.n_kv_heads, attn.head_dim, b_kv))
    return dataclasses.replace(arch, **changes) if changes else arch


def sequence_bytes(S, arch) -> dict:
    """Bytes one sequence keeps at context ``S``: ``kv`` (full-attention
    layers), ``state`` (linear-attention layers), ``total``, and
    ``all_full`` (every layer full attention, the same KV per layer)."""
    S_arr = checked_array("S", S, lo=0)
    layers = arch.attention_layers + arch.linear_layers
    m_c, sigma = arch.context_bytes, arch.state_bytes
    return {
        "kv": nf.cache_bytes(1.0, S_arr, arch.attention_layers, m_c, 0, sigma),
        "state": nf.cache_bytes(1.0, S_arr, 0, m_c, arch.linear_layers, sigma),
        "total": nf.cache_bytes(1.0, S_arr, arch.attention_layers, m_c, arch.linear_layers, sigma),
        "all_full": nf.cache_bytes(1.0, S_arr, layers, m_c, 0, sigma),
    }


def kv_state_crossing(arch) -> float:
    """The context at which the KV cache weighs as much as the state (None
    without linear layers)."""
    if arch.linear_layers == 0:
        return None
    return float(nf.kv_state_crossing(arch.attention_layers, arch.context_bytes, arch.linear_layers, arch.state_bytes))


# --- helpers for the axes ---------------------------------------------------------------


def _log_bounds(values, pad=1.0):
    """Decade bounds around the finite positive ``values`` (changing rarely)."""
    v = np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in values])
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = float(v.min()) / pad, float(v.max()) * pad
    return 10.0 ** np.floor(np.log10(lo)), 10.0 ** np.ceil(np.log10(hi))


def concurrency_label(x, _pos=None) -> str:
    """Tick label of a power-of-two concurrency: 512, 1k (= 1,024), 2k."""
    return f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"


def _nice_log_bounds(values):
    """The tightest 1-2-5 bounds around the finite positive ``values``."""
    v = np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in values])
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = float(v.min()), float(v.max())
    steps = np.array([1.0, 2.0, 5.0, 10.0])
    e_lo, e_hi = np.floor(np.log10(lo)), np.floor(np.log10(hi))
    below = steps[steps * 10 ** e_lo <= lo * (1 + 1e-12)].max() * 10 ** e_lo
    above = steps[steps * 10 ** e_hi >= hi * (1 - 1e-12)].min() * 10 ** e_hi
    return float(below), float(above)


def _concurrency_axis(ax, label="concurrency (sequences decoding together)"):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(grid().concurrency))
    ax.xaxis.set_major_formatter(FuncFormatter(concurrency_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel(label)


def _batch_axis(ax, label="batch (sequences)"):
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_style.batch_label))
    ax.set_xlabel(label)


# --- figure: what each drafter costs --------------------------------------------------


class DrafterCostPlot(Plot):
    """Seconds to draft gamma tokens, MTP (gamma passes in series) against
    DFlash (one block), against batch, with the target's plain decode step
    for scale and the batch where the two drafters cost the same."""

    name = "drafter_cost"
    defaults = {"gamma": 4, "roofline": "aggregate", "batch_range": DRAFTER_BATCHES, "points": 200}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.lines = {key: ax.plot([], [], color=COLORS[key], gid=f"draft_{key}")[0] for key in DRAFTER_KEYS}
        self.target_line = ax.plot([], [], "--", color=COLORS["ridge"], lw=1.4, gid="target_step")[0]
        self.cross_line = ax.axvline(1, color=COLORS["total"], ls=":", lw=1.0, gid="crossover")
        self.cross_text = ax.text(1, 0.03, "", transform=ax.get_xaxis_transform(), fontsize=9, ha="left",
                                  va="bottom", gid="crossover_label")
        _batch_axis(ax)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.set_ylabel("time (\u00b5s)")

    def _draw(self, gamma, roofline, batch_range, points):
        self.gamma_max = dflash_block()
        gamma = checked_int("gamma", gamma, lo=1, hi=self.gamma_max)
        roofline = _step.check_roofline(roofline)
        B = _batch_grid(batch_range[0], batch_range[1], points)
        hw = self.hardware
        times = drafter_times(gamma, B, hw, roofline=roofline)
        target = _step.step_time(B, 1, context(), target_model(), hw, roofline=roofline)
        self.batches, self.times, self.target_step = B, times, target
        for key, line in self.lines.items():
            line.set_data(B, times[key] * US)
            line.set_label(f"{DRAFTER_LABELS[key]}: " + ("\u03b3 passes of one position" if key == "mtp"
                                                          else "one pass over its block"))
        self.target_line.set_data(B, target * US)
        self.target_line.set_label(f"the target's plain decode step (S = {context():g})")
        crossing = _drafters.crossover_batch(gamma, hardware=hw, roofline=roofline)
        self.crossover = crossing
        inside = B[0] < crossing < B[-1]
        self.cross_line.set_visible(bool(inside))
        self.cross_line.set_xdata([crossing, crossing])
        self.cross_text.set_visible(True)
        if inside:
            self.cross_text.set_position((crossing * 1.08, 0.03))
            self.cross_text.set_text(f"same cost at B \u2248 {crossing:,.0f}")
        else:
            self.cross_text.set_position((B[0] * 1.2, 0.03))
            self.cross_text.set_text("MTP is cheaper at every batch" if crossing == 0
                                     else "DFlash is cheaper at every batch shown")
        ax = self.ax
        ax.set_xlim(B[0], B[-1])
        # The longest draft sets the axis, so that moving gamma keeps the frame.
        longest = drafter_times(self.gamma_max, B, hw, roofline=roofline)
        ax.set_ylim(*_log_bounds([times["mtp"] * US, longest["mtp"] * US, times["dflash"] * US, target * US]))
        self._title(ax, f"What drafting costs: the {_sequel.MODEL} drafters on {hw.name}\n"
                        f"\u03b3 = {gamma}, {ROOFLINE_LABELS[roofline]}")
        self._legend(ax, [*self.lines.values(), self.target_line], live_ncols=2, loc="upper left")


def drafter_cost(model=None, hardware=None, **params):
    """MTP and DFlash draft times against batch. Parameters: ``gamma`` (4),
    ``roofline`` ("aggregate", as the sequel's simulator), ``batch_range``
    ((1, 4096)), ``points`` (200). ``model`` is unused (the drafters fix it)."""
    return DrafterCostPlot(model=model, hardware=hardware, **params).figure


class DrafterCrossoverPlot(Plot):
    """Which drafter is cheaper over draft length and batch: log2 of MTP's
    time over DFlash's (DFlash cheaper where positive), with the saturated
    closed form B ~ 24 gamma and the exact boundary."""

    name = "drafter_crossover"
    defaults = {"roofline": "aggregate", "gamma_max": 16, "batch_range": DRAFTER_BATCHES, "points": 160,
                "ratio_max": 4.0}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        _batch_axis(ax)
        ax.set_ylabel("draft length \u03b3")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(False)
        self.mesh = None
        self.colorbar = None
        self.closed_line = ax.plot([], [], color="white", lw=2.2, gid="closed_form")[0]
        self.closed_shadow = ax.plot([], [], color=COLORS["total"], lw=0.8, ls="--", gid="closed_form_core")[0]
        self.exact_points = ax.plot([], [], "o", color=COLORS["total"], mfc="white", ms=5, zorder=5,
                                    gid="exact_boundary")[0]

    def _draw(self, roofline, gamma_max, batch_range, points, ratio_max):
        roofline = _step.check_roofline(roofline)
        gamma_max = checked_int("gamma_max", gamma_max, lo=2, hi=dflash_block())
        ratio_max = float(checked_array("ratio_max", ratio_max, lo=0, lo_open=True))
        B = _batch_grid(batch_range[0], batch_range[1], points)
        gammas = np.arange(1, gamma_max + 1)
        hw = self.hardware
        times = drafter_times(gammas[:, None], B[None, :], hw, roofline=roofline)
        ratio = np.log2(times["mtp"] / times["dflash"])
        self.batches, self.gammas, self.log2_ratio = B, gammas, ratio
        ax = self.ax

        def edges(v, log):
            if log:
                mid = np.sqrt(v[1:] * v[:-1])
                return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])
            return np.concatenate([[v[0] - 0.5], (v[1:] + v[:-1]) / 2, [v[-1] + 0.5]])

        if self.mesh is None or self.mesh.get_array().shape != ratio.shape:
            if self.mesh is not None:
                self.mesh.remove()
            self.mesh = ax.pcolormesh(edges(B, True), edges(gammas.astype(float), False), ratio,
                                      cmap=mpl.colormaps[DIVERGING], norm=Normalize(-ratio_max, ratio_max),
                                      shading="flat", gid="ratio_map", rasterized=True)
            if self.colorbar is None:
                self.colorbar = self.figure.colorbar(self.mesh, ax=ax, extend="both", pad=0.02)
                self.colorbar.set_label("log\u2082(MTP time / DFlash time)\npurple: DFlash cheaper, orange: MTP")
        else:
            self.mesh.set_array(ratio)
        g_line = np.linspace(1, gamma_max, 200)
        closed = closed_form_crossover(g_line, hw)
        self.closed_form = (g_line, closed)
        for line in (self.closed_line, self.closed_shadow):
            line.set_data(closed, g_line)
        self.closed_shadow.set_label("closed form: MTP saturated, DFlash compute-bound")
        exact_g = gammas[gammas >= 2]
        exact = exact_crossover(exact_g, hw, roofline=roofline)
        self.exact = (exact_g, exact)
        self.exact_points.set_data(exact, exact_g)
        self.exact_points.set_label("exact: equal draft times")
        ax.set_xlim(B[0], B[-1])
        ax.set_ylim(0.5, gamma_max + 0.5)
        self._title(ax, f"Which drafter is cheaper on {hw.name}\n{ROOFLINE_LABELS[roofline]}")
        self._legend(ax, [self.closed_shadow, self.exact_points], live_ncols=2, loc="upper left")


#: The diverging colour map of the crossover map (shared with the live figure).
DIVERGING = "PuOr"


def drafter_crossover(model=None, hardware=None, **params):
    """Which drafter is cheaper over gamma and batch. Parameters:
    ``roofline`` ("aggregate"), ``gamma_max`` (16), ``batch_range``,
    ``points`` (160 batches), ``ratio_max`` (4: the colour scale's end)."""
    return DrafterCrossoverPlot(model=model, hardware=hardware, **params).figure


# --- figures: hybrid attention ---------------------------------------------------------


HYBRID_KINDS = ("mla", "gqa", "gdn")


class HybridIntensityPlot(Plot):
    """Arithmetic intensity against verify width: MLA (DeepSeek-V4-Flash),
    the hybrid's GQA full attention and its GatedDeltaNet layers, against
    the attention precision's ridge."""

    name = "hybrid_intensity"
    defaults = {"S": 8192, "query_bytes": True, "width_max": 64, "points": 200}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.lines = {key: ax.plot([], [], color=COLORS[key], gid=key)[0] for key in HYBRID_KINDS}
        self.ridge_line = ax.axhline(1, **RIDGE_STYLE, gid="ridge")
        self.ridge_text = ax.text(0.99, 1, "", transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                                  fontsize=9, color=COLORS["ridge"])
        self.cross_markers = ax.plot([], [], "o", color="black", ms=5, zorder=5, gid="ridge_crossings")[0]
        self.cross_texts = []
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.set_xlabel("positions per sequence T (1 = decode, 1 + \u03b3 when verifying)")
        ax.set_ylabel("attention intensity (FLOP/byte)")

    def _draw(self, S, query_bytes, width_max, points):
        S = float(checked_array("S", S, lo=0, lo_open=True))
        T = np.geomspace(1, float(checked_array("width_max", width_max, lo=2)), checked_int("points", points, lo=2))
        hybrid, _ = resolve(HYBRID_MODEL, None)
        mla, _ = resolve(MLA_MODEL, None)
        ridge = self.hardware.ridge(hybrid.attention_precision)
        self.widths, self.ridge = T, ridge
        self.intensity = {
            "mla": np.asarray(_attention.attention_intensity(T, S, mla, query_bytes=query_bytes)),
            "gqa": np.asarray(_attention.attention_intensity(T, S, hybrid, query_bytes=query_bytes)),
            "gdn": np.asarray(linear_intensity(T, hybrid)),
        }
        a, lin = hybrid.attention, hybrid.linear_attention
        labels = {
            "mla": f"{mla.name}: MLA, {mla.attention.n_heads} heads share one latent",
            "gqa": f"{hybrid.name}: GQA, {a.n_heads} query / {a.n_kv_heads} KV heads",
            "gdn": f"{hybrid.name}: GatedDeltaNet, {lin.n_value_heads} value heads",
        }
        for t in self.cross_texts:
            t.remove()
        self.cross_texts, xs, ys = [], [], []
        self.crossings = {}
        for key, line in self.lines.items():
            ai = self.intensity[key]
            line.set_data(T, ai)
            line.set_label(labels[key])
            above = np.flatnonzero(ai > ridge)
            self.crossings[key] = float(T[above[0]]) if above.size else None
            if above.size and above[0] > 0:
                xs.append(T[above[0]])
                ys.append(ai[above[0]])
        self.cross_markers.set_data(xs, ys)
        self.ridge_line.set_ydata([ridge, ridge])
        self.ridge_text.set_text(f"{self.hardware.name} {hybrid.attention_precision} ridge {ridge:,.0f}")
        self.ridge_text.set_y(ridge)
        ax = self.ax
        ax.set_xlim(1, T[-1])
        lo, hi = _log_bounds([*self.intensity.values(), [ridge]], pad=1.5)
        ax.set_ylim(min(lo, 1.0), max(hi, 1e5))  # the usual range, so that moving S keeps the frame
        qb = "" if query_bytes else ", query bytes left out"
        self._title(ax, f"Intensity against verify width on {self.hardware.name}\nS = {S:,.0f}{qb}")
        self._legend(ax, list(self.lines.values()), live_ncols=1, loc="lower right")


def hybrid_intensity(model=None, hardware=None, **params):
    """MLA, GQA and GatedDeltaNet intensity against T. Parameters: ``S``
    (8,192), ``query_bytes`` (True), ``width_max`` (64), ``points``.
    ``model`` is unused (the comparison fixes its models)."""
    return HybridIntensityPlot(model=model, hardware=hardware, **params).figure


class KVStatePlot(Plot):
    """Bytes one sequence keeps against context: the hybrid's KV cache, its
    linear-attention state, their sum, and the same model with every layer
    full attention."""

    name = "kv_state_bytes"
    defaults = {"full_attention_layers": None, "kv_format": None, "context_range": (256, 1_048_576),
                "points": 200}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.lines = {
            "kv": ax.plot([], [], color=COLORS["gqa"], gid="kv")[0],
            "state": ax.plot([], [], color=COLORS["gdn"], gid="state")[0],
            "total": ax.plot([], [], color=COLORS["total"], lw=1.4, gid="total")[0],
            "all_full": ax.plot([], [], ":", color=COLORS["ridge"], lw=1.6, gid="all_full")[0],
        }
        self.cross_marker = ax.plot([], [], "o", color="black", ms=5, zorder=5, gid="crossing")[0]
        self.cross_text = ax.text(1, 1, "", fontsize=9, ha="left", va="top", gid="crossing_label")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"))
        ax.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        ax.set_xlabel("context S (tokens)")
        ax.set_ylabel("MB one sequence keeps")

    def _draw(self, full_attention_layers, kv_format, context_range, points):
        arch = hybrid_architecture(HYBRID_MODEL, full_attention_layers=full_attention_layers, kv_format=kv_format)
        self.architecture = arch
        S = _batch_grid(context_range[0], context_range[1], points)
        data = sequence_bytes(S, arch)
        self.contexts, self.bytes = S, data
        layers = arch.attention_layers + arch.linear_layers
        labels = {"kv": "KV cache (full-attention layers)", "state": "state (GatedDeltaNet layers)",
                  "total": "both", "all_full": "every layer full attention"}
        for key, line in self.lines.items():
            y = np.broadcast_to(data[key], S.shape) * MB
            line.set_data(S, np.where(y > 0, y, np.nan))
            line.set_label(labels[key])
        crossing = kv_state_crossing(arch)
        self.crossing = crossing
        inside = crossing is not None and S[0] < crossing < S[-1]
        if inside:
            y = float(sequence_bytes(crossing, arch)["state"]) * MB
            self.cross_marker.set_data([crossing], [y])
            self.cross_text.set_position((crossing * 1.15, y / 1.3))
            self.cross_text.set_text(f"equal at S = {crossing:,.0f}")
        else:
            self.cross_marker.set_data([], [])
            self.cross_text.set_text("")
        ax = self.ax
        ax.set_xlim(S[0], S[-1])
        ax.set_ylim(*_log_bounds([data["all_full"] * MB, data["state"] * MB if arch.linear_layers else []]))
        self._title(ax, f"KV cache against recurrent state: {HYBRID_MODEL}\n"
                        f"{arch.attention_layers} of {layers} layers full attention, KV {arch.context_bytes:,.0f} B "
                        f"per token per layer")
        self._legend(ax, list(self.lines.values()), live_ncols=2, loc="upper left")


def kv_state_bytes(model=None, hardware=None, **params):
    """Per-sequence KV cache against GatedDeltaNet state. Parameters:
    ``full_attention_layers`` (None: the model's 10 of 40), ``kv_format``
    (None: the model's bf16; or "fp8"), ``context_range``, ``points``."""
    return KVStatePlot(model=model, hardware=hardware, **params).figure


# --- figures: the draft length per concurrency ------------------------------------------


def _sim_marker(ax, color, marker, gid, **kw):
    return ax.plot([], [], linestyle="none", marker=marker, ms=6, mfc="none", mec=color, mew=1.4, gid=gid, **kw)[0]


class ConcurrencyGammaPlot(Plot):
    """gamma* of the priced policy against concurrency for both drafters
    (lines), with the simulator's best fixed gamma (markers)."""

    name = "concurrency_gamma"
    defaults = {"roofline": "aggregate", "acceptance": "measured", "points": 200}
    MARKERS = {"mtp": "o", "dflash": "s"}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.lines = {key: ax.plot([], [], color=COLORS[key], drawstyle="steps-mid", gid=f"gamma_{key}")[0]
                      for key in DRAFTER_KEYS}
        self.points = {key: _sim_marker(ax, COLORS[key], self.MARKERS[key], f"simulated_{key}")
                       for key in DRAFTER_KEYS}
        _concurrency_axis(ax)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("draft length \u03b3*")

    def _draw(self, roofline, acceptance, points):
        roofline, acceptance = _step.check_roofline(roofline), check_acceptance(acceptance)
        C = grid().concurrency
        B = integer_batches(C[0], C[-1], checked_int("points", points, lo=2))
        self.batches, self.gamma_star = B, {}
        for key in DRAFTER_KEYS:
            g, _ = policy(key, B, roofline=roofline, acceptance=acceptance)
            self.gamma_star[key] = g
            self.lines[key].set_data(B, g)
            self.lines[key].set_label(f"{DRAFTER_LABELS[key]}: priced policy (ours)")
            self.points[key].set_data(C, grid().drafters[key].best_gamma)
            self.points[key].set_label(f"{DRAFTER_LABELS[key]}: the simulator's best fixed \u03b3")
        ax = self.ax
        ax.set_xlim(B[0] / 1.2, B[-1] * 1.2)
        ax.set_ylim(0, max(rows.gamma_max for rows in grid().drafters.values()) + 4)
        self._title(ax, f"Draft length per concurrency: {target_model().name} on {_sequel.HARDWARE}\n"
                        f"{ROOFLINE_LABELS[roofline]}, {acceptance} acceptance")
        handles = [self.lines["mtp"], self.points["mtp"], self.lines["dflash"], self.points["dflash"]]
        self._legend(ax, handles, live_ncols=2, loc="upper left", ncols=2, fontsize=8)


def concurrency_gamma(model=None, hardware=None, **params):
    """gamma* against concurrency for MTP and DFlash, with the simulator's
    best fixed gamma. Parameters: ``roofline`` ("aggregate"), ``acceptance``
    ("measured" or "geometric"), ``points`` (200)."""
    return ConcurrencyGammaPlot(model=model, hardware=hardware, **params).figure


class _PerDrafterPlot(Plot):
    """Two panels, MTP and DFlash, each with a line per fixed gamma, plain
    decoding and the priced policy, and the simulator's points."""

    figsize = (8.6, 4.4)

    def _build(self):
        axes = self.axes = dict(zip(DRAFTER_KEYS, self.figure.subplots(1, 2, sharey=True)))
        self.lines, self.points, self.policy_lines, self.adaptive_points = {}, {}, {}, {}
        for key, ax in axes.items():
            rows = grid().drafters[key]
            self.lines[key], self.points[key] = [], []
            for g in rows.gammas:
                color = COLORS["total"] if g == 0 else gamma_color(g, rows.gamma_max)
                self.lines[key].append(ax.plot([], [], color=color, lw=1.8 if g == 0 else 1.0,
                                               gid=f"{key}_gamma_{g}")[0])
                self.points[key].append(ax.plot([], [], linestyle="none", marker="o", ms=3.5, color=color,
                                                gid=f"{key}_simulated_{g}")[0])
            self.policy_lines[key] = ax.plot([], [], "--", color=COLORS["policy"], lw=2.2,
                                             gid=f"{key}_policy")[0]
            self.adaptive_points[key] = ax.plot([], [], linestyle="none", marker="x", ms=7, mew=1.8,
                                                color=COLORS["policy"], gid=f"{key}_adaptive")[0]
            ax.set_title(DRAFTER_LABELS[key], loc="left", fontsize=10)
            norm = BoundaryNorm(np.arange(0.5, rows.gamma_max + 1.0), rows.gamma_max)
            bar = self.figure.colorbar(ScalarMappable(norm=norm, cmap=_VIRIDIS.resampled(rows.gamma_max)), ax=ax,
                                       pad=0.01, fraction=0.05, aspect=30)
            bar.set_ticks(np.arange(1, rows.gamma_max + 1, 1 if rows.gamma_max <= 8 else 3))
            bar.set_label("fixed \u03b3", fontsize=8)
            bar.ax.tick_params(labelsize=7)

    def _figure_legend(self):
        """One legend for both panels, under them (outside the data, so the
        live view keeps it in its cached frame)."""
        if getattr(self, "_fig_legend", None) is None:
            self._fig_legend = self.figure.legend(handles=self._legend_handles(), loc="outside lower center",
                                                  ncols=5, fontsize=8, frameon=False, handlelength=1.8,
                                                  columnspacing=1.2)

    def _legend_handles(self):
        return [
            Line2D([], [], color=COLORS["total"], lw=1.8, label="no speculation"),
            Line2D([], [], color=_VIRIDIS(0.5), lw=1.0, label="fixed \u03b3 (colour bar)"),
            Line2D([], [], color=COLORS["policy"], ls="--", lw=2.2, label="priced policy"),
            Line2D([], [], color=COLORS["ridge"], ls="none", marker="o", ms=3.5, label="simulator, fixed \u03b3"),
            Line2D([], [], color=COLORS["policy"], ls="none", marker="x", ms=7, mew=1.8,
                   label="simulator's policy"),
        ]


class ConcurrencyThroughputPlot(_PerDrafterPlot):
    """Committed tokens per second against concurrency: plain decoding, each
    fixed gamma and the priced policy (ours: lines; the simulator: points),
    optionally as a speedup over plain decoding."""

    name = "concurrency_throughput"
    defaults = {"roofline": "aggregate", "relative": True, "points": 120}

    def _draw(self, roofline, relative, points):
        roofline = _step.check_roofline(roofline)
        C = grid().concurrency
        B = integer_batches(C[0], C[-1], checked_int("points", points, lo=2))
        self.batches, self.throughput, self.policy_throughput, self.policy_gamma = B, {}, {}, {}
        tops = []
        for key, ax in self.axes.items():
            rows = grid().drafters[key]
            ours = fixed_throughput(key, B, rows.gammas, roofline=roofline)
            g, pol = policy(key, B, roofline=roofline)
            self.throughput[key], self.policy_throughput[key], self.policy_gamma[key] = ours, pol, g
            base, sim_base = (ours[0], rows.goodput[0]) if relative else (1.0, 1.0)
            for i, line in enumerate(self.lines[key]):
                line.set_data(B, ours[i] / base)
                self.points[key][i].set_data(C, rows.goodput[i] / sim_base)
            self.policy_lines[key].set_data(B, pol / base)
            self.adaptive_points[key].set_data(C, rows.adaptive_goodput / sim_base)
            tops += [float((ours / base).max()), float((rows.goodput / sim_base).max())]
            _concurrency_axis(ax, "concurrency")
            ax.set_xlim(C[0] / 1.25, C[-1] * 1.25)
        first = self.axes[DRAFTER_KEYS[0]]
        if relative:
            first.set_yscale("linear")
            first.set_ylim(0, _nice_ceiling(1.05 * max(tops)))
            first.set_ylabel("throughput over plain decoding (\u00d7)")
            first.yaxis.set_major_formatter(FuncFormatter(_style.thousands))
        else:
            first.set_yscale("log")
            first.set_ylim(1e3, 10 ** np.ceil(np.log10(max(tops))))
            first.set_ylabel("committed output tokens per second")
            first.yaxis.set_major_formatter(FuncFormatter(_style.batch_label))
        what = "Speedup over plain decoding" if relative else "Throughput"
        self.figure.suptitle(f"{what} against concurrency on {_sequel.HARDWARE}"
                             + ("" if self.live else f" ({ROOFLINE_LABELS[roofline]})"), x=0.01, ha="left",
                             fontsize=11)
        self._figure_legend()


def concurrency_throughput(model=None, hardware=None, **params):
    """Throughput against concurrency, one panel per drafter. Parameters:
    ``roofline`` ("aggregate"), ``relative`` (True: over plain decoding;
    False: tokens per second), ``points`` (120)."""
    return ConcurrencyThroughputPlot(model=model, hardware=hardware, **params).figure


class ThroughputTPOTPlot(_PerDrafterPlot):
    """Throughput against time per output token, each curve traced by
    concurrency, with lines of constant concurrency (Little's law)."""

    name = "throughput_tpot"
    defaults = {"roofline": "aggregate", "acceptance": "measured", "points": 120}

    def _build(self):
        self.contours = {}
        super()._build()
        for key, ax in self.axes.items():
            self.contours[key] = [
                (ax.plot([], [], ":", color=COLORS["ridge"], lw=0.8, zorder=0, gid=f"{key}_contour_{c:g}")[0],
                 ax.text(0, 0, "", fontsize=7, color=COLORS["ridge"], ha="left", va="center",
                         gid=f"{key}_contour_label"))
                for c in grid().concurrency
            ]

    def _draw(self, roofline, acceptance, points):
        roofline, acceptance = _step.check_roofline(roofline), check_acceptance(acceptance)
        C = grid().concurrency
        B = integer_batches(C[0], C[-1], checked_int("points", points, lo=2))
        self.batches, self.curves = B, {}
        xs, ys = [], []
        for key in DRAFTER_KEYS:
            rows = grid().drafters[key]
            ours = fixed_throughput(key, B, rows.gammas, roofline=roofline, acceptance=acceptance)
            _, pol = policy(key, B, roofline=roofline, acceptance=acceptance)
            self.curves[key] = {"tpot_ms": tpot_ms(B, ours), "throughput": ours,
                                "policy_tpot_ms": tpot_ms(B, pol), "policy_throughput": pol,
                                "simulated_tpot_ms": tpot_ms(C, rows.goodput),
                                "adaptive_tpot_ms": tpot_ms(C, rows.adaptive_goodput)}
            cur = self.curves[key]
            for i, line in enumerate(self.lines[key]):
                line.set_data(cur["tpot_ms"][i], ours[i])
                self.points[key][i].set_data(cur["simulated_tpot_ms"][i], rows.goodput[i])
            self.policy_lines[key].set_data(cur["policy_tpot_ms"], pol)
            self.adaptive_points[key].set_data(cur["adaptive_tpot_ms"], rows.adaptive_goodput)
            xs += [cur["tpot_ms"], cur["simulated_tpot_ms"]]
            ys += [ours, rows.goodput]
        x_lim = _nice_log_bounds(xs)
        y_lim = (1e3, _nice_log_bounds(ys)[1])
        self.limits = (x_lim, y_lim)
        for key, ax in self.axes.items():
            for c, (line, text) in zip(C, self.contours[key]):
                tau = np.geomspace(x_lim[0], x_lim[1], 50)
                line.set_data(tau, nf.closed_loop_throughput(c, tau / MS))
                # labelled where the contour enters the axes: the left edge, or the top
                x_in, y_in = x_lim[0] * 1.12, float(nf.closed_loop_throughput(c, x_lim[0] * 1.12 / MS))
                if y_in > y_lim[1] / 1.25:
                    y_in = y_lim[1] / 1.25
                    x_in = float(tpot_ms(c, y_in))
                text.set_position((x_in, y_in))
                text.set_text(f"{c:,.0f}")
                text.set_visible(bool(x_in < x_lim[1] and y_in > y_lim[0]))
            ax.set_xscale("log")
            ax.set_xlim(*x_lim)
            ax.xaxis.set_major_formatter(FuncFormatter(_style.thousands))
            ax.set_xlabel("time per output token (ms)")
        first = self.axes[DRAFTER_KEYS[0]]
        first.set_yscale("log")
        first.set_ylim(*y_lim)
        first.yaxis.set_major_formatter(FuncFormatter(_style.batch_label))
        first.set_ylabel("committed output tokens per second")
        self.figure.suptitle(f"Throughput against latency, dotted: constant concurrency"
                             + ("" if self.live else f" ({ROOFLINE_LABELS[roofline]}, {acceptance} acceptance)"),
                             x=0.01, ha="left", fontsize=11)
        self._figure_legend()


def throughput_tpot(model=None, hardware=None, **params):
    """Throughput against time per output token, one panel per drafter.
    Parameters: ``roofline`` ("aggregate"), ``acceptance`` ("measured"),
    ``points`` (120 concurrencies per curve)."""
    return ThroughputTPOTPlot(model=model, hardware=hardware, **params).figure


# --- figures: the pricing rule ------------------------------------------------------------


class PricingRatioPlot(Plot):
    """How much more a step costs priced per component than priced as one
    roofline, against batch, for a few verify widths."""

    name = "pricing_ratio"
    defaults = {"S": 4096, "widths": PRICING_WIDTHS, "batch_range": DRAFTER_BATCHES, "points": 200}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.curves = []
        ax.axhline(1.0, **RIDGE_STYLE, gid="equal")
        ax.text(0.01, 1.0, "the rules agree", transform=ax.get_yaxis_transform(), ha="left", va="bottom",
                fontsize=9, color=COLORS["ridge"])
        _batch_axis(ax)
        ax.set_ylabel("per-component time / aggregate time")

    def _draw(self, S, widths, batch_range, points):
        S = float(checked_array("S", S, lo=0))
        T = checked_array("widths", widths, lo=1, integer=True)
        if T.ndim != 1 or T.size > len(CYCLE):
            raise ValueError(f"widths must be a 1-D sequence of at most {len(CYCLE)} verify widths")
        B = _batch_grid(batch_range[0], batch_range[1], points)
        model, hw = self.model, self.hardware
        per = _step.step_time(B[None, :], T[:, None], S, model, hw, roofline="per-component")
        agg = _step.step_time(B[None, :], T[:, None], S, model, hw, roofline="aggregate")
        self.batches, self.widths, self.ratio = B, T, per / agg
        ax = self.ax
        if len(self.curves) != T.size:
            for line in self.curves:
                line.remove()
            self.curves = [ax.plot([], [], color=CYCLE[i], gid=f"ratio_{i}")[0] for i in range(T.size)]
        for i, t in enumerate(T):
            self.curves[i].set_data(B, self.ratio[i])
            self.curves[i].set_label(f"T = {t:g}")
        ax.set_xlim(B[0], B[-1])
        ax.set_ylim(0.95, max(1.2, _nice_ceiling(1.04 * float(self.ratio.max()))))
        self._title(ax, f"Two ways to price a step: {model.name} on {hw.name}\nS = {S:,.0f}")
        self._legend(ax, self.curves, live_ncols=len(self.curves), loc="upper left",
                     title="positions per sequence")


def pricing_ratio(model=HYBRID_MODEL, hardware=None, **params):
    """Per-component over aggregate step time against batch. Parameters:
    ``S`` (4,096), ``widths`` ((1, 2, 4, 8, 16)), ``batch_range``, ``points``.
    ``model`` defaults to Qwen3.6-35B-A3B (one precision stream)."""
    return PricingRatioPlot(model=model, hardware=hardware, **params).figure


class PricingGammaPlot(Plot):
    """gamma* under each pricing rule against concurrency (left), and what
    the rule's choice costs in the simulator (right)."""

    name = "pricing_gamma"
    figsize = (8.6, 4.0)
    defaults = {"drafter": "dflash", "acceptance": "measured", "points": 200}

    def _build(self):
        self.ax_gamma, self.ax_loss = self.figure.subplots(1, 2)
        self.lines = {rule: self.ax_gamma.plot([], [], ROOFLINE_STYLES[rule], color=COLORS[rule],
                                               drawstyle="steps-mid", gid=f"gamma_{rule}")[0] for rule in ROOFLINES}
        self.best_points = _sim_marker(self.ax_gamma, COLORS["total"], "o", "simulated_best")
        self.loss_lines = {rule: self.ax_loss.plot([], [], ROOFLINE_STYLES[rule], marker="o", ms=4,
                                                   color=COLORS[rule], gid=f"loss_{rule}")[0] for rule in ROOFLINES}
        for ax in (self.ax_gamma, self.ax_loss):
            _concurrency_axis(ax, "concurrency")
        self.ax_gamma.yaxis.set_major_locator(MaxNLocator(integer=True))
        self.ax_gamma.set_ylabel("draft length \u03b3*")
        self.ax_loss.set_ylabel("simulated throughput lost (% of the best fixed \u03b3)")
        self.ax_loss.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}%"))

    def _draw(self, drafter, acceptance, points):
        key, acceptance = check_drafter(drafter), check_acceptance(acceptance)
        C = grid().concurrency
        B = integer_batches(C[0], C[-1], checked_int("points", points, lo=2))
        rows = grid().drafters[key]
        self.batches, self.gamma_star = B, {}
        self.shortfall = rule_shortfall(key, acceptance=acceptance)
        for rule in ROOFLINES:
            g, _ = policy(key, B, roofline=rule, acceptance=acceptance)
            self.gamma_star[rule] = g
            self.lines[rule].set_data(B, g)
            self.lines[rule].set_label(f"{rule} rule")
            self.loss_lines[rule].set_data(C, 100 * self.shortfall[rule][1])
        self.best_points.set_data(C, rows.best_gamma)
        self.best_points.set_label("the simulator's best fixed \u03b3")
        for ax in (self.ax_gamma, self.ax_loss):
            ax.set_xlim(C[0] / 1.25, C[-1] * 1.25)
        self.ax_gamma.set_ylim(0, rows.gamma_max + 1)
        worst = max(float(self.shortfall[r][1].max()) for r in ROOFLINES)
        self.ax_loss.set_ylim(-0.5, max(5.0, _nice_ceiling(110 * worst)))
        self.figure.suptitle(f"What the pricing rule does to {DRAFTER_LABELS[key]}'s \u03b3*"
                             + ("" if self.live else f" ({acceptance} acceptance)"), x=0.01, ha="left", fontsize=11)
        self._legend(self.ax_gamma, [*self.lines.values(), self.best_points], live_ncols=2, loc="center left",
                     fontsize=8)


def pricing_gamma(model=None, hardware=None, **params):
    """gamma* under each pricing rule and the simulated throughput each
    rule's choice loses. Parameters: ``drafter`` ("dflash"), ``acceptance``
    ("measured"), ``points`` (200)."""
    return PricingGammaPlot(model=model, hardware=hardware, **params).figure


#: Every figure of the sequel's chapters by its cell-tag name: the Plot class
#: and the parameters the chapter uses.
FIGURES = {
    "drafter_cost": (DrafterCostPlot, {}),
    "drafter_crossover": (DrafterCrossoverPlot, {}),
    "hybrid_intensity": (HybridIntensityPlot, {}),
    "kv_state_bytes": (KVStatePlot, {}),
    "concurrency_gamma": (ConcurrencyGammaPlot, {}),
    "concurrency_throughput": (ConcurrencyThroughputPlot, {}),
    "throughput_tpot": (ThroughputTPOTPlot, {}),
    "pricing_ratio": (PricingRatioPlot, {"model": HYBRID_MODEL}),
    "pricing_gamma": (PricingGammaPlot, {}),
}

__all__ = [
    "ACCEPTANCES", "DRAFTER_KEYS", "FIGURES", "KV_FORMATS", "ROOFLINES",
    "acceptance_curve", "closed_form_crossover", "concurrency_gamma", "concurrency_throughput", "crossover_constants",
    "drafter_cost", "drafter_crossover", "drafter_times", "exact_crossover", "fixed_throughput",
    "hybrid_architecture", "hybrid_intensity", "kv_state_bytes", "kv_state_crossing", "linear_intensity", "policy",
    "pricing_gamma", "pricing_ratio", "rule_shortfall", "sequence_bytes", "simulated_at", "throughput_tpot",
    "tpot_ms",
]
