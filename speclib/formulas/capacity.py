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

Tensor parallelism over n GPUs splits weights and caches evenly, and a
fraction r of each GPU's HBM is kept free for activations, the engine's
workspace and fragmentation.
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

#: Bytes one sequence keeps at context S, over all layers.
sequence_bytes_expr = (
    L_f * m_c * S
    + L_l * sigma
    + L_csa * (m_c + m_i) * S / c_csa
    + L_hca * m_c * S / c_hca
    + L_w * m_c * sp.Min(S, W_win)
)

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
