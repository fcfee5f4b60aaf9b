"""What fits in HBM, as sympy: the bytes a model's weights take, the bytes one
sequence keeps at context S, and the largest batch whose weights plus caches
fit in the memory left after a reserve. The numeric side is
:mod:`speclib.core.capacity`.

The paper's cost model has no memory limit: it prices one layer at any batch.
A deployment cannot. Everything resident is counted:

* the weights of the whole model, every routed expert included (a step
  touches only some of them, but all of them must be in memory): the FFN /
  experts at their stored bytes, the projections at theirs, embeddings,
  output head and routers in bf16;
* per sequence, per layer: a full KV cache (MLA latent or GQA keys and
  values) of m_c bytes per cached token; a GatedDeltaNet layer's fixed state
  sigma; DeepSeek-V4's compressed caches, S / c per CSA or HCA layer (CSA
  also keeps an indexer key per compressed position), plus the sliding
  window of the last W tokens every V4 layer keeps uncompressed.

The model-level forms split weights and caches evenly over n GPUs; the
per-GPU forms at the end count what one GPU of a deployment holds where an
engine does not split evenly (an MLA latent whole on every GPU under plain
tensor parallelism, attention weights whole under data-parallel attention)
and what a speculative deployment adds. A fraction r of each GPU's HBM is
kept free for activations, the engine's workspace and fragmentation.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.capacity", ("sympy",))

import sympy as sp

S = sp.Symbol("S", nonnegative=True)  # cached context per sequence, tokens
B = sp.Symbol("B", positive=True)  # sequences resident at once

# --- weights ---------------------------------------------------------------------------
P_e = sp.Symbol("P_e", nonnegative=True)  # FFN / expert parameters, all experts
b_e = sp.Symbol("b_e", positive=True)  # bytes per FFN parameter
P_p = sp.Symbol("P_p", nonnegative=True)  # projection parameters (attention, linear attention, dense layers)
b_p = sp.Symbol("b_p", positive=True)  # bytes per projection parameter
P_h = sp.Symbol("P_h", nonnegative=True)  # embeddings, output head, routers
b_h = sp.Symbol("b_h", positive=True)  # bytes per such parameter (bf16: 2)

#: Bytes of the whole model's weights.
weight_bytes_expr = b_e * P_e + b_p * P_p + b_h * P_h

# --- one sequence's memory ------------------------------------------------------------
L_f = sp.Symbol("L_f", nonnegative=True)  # layers with a full-context KV cache
m_c = sp.Symbol("m_c", positive=True)  # KV bytes per cached token per layer
L_l = sp.Symbol("L_l", nonnegative=True)  # linear-attention layers
sigma = sp.Symbol("sigma", nonnegative=True)  # state bytes per sequence per linear layer
L_csa = sp.Symbol("L_csa", nonnegative=True)  # DeepSeek-V4 CSA layers
c_csa = sp.Symbol("c_csa", positive=True)  # their compression ratio
m_i = sp.Symbol("m_i", nonnegative=True)  # indexer key bytes per compressed position
L_hca = sp.Symbol("L_hca", nonnegative=True)  # DeepSeek-V4 HCA layers
c_hca = sp.Symbol("c_hca", positive=True)  # their compression ratio
L_w = sp.Symbol("L_w", nonnegative=True)  # layers keeping a sliding window uncompressed
W_win = sp.Symbol("W_win", nonnegative=True)  # the window, tokens

#: Bytes of one sequence's attention caches at context S, over all layers.
cache_bytes_expr = (
    L_f * m_c * S
    + L_csa * (m_c + m_i) * S / c_csa
    + L_hca * m_c * S / c_hca
    + L_w * m_c * sp.Min(S, W_win)
)

#: Bytes one sequence keeps at context S, over all layers.
sequence_bytes_expr = cache_bytes_expr + L_l * sigma

# --- what fits ---------------------------------------------------------------------------
C = sp.Symbol("C", positive=True)  # HBM capacity of one GPU, bytes
r = sp.Symbol("r", nonnegative=True)  # fraction of it kept free
n = sp.Symbol("n", positive=True)  # tensor-parallel GPUs sharing weights and caches
W = sp.Symbol("W", nonnegative=True)  # weight bytes (weight_bytes_expr)
m = sp.Symbol("m", positive=True)  # bytes per sequence (sequence_bytes_expr)

#: Bytes each of n GPUs holds for B sequences.
memory_per_gpu_expr = (W + B * m) / n

#: The usable memory of one GPU.
usable_expr = (1 - r) * C

#: The fitting condition solved for B, rounded down (negative: the weights
#: alone do not fit, and no batch does).
max_batch_real_expr = sp.solve(sp.Eq(memory_per_gpu_expr, usable_expr), B)[0]
max_batch_expr = sp.floor(max_batch_real_expr)

#: The fewest GPUs over which weights plus B sequences fit, as a real number
#: (round it up; engines also want it to divide the heads).
min_gpus_expr = sp.solve(sp.Eq(memory_per_gpu_expr, usable_expr), n)[0]


# --- one GPU of a deployment -------------------------------------------------------------
# A serving engine does not split everything evenly over its n GPUs
# (speclib.core.capacity.deployment_memory says which rule applies where):
# under plain tensor parallelism an MLA latent (and a GQA layer's KV heads
# where there are fewer than n) is held whole by several GPUs, and under
# data-parallel attention each GPU holds the attention weights whole. And a
# speculative deployment holds more per sequence: g more positions of cache
# (the draft's slots; how many per draft position depends on the engine), g_s
# states for a hybrid model's linear layers (a snapshot, rho_m = sigma;
# recomputing keeps each position's inputs instead), and its drafter's own
# cache.
g = sp.Symbol("g", nonnegative=True)  # cache slots per sequence for draft positions
g_s = sp.Symbol("g_s", nonnegative=True)  # rollback states per sequence kept for draft positions
s_c = sp.Symbol("s_c", positive=True)  # share of a sequence's attention caches one GPU holds
s_l = sp.Symbol("s_l", positive=True)  # share of its linear-attention state one GPU holds
rho_m = sp.Symbol("rho_m", nonnegative=True)  # bytes kept per draft position per linear layer
m_d = sp.Symbol("m_d", nonnegative=True)  # the drafter's cache bytes per cached token
R_w = sp.Symbol("R_w", nonnegative=True)  # weight bytes every GPU holds whole
W_d = sp.Symbol("W_d", nonnegative=True)  # the drafter's own weight bytes

#: Bytes one GPU holds for each sequence of the group's batch.
gpu_sequence_bytes_expr = (s_c * (cache_bytes_expr.subs(S, S + g) + m_d * (S + g))
                           + s_l * L_l * (sigma + rho_m * g_s))

#: Bytes of weights on one GPU: what it holds whole, and its share of the rest
#: (the target's and the drafter's).
gpu_weight_bytes_expr = R_w + (W + W_d - R_w) / n

W_g = sp.Symbol("W_g", nonnegative=True)  # weight bytes on one GPU (gpu_weight_bytes_expr)
m_g = sp.Symbol("m_g", positive=True)  # bytes on one GPU per sequence (gpu_sequence_bytes_expr)

#: The largest group batch whose weights and caches fit on every GPU.
gpu_max_batch_expr = sp.floor(sp.solve(sp.Eq(W_g + B * m_g, usable_expr), B)[0])
