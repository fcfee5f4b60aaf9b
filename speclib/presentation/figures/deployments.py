"""Figures and tables of the "Other deployments" chapter: gamma* maps over batch
and sequence length compared across models and chips, where the zero-gamma
regions sit, and where each chip puts the knees that move them.

Every map is one :func:`speclib.optimal_gamma` call over the whole
(sequence length x batch) grid; every table cell comes from speclib's own
functions (``optimal_gamma``, ``moe.knees``, ``attention.compute_bound_width``).
"""
from __future__ import annotations

from itertools import product

import numpy as np

from ..._checks import checked_array, checked_int
from ...core import attention as _attention
from ...core import moe as _moe
from ...core import speculation as _speculation
from ...core.deployment import Deployment
from ...presets import PRECISIONS, describe_hardware, describe_model, resolve
from ..definition import Axis, Figure, Heatmap, Panel
from ..tables import NumberTable
from . import common

#: The models the chapter compares, from MLA + many experts to dense GQA.
MODELS = ("DeepSeek-V4-Flash", "DeepSeek-V4-Pro", "DeepSeek-V3", "Qwen3-235B-A22B", "Mixtral-8x7B", "Llama-3-70B")
#: The chips it compares: Hopper and CDNA 3 (no fp4) against Blackwell and CDNA 4.
CHIPS = ("H100-SXM", "H200", "MI325X", "B200", "MI355X", "GB300")

BATCH_RANGE, CONTEXT_RANGE = common.BATCH_RANGE, common.SEQ_RANGE


def _grid(name, lo_hi, points):
    lo = float(checked_array(f"{name}_range[0]", lo_hi[0], lo=0, lo_open=True))
    hi = float(checked_array(f"{name}_range[1]", lo_hi[1], lo=lo, lo_open=True))
    return np.geomspace(lo, hi, checked_int(f"{name}_points", points, lo=2, hi=4000))


#: The parameters every map figure has (the grids and the pricing).
_MAP_PARAMS = {"alpha": 0.75, "c_draft": 0.1, "gamma_max": 64, "query_bytes": False, "batch_points": 120,
               "context_points": 60, "batch_range": BATCH_RANGE, "context_range": CONTEXT_RANGE}


def _maps(p, xp):
    pairs = [resolve(m, h) for m, h in product(p.models, p.chips)]
    if not pairs:
        raise ValueError("models and chips must each name at least one preset")
    ncols = checked_int("ncols", p.ncols, lo=1, hi=8)
    out = {"maps": pairs, "alpha": p.alpha, "c_draft": p.c_draft, "columns": min(ncols, len(pairs))}
    batches = _grid("batch", p.batch_range, p.batch_points)
    contexts = _grid("context", p.context_range, p.context_points)
    for i, (model, chip) in enumerate(pairs):  # gamma* on the whole grid, shape (len(contexts), len(batches))
        out[f"B{i}"], out[f"S{i}"] = batches, contexts
        out[f"gamma{i}"], _ = _speculation.optimal_gamma(
            p.alpha, batches[None, :], contexts[:, None], p.c_draft, gamma_max=p.gamma_max,
            deployment=_speculation.Deployment(model, chip, query_bytes=p.query_bytes, attention="paper"))
    n_models, n_chips = len({m.name for m, _ in pairs}), len({h.name for _, h in pairs})
    by_chip, by_model = n_models == 1 < n_chips, n_chips == 1 < n_models  # panels by chip / by model
    out["labels"] = [h.name if by_chip else m.name if by_model else f"{m.name} on {h.name}" for m, h in pairs]
    out["vmax"] = max(6, max(int(out[f"gamma{i}"].max()) for i in range(len(pairs))))
    scope = (f"{pairs[0][0].name}, by chip" if by_chip else f"by model, on {pairs[0][1].name}" if by_model
             else "by model and chip")
    out["heading"] = p.title or f"\u03b3* over batch and sequence length, {scope}"
    out["speclib_maps"] = [(m, h, out[f"B{i}"], out[f"S{i}"], out[f"gamma{i}"]) for i, (m, h) in enumerate(pairs)]
    return out


def _map_panels(data):
    n, columns = len(data["maps"]), data["columns"]
    return tuple(Panel(
        common.batch_axis(label="batch (sequences)" if i >= n - columns else ""),
        Axis("sequence length S" if i % columns == 0 else "", "log2", ticks="context"),
        (Heatmap(f"B{i}", f"S{i}", f"gamma{i}", colors="gamma", vmax="vmax", colorbar=i == n - 1,
                 label="\u03b3* (pink: 0, plain decoding wins)", gid=f"gamma_map:{model.name}:{chip.name}"),),
        title=data["labels"][i], legend="", grid=False) for i, (model, chip) in enumerate(data["maps"]))


def _maps_figure(name, doc, compute=_maps, columns=3, size=(8.8, 6.0), **params):
    return Figure(name=name, title="{heading}\n\u03b1 = {alpha:.0%}, drafter {c_draft:.0%} of a decode step; "
                                   "the roofline per layer",
                  compute=compute, panels=_map_panels, columns=columns, size=size, doc=doc,
                  params={**_MAP_PARAMS, **params})


gamma_maps = _maps_figure("deployments_maps", "Small multiples of gamma* over batch (x) and sequence length (y), one "
                          "panel per (model, chip) pair, on one colour scale; pink where gamma* = 0.",
                          models=MODELS[:1], chips=CHIPS[3:4], title=None, ncols=3)
model_maps = gamma_maps.variant("deployments_model_maps", models=MODELS, chips=("B200",))
chip_maps = gamma_maps.variant("deployments_chip_maps", models=("DeepSeek-V4-Flash",), chips=CHIPS)


def _swap(p, xp):
    model, chip = resolve(p.model, p.hardware)
    variant = _attention.with_gqa_attention(model, n_kv_heads=p.n_kv_heads, head_dim=p.head_dim)
    title = f"\u03b3*: {model.name} on {chip.name}, MLA (left) or GQA (right)"
    q = dict(vars(p), models=(model, variant), chips=(chip,), title=title)
    return _maps(type(p)(**q), xp)


#: Two gamma* maps: a model as it is (MLA) and with GQA attention in its place
#: (:func:`speclib.core.attention.with_gqa_attention`), everything else equal.
attention_swap_maps = _maps_figure(
    "deployments_attention_swap", "gamma* of a model as it is (MLA) and with GQA attention in its place, everything "
    "else equal.", compute=_swap, columns=2, size=(6.6, 3.6),
    model="DeepSeek-V4-Flash", hardware="B200", n_kv_heads=8, head_dim=128, ncols=2)


# --- tables -----------------------------------------------------------------------------
def _table(caption, headers, rows, align="", held=(), wrap=False):
    """A table of preset-derived strings (default alignment: first column left, the rest right). Its cells
    keep on one line, unless ``wrap``: a table whose cells hold words ("(every batch)") wraps them between
    words to stay in the text column."""
    return NumberTable(headers, tuple(rows), caption=caption, align=align or "l" + "r" * (len(headers) - 1),
                       css_class="speclib-deployment-table" if wrap else "speclib-nowrap speclib-deployment-table",
                       held=held)


def _attention_label(model):
    a = model.attention
    return f"GQA {a.n_heads}/{a.n_kv_heads}" if a.kind == "gqa" else f"MLA {a.n_heads} ({'V4' if a.o_groups else 'V3'})"


def _ffn_label(model):
    f = model.ffn
    return f"{f.top_k} of {f.n_routed}" + (f" + {f.n_shared}" if f.n_shared else "") if f.is_moe else "dense"


def model_table(models=MODELS):
    """The model presets' key numbers (one layer), a compact form of what
    ``speclib presets`` lists."""
    rows = []
    for name in models:
        m = resolve(name, None)[0]
        d = describe_model(m)
        rows.append((m.name, _attention_label(m), _ffn_label(m), f"{d['W_attn'] / 1e6:,.0f}M",
                     f"{d['W_E'] / 1e6:,.0f}M", "-" if d["E/k"] is None else f"{d['E/k']:.0f}",
                     f"{d['m_c']:,.0f}", f"{d['f'] / d['m_c']:,.0f}",
                     f"{m.proj_precision}/{m.ffn.precision}"))
    caption = ("Model presets, one layer: attention (query/KV heads for GQA), routed experts a token uses "
               "(+ shared), attention-projection (W_attn) and per-expert (W_E; the whole FFN if dense) weights, "
               "routing knee E/k, cache bytes per context token m_c, FLOPs per cached byte f/m_c, and the GEMM "
               "precision of the projections / FFN (fp4 weights are MXFP4, 0.53 bytes each).")
    headers = ("model", "attention", "experts", "W_attn", "W_E", "E/k", "m_c (B)", "f/m_c", "precision")
    return _table(caption, headers, rows, align="lllrrrrrl")


def hardware_table(chips=("B200", "H100-SXM", "H200", "MI300X", "MI325X", "MI355X", "GB300")):
    """The hardware presets' bandwidth, dense peaks and ridges; an fp4 peak
    marked * is the fp8 one (no fp4 units)."""
    rows = []
    for name in chips:
        chip = resolve(None, name)[1]
        d = describe_hardware(chip)
        mark = {p: "" if chip.native(p) else "*" for p in PRECISIONS}
        rows.append((d["name"], f"{d['bandwidth_TBps']:g}",
                     *(f"{d[f'{p}_PFLOPS']:.2f}{mark[p]}" for p in reversed(PRECISIONS)),
                     *(f"{d[f'ridge_{p}']:,.0f}{mark[p]}" for p in reversed(PRECISIONS))))
    caption = ("Hardware presets: HBM bandwidth (TB/s), dense peaks (PFLOP/s) and ridges (peak / bandwidth, FLOP "
               "per byte). * no fp4 units: MXFP4 weights are multiplied at the fp8 peak.")
    headers = ("chip", "TB/s", "bf16", "fp8", "fp4", "ridge bf16", "ridge fp8", "ridge fp4")
    return _table(caption, headers, rows)


def _span(lo, hi):
    return f"{lo:,.0f}" if lo == hi else f"{lo:,.0f}\u2013{hi:,.0f}"


#: The step model every gamma* of this chapter is priced with, as its tables' captions name it.
STEP_MODEL = "the paper's ledger (the roofline per layer)"


def gutter_table(models=MODELS, chips=("B200",), *, seq=4096, alpha=0.75, c_draft=0.1, gamma_max=64,
                 batch_range=BATCH_RANGE):
    """For each model and chip, over every whole batch in ``batch_range``
    (Figure 3's grid, 1 to 30,000): where gamma* is 0 at small batch (the
    gutter), the last batch at which it is above 0 (past it plain decoding
    wins for good; the top of the range if it never stops), and the largest
    gamma* with the batches reaching it (:func:`speclib.core.speculation.gamma_regions`)."""
    lo = int(checked_int("batch_range[0]", batch_range[0], lo=1))
    hi = int(checked_int("batch_range[1]", batch_range[1], lo=lo))
    batches = np.arange(lo, hi + 1, dtype=float)
    rows, held = [], []
    for name, chip_name in product(models, chips):
        model, chip = resolve(name, chip_name)
        dep = Deployment(model, chip, attention="paper")
        z = _speculation.gamma_regions(alpha, seq, c_draft, batches=batches, gamma_max=gamma_max, deployment=dep)
        small = ([z["low_edge"]] if z["low_edge"] else []) + z["gutters"]
        last = z["last_speculating"]
        if last is None:
            last_text = "none"
        else:
            gamma_last = int(_speculation.optimal_gamma(alpha, last, seq, c_draft, gamma_max=gamma_max,
                                                        deployment=dep)[0])
            mark, point = common.held_point(dep, seq, last, gamma_last)
            held.append(point)
            last_text = f"{last:,.0f}{mark}" + (" (every batch)" if last == hi else "")
        # the largest gamma* holds over a run of batches (a plateau of ties): the mark is its last batch's
        mark, point = common.held_point(dep, seq, z["best_batch_to"], z["best_gamma"])
        held.append(point)
        fits = dep.max_batch(float(seq)) if chip.hbm_capacity else None
        rows.append((model.name, chip.name, ", ".join(_span(a, b) for a, b in small) or "none", last_text,
                     f"{z['best_gamma']} (at {_span(z['best_batch'], z['best_batch_to'])}{mark})", "\u2013" if fits is None else f"{fits:,}"))
    caption = (f"Where plain decoding beats every draft length (\u03b3* = 0), priced by {STEP_MODEL}: "
               f"S = {seq:,} tokens, \u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%} of a step, every "
               f"whole batch from {lo:,} to {hi:,} sequences. Last column: the most sequences of S tokens one chip "
               f"holds without drafting, each model's cache as the paper prices it; {common.NOT_HELD}: a batch one "
               "chip does not hold at that draft length.")
    headers = ("model", "chip", "\u03b3* = 0 at small batch", "last batch with \u03b3* > 0", "largest \u03b3* (batches)",
               "largest batch held")
    return _table(caption, headers, rows, align="llllrr", held=tuple(held), wrap=True)


def knee_table(chips=CHIPS, *, moe_model="DeepSeek-V4-Flash", dense_model="Llama-3-70B",
               attention_models=("DeepSeek-V4-Flash", "DeepSeek-V4-Pro", "Llama-3-70B")):
    """Per chip: the ridges, and the knees they set: where the MoE model's
    experts turn compute-bound, where the dense model's FFN does, and for each
    of ``attention_models`` the verify width T at which its long-context
    attention does (below 1: compute-bound already in plain decoding)."""
    moe_p, dense_p = resolve(moe_model, None)[0], resolve(dense_model, None)[0]
    attention_ps = [resolve(name, None)[0] for name in attention_models]
    rows = []
    for chip_name in chips:
        chip = resolve(None, chip_name)[1]
        rows.append((chip.name, *(f"{chip.ridge(p):,.0f}" for p in reversed(PRECISIONS)),
                     f"{_moe.knees(moe_p, chip)['moe_ridge']:,.0f}", f"{_moe.knees(dense_p, chip)['dense_knee']:,.0f}",
                     *(f"{_attention.compute_bound_width(m, chip):.2f}" for m in attention_ps)))
    caption = (f"Ridges (FLOP/byte) and the knees they place. MoE compute knee: tokens per step at which "
               f"{moe_p.name}'s experts reach their ridge; dense FFN knee: the same for {dense_p.name}'s FFN; "
               f"attention T: verify width at which a model's long-context attention turns compute-bound.")
    headers = ("chip", "ridge bf16", "ridge fp8", "ridge fp4", "MoE compute knee", "dense FFN knee",
               *(f"T, {m.name}" for m in attention_ps))
    return _table(caption, headers, rows)


__all__ = ["CHIPS", "MODELS", "STEP_MODEL", "attention_swap_maps", "chip_maps", "gamma_maps", "gutter_table", "hardware_table",
           "knee_table", "model_maps", "model_table"]
