"""The attention roofline as sympy expressions: arithmetic intensity of T
query tokens over S context tokens, and the constants (m_c, m_q, f) an
architecture implies. The numeric side is :mod:`speclib.core.attention`.

Covers MLA in its decode (MQA, absorbed) form, DeepSeek-V4's HCA and CSA
variants (main attention and indexer), GQA/MHA, and the crossover at which
MLA's up-projected (MHA) form would become the cheaper one.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.attention", ("sympy",))

import sympy as sp


T = sp.Symbol("T", positive=True)  # query tokens per sequence (verify width)
S = sp.Symbol("S", positive=True)  # context tokens attended over
m_c = sp.Symbol("m_c", positive=True)  # bytes read per context token
m_q = sp.Symbol("m_q", positive=True)  # bytes read per query token
f = sp.Symbol("f", positive=True)  # FLOPs per query-context pair
R = sp.Symbol("R", positive=True)  # ridge of the attention precision

#: FLOPs over bytes for one sequence: the KV read is paid once however many
#: query tokens ride along, the query bytes once per query token.
intensity_expr = f * T * S / (m_c * S + m_q * T)

#: Long-context limit: the query bytes stop mattering.
intensity_long_context_expr = sp.limit(intensity_expr, S, sp.oo)

#: Verify width at which the long-context intensity meets the ridge.
compute_bound_width_expr = sp.solve(sp.Eq(intensity_long_context_expr, R), T)[0]

# --- attention split over GPUs ----------------------------------------------
# Tensor parallelism splits a layer's query heads over its GPUs, and with them
# each head's FLOPs and query bytes; a cache is split only as far as its KV
# heads go. MLA's latent (and any MQA cache) is one KV head every query head
# reads, so every GPU holds and reads all of it while computing 1/tp of the
# heads. Under data-parallel attention each GPU holds whole heads of its own
# sequences: nothing is split within a sequence.
h_split = sp.Symbol("h_split", positive=True)  # GPUs a sequence's query heads are split over (tp; 1 under DP attention)
n_kvh = sp.Symbol("n_kvh", positive=True)  # KV heads the cache is split by (1 for MLA's latent)

#: Share of a sequence's cache one GPU reads: 1/h_split, but never less than one whole KV head.
split_cache_share_expr = sp.Max(1 / h_split, 1 / n_kvh)
#: One GPU's intensity: 1/h_split of the FLOPs and query bytes over its share of the cache.
split_intensity_expr = (f * T * S / h_split) / (m_c * S * split_cache_share_expr + m_q * T / h_split)
#: Copies of the cache the group reads for the work of one: the factor a split puts on m_c
#: (split_intensity_expr is intensity_expr with m_c -> rho m_c; tests/test_attention_split.py
#: checks the identity). tp for MLA under TP, max(1, tp/n_kv) for GQA, 1 under DP attention.
cache_copies_expr = sp.Max(1, h_split / n_kvh)
_rho = sp.Symbol("rho", positive=True)
#: Verify width at which one GPU's long-context attention reaches the ridge: rho times T*.
split_compute_bound_width_expr = sp.solve(
    sp.Eq(sp.limit(intensity_expr.subs(m_c, _rho * m_c), S, sp.oo), R), T)[0].subs(_rho, cache_copies_expr)

# --- constants from architecture numbers -----------------------------------
n_h = sp.Symbol("n_h", positive=True)  # query heads
d_c = sp.Symbol("d_c", positive=True)  # MLA latent (kv_lora_rank) width
d_r = sp.Symbol("d_r", positive=True)  # MLA shared rope-key width
b_kv = sp.Symbol("b_kv", positive=True)  # bytes per cached element
b_q = sp.Symbol("b_q", positive=True)  # bytes per query element
n_kv = sp.Symbol("n_kv", positive=True)  # KV heads (GQA)
d_h = sp.Symbol("d_h", positive=True)  # head width (GQA)
d_n = sp.Symbol("d_n", positive=True)  # per-head no-rope key width, MLA up-projected form
d_v = sp.Symbol("d_v", positive=True)  # per-head value width, MLA up-projected form

# MLA, absorbed (MQA) form: one latent + rope key per context token shared by
# all heads; each head brings its own query of latent+rope width; per pair the
# score runs over d_c + d_r and the value over d_c, 2 FLOP per MAC.
mla_context_bytes_expr = (d_c + d_r) * b_kv
mla_query_bytes_expr = n_h * (d_c + d_r) * b_q
mla_flops_per_pair_expr = 2 * n_h * ((d_c + d_r) + d_c)

# GQA: K and V per KV head per context token; one query per head; score and
# value each d_h wide. MHA is n_kv = n_h, MQA n_kv = 1.
gqa_context_bytes_expr = 2 * n_kv * d_h * b_kv
gqa_query_bytes_expr = n_h * d_h * b_q
gqa_flops_per_pair_expr = 2 * n_h * (d_h + d_h)

# CSA's lightning indexer: n_h heads score one shared d_h-wide key per
# compressed position; score only, no value product.
indexer_context_bytes_expr = d_h * b_kv
indexer_query_bytes_expr = n_h * d_h * b_q
indexer_flops_per_pair_expr = 2 * n_h * d_h

#: m_q/m_c for MLA: the "fat query" asymmetry.
mla_query_context_ratio_expr = sp.simplify(mla_query_bytes_expr / mla_context_bytes_expr)

# --- MLA's two forms --------------------------------------------------------
# MQA form FLOPs for T queries over S positions versus the MHA form, which first
# up-projects every cached latent to per-head K (d_n, plus the shared rope key)
# and V (d_v) and then runs ordinary per-head attention. Both are compute-bound
# in the range where the choice matters, so FLOPs decide.
mqa_form_flops_expr = T * S * mla_flops_per_pair_expr
mha_form_flops_expr = S * 2 * d_c * n_h * (d_n + d_v) + T * S * 2 * n_h * ((d_n + d_r) + d_v)
#: Verify width past which the up-projected (MHA) form is cheaper.
mha_form_crossover_expr = sp.simplify(sp.solve(sp.Eq(mqa_form_flops_expr, mha_form_flops_expr), T)[0])
#: FLOPs per query-key pair of the up-projected form once the keys and values
#: are up-projected (a prompt's prefill runs it: with as many queries as keys
#: the up-projection is paid once per key and amortised, and the per-pair work
#: of the absorbed form, on the 512-wide latent, would be larger).
mha_flops_per_pair_expr = 2 * n_h * ((d_n + d_r) + d_v)

# --- DeepSeek-V4's compressed variants: the context each one attends over ---
c_hca = sp.Symbol("c_HCA", positive=True)  # HCA compression ratio along the sequence
c_csa = sp.Symbol("c_CSA", positive=True)  # CSA's light compression ratio
K_csa = sp.Symbol("K_CSA", positive=True)  # positions CSA's indexer keeps (top-k)

#: HCA runs MLA over the sequence compressed c_HCA times.
hca_context_expr = S / c_hca
#: CSA's main attention runs MLA over the top-K of the lightly compressed positions.
csa_context_expr = sp.Min(S / c_csa, K_csa)
#: CSA's indexer scores every lightly compressed position.
indexer_context_expr = S / c_csa

# CSA selects per query position: the indexer scores each position of a
# verify against the compressed cache and each keeps its own top K, as
# DeepSeek's sparse attention does. A verify of T positions then reads the
# union of T selections: K when they coincide (the post's reading, one shared
# selection), T K when they are disjoint. omega is the share of each further
# position's selection the ones before it already hold; the union never
# exceeds the S / c_CSA compressed positions there are.
omega = sp.Symbol("omega", nonnegative=True)  # overlap of the positions' selections (1: one shared selection)
#: Distinct compressed positions CSA's main attention reads for a verify of T positions.
csa_read_expr = sp.Min(S / c_csa, csa_context_expr * (1 + (T - 1) * (1 - omega)))
#: CSA's main attention intensity: T K pairs of work over the union read. With
#: separate selections (omega = 0) it is AI(1, K) at every T; with one shared
#: selection (omega = 1), AI(T, K), Table 1's S = K row.
csa_intensity_expr = f * T * csa_context_expr / (m_c * csa_read_expr + m_q * T)

#: As served, every DeepSeek-V4 layer also attends over the last W tokens
#: uncompressed (its sliding window); a layer with no compression ratio (0 in
#: the config) attends over that window alone.
W_win = sp.Symbol("W_win", nonnegative=True)  # sliding window, tokens
window_context_expr = sp.Min(S, W_win)
served_hca_context_expr = hca_context_expr + window_context_expr
served_csa_context_expr = csa_context_expr + window_context_expr

# --- GatedDeltaNet (linear attention): a fixed state per sequence -------------
n_k = sp.Symbol("n_k", positive=True)  # key heads
n_v = sp.Symbol("n_v", positive=True)  # value heads
d_k = sp.Symbol("d_k", positive=True)  # key head width
d_v = sp.Symbol("d_v", positive=True)  # value head width
K_conv = sp.Symbol("K_conv", positive=True)  # short-convolution kernel
b_s = sp.Symbol("b_s", positive=True)  # bytes per state element

#: Channels of the short convolution over queries, keys and values.
linear_conv_channels_expr = 2 * n_k * d_k + n_v * d_v

#: What one sequence keeps per layer, read and written every step whatever
#: the context: a d_k x d_v recurrent state per value head, and the last K
#: inputs of the short convolution.
linear_state_bytes_expr = (n_v * d_k * d_v + linear_conv_channels_expr * K_conv) * b_s

#: FLOPs per position per layer: the gated delta rule touches every state
#: element about four times (decay, read-out, error, rank-one update), 2 FLOP
#: each; the convolution and the gates are left out.
linear_flops_per_position_expr = 8 * n_v * d_k * d_v

#: Its intensity over T positions per sequence, over the bytes a step moves:
#: the state read and written back (2 x the state), about 4T / b_s (2T in
#: bf16), a little less for the convolution's bytes. The sequel's "about 4T"
#: divides by the read alone. Full attention's tends to f T / m_c (8T for
#: GQA with 8 query heads per KV head in bf16).
linear_intensity_expr = T * linear_flops_per_position_expr / (2 * linear_state_bytes_expr)

# --- rolling back a rejected draft ---------------------------------------------
# A recurrent state cannot be un-applied: once a verify pass has run the
# delta rule over a draft position, the state before it is gone. An engine
# that verifies gamma + 1 positions has two ways to end the step at the last
# accepted one (speclib.core.step prices both):
#
# * snapshot (what vLLM and SGLang do): keep the whole state after every
#   verified position, sigma bytes each, and carry on from the one the
#   rejection sampler accepts;
# * recompute (replay): keep only the state before the step and each
#   position's inputs, and re-run the accepted positions from it. A replay
#   needs, per position, what enters the short convolution (queries, keys and
#   values) and the decay and update gates:

#: Bytes of one position's inputs a replay keeps, per GatedDeltaNet layer.
linear_replay_bytes_expr = (linear_conv_channels_expr + 2 * n_v) * b_s
