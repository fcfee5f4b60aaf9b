"""JavaScript twins of speclib's closed forms, printed from the sympy expressions.

The HTML book redraws its figures in the reader's browser, with no Python
behind the page. The formulas it evaluates there are not typed a second time:
each is printed here from the very catalogue entry
(:mod:`speclib.formulas.catalog`) that speclib prints to numpy, with the same
argument order, so the browser and Python compute the same function. The model's constants (weights, bytes, ridges) are emitted as data
from the same :class:`speclib.cost.CostModel` that :func:`speclib.marginal_cost`
and :func:`speclib.optimal_gamma` use.

Hand-written JavaScript (``static/speclib_live.js``) only binds constants to
these functions, sums components, loops over draft lengths and takes argmaxes.
"""
from __future__ import annotations

import json
import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from ...core import capacity as _capacity
from ...core import cost as _cost
from ...formulas.catalog import FORMULAS
from ...presets import hardware_names, model_names, resolve
from .live_figures import COLORS, CYCLE, DIVERGING, VIRIDIS, build_live_figures

#: Functions the JS printer does not know by itself; everything else it cannot
#: print raises (strict mode) instead of emitting a silent comment.
_JS_FUNCTIONS = {"expm1": "Math.expm1", "log1p": "Math.log1p"}


#: The closed forms the live figures evaluate, by their name in
#: :data:`speclib.formulas.catalog.FORMULAS` (and in the page's ``formulas``).
LIVE_FORMULAS = (
    "gemm_cost", "gemm_slope", "moe_cost", "moe_slope", "attn_cost", "attn_slope",
    "committed", "committed_at_one", "speedup", "moe_intensity", "dense_intensity", "attention_intensity",
    "sequence_bytes", "max_batch",
    # the sequel's chapters: a whole step in seconds, the drafters, the priced policy
    "roofline_time", "dense_flops", "dense_bytes", "expert_flops", "expert_bytes", "experts_touched",
    "attention_flops", "attention_bytes", "mtp_draft_time", "dflash_draft_time", "drafter_crossover_batch",
    "committed_at_zero", "iid_survival", "priced_speedup", "throughput", "time_per_output_token",
    "closed_loop_throughput", "linear_intensity", "linear_state_bytes", "gqa_context_bytes", "cache_bytes",
    "kv_state_crossing",
)


def formulas() -> tuple:
    """The catalogue entries the live figures evaluate: the same expressions,
    in the same argument order, as the numpy functions speclib calls."""
    return tuple(FORMULAS[name] for name in LIVE_FORMULAS)


def javascript_expression(expr: sp.Expr) -> str:
    """``expr`` as one JavaScript expression; raises on anything unprintable."""
    printer = JavascriptCodePrinter({"strict": True, "user_functions": _JS_FUNCTIONS})
    return " ".join(printer.doprint(expr).split())


def javascript_function(formula) -> str:
    """A catalogue :class:`~speclib.formulas.catalog.Formula` as a JavaScript function."""
    names = [str(a) for a in formula.args]
    body = javascript_expression(formula.expr)
    return f"function ({', '.join(names)}) {{ return {body}; }}"


def _entry(bound) -> dict:
    named = bound.named_constants()
    return {"formula": bound.roofline.name, "names": list(named), "values": [float(v) for v in named.values()]}


def cost_constants(model=None, hardware=None) -> dict:
    """One model's roofline constants on one chip, from the same
    :class:`~speclib.cost.CostModel` speclib's numeric functions use: ``attn``
    as the paper's ledger (no query bytes), ``attn_with_query`` with them.

    Each entry names its roofline family (``formula``) and lists the argument
    names it fills (after the variables), so that a mismatch with the
    formula's signature is caught, not silently shifted.
    """
    model, hardware = resolve(model, hardware)
    rooflines = _cost.cost_model(model, hardware, False).rooflines
    out = {
        "proj": _entry(rooflines["attn_proj"]),
        "ffn": _entry(rooflines["moe"]),
        "attn": _entry(rooflines["attention"]),
        "attn_with_query": _entry(_cost.cost_model(model, hardware, True).rooflines["attention"]),
    }
    for key, entry in out.items():
        if len(entry["names"]) != len(entry["values"]):
            raise AssertionError(f"constants for {key} do not match the formula's arguments")
    return out


def capacity_constants(model=None, hardware=None, tp: int = 1) -> dict:
    """What the live figures need to shade the batches that cannot fit in
    HBM: the arguments of ``max_batch`` but the per-sequence bytes (``C``,
    ``r``, ``n``, ``W``) and those of ``sequence_bytes`` after S, from
    :mod:`speclib.capacity` (None when the model lacks the totals)."""
    model, hardware = resolve(model, hardware)
    try:
        weights = _capacity.weight_bytes(model)
        layout = _capacity.layout_arguments(model)
        reserve = _capacity.check_reserve(_capacity.DEFAULT_RESERVE)
    except ValueError:
        return None
    if hardware.hbm_capacity is None:
        return None
    return {"max_batch": {"names": ["C", "r", "n", "W"],
                          "values": [hardware.hbm_capacity, reserve, float(tp), weights]},
            "sequence_bytes": {"names": list(FORMULAS["sequence_bytes"].arg_names()[1:]),
                               "values": [float(v) for v in layout]}}


def model_constants(model=None, hardware=None) -> dict:
    """The numbers the live figures bind to the formulas: the default model's
    cost constants at the top level (see :func:`cost_constants`), every model a
    live figure names under ``cost_models``, and what Figure 1's and the
    attention figures' controls choose between (expert weight formats, every
    hardware preset's ridges, the MHA / GQA / MLA attention constants).
    """
    from ..figures import paper as _paper

    model, hardware = resolve(model, hardware)
    ffn = model.ffn
    constants = {"model": model.name, "hardware": hardware.name, **cost_constants(model, hardware)}
    named = {spec["model"] for spec in build_live_figures().values() if spec.get("model")}
    constants["cost_models"] = {name: cost_constants(name, hardware) for name in sorted(named | {model.name})}
    constants["capacity"] = {name: capacity_constants(name, hardware) for name in sorted(named | {model.name})}
    constants["ridges"] = {
        name: {p: float(resolve(None, name)[1].ridge(p)) for p in ("fp4", "fp8", "bf16")}
        for name in hardware_names()
    }
    if ffn.is_moe:
        constants["expert_ffn"] = {
            "k": float(ffn.top_k),
            "E": float(ffn.n_routed),
            "n_s": float(ffn.n_shared),
            # Figure 1's weight-format control: bytes per parameter and the
            # precision the experts then run in.
            "formats": {name: {"b": float(b_value), "precision": precision}
                        for name, (b_value, precision) in _paper.WEIGHT_FORMATS.items()},
            "format": _weight_format(ffn, _paper.WEIGHT_FORMATS),
        }
    constants["attention_models"] = _attention_models(_paper)
    figures = build_live_figures()
    constants["attention_table"] = _attention_table_constants(_paper)
    constants["compressed_attention"] = _compressed_attention_constants(_paper, model, figures["compressed_attention"])
    constants["sequel"] = sequel_constants()
    return constants


def _arguments(formula: str, values: dict, skip: int) -> dict:
    """``values`` for a catalogue formula's arguments after its first
    ``skip`` (the variables), named and in the formula's order."""
    names = [str(a) for a in FORMULAS[formula].args][skip:]
    return {"names": names, "values": [float(values[n]) for n in names]}


def sequel_figure_names() -> tuple:
    """The live figures of the chapters on the sequel."""
    from .live_figures import sequel_figures

    return tuple(sequel_figures())


def sequel_constants() -> dict:
    """What the sequel's live figures bind to the formulas: every chip's
    peaks and bandwidth, the whole-step architectures (the simulated target,
    every model preset, the two drafters), the drafters' measured survival
    curves (as the policy uses them), the simulated grid as data, and the
    attention and cache constants of the hybrid and MLA models."""
    import dataclasses

    from ...presets import PRECISIONS, drafter as drafter_preset
    from ..figures import sequel as _fig

    chips = {}
    for name in hardware_names():
        _, hw = resolve(None, name)
        chips[name] = {"peak": {p: float(hw.peak_flops(p)) for p in PRECISIONS},
                       "bandwidth": float(hw.memory_bandwidth)}

    def arch(step):
        return {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                for k, v in dataclasses.asdict(step).items()}

    architectures = {"target": arch(_fig.target_model().step_architecture())}
    for name in model_names():  # by the names the model control offers
        architectures[name] = arch(resolve(name, None)[0].step_architecture())
    drafters = {}
    for key, name in _fig.DRAFTERS.items():
        preset = drafter_preset(name)
        architectures[key] = arch(preset.step)
        drafters[key] = {"name": preset.name, "label": _fig.DRAFTER_LABELS[key], "kind": preset.kind,
                         "positions": float(preset.positions_per_pass),
                         "survival": [float(v) for v in _fig.acceptance_curve(key, "measured").values]}
    grid = _fig.grid()
    simulated = {key: {"gammas": [int(g) for g in rows.gammas], "gamma_max": int(rows.gamma_max),
                       "goodput": rows.goodput.tolist(), "adaptive_goodput": rows.adaptive_goodput.tolist()}
                 for key, rows in grid.drafters.items()}
    hybrid, _ = resolve(_fig.HYBRID_MODEL, None)
    mla, _ = resolve(_fig.MLA_MODEL, None)

    def attention_constants(m, variant):
        m_c, m_q, f, _ = m.attention.variant_constants(variant, 1.0)
        return {"names": ["m_c", "m_q", "f"], "values": [float(m_c), float(m_q), float(f)], "model": m.name}

    layers = _fig.hybrid_architecture()
    attn = hybrid.attention
    return {
        "context": _fig.context(),
        "hardware": chips,
        "architectures": architectures,
        "drafters": drafters,
        "drafter_order": list(_fig.DRAFTER_KEYS),
        "grid": {"concurrency": [float(c) for c in grid.concurrency], "drafters": simulated},
        "crossover": {name: _arguments("drafter_crossover_batch", _fig.crossover_constants(name), 1)
                      for name in hardware_names()},
        "hybrid": {
            "model": hybrid.name, "precision": hybrid.attention_precision,
            "mla": attention_constants(mla, "mla"), "gqa": attention_constants(hybrid, "gqa"),
            "gdn": _arguments("linear_intensity", hybrid.linear_attention.architecture(), 1),
            "layers": int(layers.attention_layers + layers.linear_layers),
            "gqa_cache": {"n_kv": float(attn.n_kv_heads), "d_h": float(attn.head_dim)},
            "kv_formats": dict(_fig.KV_FORMATS),
        },
    }


def _variant_entry(model, variant, S) -> dict:
    """A variant's (m_c, m_q, f) and its effective context at each ``S``, as
    speclib's presets compute them (the call attention_intensity makes)."""
    import numpy as np

    m_c_value, m_q_value, f_value, S_eff = model.attention.variant_constants(variant, np.asarray(S, dtype=float))
    return {"names": ["m_c", "m_q", "f"], "values": [float(m_c_value), float(m_q_value), float(f_value)],
            "S_eff": [float(v) for v in np.broadcast_to(S_eff, np.shape(S))]}


def _attention_table_constants(paper) -> dict:
    """Table 1 for every model preset and each of its attention variants."""
    contexts = [int(s) for s in paper.TABLE_CONTEXTS]
    models = {}
    for name in model_names():
        m, _ = resolve(name, None)
        attn = m.attention
        if attn.kind == "gqa":
            variants = ["gqa"]
        elif getattr(attn, "hca_ratio", None) is not None:
            variants = ["mla", "hca", "csa", "indexer"]
        else:
            variants = ["mla"]
        models[m.name] = {"kind": attn.kind, "precision": m.attention_precision,
                          "variants": {v: _variant_entry(m, v, contexts) for v in variants}}
    return {"contexts": contexts, "widths": [int(t) for t in paper.TABLE_WIDTHS], "models": models}


def _compressed_attention_constants(paper, model, spec) -> dict:
    """DeepSeek-V4's variants over the figure's context grid, for every value
    of the compression knobs the controls offer (effective contexts from the
    presets, as attention_intensity uses them)."""
    import numpy as np

    if getattr(model.attention, "hca_ratio", None) is None:
        return {}
    options = {c["name"]: c["options"] for c in spec["controls"] if c["kind"] == "choice"}
    S = np.geomspace(spec["x"]["min"], spec["x"]["max"], spec["points"])
    hca = {str(r): _variant_entry(paper.v4_attention_what_if(model, hca_ratio=r), "hca", S)
           for r in options["hca_ratio"]}
    csa = {f"{k}/{r}": _variant_entry(paper.v4_attention_what_if(model, csa_top_k=k, csa_ratio=r), "csa", S)
           for k in options["csa_top_k"] for r in options["csa_ratio"]}
    indexer = {str(r): _variant_entry(paper.v4_attention_what_if(model, csa_ratio=r), "indexer", S)
               for r in options["csa_ratio"]}
    attn = model.attention
    return {"S": [float(v) for v in S], "hca": hca, "csa": csa, "indexer": indexer,
            "defaults": {"hca_ratio": int(attn.hca_ratio), "csa_top_k": int(attn.csa_top_k),
                         "csa_ratio": int(attn.csa_ratio)},
            "precision": model.attention_precision}


def _weight_format(ffn, formats) -> str:
    for name, (b_value, precision) in formats.items():
        if b_value == ffn.weight_bytes and precision == ffn.precision:
            return name
    return next(iter(formats))


def _attention_models(paper) -> dict:
    """(m_c, m_q, f) of the three attention kinds the width figure compares,
    as speclib's presets define them (the same call attention_intensity makes)."""
    d = paper.AttentionWidthPlot.defaults
    gqa, _ = resolve(d["gqa_model"], None)
    mla, _ = resolve(d["mla_model"], None)
    out = {}
    for key, m, variant in (("mha", paper.mha_counterpart(gqa), "gqa"), ("gqa", gqa, "gqa"), ("mla", mla, "mla")):
        m_c_value, m_q_value, f_value, _ = m.attention.variant_constants(variant, 1.0)
        attn = m.attention
        heads = (f"MLA, {attn.n_heads} heads share one latent" if key == "mla"
                 else f"{attn.n_heads} query / {attn.n_kv_heads} KV heads")
        out[key] = {"model": m.name, "label": f"{m.name}: {heads}", "precision": m.attention_precision,
                    "names": ["m_c", "m_q", "f"], "values": [float(m_c_value), float(m_q_value), float(f_value)]}
    return out


_HEADER = """\
// Generated by speclib.web.codegen from speclib's sympy expressions: do not edit.
// model: {model}; hardware: {hardware}
"""


def live_figures(constants: dict) -> dict:
    """:func:`~speclib.web.live_figures.build_live_figures` with the controls
    whose default is the model's own (experts, top-k, weights, hardware) filled in."""
    figures = build_live_figures()
    ffn = constants.get("expert_ffn")
    defaults = {"experts": None if ffn is None else int(ffn["E"]), "top_k": None if ffn is None else int(ffn["k"]),
                "weights": None if ffn is None else ffn["format"], "hardware": constants["hardware"]}
    for name in ("expert_tax", "expert_tax_log"):
        if ffn is None:  # a dense model has no expert tax to draw
            figures.pop(name)
            continue
        for control in figures[name]["controls"]:
            if control["name"] in defaults:
                control["value"] = defaults[control["name"]]
    for control in figures["attention_width"]["controls"]:
        if control["name"] == "hardware":
            control["value"] = constants["hardware"]
    knobs = constants["compressed_attention"].get("defaults")
    if knobs is None:  # no DeepSeek-V4 attention to vary
        figures.pop("compressed_attention")
    else:
        for control in figures["compressed_attention"]["controls"]:
            control["value"] = knobs.get(control["name"], control["value"])
    return figures


def model_javascript(model=None, hardware=None) -> str:
    """A self-contained script that defines ``SpeclibModel`` on the global
    object: ``formulas`` (printed from sympy), ``constants``, ``figures`` (the
    live figures' controls and axes) and ``style`` (the static figures' colours)."""
    constants = model_constants(model, hardware)
    lines = [_HEADER.format(model=constants["model"], hardware=constants["hardware"])]
    lines.append("(function (root) {")
    lines.append('  "use strict";')
    lines.append("  var formulas = {")
    for formula in formulas():
        lines.append(f"    // {formula.doc}: {formula.expr}")
        lines.append(f"    {formula.name}: {javascript_function(formula)},")
    lines.append("  };")
    lines.append(f"  var constants = {json.dumps(constants, sort_keys=True)};")
    lines.append(f"  var figures = {json.dumps(live_figures(constants), sort_keys=True)};")
    style = {"colors": COLORS, "cycle": CYCLE, "viridis": VIRIDIS, "diverging": DIVERGING}
    lines.append(f"  var style = {json.dumps(style, sort_keys=True)};")
    lines.append("  root.SpeclibModel = {formulas: formulas, constants: constants, figures: figures, style: style};")
    lines.append('})(typeof window !== "undefined" ? window : globalThis);')
    return "\n".join(lines) + "\n"
