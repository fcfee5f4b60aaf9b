"""Figures and tables of the chapter "Attention that stays memory-bound":
intensity against verify width for MLA, the hybrid's GQA full attention and
its GatedDeltaNet layers; the bytes one sequence keeps, KV cache against
recurrent state; and what rolling that state back past a rejected draft
does to the priced policy."""
from __future__ import annotations

import numpy as np

from ...core import attention as _attention
from ...core import step as _step
from speclib.evidence import simulator as sequel
from ...formulas import numpy_functions as nf
from ...presets import resolve
from ..._checks import checked_choice
from ..definition import Axis, Choice, Figure, HLine, Line, Panel, Text, Toggle
from ..tables import NumberTable
from . import common
from . import simulated_serving as serving
from .attention import intensity

KINDS = ("mla", "gqa", "gdn")
MB = 1e-6


def _intensity(p, xp):
    hybrid, _ = resolve(serving.HYBRID_MODEL, None)
    mla, _ = resolve(serving.MLA_MODEL, None)
    hw = resolve(None, p.hardware)[1]
    T = xp.geomspace(1.0, p.width_max, p.points)
    ridge = hw.ridge(hybrid.attention_precision)
    a, lin = hybrid.attention, hybrid.linear_attention
    out = {"T": T, "ridge": ridge, "hardware": hw.name, "precision": hybrid.attention_precision,
           "mla": intensity(xp, mla, "mla", T, p.S, p.query_bytes),
           "gqa": intensity(xp, hybrid, "gqa", T, p.S, p.query_bytes),
           "gdn": xp.F.linear_intensity(T, *(lin.architecture()[n] for n in nf.ARGUMENTS["linear_intensity"][1:]))
           + 0.0 * p.S,
           "mla_label": f"{mla.name}: MLA, {mla.attention.n_heads} heads share one latent",
           "gqa_label": f"{hybrid.name}: GQA, {a.n_heads} query / {a.n_kv_heads} KV heads",
           "gdn_label": f"{hybrid.name}: GatedDeltaNet, {lin.n_value_heads} value heads",
           "query": "" if p.query_bytes else ", query bytes left out"}
    lo, hi = ridge, ridge
    for key in KINDS:
        out[f"{key}_cross_x"], out[f"{key}_cross_y"] = common.crossing(xp, T, out[key], ridge)
        lo, hi = xp.minimum(lo, xp.min(out[key])), xp.maximum(hi, xp.max(out[key]))
    # the usual range, so that moving S keeps the frame
    out["y_lo"] = xp.minimum(10.0 ** xp.floor(xp.log10(lo / 1.5)), 1.0)
    out["y_hi"] = xp.maximum(10.0 ** xp.ceil(xp.log10(hi * 1.5)), 1e5)
    return out


hybrid_intensity = Figure(
    name="hybrid_intensity",
    title="Intensity against verify width on {hardware}\nS = {S:,.0f}{query}",
    compute=_intensity,
    controls=(common.seq_slider(8192, "context S"), Toggle("query_bytes", "count query bytes", True),
              common.hardware_choice()),
    params={"width_max": 64, "points": 200},
    panels=(Panel(Axis("positions per sequence T (1 = decode, 1 + \u03b3 when verifying)", "log2", 1, "width_max"),
                  Axis("attention intensity (FLOP/byte)", "log", "y_lo", "y_hi"),
                  (*(Line("T", key, label="{" + key + "_label}", color=key, gid=key) for key in KINDS),
                   HLine("ridge", text="{hardware} {precision} ridge {ridge:,.0f}", gid="ridge"),
                   *(Text(f"{key}_cross_x", f"{key}_cross_y", "", marker="o", gid=f"{key}_crossing")
                     for key in KINDS)),
                  legend="upper left"),),
    doc="Arithmetic intensity against verify width: MLA (DeepSeek-V4-Flash), the hybrid's GQA full attention and "
        "its GatedDeltaNet layers, against the attention precision's ridge.",
)


def _bytes(p, xp):
    arch = _attention.hybrid_architecture(serving.HYBRID_MODEL, full_attention_layers=p.full_attention_layers,
                                          kv_format=p.kv_format)
    S = np.geomspace(p.context_range[0], p.context_range[1], p.points)
    data = _attention.kv_state_bytes(S, arch)
    out = {"S": S, "layers": arch.attention_layers + arch.linear_layers, "full": arch.attention_layers,
           "m_c": arch.context_bytes, "model": serving.HYBRID_MODEL}
    for key in ("kv", "state", "total", "all_full"):
        y = np.broadcast_to(data[key], S.shape) * MB
        out[key] = np.where(y > 0, y, np.nan)
    crossing = _attention.kv_state_crossing(arch)
    inside = crossing is not None and S[0] < crossing < S[-1]
    out["cross_x"] = crossing if inside else np.nan
    out["cross_y"] = float(_attention.kv_state_bytes(crossing, arch)["state"]) * MB if inside else np.nan
    out["crossing"] = crossing if inside else 0.0
    values = np.concatenate([out["all_full"], out["state"]])
    values = values[np.isfinite(values) & (values > 0)]
    out["y_lo"], out["y_hi"] = 10.0 ** np.floor(np.log10(values.min())), 10.0 ** np.ceil(np.log10(values.max()))
    return out


kv_state_bytes = Figure(
    name="kv_state_bytes",
    title="KV cache against recurrent state: {model}\n{full} of {layers} layers full attention, KV {m_c:,.0f} B per "
          "token per layer",
    compute=_bytes,
    controls=(Choice("full_attention_layers", "full-attention layers", serving.FULL_ATTENTION_LAYERS,
                     int(_attention.hybrid_architecture(serving.HYBRID_MODEL).attention_layers)),
              Choice("kv_format", "KV cache", tuple(_attention.KV_FORMATS), "bf16")),
    params={"context_range": (256, 1_048_576), "points": 200},
    panels=(Panel(Axis("context S (tokens)", "log2", ticks="context"), Axis("MB one sequence keeps", "log", "y_lo",
                                                                            "y_hi"),
                  (Line("S", "kv", label="KV cache (full-attention layers)", color="gqa", gid="kv"),
                   Line("S", "state", label="state (GatedDeltaNet layers)", color="gdn", gid="state"),
                   Line("S", "total", label="both", color="total", width=1.4, gid="total"),
                   Line("S", "all_full", label="every layer full attention", color="ridge", dash="dotted", width=1.6,
                        gid="all_full"),
                   Text("cross_x", "cross_y", "equal at S = {crossing:,.0f}", marker="o", dx=8, dy=-12,
                        gid="crossing")),
                  legend="upper left"),),
    doc="Bytes one sequence keeps against context: the hybrid's KV cache, its linear-attention state, their sum, "
        "and the same model with every layer full attention.",
)


# --- rolling the state back past a rejected draft -----------------------------------------

#: How the book names the ways of rolling the linear layers back (speclib.core.step.ROLLBACKS).
ROLLBACK_LABELS = {"none": "no rollback", "snapshot": "a snapshot per position (vLLM, SGLang)",
                   "recompute": "a replay of the accepted positions"}


def rollback_effects(drafter="mtp", concurrencies=None) -> dict:
    """The priced policy of ``drafter`` (a key of the sequel's grid) at the
    simulated setting, at ``concurrencies`` (default the grid's), with each
    way of rolling the linear layers back (:data:`speclib.core.step.ROLLBACKS`):
    {rollback: (gamma*, its speedup over plain decoding with the same
    rollback)}. The step and the drafter are priced as the sequel's simulator
    prices them, one roofline over each, but the step writes back each state
    it reads, as an engine's does (the simulator's reads it only,
    :data:`speclib.evidence.simulator.STATE_WRITE`): a rollback's price is
    held against the step it is added to."""
    key = checked_choice("drafter", drafter, sequel.DRAFTER_KEYS)
    C = sequel.load_grid().concurrency if concurrencies is None else np.asarray(concurrencies, dtype=float)
    out = {}
    for rollback in _step.ROLLBACKS:
        g, X = sequel.policy(key, C, rollback=rollback, state_write=True)
        out[rollback] = (np.asarray(g), X / sequel.fixed_throughput(key, C, [0], rollback=rollback,
                                                                    state_write=True)[0])
    return out


def rollback_policy(drafter="mtp", concurrencies=None) -> NumberTable:
    """The priced policy of ``drafter`` (a key of the sequel's grid) at the
    simulated setting, a row per concurrency (default the grid's): gamma*
    and its speedup over plain decoding with each way of rolling the linear
    layers back (:func:`rollback_effects`)."""
    C = sequel.load_grid().concurrency if concurrencies is None else np.asarray(concurrencies, dtype=float)
    cells = rollback_effects(drafter, C)
    rows = tuple((f"{c:,.0f}", *(f"{cells[r][0][j]} / {cells[r][1][j]:.2f}\u00d7" for r in _step.ROLLBACKS))
                 for j, c in enumerate(C))
    head = ("concurrency", *(ROLLBACK_LABELS[r] for r in _step.ROLLBACKS))
    caption = (f"{serving.DRAFTER_LABELS[drafter]} drafting for {sequel.simulated_model().name} on a "
               f"{sequel.HARDWARE}, at the simulated context ({sequel.context():g} tokens): the priced policy's "
               "\u03b3* / its speedup over plain decoding, the step and the drafter each priced by one roofline "
               "(the sequel's simulator's rule) and each step writing back the linear-attention state it reads (which "
               "the simulator leaves out), with each way of rolling that state back past a rejected draft")
    return NumberTable(head, rows, caption=caption, css_class="speclib-nowrap")


def replay_cost(concurrencies=None) -> float:
    """The largest share of the priced policy's speedup that a replay of the
    accepted positions gives up against no rollback, over both drafters and
    ``concurrencies`` (default the grid's)."""
    out = 0.0
    for key in sequel.DRAFTER_KEYS:
        effects = rollback_effects(key, concurrencies)
        out = max(out, float(np.max(1 - effects["recompute"][1] / effects["none"][1])))
    return out
