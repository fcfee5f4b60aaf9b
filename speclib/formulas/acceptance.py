"""How many tokens one verify pass commits, as sympy expressions: the accepted
draft prefix plus the target's own bonus token, under i.i.d. acceptance and
under a measured per-position survival curve. The numeric side is
:mod:`speclib.core.acceptance`.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.acceptance", ("sympy",))

import sympy as sp
from sympy.codegen.cfunctions import expm1
from sympy.series.limitseq import difference_delta

alpha = sp.Symbol("alpha", nonnegative=True)
gamma = sp.Symbol("gamma", integer=True, nonnegative=True)
_d = sp.Symbol("d", integer=True, nonnegative=True)

#: Survival of draft position d under i.i.d. acceptance: the d drafts up to and
#: including it are all accepted.
iid_survival_expr = alpha**_d

#: Draft position d (0-based; d = 0 is the bonus token) is committed when the d
#: drafts before it are all accepted, with probability alpha**d. sympy sums the
#: geometric series itself, returning the alpha = 1 branch (gamma + 1) exactly.
expected_committed_expr = sp.summation(iid_survival_expr, (_d, 0, gamma))

#: The alpha != 1 branch, (1 - alpha**(gamma+1)) / (1 - alpha).
expected_committed_closed_form = next(
    expr for expr, cond in expected_committed_expr.args if cond is sp.true
)

#: The same branch written with expm1 so that alpha a hair below 1 does not
#: lose digits to 1 - alpha**(gamma+1); the tests check it equals the closed form.
#: The denominator is kept unevaluated (sympy would turn it into alpha - 1) so
#: that gamma = 0 gives exactly x/x = 1 in floating point.
expected_committed_stable_expr = expm1((gamma + 1) * sp.log(alpha)) / expm1(sp.log(alpha), evaluate=False)

#: The alpha = 1 branch, gamma + 1.
expected_committed_at_one_expr = expected_committed_expr.args[0][0]


# --- depth-dependent acceptance: a measured survival curve --------------------

#: survival[d] (sympy, 1-based): the probability that draft position d survives
#: verification, i.e. that the accepted prefix is at least d long.
survival = sp.IndexedBase("s")
_pos = sp.Symbol("d", integer=True, positive=True)

#: Tail-sum form of the expected accepted length: E[L] = sum_{d>=1} P(L >= d),
#: so one verify pass commits N = 1 + sum_{d=1}^{gamma} s_d (the 1 is the bonus
#: token). No shape is assumed for s_d.
expected_committed_survival_expr = 1 + sp.Sum(survival[_pos], (_pos, 1, gamma))

#: N(0): with no drafts only the bonus token is committed.
committed_at_zero_expr = expected_committed_survival_expr.subs(gamma, 0).doit()

#: N(gamma + 1) - N(gamma) = s_{gamma+1}: each extra draft position adds its own
#: survival. This forward difference is why the numeric N is a cumulative sum.
committed_increment_expr = difference_delta(expected_committed_survival_expr, gamma)

#: The i.i.d. special case: substituting s_d = alpha**d into the survival form
#: and summing (the tests check this equals ``expected_committed_expr``).
expected_committed_geometric_expr = expected_committed_survival_expr.replace(
    lambda e: isinstance(e, sp.Indexed) and e.base == survival,
    lambda e: iid_survival_expr.subs(_d, e.indices[0]),
).doit()


# --- a survival curve from accept lengths measured at several chain lengths ---------

A_2 = sp.Symbol("A_2", positive=True)  # accepted drafts a verify of a chain of two commits beyond its bonus: s_1 + s_2
s_3 = sp.Symbol("s_3", positive=True)  # the third position's survival, AL(3) - AL(2)
#: The accept lengths AL(K) = 1 + s_1 + ... + s_K a source prints for chains of
#: K = 2, 3, ... give each position's survival from the third on as a
#: difference, and s_1 + s_2 = AL(2) - 1 together. Taking the first three
#: positions to decay at one rate, s_2 / s_1 = s_3 / s_2, splits them:
#: s_2^2 = s_1 s_3 with s_2 = A_2 - s_1, whose root below A_2 is s_1.
first_survival_expr = next(r for r in sp.solve(sp.Eq((A_2 - sp.Symbol("s_1")) ** 2, sp.Symbol("s_1") * s_3),
                                               sp.Symbol("s_1"))
                           if r.subs({A_2: 1.36, s_3: 0.43}) < 1.36)
