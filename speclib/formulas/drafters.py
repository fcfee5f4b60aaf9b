"""What drafting costs, as sympy: the paper's constant fraction of a step, and
the sequel's two drafters priced by their own rooflines.

* constant: each drafted token costs a fixed fraction c of a plain decode
  step t_0 (the paper's assumption);
* MTP: one decoder layer that drafts one position per pass, so gamma
  drafted tokens are gamma passes in series, each a whole-model step (in the
  sense of :mod:`speclib.formulas.step`) of the drafter's own weights at
  T = 1: its dense weights and its layer's experts, coupon-collected over
  the batch;
* DFlash: block diffusion, one pass over a fixed block of D positions
  whatever gamma is (gamma in 1..D; nothing at gamma = 0): flat in gamma.

The numeric side is :mod:`speclib.core.drafters`.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.drafters", ("sympy",))

import sympy as sp

from . import acceptance as _acc
from . import step as _step

gamma = _acc.gamma
c = sp.Symbol("c", nonnegative=True)  # drafter cost per drafted token, x t_0
t_0 = sp.Symbol("t_0", positive=True)  # the target's plain decode step, seconds
t_pass = sp.Symbol("t_pass", positive=True)  # one drafter pass, seconds
D = sp.Symbol("D", positive=True, integer=True)  # DFlash block: positions per pass

constant_draft_time_expr = c * gamma * t_0
mtp_draft_time_expr = gamma * t_pass
dflash_draft_time_expr = sp.Piecewise((0, sp.Eq(gamma, 0)), (t_pass, True))

# --- which drafter is cheaper: MTP memory-bound against DFlash compute-bound ---
B, b, peak, M = _step.B, _step.b_d, _step.peak, _step.M
P_m = sp.Symbol("P_MTP", positive=True)  # MTP's dense weights (its layer, fusion, the shared head)
w_m = sp.Symbol("w_MTP", positive=True)  # weights of one expert of MTP's layer
P_f = sp.Symbol("P_DF", positive=True)  # DFlash's weights (with the shared head)
k, E, n_s = _step.k, _step.E, _step.n_s

#: MTP's resident weights once the batch touches every expert.
mtp_saturated_weights_expr = P_m + (n_s + E) * w_m

#: gamma MTP passes reading those weights against one DFlash pass computing
#: over B*D positions: equal at this batch, DFlash cheaper below it (the
#: sequel's "B ~ 24 gamma" on a B200 in bf16).
crossover_batch_expr = sp.solve(
    sp.Eq(gamma * b * mtp_saturated_weights_expr / M, 2 * P_f * B * D / peak), B
)[0]
