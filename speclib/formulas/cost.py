"""Pricing a speculated token, as sympy expressions: per-component rooflines
and their slopes. The numeric side is :mod:`speclib.core.cost`.

Every component's step cost is a roofline in byte-equivalents,
C = max(FLOPs / R, bytes moved), over t tokens. A token already in the batch
pays the average C/t, a speculated token wedged into the same step pays the
marginal dC/dt; their ratio is the roofline's log-slope r = d log C / d log t.
The slopes are obtained here by differentiating each branch in sympy.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._extras import require as _require

_require("speclib.formulas.cost", ("sympy",))

import sympy as sp

from . import moe as _moe

t = sp.Symbol("t", positive=True)  # tokens through a GEMM in one step (batch x verify width)
B = sp.Symbol("B", positive=True)  # sequences in the batch
q = sp.Symbol("q", positive=True)  # query tokens per sequence (verify width, 1 = plain decode)
S = sp.Symbol("S", positive=True)  # context length
W = sp.Symbol("W", positive=True)  # weights of a GEMM
b_w = sp.Symbol("b_w", positive=True)  # bytes per weight
R = sp.Symbol("R", positive=True)  # ridge of the GEMM precision
m_c, m_q, f = sp.symbols("m_c m_q f", positive=True)
W_E = sp.Symbol("W_E", positive=True)
k, E, n_s, b = _moe.k, _moe.E, _moe.n_s, _moe.b

# Dense GEMM (attention projections; a dense FFN): 2 FLOP per weight per token,
# weights read once per step.
gemm_compute_expr = 2 * W * t / R
gemm_memory_expr = W * b_w

# MoE experts: every token applies k routed + n_s shared experts; the bytes
# are those of the distinct experts the step touches.
moe_compute_expr = 2 * (k + n_s) * W_E * t / R
moe_memory_expr = (_moe.experts_activated_expr.subs(_moe.B, t) + n_s) * W_E * b

# Attention over a batch of B sequences, q query tokens each: the KV read
# (m_c per context token) is paid once per sequence, the query bytes per token.
attn_compute_expr = B * f * S * q / R
attn_memory_expr = B * (m_c * S + m_q * q)


def roofline(compute, memory):
    """Step cost in byte-equivalents."""
    return sp.Max(compute, memory)


def elasticity(expr, var):
    """d log expr / d log var, left unsimplified: ``simplify`` rewrites the
    MoE branch with (E/(E-k))**t terms that overflow in floating point."""
    return var * sp.diff(expr, var) / expr


def roofline_slope(compute, memory, var):
    """r = d log C / d log var for C = max(compute, memory), branch by branch."""
    return sp.Piecewise(
        (elasticity(compute, var), compute >= memory),
        (elasticity(memory, var), True),
    )


gemm_cost_expr = roofline(gemm_compute_expr, gemm_memory_expr)
moe_cost_expr = roofline(moe_compute_expr, moe_memory_expr)
attn_cost_expr = roofline(attn_compute_expr, attn_memory_expr)

gemm_slope_expr = roofline_slope(gemm_compute_expr, gemm_memory_expr, t)
moe_slope_expr = roofline_slope(moe_compute_expr, moe_memory_expr, t)
attn_slope_expr = roofline_slope(attn_compute_expr, attn_memory_expr, q)


# --- DeepSeek-V4's attention as served -----------------------------------------------
# The paper prices every layer of DeepSeek-V4 as MLA over the whole context
# (attn_cost_expr). As served, the config's compress_ratios give each layer
# its own context: n_f layers of full MLA, n_w of the sliding window alone,
# n_c CSA layers (MLA over the top K of S / c_CSA compressed positions plus
# the window, each query position selecting its own K, so a verify of q
# positions reads q selections, and an indexer scoring all S / c_CSA of them, with its own
# constants m_ci, m_qi, f_i) and n_h HCA layers (MLA over S / c_HCA
# compressed positions plus the window). The representative layer the ledger
# prices is their average, each part its own roofline, as the paper adds its
# components'.
def _served_attention():
    from . import attention as a
    m_ci, m_qi, f_i = sp.symbols("m_ci m_qi f_i", positive=True)
    n_f, n_w, n_c, n_h = sp.symbols("n_f n_w n_c n_h", nonnegative=True)

    def part(context, mc=m_c, mq=m_q, ff=f, read=None):
        values = {S: context, m_c: mc, m_q: mq, f: ff}
        compute = attn_compute_expr.subs(values, simultaneous=True)
        memory = attn_memory_expr.subs(values, simultaneous=True) if read is None else B * (m_c * read + m_q * q)
        return roofline(compute, memory), roofline_slope(compute, memory, q)

    # each of the q positions of a verify selects its own top K (the indexer scores every position against
    # the compressed cache), so CSA's sparse read is q selections, its window read once
    csa_read = q * a.csa_context_expr + a.window_context_expr
    parts = ((n_f, part(S)), (n_w, part(a.window_context_expr)), (n_c, part(a.served_csa_context_expr, read=csa_read)),
             (n_c, part(a.indexer_context_expr, m_ci, m_qi, f_i)), (n_h, part(a.served_hca_context_expr)))
    layers = n_f + n_w + n_c + n_h
    cost = sum(n * c for n, (c, _) in parts) / layers
    slope = sum(n * c * r for n, (c, r) in parts) / sum(n * c for n, (c, _) in parts)
    args = (B, q, S, m_c, m_q, f, R, m_ci, m_qi, f_i, a.c_csa, a.c_hca, a.K_csa, a.W_win, n_f, n_w, n_c, n_h)
    return cost, slope, args


#: The served attention of one representative layer, and its log-slope in q
#: (each part's slope weighted by its share of the cost).
served_attn_cost_expr, served_attn_slope_expr, SERVED_ATTN_ARGS = _served_attention()


@dataclass(frozen=True)
class RooflineForm:
    """One family of rooflines as sympy: its cost and slope expressions and
    the argument order of their numeric functions (the ``n_variables``
    variables, then the constants a model and chip fix). The numeric twins,
    ``<name>_cost`` and ``<name>_slope`` in
    :mod:`speclib.formulas.numpy_functions`, are printed from
    ``numeric_cost_expr`` / ``numeric_slope_expr``: the same functions in
    floating-point friendly form (see :func:`speclib.formulas.moe.numeric_form`)."""

    name: str
    cost_expr: sp.Expr
    slope_expr: sp.Expr
    args: tuple
    n_variables: int

    @property
    def numeric_cost_expr(self) -> sp.Expr:
        return _moe.numeric_form(self.cost_expr)

    @property
    def numeric_slope_expr(self) -> sp.Expr:
        return _moe.numeric_form(self.slope_expr)

    @property
    def variables(self) -> tuple:
        return self.args[: self.n_variables]

    @property
    def constant_symbols(self) -> tuple:
        return self.args[self.n_variables:]


#: The three roofline families of a layer, keyed by name.
ROOFLINE_FORMS = {
    "gemm": RooflineForm("gemm", gemm_cost_expr, gemm_slope_expr, (t, W, b_w, R), 1),
    "moe": RooflineForm("moe", moe_cost_expr, moe_slope_expr, (t, k, E, n_s, W_E, b, R), 1),
    "attn": RooflineForm("attn", attn_cost_expr, attn_slope_expr, (B, q, S, m_c, m_q, f, R), 3),
    "served_attn": RooflineForm("served_attn", served_attn_cost_expr, served_attn_slope_expr, SERVED_ATTN_ARGS, 3),
}
