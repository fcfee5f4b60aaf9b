"""Expert parallelism as sympy expressions: the routed experts of every MoE
layer spread over G GPUs (the local coupon count, the local MoE roofline) and
the all-to-all traffic that spreading costs. The assumptions behind each
expression (batch per GPU, uniform routing, dispatch and combine bytes, link
accounting, the messages a step waits for, no overlap) are set out in :mod:`speclib.core.parallel`, the
numeric side.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.parallel", ("sympy",))

import sympy as sp

from . import cost as _cost
from . import moe as _moe

t = _cost.t  # tokens per GPU in one step
k, E, n_s, b, W_E, R = _moe.k, _moe.E, _moe.n_s, _moe.b, _cost.W_E, _cost.R
G = sp.Symbol("G", positive=True)  # GPUs the routed experts are spread over
h = sp.Symbol("h", positive=True)  # hidden size: activation elements per token
b_d = sp.Symbol("b_d", positive=True)  # bytes per element, dispatch
b_c = sp.Symbol("b_c", positive=True)  # bytes per element, combine
M = sp.Symbol("M", positive=True)  # HBM bandwidth, bytes/s
L = sp.Symbol("L", positive=True)  # interconnect bandwidth per GPU, both directions, bytes/s

# --- the local expert count -------------------------------------------------------

#: Probability that one given expert is picked by at least one of T tokens:
#: the single-GPU coupon count A(T) over E experts, per expert.
expert_hit_probability_expr = _moe.experts_activated_expr / E

#: Distinct local experts one GPU must read in a step. The GPU's E/G experts
#: see all G*t tokens of the group; by linearity of expectation the count is
#: E/G times the hit probability over G*t tokens:
#: A_local = (E/G) * (1 - (1 - k/E)**(G t)).
local_experts_expr = (E / G) * expert_hit_probability_expr.subs(_moe.B, G * t)

#: Routed picks that land on one GPU: G*t tokens x k picks x 1/G each.
local_picks_expr = sp.simplify(G * t * k * (1 / G))

# The single-GPU MoE memory cost with A(t) replaced by A_local: same weights
# per expert, same shared experts. At G = 1 it is the single-GPU cost exactly.
_single_gpu_activated = _moe.experts_activated_expr.subs(_moe.B, t)
ep_moe_memory_expr = _cost.moe_memory_expr.subs(_single_gpu_activated, local_experts_expr)
if not ep_moe_memory_expr.has(G):  # pragma: no cover - guards against a silent no-op subs
    raise AssertionError("expert-parallel MoE memory cost did not pick up the local expert count")
#: FLOPs are unchanged per GPU: local_picks_expr = k t routed picks plus the
#: shared experts on its own t tokens, i.e. the single-GPU compute branch.
ep_moe_compute_expr = _cost.moe_compute_expr
ep_moe_cost_expr = _cost.roofline(ep_moe_compute_expr, ep_moe_memory_expr)
ep_moe_slope_expr = _cost.roofline_slope(ep_moe_compute_expr, ep_moe_memory_expr, t)

# --- the all-to-all ----------------------------------------------------------------

#: Fraction of a token's routed picks that live on another GPU.
remote_fraction_expr = (G - 1) / G

#: Link bytes per token on its GPU's ports, per MoE layer: dispatch out and
#: combine back for each remote pick, counted once sent and once received.
link_bytes_per_token_expr = 2 * k * remote_fraction_expr * h * (b_d + b_c)

#: Communication cost of a step of t tokens, in HBM byte-equivalents.
comm_cost_expr = t * link_bytes_per_token_expr * M / L

#: Its roofline slope d log C_comm / d log t: every token, speculated or not,
#: pays the same link bytes, so the cost is linear in tokens and the slope is 1
#: at every batch - the communication tax never amortises.
comm_slope_expr = sp.simplify(_cost.elasticity(comm_cost_expr, t))

# --- the all-to-all's latency ---------------------------------------------------------

l = sp.Symbol("l", positive=True)  # latency of one all-to-all message on a step's critical path, seconds
n_m = sp.Symbol("n_m", nonnegative=True)  # such messages per MoE layer per step

#: What a step's MoE layer waits for whatever it sends: n_m message latencies
#: (a dispatch, then a combine: n_m = 2,
#: :data:`speclib.core.parallel.MESSAGES_PER_LAYER` says why), in HBM
#: byte-equivalents like the bandwidth term. A token more or less moves no
#: latency: it is paid once per step.
comm_latency_cost_expr = n_m * l * M

#: The all-to-all priced whole: latency plus bytes over bandwidth.
comm_total_cost_expr = comm_cost_expr + comm_latency_cost_expr

#: Its log-slope in tokens: the bandwidth term's share of it, below 1 where
#: the latency dominates (a speculated token shares the step's latency) and
#: tending to 1 as the traffic grows.
comm_total_slope_expr = sp.simplify(_cost.elasticity(comm_total_cost_expr, t))

#: Tokens per GPU at which the bandwidth term equals the latency: below it the
#: all-to-all's time is mostly latency.
comm_latency_crossover_expr = sp.solve(sp.Eq(comm_cost_expr, comm_latency_cost_expr), t)[0]

#: The local MoE roofline, its arguments those of the single-GPU one plus G.
EP_MOE_FORM = _cost.RooflineForm("ep_moe", ep_moe_cost_expr, ep_moe_slope_expr, (t, k, E, n_s, W_E, b, R, G), 1)

#: Arguments of the communication cost and slope.
COMM_ARGS = (t, k, G, h, b_d, b_c, M, L)
#: ... and of the whole all-to-all's slope, latency included.
COMM_TOTAL_ARGS = COMM_ARGS + (n_m, l)
