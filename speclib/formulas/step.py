"""A whole model's forward step, as sympy: the FLOPs and bytes of each
component of one pass over B sequences of T positions each at context S, and
the two ways the book turns them into time.

The paper prices one representative layer (:mod:`speclib.formulas.cost`);
the sequel ("Adaptive speculative decoding", Finn 2026) prices the whole step
in seconds, because a drafter priced by its own roofline has to be compared
with the target's step in the same units. The components:

* ``dense``: every weight a position uses that is not a routed or shared
  expert (attention and linear-attention projections, routers, the output
  head): 2 FLOP per weight per position, each weight read once per step;
* ``experts``: k routed + n_s shared experts per position; the bytes are
  those of the distinct experts the step touches;
* ``attention``: full-attention layers read each sequence's KV cache once per
  step, m_c bytes per cached token per layer, and do f FLOPs per
  query-context pair; linear-attention (GatedDeltaNet) layers read a fixed
  state of sigma bytes per sequence per layer whatever S is and write it
  back updated (2 sigma moved), and do phi FLOPs per position per layer.
  The T verified positions attend over the cache plus, on average, half of
  themselves: S_eff = S + ceil(T/2).

Each component's time is a roofline, max(FLOPs / peak, bytes / bandwidth).
The paper adds the components' rooflines (``per-component``); the sequel's
simulator takes one roofline per precision stream over all the components
that share it (``aggregate``). :mod:`speclib.evidence.derivations` proves the
aggregate is never more and says when the two agree.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.step", ("sympy",))

import sympy as sp

from . import moe as _moe

B = sp.Symbol("B", positive=True)  # sequences in the step
T = sp.Symbol("T", positive=True)  # positions per sequence (1 decodes, gamma + 1 verifies)
S = sp.Symbol("S", positive=True)  # cached context per sequence

P_d = sp.Symbol("P_d", positive=True)  # dense weights per position, whole model
b_d = sp.Symbol("b_d", positive=True)  # bytes per dense weight
w = sp.Symbol("w", positive=True)  # weights of one expert, summed over the MoE layers
b_e = sp.Symbol("b_e", positive=True)  # bytes per expert weight
k, E, n_s = _moe.k, _moe.E, _moe.n_s
L_a = sp.Symbol("L_a", nonnegative=True)  # full-attention layers
f = sp.Symbol("f", positive=True)  # FLOPs per query-context pair per full-attention layer
m_c = sp.Symbol("m_c", positive=True)  # KV bytes per cached token per full-attention layer
L_l = sp.Symbol("L_l", nonnegative=True)  # linear-attention layers
sigma = sp.Symbol("sigma", nonnegative=True)  # state bytes per sequence per linear layer
phi = sp.Symbol("phi", nonnegative=True)  # FLOPs per position per linear layer

F = sp.Symbol("F", nonnegative=True)  # FLOPs of a component (or stream)
Q = sp.Symbol("Q", nonnegative=True)  # bytes it moves
peak = sp.Symbol("P", positive=True)  # peak FLOP/s of its precision
M = sp.Symbol("M", positive=True)  # HBM bandwidth, bytes/s

#: Time of work F moving Q bytes: compute and memory overlap, the slower wins.
roofline_time_expr = sp.Max(F / peak, Q / M)

#: Context the T verified positions attend over, on average.
attended_context_expr = S + sp.ceiling(T / 2)

#: Tokens through the experts in one step.
expert_tokens_expr = B * T

#: Distinct routed experts the step touches: the paper's coupon count, each of
#: the B*T positions picking k distinct experts of E.
experts_touched_expr = _moe.experts_activated_expr.subs(_moe.B, expert_tokens_expr)

#: The sequel's simulator instead counts n = B*T*k independent picks of one
#: expert each (its e(n) = E(1 - (1 - 1/E)^n)); the same to first order in k/E,
#: and 7.89 rather than exactly 8 experts for one token of Qwen3.6-35B-A3B.
experts_touched_slots_expr = E * (1 - (1 - 1 / E) ** (k * expert_tokens_expr))

#: What the paper's per-layer ledger leaves out of a step: the weights outside
#: the layers every step reads whole whatever the batch, the output head
#: (V x h, a hidden state's logits over the vocabulary) and each MoE layer's
#: router (h x E scores per position). They are among the dense weights P_d
#: of the whole step; a ledger of one layer, its ratios the same for every
#: layer, has no place for them, so there the layer count cancels and they
#: drop out.
V = sp.Symbol("V", positive=True)  # vocabulary size
h = sp.Symbol("h", positive=True)  # hidden size
L_m = sp.Symbol("L_m", nonnegative=True)  # layers with routed experts (each with a router)
head_params_expr = V * h
router_params_expr = L_m * h * E
outside_layers_params_expr = head_params_expr + router_params_expr

dense_flops_expr = 2 * P_d * B * T
dense_bytes_expr = b_d * P_d

expert_flops_expr = 2 * (k + n_s) * w * B * T

#: ``A`` stands for the experts touched (either count above).
A = sp.Symbol("A", positive=True)
expert_bytes_expr = b_e * w * (n_s + A)
m_t = sp.Symbol("m_t", positive=True)  # the grouped GEMM's tile: rows an expert's tokens are padded to
#: The experts' FLOPs as a grouped GEMM runs them: each of the A routed
#: experts the step touches gets B T k / A of its tokens on average, padded
#: up to a whole number of tiles of m_t rows (the kernel computes the padding
#: too), and the shared experts' B T tokens likewise.
expert_flops_padded_expr = 2 * w * m_t * (A * sp.ceiling(B * T * k / (A * m_t)) + n_s * sp.ceiling(B * T / m_t))

attention_flops_expr = B * T * (L_a * f * attended_context_expr + L_l * phi)
#: What a step reads for its attention: each full-attention layer's cache
#: over the attended context, each linear layer's state once.
attention_read_bytes_expr = B * (L_a * m_c * attended_context_expr + L_l * sigma)
#: What it writes back: a GatedDeltaNet layer's recurrent update replaces its
#: whole state, so a plain step writes every state once more (the T new KV
#: entries of the full-attention layers are left out, as a verify's T
#: positions against S of cache).
state_write_bytes_expr = B * L_l * sigma
#: Bytes of a step's attention: the reads and the states' write-back, so
#: 2 sigma per sequence and linear layer.
attention_bytes_expr = attention_read_bytes_expr + state_write_bytes_expr

# --- DeepSeek-V4's attention as served, over the whole model ----------------------
# The paper prices every attention layer of DeepSeek-V4 as MLA over the whole
# context (attention_*_expr with L_a layers). As served, its config's
# compress_ratios give each layer its own context (speclib.formulas.attention):
# n_f layers of full MLA, n_w of the sliding window alone, n_c CSA layers (MLA
# over the top K of the S / c_CSA compressed positions plus the window, each of
# the T positions selecting its own K, and an indexer scoring all S / c_CSA of
# them with its own m_ci bytes and f_i FLOPs)
# and n_h HCA layers (MLA over S / c_HCA compressed positions plus the
# window). Each reads its cache once per step and attends with T positions,
# over the attended context as above. With n_w = n_c = n_h = 0 and n_f = L_a
# it is the paper's form.
def _served_attention():
    from . import attention as _a
    n_f, n_w, n_c, n_h = sp.symbols("n_f n_w n_c n_h", nonnegative=True)
    m_ci, f_i = sp.symbols("m_ci f_i", nonnegative=True)
    on = {_a.S: attended_context_expr}
    context = (n_f * attended_context_expr + n_w * _a.window_context_expr.subs(on)
               + n_c * _a.served_csa_context_expr.subs(on) + n_h * _a.served_hca_context_expr.subs(on))
    indexed = n_c * _a.indexer_context_expr.subs(on)
    flops = B * T * (f * context + f_i * indexed + L_l * phi)
    # each of a verify's T positions selects its own top K of the compressed positions (the indexer scores
    # each against the whole compressed cache), and the sparse kernel gathers each selection: T - 1 more reads
    selections = n_c * (T - 1) * _a.csa_context_expr.subs(on)
    moved = B * (m_c * (context + selections) + m_ci * indexed + L_l * sigma) + state_write_bytes_expr
    args = (n_f, n_w, n_c, n_h, m_ci, f_i, _a.c_csa, _a.c_hca, _a.K_csa, _a.W_win)
    return flops, moved, args


#: FLOPs and bytes of every attention layer of a step, as DeepSeek-V4 serves
#: its attention; the constants after (B, T, S, f, m_c, L_l, phi, sigma).
served_attention_flops_expr, served_attention_bytes_expr, SERVED_ATTENTION_ARGS = _served_attention()

#: Rolling back the linear layers' state past a rejected draft
#: (:mod:`speclib.formulas.attention` describes the two ways). Each verified
#: position past the first costs, per sequence and linear layer, ``rho``
#: bytes moved and ``psi`` FLOPs: a snapshot writes the whole state
#: (rho = sigma, psi = 0; the state after the last position is the write
#: the step above already prices, so T - 1 more); a replay writes that
#: position's inputs and reads them back, and runs the delta rule over it
#: once more (rho = 2 x its input bytes, psi = phi). The replay's price
#: assumes it is fused into the next step: that step reads the state from
#: before the rejected draft (its own read of sigma), reruns the accepted
#: positions and writes the state once (its own write), so the replay adds
#: no state traffic and no pass of its own; run as a separate pass it would
#: read and write each state once more. Nothing at T = 1: a plain step
#: updates its state in place, as the step above already prices it (a read
#: and a write).
rho = sp.Symbol("rho", nonnegative=True)  # bytes per extra verified position per sequence per linear layer
psi = sp.Symbol("psi", nonnegative=True)  # FLOPs per extra verified position per sequence per linear layer
rollback_bytes_expr = B * L_l * rho * (T - 1)
rollback_flops_expr = B * L_l * psi * (T - 1)

#: A component's arithmetic intensity (FLOP per byte), for the chapter that
#: holds full attention and linear attention against the ridge.
intensity_expr = F / Q


# --- the calibrated engine step (speclib.core.calibrated, fitted by speclib.calibration.step_fit) ---
mu = sp.Symbol("mu", positive=True)  # how much slower than the roofline the chip's kernels run
nu = sp.Symbol("nu", nonnegative=True)  # how much slower again attention's kernels run, by vendor
t_r = sp.Symbol("t_r", nonnegative=True)  # the roofline time of one GPU's kernels
t_at = sp.Symbol("t_at", nonnegative=True)  # its attention component
#: One GPU's kernel time, calibrated: the roofline scaled by the chip's
#: factor, and attention's part by a further factor of its vendor's kernels
#: (decode attention reads many short rows per sequence, and reaches less of
#: the bandwidth than the weights' GEMMs do).
kernel_time_expr = mu * t_r + nu * t_at
t_k = sp.Symbol("t_k", nonnegative=True)  # the step's calibrated kernel time (kernel_time_expr)
t_c = sp.Symbol("t_c", nonnegative=True)  # kappa x the step's FLOPs at peak / tp (compute not hidden)
a = sp.Symbol("a", nonnegative=True)  # fixed time per engine step (chip, engine)
d = sp.Symbol("d", nonnegative=True)  # time per sequence in the step
e = sp.Symbol("e", nonnegative=True)  # time per verified position past the first, per sequence

t_x = sp.Symbol("t_x", nonnegative=True)  # the extra verified positions' FLOPs at peak / tp (seconds)
chi = sp.Symbol("chi", nonnegative=True)  # seconds per second of those FLOPs at peak: 1 / eta
tau = sp.Symbol("tau", nonnegative=True)  # seconds per token per layer the roofline does not see
L_s = sp.Symbol("L_s", nonnegative=True)  # the layers a token passes through in the step

#: One engine step of B sequences of T positions: the kernels' time, the
#: compute they do not hide, a fixed time, a time per sequence, a time per
#: extra verified position (sampling, rejection, the rejected positions' KV
#: writes) and the extra positions' own work, their FLOPs at a fraction
#: eta = 1/chi of the chip's peak, and a time tau per token per layer: the
#: work each of the B x T tokens costs in each of the L_s layers it passes
#: through that the weights' and the cache's roofline does not count (the
#: activations read and written between kernels, norms and residuals, rotary
#: embeddings, quantising activations for fp8 GEMMs, a MoE layer's token
#: permutation, attention's work per query). A drafter's pass adds its priced
#: work and a_d per pass (:data:`speclib.formulas.drafters.mtp_draft_time_expr`
#: with t_pass = a_d counts the passes of a chained drafter, the DFlash form
#: those of a block).
engine_step_expr = t_k + t_c + a + d * B + e * B * (T - 1) + chi * t_x + tau * B * T * L_s

#: FLOPs of a step of B sequences of T positions, the whole model: two per
#: active weight per position (dense and the k + n_s experts each is routed
#: to) and attention over the context each position sees, full and linear.
step_flops_expr = dense_flops_expr + expert_flops_expr + attention_flops_expr

n_tp = sp.Symbol("n_tp", positive=True)  # GPUs the model is split over (tensor parallelism)
P_c = sp.Symbol("P_c", positive=True)  # the chip's peak FLOP/s at the precision of the work
#: Seconds of the work the T - 1 extra verified positions add to a plain
#: step, at the chip's peak over n_tp GPUs: the t_x that 1/eta scales (the
#: code prices each component at its own precision's peak).
extra_positions_time_expr = (step_flops_expr - step_flops_expr.subs(T, 1)) / (n_tp * P_c)

L = sp.Symbol("L", positive=True)  # the model's layers
L_ref = sp.Symbol("L_ref", positive=True)  # the layers of the model the fixed time was measured on
a_0 = sp.Symbol("a_0", nonnegative=True)  # the fixed time per step measured on that model
#: A fixed time per step that scales with the layers (kernels launched per
#: layer, each with a floor on its duration): a_0 measured on a model of
#: L_ref layers, for a model of L.
fixed_by_layers_expr = a_0 * L / L_ref


# --- one GPU's share of a step split over n_tp GPUs (speclib.core.layout) -----------
n_kv = sp.Symbol("n_kv", positive=True)  # KV heads of a grouped-query attention layer
#: The share of a grouped-query layer's KV cache one of n_tp GPUs reads when
#: the query heads are split over them: its own KV heads, and never less than
#: one whole head (with fewer KV heads than GPUs, each KV head is held and read
#: by n_tp / n_kv GPUs). MLA's latent is one cache shared by every query head,
#: so each GPU reads all of it (a share of 1); attention split by sequence
#: (data-parallel attention) reads 1 / n_tp.
gqa_kv_share_expr = sp.Max(1 / n_tp, 1 / n_kv)

n_c = sp.Symbol("n_c", nonnegative=True)  # collectives on a step's critical path
l_c = sp.Symbol("l_c", nonnegative=True)  # latency of one collective over n_tp GPUs, seconds
h_a = h  # hidden size: activation elements per position
b_a = sp.Symbol("b_a", positive=True)  # bytes per activation element
W_link = sp.Symbol("W", positive=True)  # link bandwidth per GPU, each way, bytes/s
#: The step's tensor-parallel all-reduces: n_c collectives of the step's
#: activations (B x T positions of h elements), each waiting one latency and,
#: as a ring, sending (and receiving) 2 (n_tp - 1) / n_tp of the message over
#: the link. Two per layer at decode (after attention's output projection and
#: after the feed-forward block); none on one GPU.
allreduce_time_expr = n_c * (l_c + 2 * (n_tp - 1) / n_tp * B * T * h_a * b_a / W_link)
