"""JavaScript twins of speclib's closed forms, printed from the sympy expressions.

The HTML book redraws its figures in the reader's browser, with no Python
behind the page. The formulas it evaluates there are not typed a second time:
each is printed here from the very sympy expression that speclib lambdifies for
numpy, with the same argument order, so the browser and Python compute the same
function. The model's constants (weights, bytes, ridges) are emitted as data
from the same :class:`speclib.cost.CostModel` that :func:`speclib.marginal_cost`
and :func:`speclib.optimal_gamma` use.

Hand-written JavaScript (``static/speclib_live.js``) only binds constants to
these functions, sums components, loops over draft lengths and takes argmaxes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from .. import acceptance as _acc
from .. import cost as _cost
from .. import moe as _moe
from .. import speculation as _spec
from ..presets import resolve
from .live_figures import COLORS, CYCLE, build_live_figures

#: Functions the JS printer does not know by itself; everything else it cannot
#: print raises (strict mode) instead of emitting a silent comment.
_JS_FUNCTIONS = {"expm1": "Math.expm1"}


@dataclass(frozen=True)
class Formula:
    """One closed form to print: its JS name, the sympy expression, and the
    argument symbols in the order speclib's lambdified twin takes them."""

    name: str
    expr: sp.Expr
    args: tuple
    doc: str


def formulas() -> tuple:
    """The closed forms the live figures evaluate, each paired with the argument
    order of speclib's own ``lambdify`` call for it."""
    committed_at_one = _acc.expected_committed_expr.args[0][0]
    return (
        Formula("gemm_cost", _cost.gemm_cost_expr, _cost._gemm_args,
                "roofline step cost of a dense GEMM (attention projections)"),
        Formula("gemm_slope", _cost.gemm_slope_expr, _cost._gemm_args,
                "its log-slope d log C / d log t"),
        Formula("moe_cost", _cost.moe_cost_expr, _cost._moe_args,
                "roofline step cost of the MoE experts"),
        Formula("moe_slope", _cost.moe_slope_expr, _cost._moe_args,
                "its log-slope"),
        Formula("attn_cost", _cost.attn_cost_expr, _cost._attn_args,
                "roofline step cost of attention over B sequences"),
        Formula("attn_slope", _cost.attn_slope_expr, _cost._attn_args,
                "its log-slope in the verify width q"),
        Formula("committed", _acc.expected_committed_stable_expr, (_acc.alpha, _acc.gamma),
                "expected tokens committed per verify pass, alpha < 1"),
        Formula("committed_at_one", committed_at_one, (_acc.gamma,),
                "the same at alpha = 1"),
        Formula("speedup", _spec.speedup_expr,
                (_spec.N, _spec.C_0, _spec.C_v, _spec.c, _spec.gamma),
                "throughput of a draft length over plain decoding"),
        Formula("moe_intensity", _moe.moe_intensity_expr,
                (_moe.B, _moe.k, _moe.E, _moe.n_s, _moe.b, _moe.R),
                "MoE FFN arithmetic intensity, capped at the ridge"),
        Formula("dense_intensity", _moe.dense_intensity_expr, (_moe.B, _moe.b, _moe.R),
                "dense FFN arithmetic intensity, capped at the ridge"),
    )


def javascript_expression(expr: sp.Expr) -> str:
    """``expr`` as one JavaScript expression; raises on anything unprintable."""
    printer = JavascriptCodePrinter({"strict": True, "user_functions": _JS_FUNCTIONS})
    return " ".join(printer.doprint(expr).split())


def javascript_function(formula: Formula) -> str:
    names = [str(a) for a in formula.args]
    missing = {str(s) for s in formula.expr.free_symbols} - set(names)
    if missing:
        raise ValueError(f"formula {formula.name!r}: free symbols {sorted(missing)} are not arguments")
    body = javascript_expression(formula.expr)
    return f"function ({', '.join(names)}) {{ return {body}; }}"


def model_constants(model=None, hardware=None, *, query_bytes: bool = False) -> dict:
    """The numbers the live figures bind to the formulas, read from the same
    :class:`~speclib.cost.CostModel` that speclib's numeric functions use.

    Each entry lists the argument names it fills (after the variables) so that
    a mismatch with the formula's signature is caught, not silently shifted.
    """
    model, hardware = resolve(model, hardware)
    cm = _cost.cost_model(model, hardware, query_bytes)
    ffn = model.ffn
    if ffn.is_moe:
        ffn_entry = {"formula": "moe", "names": [str(a) for a in _cost._moe_args[1:]]}
    else:
        ffn_entry = {"formula": "gemm", "names": [str(a) for a in _cost._gemm_args[1:]]}
    ffn_entry["values"] = [float(v) for v in cm._ffn_args]
    constants = {
        "model": model.name,
        "hardware": hardware.name,
        "query_bytes": bool(query_bytes),
        "proj": {"names": [str(a) for a in _cost._gemm_args[1:]], "values": [float(v) for v in cm._proj]},
        "ffn": ffn_entry,
        "attn": {"names": [str(a) for a in _cost._attn_args[3:]], "values": [float(v) for v in cm._attn]},
    }
    if ffn.is_moe:
        from ..figures.paper import WEIGHT_FORMATS

        constants["expert_ffn"] = {
            "k": float(ffn.top_k),
            "E": float(ffn.n_routed),
            "n_s": float(ffn.n_shared),
            "b": float(ffn.weight_bytes),
            "R": float(hardware.ridge(ffn.precision)),
            # Figure 1's weight-format control: bytes per parameter and the
            # ridge of the precision the experts then run in.
            "formats": {
                name: {"b": float(b_value), "R": float(hardware.ridge(precision))}
                for name, (b_value, precision) in WEIGHT_FORMATS.items()
            },
        }
    for key in ("proj", "ffn", "attn"):
        if len(constants[key]["names"]) != len(constants[key]["values"]):
            raise AssertionError(f"constants for {key} do not match the formula's arguments")
    return constants


_HEADER = """\
// Generated by speclib.web.codegen from speclib's sympy expressions: do not edit.
// model: {model}; hardware: {hardware}
"""


def live_figures(constants: dict) -> dict:
    """:func:`~speclib.web.live_figures.build_live_figures` with the controls
    whose default is the model's own (experts, top-k) filled in."""
    figures = build_live_figures()
    ffn = constants.get("expert_ffn")
    if ffn is None:  # a dense model has no expert tax to draw
        figures.pop("expert_tax")
    else:
        for control in figures["expert_tax"]["controls"]:
            if control["name"] == "experts":
                control["value"] = int(ffn["E"])
            elif control["name"] == "top_k":
                control["value"] = int(ffn["k"])
    return figures


def model_javascript(model=None, hardware=None, *, query_bytes: bool = False) -> str:
    """A self-contained script that defines ``SpeclibModel`` on the global
    object: ``formulas`` (printed from sympy), ``constants``, ``figures`` (the
    live figures' controls and axes) and ``style`` (the static figures' colours)."""
    constants = model_constants(model, hardware, query_bytes=query_bytes)
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
    lines.append(f"  var style = {json.dumps({'colors': COLORS, 'cycle': CYCLE}, sort_keys=True)};")
    lines.append("  root.SpeclibModel = {formulas: formulas, constants: constants, figures: figures, style: style};")
    lines.append('})(typeof window !== "undefined" ? window : globalThis);')
    return "\n".join(lines) + "\n"
