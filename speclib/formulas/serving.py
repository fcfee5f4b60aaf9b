"""The few closed forms the sequel's chapters draw that the model itself does
not evaluate, each derived from an expression the model already has, so that
the figures (and their JavaScript twins) never retype one:

* what a sequence keeps in memory at context S (its KV cache and its
  linear-attention state), and the context at which the two weigh the same;
* the time per output token of a closed loop of B sequences, and the
  throughput a closed loop reaches at a given time per token (the
  concurrency contours of a throughput-against-latency chart).

The numeric side is :mod:`speclib.formulas.numpy_functions` (through
:mod:`speclib.formulas.catalog`); the book uses them in
the sequel's chapters (through :mod:`speclib.evidence.simulator`).
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.serving", ("sympy",))

import sympy as sp

from . import speculation as _spec
from . import step as _step
from . import workload as _work

B, S = _step.B, _step.S
L_a, m_c, L_l, sigma = _step.L_a, _step.m_c, _step.L_l, _step.sigma

#: Bytes of KV cache and linear-attention state B sequences keep at context
#: S: the bytes a step reads for its attention (each state once, not the
#: write-back a step adds), at the cached context itself rather than the
#: context its verified positions attend over.
cache_bytes_expr = _step.attention_read_bytes_expr.subs(_step.attended_context_expr, S)

#: The context at which one sequence's KV cache (full-attention layers) weighs
#: as much as its linear-attention state (sympy.solve).
kv_state_crossing_expr = sp.solve(
    sp.Eq(cache_bytes_expr.subs({B: 1, L_l: 0}), cache_bytes_expr.subs({B: 1, L_a: 0})), S
)[0]

N, C_g = _spec.N, _spec.C_g
tau = _work.tau  # time per output token of each sequence, seconds
X = sp.Symbol("X", positive=True)  # committed output tokens per second of the whole batch

#: The throughput B sequences in a closed loop reach when each takes tau per
#: output token (Little's law): the throughput with the step written as
#: tau N. A concurrency contour of a throughput-against-latency chart.
closed_loop_throughput_expr = sp.simplify(_spec.throughput_expr.subs(C_g, tau * N))

#: The time per output token of each of B sequences in a closed loop that
#: commits X tokens per second (the same law solved for tau).
time_per_output_token_expr = sp.solve(sp.Eq(X, closed_loop_throughput_expr), tau)[0]
