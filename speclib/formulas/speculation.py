"""How far ahead to speculate, as sympy: the throughput speedup of a draft
length gamma over plain decoding. The numeric side (including gamma*, the
argmax) is :mod:`speclib.core.speculation`.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.speculation", ("sympy",))

import sympy as sp

from . import acceptance as _acc

alpha, gamma = _acc.alpha, _acc.gamma
N = sp.Symbol("N", positive=True)  # expected committed tokens per verify pass
C_0 = sp.Symbol("C_0", positive=True)  # plain decode step cost
C_v = sp.Symbol("C_v", positive=True)  # verify step cost at width gamma + 1
c = sp.Symbol("c", nonnegative=True)  # drafter cost per drafted token, x C_0

#: Tokens per unit cost with speculation over tokens per unit cost without:
#: one verify pass commits N tokens for C_v plus gamma drafter steps, while
#: plain decoding commits one token per C_0.
speedup_expr = N * C_0 / (C_v + c * gamma * C_0)

#: The same with N written out (the general branch, alpha != 1).
speedup_closed_form = speedup_expr.subs(N, _acc.expected_committed_closed_form)

#: What a draft of gamma tokens costs per drafted token, as a multiple of a
#: real token (one plain step C_0 commits one token): the whole verify's cost
#: above a plain step, shared over the gamma drafted tokens, plus the drafter.
#: It is a secant of the verify cost between widths 1 and gamma + 1, where the
#: ledger's total is a slope (the price of one more token, d log C / d log t).
verify_price_expr = (C_v - C_0) / (gamma * C_0) + c

#: The speedup in that price: N tokens for 1 + gamma * p plain steps' worth.
#: It is ``speedup_expr`` (a test checks the identity), so a draft pays
#: (Sp > 1) exactly when the drafted tokens it commits on average, N - 1,
#: beat gamma * p; for one drafted token, exactly when alpha > p.
P_v = sp.Symbol("p_v", positive=True)  # verify_price_expr, as a symbol
priced_by_verify_price_expr = N / (1 + gamma * P_v)

# --- a fixed time per step: what removes the gutter -----------------------------
F_x = sp.Symbol("F", nonnegative=True)  # a fixed cost every target step pays, plain or verify, in C_0's units

#: The speedup when every target step, plain or verify, also pays a fixed
#: cost F that no token moves (an engine's launches and scheduling), the
#: drafter still c x a plain step, the fixed cost included (as the ledger
#: prices a drafter: a fraction of the step).
speedup_with_fixed_expr = N * (C_0 + F_x) / (C_v + F_x + c * gamma * (C_0 + F_x))

#: The fixed cost at which a draft of gamma tokens breaks even
#: (speedup_with_fixed_expr = 1), solved by sympy: a draft that loses
#: without it (C_v + c gamma C_0 > N C_0) pays from this F on where
#: N - 1 > c gamma, since the fixed cost buys N tokens on the speculative
#: path and one on the plain (no fixed cost makes it pay otherwise).
fixed_cost_break_even_expr = sp.solve(sp.Eq(speedup_with_fixed_expr, 1), F_x)[0]

# --- the sequel: a step priced whole, drafting included -----------------------
C_g = sp.Symbol("C_gamma", positive=True)  # one speculative step: verify at width gamma + 1 plus drafting
B = sp.Symbol("B", positive=True)  # sequences decoding together

#: The same ratio when the speculative step's cost already includes drafting
#: (a drafter priced by its own roofline). With C_gamma = C_v + c gamma C_0 it
#: is ``speedup_expr``.
priced_speedup_expr = N * C_0 / C_g

#: Committed output tokens per second of B sequences, each step taking
#: C_gamma seconds and committing N tokens per sequence: the quantity the
#: sequel's priced policy maximises over gamma at every step.
throughput_expr = B * N / C_g
