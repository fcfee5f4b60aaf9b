"""Workload algebra of a serving benchmark, as sympy: the mean context a
request's decode steps attend over, and the decode batch Little's law implies.
Used by :mod:`speclib.evidence.validation` to hold the roofline against
measured decoding.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.workload", ("sympy",))

import sympy as sp

from . import speculation as _spec

I_in, O_out = sp.symbols("I O", positive=True, integer=True)  # input / output tokens per request
_j = sp.Symbol("j", integer=True, nonnegative=True)

#: Context a request attends over, averaged over its decode steps: step j
#: (j = 0 .. O-1) reads I + j cached tokens.
mean_decode_context_expr = sp.simplify(sp.summation(I_in + _j, (_j, 0, O_out - 1)) / O_out)

X_total, tau, n_tp = sp.symbols("X tau n_tp", positive=True)
#: Little's law for the decoding requests: each emits one token per tau
#: seconds, so the output rate is B_decode / tau. The benchmark's throughput X
#: counts input and output tokens per GPU, of which a share O/(I+O) are output.
littles_law_batch_expr = X_total * n_tp * O_out / (I_in + O_out) * tau

P_act, L_att, f_pair, peak_p = sp.symbols("P_act L_a f P_peak", positive=True)
B_dec = sp.Symbol("B", positive=True)
_i = sp.Symbol("i", integer=True, nonnegative=True)
#: FLOPs of prefilling one request's I prompt tokens: 2 per active weight per
#: token, and causal attention, token i attending over the i before it in each
#: of L_a full-attention layers at f FLOPs per query-context pair.
prefill_flops_expr = sp.simplify(2 * P_act * I_in + sp.summation(L_att * f_pair * _i, (_i, 0, I_in - 1)))
#: The prefill one decode step shares in a closed loop: each request prefills
#: once for every O tokens it decodes, so a step of B sequences carries B / O
#: prefills, at the peak of the GEMMs' precision over tp GPUs.
prefill_share_seconds_expr = B_dec / O_out * prefill_flops_expr / (n_tp * peak_p)

N_c, C_0, C_g, p_s = sp.symbols("N C_0 C_gamma p", positive=True)
#: The speed-up a closed-loop serving benchmark measures when the prefill
#: runs on the decoding GPUs: a plain step of time C_0 carries the prefill p
#: of the requests that arrive while it emits one token per sequence
#: (:data:`prefill_share_seconds_expr`), a speculative step of time C_gamma
#: commits N tokens per sequence and so carries N p. Speculation does not
#: speed up the prefill, so the measured speed-up lies between 1 and the
#: decode speed-up N C_0 / C_gamma (:func:`speclib.calibration.step_fit` prices
#: the runs whose source states both lengths this way).
served_speedup_expr = N_c * (C_0 + p_s) / (C_g + N_c * p_s)

Q_p = sp.Symbol("Q_p", nonnegative=True)  # bytes one prefill reads on one GPU (the weights its prompt touches)
M_bw = sp.Symbol("M", positive=True)  # HBM bandwidth, bytes/s
#: The same prefill priced by its roofline: each of the B / O prefills a
#: step carries takes its FLOPs over n_tp GPUs at peak or the bytes it reads
#: on one GPU (the dense weights and every expert its I tokens touch) over
#: the HBM bandwidth, whichever is slower. A short prompt of a
#: mixture-of-experts model reads nearly every expert for few FLOPs, so it is
#: bound by memory; a long one by compute, where attention's term grows as
#: I squared.
prefill_share_roofline_expr = B_dec / O_out * sp.Max(prefill_flops_expr / (n_tp * peak_p), Q_p / M_bw)

# --- what an operator buys: speed per user against throughput per GPU ------------------------
#: The time per output token of a sequence in the same closed loop when it
#: speculates: a speculative step of C_gamma seconds commits N tokens per
#: sequence and carries the prefill N p of the requests that arrive while it
#: does (a plain step, N = 1 and C_gamma = C_0, takes C_0 + p). The ratio of
#: the two is :data:`served_speedup_expr` (a test checks the identity).
speculative_tpot_expr = C_g / N_c + p_s

C_users = sp.Symbol("C", positive=True)  # users in the closed loop (the benchmark's concurrency)
B_run = sp.Symbol("B_r", positive=True)  # sequences decoding at once (no more than memory holds)
#: The tokens per second one of C users sees when B_r of them decode at once,
#: each at tau per token, and the rest wait their turn: every user decodes a
#: share B_r / C of the time (B_r = C when memory holds them all).
user_speed_expr = B_run / (C_users * tau)

#: Output tokens per second per GPU of B_r sequences decoding at tau per
#: token on n_tp GPUs (the throughput an operator pays for).
throughput_per_gpu_expr = B_run / (tau * n_tp)

M_held = sp.Symbol("M_h", nonnegative=True)  # the sequences memory holds (Deployment.max_batch)
#: The sequences decoding at once when C users share a deployment that holds
#: M_h of them: all of them, or what memory holds while the rest wait their
#: turn in the queue (their wait shows in the time to a first token).
running_batch_expr = sp.Min(C_users, M_held)

R_0, R_g = sp.symbols("R_0 R_gamma", positive=True)  # sequences running without and with speculation
#: The speed-up of a draft length at a concurrency: the deployment's
#: committed tokens per second when it speculates over those when it does
#: not, each arm at its own running batch (R_gamma, no more than R_0: the
#: draft's cache slots make room for fewer sequences) and its own step time
#: there (:data:`speclib.formulas.speculation.throughput_expr`). In a closed
#: loop each user's speed is the throughput over C, so the ratio is each
#: user's speed-up too; with both arms running every user (R_gamma = R_0) it
#: is :data:`speclib.formulas.speculation.priced_speedup_expr` (a test checks
#: the identity).
concurrent_speedup_expr = (_spec.throughput_expr.subs({_spec.B: R_g, _spec.N: N_c, _spec.C_g: C_g})
                           / _spec.throughput_expr.subs({_spec.B: R_0, _spec.N: 1, _spec.C_g: C_0}))

P_hour = sp.Symbol("P_h", positive=True)  # price of one GPU for an hour
X_gpu = sp.Symbol("X_g", positive=True)  # output tokens per second per GPU
#: The price of a million output tokens at a GPU-hour price P_h and a
#: throughput of X_g tokens per second per GPU: one GPU-hour makes
#: 3600 X_g tokens.
cost_per_million_tokens_expr = P_hour * 10**6 / (3600 * X_gpu)
