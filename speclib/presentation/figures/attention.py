"""Figures of the chapter "Attention": Table 1 (attention intensity over
context and verify width), intensity against verify width for MHA, GQA and
MLA, and DeepSeek-V4's compressed attention variants."""
from __future__ import annotations

import numpy as np

from ...core.attention import CSA_OVERLAP, attention_intensity, mha_counterpart, v4_attention_what_if
from ...core.cost import cost_model
from ...presets import resolve
from ..definition import Axis, Choice, Figure, HLine, Line, Panel, Slider, Table, Text, Toggle
from ..tables import NumberTable
from . import common

#: The paper's Table 1 grid.
TABLE_CONTEXTS = (512, 1024, 8192, 16384, 1_048_576)
TABLE_WIDTHS = (1, 2, 4, 8)
#: DeepSeek-V4's attention variants, one panel each, with the panel's title.
V4_VARIANTS = (("hca", "HCA: MLA over S/{hca_ratio:,.0f}"), ("csa", "CSA main: MLA over top {csa_top_k:,.0f}"),
               ("indexer", "CSA indexer: scores S/{csa_ratio:,.0f}"))


def intensity(xp, model, variant, T, S, query_bytes, csa_overlap=CSA_OVERLAP):
    """``speclib.attention_intensity`` on one GPU in the figure array language
    (``S`` may be traced); CSA's positions select with overlap ``csa_overlap``."""
    attn = model.attention
    m_c, m_q, f, S_eff = attn.variant_constants(variant, S, F=xp.F)
    m_q = m_q if query_bytes else 0.0
    if variant == "csa":
        return xp.F.csa_intensity(T, S, m_c, m_q, f, attn.csa_ratio, attn.csa_top_k, csa_overlap)
    return xp.F.attention_intensity(T, S_eff, m_c, m_q, f)


# --- Table 1 -----------------------------------------------------------------------------


def _attention_table(p, xp):
    model, hw = resolve(p.model, p.hardware)
    variant = p.variant if getattr(model.attention, "hca_ratio", None) is not None else model.attention.kind
    S = xp.asarray(p.contexts)[:, None]
    values = intensity(xp, model, variant, xp.asarray(p.widths)[None, :], S, p.query_bytes)
    ridge = hw.ridge(model.attention_precision)
    return {"contexts": list(p.contexts), "widths": list(p.widths), "values": values, "hot": values > ridge,
            "ridge": ridge, "model": model.name, "hardware": hw.name, "kind": variant,
            "query": "" if p.query_bytes else ", query bytes left out"}


attention_table = Figure(
    name="attention_table",
    title="",
    compute=_attention_table,
    controls=(common.model_choice(),
              Choice("variant", "variant (MLA models)", ("mla", "hca", "csa", "indexer"), "mla"),
              common.hardware_choice(),
              Toggle("query_bytes", "count query bytes", True)),
    params={"contexts": TABLE_CONTEXTS, "widths": TABLE_WIDTHS},
    panels=(Panel(x=Axis(""), y=Axis(""), series=(Table(
        "contexts", "widths", "values", highlight="hot", corner="S \\ T",
        caption="Attention arithmetic intensity (FLOP/byte): {model}, variant {kind}{query}. Rows: context S; "
                "columns: query tokens per sequence T. Compute-bound (above the {hardware} bf16 ridge, "
                "{ridge:,.2f} FLOP/byte) in bold."),)),),
    doc="Table 1: attention intensity over context lengths (rows) and verify widths (columns), "
        "compute-bound cells in bold.",
)


# --- intensity against verify width --------------------------------------------------


def _attention_width(p, xp):
    gqa, _ = resolve(p.gqa_model, None)
    mla, _ = resolve(p.mla_model, None)
    _, hw = resolve(None, p.hardware)
    T = xp.geomspace(1.0, p.width_max, p.points)
    ridge = hw.ridge("bf16")
    out = {"T": T, "ridge": ridge, "hardware": hw.name, "query": "" if p.query_bytes else ", query bytes left out"}
    lows, highs = [], []
    for key, m, variant in (("mha", mha_counterpart(gqa), "gqa"), ("gqa", gqa, "gqa"), ("mla", mla, "mla")):
        ai = intensity(xp, m, variant, T, p.S, p.query_bytes)
        attn = m.attention
        out[key] = ai
        out[f"{key}_label"] = (f"{m.name}: MLA, {attn.n_heads} heads share one latent" if key == "mla"
                               else f"{m.name}: {attn.n_heads} query / {attn.n_kv_heads} KV heads")
        out[f"{key}_cross_x"], out[f"{key}_cross_y"] = common.crossing(xp, T, ai, ridge)
        lows.append(xp.min(ai))
        highs.append(xp.max(ai))
    lo = xp.minimum(xp.minimum(xp.minimum(lows[0], lows[1]), lows[2]), ridge) / 1.5
    hi = xp.maximum(xp.maximum(xp.maximum(highs[0], highs[1]), highs[2]), ridge) * 1.5
    out["y_lo"], out["y_hi"] = 10.0 ** xp.floor(xp.log10(lo)), 10.0 ** xp.ceil(xp.log10(hi))
    return out


attention_width = Figure(
    name="attention_width",
    title="Attention intensity against verify width\nS = {S:,.0f}{query}",
    compute=_attention_width,
    controls=(common.seq_slider(8192, "context S"), Toggle("query_bytes", "count query bytes", True),
              common.hardware_choice()),
    params={"gqa_model": "Llama-3-70B", "mla_model": "DeepSeek-V4-Flash", "width_max": 256, "points": 200},
    panels=(Panel(
        x=Axis("query tokens per sequence T (1 = decode, 1 + \u03b3 when verifying)", "log2", 1, "width_max"),
        y=Axis("attention intensity (FLOP/byte)", "log", "y_lo", "y_hi"),
        series=(*(Line("T", key, label="{" + key + "_label}", color=key, gid=key) for key in ("mha", "gqa", "mla")),
                HLine("ridge", text="{hardware} bf16 ridge {ridge:,.0f}", gid="ridge"),
                *(Text(f"{key}_cross_x", f"{key}_cross_y", "", marker="o", gid=f"{key}_crossing")
                  for key in ("mha", "gqa", "mla"))),
        legend="lower right"),),
    doc="Attention intensity against verify width T at one context length, for MHA, GQA (Llama-3-70B) and MLA "
        "(DeepSeek-V4-Flash), with the bf16 ridge and where each line crosses it.",
)


# --- DeepSeek-V4's compressed attention ------------------------------------------------


def _compressed_attention(p, xp):
    model = v4_attention_what_if(p.model, hca_ratio=p.hca_ratio, csa_ratio=p.csa_ratio, csa_top_k=p.csa_top_k)
    _, hw = resolve(None, p.hardware)
    S = xp.geomspace(p.context_range[0], p.context_range[1], p.points)
    T = xp.asarray(p.widths)[:, None]
    ridge = hw.ridge(model.attention_precision)
    out = {"S": S, "ridge": ridge, "model": model.name, "hardware": hw.name,
           "labels": [f"T = {t:g}" for t in p.widths], "query": "" if p.query_bytes else ", query bytes left out"}
    top = ridge
    for key, _ in V4_VARIANTS:
        out[key] = intensity(xp, model, key, T, S[None, :], p.query_bytes)
        top = xp.maximum(top, xp.max(out[key]))
    out["y_hi"] = common.nice_ceiling(xp, top * 1.1)
    return out


compressed_attention = Figure(
    name="compressed_attention",
    title="{model} attention variants on {hardware}{query}",
    compute=_compressed_attention,
    controls=(Slider("hca_ratio", "HCA compression", 8, 512, 128, step=1, scale="log2", format=",.0f"),
              Slider("csa_top_k", "CSA top-k", 128, 4096, 512, step=1, scale="log2", format=",.0f"),
              Slider("csa_ratio", "CSA compression", 1, 16, 4, step=1, scale="log2", format=",.0f"),
              Toggle("query_bytes", "count query bytes", True)),
    params={"model": "DeepSeek-V4-Flash", "hardware": None, "widths": (1, 2, 4), "context_range": (512, 1_048_576),
            "points": 300},
    panels=tuple(Panel(x=Axis("context S (tokens)", "log2", ticks="context"),
                       y=Axis("attention intensity (FLOP/byte)" if i == 0 else "", lo=0, hi="y_hi"),
                       series=(Line("S", key, labels="labels", width=1.6, gid=key),
                               HLine("ridge", label="bf16 ridge {ridge:,.0f}", gid="ridge")),
                       title=title, legend="upper left" if i == 0 else "")
                 for i, (key, title) in enumerate(V4_VARIANTS)),
    size=(10.0, 4.0),
    doc="DeepSeek-V4's attention variants: intensity against the original context length for a few verify "
        "widths, one panel per variant.",
)



# --- attention split over GPUs ----------------------------------------------------


#: The models the split figure draws: (key, model, hardware, colour).
SPLIT_MODELS = (("v3", "DeepSeek-V3", "H200", "mla"), ("v4", "DeepSeek-V4-Flash", "B200", "hca"),
                ("llama", "Llama-3-70B", "H200", "gqa"))


def _split_width(p, xp):
    tp = xp.asarray([float(n) for n in p.tps])
    out = {"tp": tp, "one_token": 2.0}
    top = 2.0
    for key, name, chip, _ in SPLIT_MODELS:
        m, hw = resolve(name, chip)
        m_c, _, f, _ = m.attention.variant_constants(m.attention.kind, 1.0)
        ridge, n_kv = hw.ridge(m.attention_precision), float(m.attention.kv_heads or 1)
        out[key] = xp.F.split_compute_bound_width(m_c, f, ridge, tp, n_kv)  # heads split over tp GPUs
        out[f"{key}_dp"] = xp.F.split_compute_bound_width(m_c, f, ridge, 1.0 + 0.0 * tp, n_kv)  # whole heads
        attn = m.attention
        what = (f"MLA, {attn.n_heads} heads on one latent" if attn.kind == "mla"
                else f"GQA {attn.n_heads}/{attn.n_kv_heads}")
        out[f"{key}_label"] = f"{m.name} on {hw.name} ({what}), tensor parallel"
        out[f"{key}_dp_label"] = f"{m.name} on {hw.name}, data-parallel attention"
        top = xp.maximum(top, xp.max(out[key]))
    out["y_hi"] = 2.0 ** xp.ceil(xp.log2(top * 1.5))
    return out


split_attention_width = Figure(
    name="split_attention_width",
    title="Verify width at which one GPU's attention turns compute-bound",
    compute=_split_width,
    params={"tps": (1, 2, 4, 8, 16)},
    panels=(Panel(
        x=Axis("GPUs the query heads are split over (tensor parallel size)", "log2", 1, 16),
        y=Axis("compute-bound from verify width T*", "log2", 0.5, "y_hi"),
        series=(*(Line("tp", key, label="{" + key + "_label}", color=color, marker="o", gid=key)
                  for key, _, _, color in SPLIT_MODELS),
                *(Line("tp", f"{key}_dp", label="{" + key + "_dp_label}", color=color, dash="dashed", gid=f"{key}_dp")
                  for key, _, _, color in SPLIT_MODELS if key != "llama"),
                HLine("one_token", text="T = 2: one speculated token", gid="one_token")),
        legend="below"),),
    size=(7.0, 5.2),
    doc="The verify width T* at which one GPU's long-context attention reaches the bf16 ridge, against the "
        "tensor-parallel size: MLA's latent is read whole by every GPU, so T* grows as tp; GQA's cache splits "
        "with its KV heads up to n_kv GPUs; under data-parallel attention (dashed) each GPU holds whole heads and "
        "T* stays at one GPU's.",
)

#: The contexts of the HCA table: round numbers either side of the first speculated token's ridge crossing.
HCA_CONTEXTS = (8192, 16384, 20480, 24576, 32768, 40960, 49152, 65536, 131072)


def hca_first_token(contexts=HCA_CONTEXTS, model=None, hardware=None, max_width=64) -> NumberTable:
    """HCA at each original context in ``contexts`` (query bytes counted): the
    widest verify that stays memory-bound (up to ``max_width``); the ledger's
    price of a speculated token there, the log-slope of HCA's cost at verify
    width 2; and what the first speculated token adds to a decode step's HCA
    cost, (C(2) - C(1)) / C(1), the secant the speedup sees."""
    m, hw = resolve(model, hardware)
    ratio = m.attention.hca_ratio
    if ratio is None:
        raise ValueError(f"model must have DeepSeek-V4 HCA attention; {m.name} has none")
    ridge = hw.ridge(m.attention_precision)
    cm = cost_model(m, hw, query_bytes=True, attention="paper")  # MLA over the HCA-compressed context, by hand
    widths = np.arange(1, max_width + 1)
    rows = []
    for S in contexts:
        bound = widths[attention_intensity(widths, S, m, variant="hca") <= ridge]
        widest = None if bound.size == 0 else (f"{max_width} or more" if bound.max() == max_width else int(bound.max()))
        compressed = S / ratio
        secant = cm.attention(1.0, 2.0, compressed) / cm.attention(1.0, 1.0, compressed) - 1
        rows.append((S, widest, float(cm.attention_slope(1.0, 2.0, compressed)), float(secant)))
    return NumberTable(("context S", "widest memory-bound verify T", "ledger's slope at T = 2",
                        "what the first speculated token adds (secant)"), tuple(rows), formats=(",.0f", "", ".2f", ".2f"),
                       caption=f"HCA of {m.name} on {hw.name}, query bytes counted: a speculated token's attention "
                               "cost as a fraction of a decode step's")


__all__ = ["HCA_CONTEXTS", "TABLE_CONTEXTS", "TABLE_WIDTHS", "V4_VARIANTS", "attention_table", "attention_width",
           "compressed_attention", "hca_first_token", "intensity", "split_attention_width"]
