"""Figures and a table of the chapter "The paper on measured silicon": the
expert tax and MLA's verify cost read from NVIDIA's measured kernel tables
(:mod:`speclib.evidence.measured_kernels`), one panel per chip, one colour
per engine. The figures have no controls; their panels follow the chips.
``facts()`` returns the numbers the chapter's prose glues."""
from __future__ import annotations

import numpy as np

from speclib.evidence import measured_kernels as _mk
from ..definition import Axis, Figure, Key, Line, Panel, Points, Text, VLine
from ..style import COLORS, CYCLE
from ..tables import NumberTable

ENGINE_COLORS = {"SGLang": CYCLE[0], "TRT": CYCLE[1], "vLLM": CYCLE[2]}
ENGINE_NAMES = {"SGLang": "SGLang", "TRT": "TensorRT-LLM", "vLLM": "vLLM"}
TOKEN_TICKS = (1, 4, 16, 64, 256, 1024, 4096)
#: The token counts and query positions the table and the prose read.
FEW_TOKENS, SATURATED_TOKENS = 8, 256
MLA_POSITIONS, GQA_POSITIONS = 8, 4


def _key(chip: str) -> str:
    return chip.replace("-", "_").lower()


def _panels(x_axis, y_label, y_axis, series):
    """One panel per chip in the data: its note, then ``series(chip key)``; the y label in the first column."""
    return lambda data: tuple(
        Panel(x_axis, Axis(y_label if i % 2 == 0 else "", **y_axis),
              (Text(0.5, 0.08, f"{{{_key(chip)}_note}}", coords="axes", align="center", size=8.0),
               *series(_key(chip))), title=chip, legend="")
        for i, chip in enumerate(data["chips"]))


# --- (a) the expert tax ------------------------------------------------------------------------------


def _expert_tax(p, xp):
    out = {"chips": list(_mk.CHIPS), "model": p.model}
    for chip in _mk.CHIPS:
        k = _key(chip)
        notes = []
        for engine in _mk.ENGINES:
            r = _mk.expert_tax(chip, engine, p.model)
            out[f"{k}_{engine}_T"], out[f"{k}_{engine}_ratio"] = r.tokens, r.measured_ratio
            if r.missing:
                notes.append(f"{engine}: {r.missing}")
            if len(r.tokens):
                out[f"{k}_T"], out[f"{k}_coupon"] = r.tokens, r.coupon_ratio
                out.update(dtype=r.dtype, k=r.top_k, E=r.experts, knee=r.experts / r.top_k)
        out[f"{k}_note"] = "; ".join(notes)
    return out


def _expert_tax_series(k):
    yield Line(f"{k}_T", f"{k}_coupon", color=COLORS["total"], dash="dashed", width=1.6, gid=f"coupon_{k}")
    yield VLine("knee", color=COLORS["ridge"], dash="dotted", width=1.0)
    for engine, color in ENGINE_COLORS.items():
        yield Line(f"{k}_{engine}_T", f"{k}_{engine}_ratio", color=color, marker="o", width=1.4,
                   gid=f"measured_{k}_{engine}")


expert_tax = Figure(
    name="measured_expert_tax",
    title="{model}'s routed experts ({dtype}, top-{k} of {E}, one GPU): time at T tokens over time at one token",
    compute=_expert_tax,
    panels=_panels(Axis("tokens entering the layer T", "log2", ticks=TOKEN_TICKS),
                   "t(T) / t(1)", {"scale": "log", "lo": 1.0, "hi": 40.0}, _expert_tax_series),
    columns=2, size=(9.0, 6.6), params={"model": "DeepSeek-V3"},
    keys=(*(Key(ENGINE_NAMES[e], color=c, marker="o") for e, c in ENGINE_COLORS.items()),
          Key("coupon count A(T) / A(1)", color=COLORS["total"], dash="dashed"),
          Key("E / k", color=COLORS["ridge"], dash="dotted")),
    doc="Measured MoE layer time against the tokens entering it, over its time at one token, per engine, beside "
        "the coupon count's distinct experts over k (the memory-bound prediction); the dotted line is E/k, where "
        "the coupon count saturates.")


# --- (b) the verify cost of attention ----------------------------------------------------------------


def _verify_cost(p, xp):
    out = {"chips": list(_mk.CHIPS), "mla_model": p.mla, "gqa_model": p.gqa}
    T_line = np.linspace(1.0, max(_mk.POSITIONS), 57)
    for chip in _mk.CHIPS:
        k = _key(chip)
        notes = []
        for engine in _mk.ENGINES:
            for layout, model in (("mla", p.mla), ("gqa", p.gqa)):
                r = _mk.verify_cost(chip, engine, model)
                out[f"{k}_{engine}_{layout}_T"], out[f"{k}_{engine}_{layout}_ratio"] = r.T, r.ratio
                if r.missing and not len(r.T):
                    notes.append(f"{engine}: no {layout.upper()} table")
                out[f"{k}_{layout}_ridge"] = r.ridge_T
                out.update({f"{layout}_heads": r.heads, f"{layout}_kv": r.kv_heads, f"{layout}_tp": r.tp,
                            "batch": r.batch, "context": r.context})
        out[f"{k}_T_line"] = T_line
        out[f"{k}_roofline"] = _mk.roofline_ratio(T_line, p.mla, chip, out["mla_tp"], out["context"])
        out[f"{k}_note"] = "; ".join(notes)
        out[f"{k}_ridge_text"] = f" T* = {out[f'{k}_mla_ridge']:.1f}"
    return out


def _verify_cost_series(k):
    yield Line(f"{k}_T_line", f"{k}_roofline", color=COLORS["total"], dash="dashed", width=1.4, gid=f"roofline_{k}")
    yield VLine(f"{k}_mla_ridge", color=COLORS["mla"], dash="dotted", width=1.2, text=f"{{{k}_ridge_text}}",
                gid=f"ridge_{k}")
    for engine, color in ENGINE_COLORS.items():
        yield Line(f"{k}_{engine}_mla_T", f"{k}_{engine}_mla_ratio", color=color, marker="o", width=1.4,
                   gid=f"mla_{k}_{engine}")
        yield Line(f"{k}_{engine}_gqa_T", f"{k}_{engine}_gqa_ratio", color=color, marker="s", dash="dashed",
                   width=1.1, gid=f"gqa_{k}_{engine}")


verify_cost = Figure(
    name="measured_verify_cost",
    title="Attention per sequence at T query positions over T = 1 ({batch} sequences of {context:,} tokens)",
    compute=_verify_cost,
    panels=_panels(Axis("query positions per sequence T", lo=0.5, hi=10.5, ticks="number"),
                   "t(T) / t(1)", {"lo": 0.8, "hi": 1.8}, _verify_cost_series),
    columns=2, size=(9.0, 6.6), params={"mla": "DeepSeek-V3", "gqa": "Llama-3.1-8B"},
    keys=(*(Key(ENGINE_NAMES[e], color=c) for e, c in ENGINE_COLORS.items()),
          Key("MLA, {mla_model}", marker="o"), Key("GQA, {gqa_model}", marker="s"),
          Key("roofline (MLA)", color=COLORS["total"], dash="dashed"),
          Key("T* (MLA)", color=COLORS["mla"], dash="dotted")),
    doc="Measured decode attention per sequence at T query positions (read as T times the query heads over the "
        "same cache) over its time at one, MLA (circles) and GQA (squares) per engine, beside MLA's roofline "
        "(dashed) and its T* (dotted), where one GPU's attention turns compute-bound.")


# --- the table and the glued numbers -----------------------------------------------------------------


def _fmt(v, spec=".2f"):
    return "–" if v is None or not np.isfinite(v) else format(v, spec)


def summary_rows():
    """Per chip and engine: the MoE ratio at a few tokens and its coupon
    count, the most experts the saturated time could read of E, MLA's ratio at
    8 positions beside the roofline's and T*, GQA's at 4."""
    rows = []
    for chip in _mk.CHIPS:
        for engine in _mk.ENGINES:
            moe = _mk.expert_tax(chip, engine)
            few, coupon = moe.at(FEW_TOKENS)
            sat = np.flatnonzero(moe.tokens == SATURATED_TOKENS)
            readable = float(moe.readable_experts[sat[0]]) if len(sat) else float("nan")
            mla, gqa = _mk.verify_cost(chip, engine, "DeepSeek-V3"), _mk.verify_cost(chip, engine, "Llama-3.1-8B")
            roof = np.flatnonzero(mla.T == MLA_POSITIONS)
            rows.append((chip, ENGINE_NAMES[engine], few, coupon, readable, moe.experts, mla.at(MLA_POSITIONS),
                         float(mla.roofline_ratio[roof[0]]) if len(roof) else float("nan"), mla.ridge_T,
                         gqa.at(GQA_POSITIONS)))
    return rows


def summary_table() -> NumberTable:
    columns = ("chip", "engine", f"MoE t({FEW_TOKENS}) / t(1)", f"coupon A({FEW_TOKENS}) / A(1)",
               f"experts readable at T = {SATURATED_TOKENS}", f"MLA t({MLA_POSITIONS}) / t(1)", "MLA roofline",
               "MLA T*", f"GQA t({GQA_POSITIONS}) / t(1)")
    rows = tuple((chip, engine, _fmt(few), _fmt(coupon), f"{_fmt(readable, '.0f')} of {E}", _fmt(mla), _fmt(roof),
                  _fmt(ridge, ".1f"), _fmt(gqa))
                 for chip, engine, few, coupon, readable, E, mla, roof, ridge, gqa in summary_rows())
    return NumberTable(columns, rows, align="ll", css_class="speclib-measured-kernels-table",
                       caption=(f"DeepSeek-V3's experts (fp8) and MLA (8 GPUs), Llama-3.1-8B's GQA (2 GPUs), "
                                f"{_mk.BATCH} sequences of {_mk.CONTEXT:,} tokens; – : the table has no such kernel. "
                                "Experts readable: the most experts' weights the measured time could read at the "
                                "datasheet bandwidth."))


def _where(pairs) -> str:
    """Chip and engine pairs in words: "all files", "<engines> on every chip", or each pair."""
    pairs = set(pairs)
    engines = [e for e in _mk.ENGINES if all((c, e) in pairs for c in _mk.CHIPS)]
    if len(pairs) == len(engines) * len(_mk.CHIPS):
        if len(engines) == len(_mk.ENGINES):
            return "all files"
        return " and ".join(ENGINE_NAMES[e] for e in engines) + " on every chip"
    return ", ".join(f"{c} {ENGINE_NAMES[e]}" for c in _mk.CHIPS for e in _mk.ENGINES if (c, e) in pairs)


def gaps_table() -> NumberTable:
    """What the tables lack for the chapter's readings: per kernel, the
    query positions (or the whole kernel) missing, and the chip and engine
    files they are missing from."""
    by = {}
    for what, chip, engine, why in _mk.gaps():
        by.setdefault((what, why.split(":")[0] if why.startswith("T = ") else "every T"), set()).add((chip, engine))
    rows, seen = [], {}
    for (what, positions), pairs in by.items():
        seen.setdefault((what, _where(pairs)), []).append(positions.removeprefix("T = "))
    for (what, where), positions in seen.items():
        rows.append((what, "every T (no such table)" if positions == ["every T"] else
                     "T = " + ", ".join(positions) + " (no kernel at that many query heads)", where))
    return NumberTable(("kernel", "missing", "where"), tuple(rows), align="lll",
                       css_class="speclib-measured-kernels-table",
                       caption="What the tables lack for the readings above: left out, never interpolated.")


def facts() -> dict:
    """The numbers the chapter's prose glues."""
    rows = summary_rows()
    few = np.array([r[2] for r in rows])
    readable = np.array([r[4] for r in rows])
    engines = [r[1] for r in rows]
    trt = np.array([e == "TensorRT-LLM" for e in engines])
    mla = np.array([r[6] for r in rows])
    chips = [r[0] for r in rows]
    h200 = np.array([c == "H200" for c in chips])
    blackwell = np.array([c in ("B200", "B300") for c in chips])
    h100 = np.array([c == "H100-SXM" for c in chips])
    gqa = np.array([r[9] for r in rows])
    mla_fine = [_mk.verify_cost(c, e) for c in _mk.CHIPS for e in _mk.ENGINES]
    qwen = [_mk.expert_tax(c, e, "Qwen3-235B-A22B").at(FEW_TOKENS) for c in _mk.CHIPS for e in _mk.ENGINES]
    at2 = np.array([r.at(2) for r in mla_fine])
    return {
        "few_tokens": FEW_TOKENS, "coupon_few": float(rows[0][3]),
        "qwen_coupon_few": qwen[0][1], "qwen_few_lo": float(np.nanmin([q[0] for q in qwen])),
        "qwen_few_hi": float(np.nanmax([q[0] for q in qwen])),
        "few_lo": float(np.nanmin(few)), "few_hi": float(np.nanmax(few)),
        "knee": _mk.expert_tax("H200", "SGLang").experts / _mk.expert_tax("H200", "SGLang").top_k,
        "readable_other_lo": float(np.nanmin(readable[~trt])), "readable_other_hi": float(np.nanmax(readable[~trt])),
        "readable_trt_lo": float(np.nanmin(readable[trt])),
        "readable_hopper_hi": float(np.nanmax(readable[~trt & ~blackwell])),
        "mla_h200_lo": float(np.nanmin(mla[h200])), "mla_h200_hi": float(np.nanmax(mla[h200])),
        "mla_h100_hi": float(np.nanmax(mla[h100])),
        "mla_blackwell_hi": float(np.nanmax(mla[blackwell])),
        "mla_blackwell_2_hi": float(np.nanmax(at2[blackwell])),
        # the H200's and the B200's T* at 8 GPUs are the attention chapter's (v3_tp8_T_star, v4_tp8_T_star)
        "ridge_h100": float(rows[0][8]), "blackwell_ridge_past": bool(min(r[8] for r in rows[6:]) > MLA_POSITIONS),
        "gqa_hi": float(np.nanmax(gqa)), "gqa_ridge_lo": min(_mk.verify_cost(c, "SGLang", "Llama-3.1-8B").ridge_T
                                                              for c in _mk.CHIPS),
    }


__all__ = ["expert_tax", "verify_cost", "summary_table", "gaps_table", "facts"]
