"""The closed forms the numeric model evaluates, each with the argument order
of its numeric function.

:mod:`speclib.formulas.generate` prints every entry of :data:`NUMERIC` into
:mod:`speclib.formulas.numpy_functions` (a numpy function of the same name),
and :mod:`speclib.presentation.web.codegen` prints a selection of them to
JavaScript. An expression is listed here in the form that is best in floating
point (:func:`speclib.formulas.moe.numeric_form`); the tests check that form is
the same function as the expression the book shows.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._extras import require as _require

_require("speclib.formulas.catalog", ("sympy",))

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from . import acceptance as _acc
from . import attention as _attn
from . import capacity as _cap
from . import cost as _cost
from . import drafters as _draft
from . import moe as _moe
from . import parallel as _par
from . import serving as _fig
from . import speculation as _spec
from . import step as _step
from . import workload as _work


@dataclass(frozen=True)
class Formula:
    """One closed form to print: the function's name, the sympy expression,
    its argument symbols in order, and a line saying what it is."""

    name: str
    expr: sp.Expr
    args: tuple
    doc: str

    def arg_names(self) -> tuple:
        """The argument names, in order."""
        return tuple(str(a) for a in self.args)

    def __post_init__(self):
        missing = {str(s) for s in self.expr.free_symbols} - {str(a) for a in self.args}
        if missing:
            raise ValueError(f"formula {self.name!r}: free symbols {sorted(missing)} are not arguments")


def _rooflines():
    forms = (
        (_cost.ROOFLINE_FORMS["gemm"], "roofline of a dense GEMM (attention projections, dense FFN)"),
        (_cost.ROOFLINE_FORMS["moe"], "roofline of the MoE experts"),
        (_cost.ROOFLINE_FORMS["attn"], "roofline of attention over B sequences of q queries"),
        (_cost.ROOFLINE_FORMS["served_attn"], "roofline of DeepSeek-V4's attention as served, averaged over its "
                                              "layers (full, sliding window, CSA and its indexer, HCA)"),
        (_par.EP_MOE_FORM, "roofline of one GPU's share of expert-parallel MoE experts"),
    )
    for form, doc in forms:
        yield Formula(f"{form.name}_cost", form.numeric_cost_expr, form.args, f"{doc}: step cost")
        yield Formula(f"{form.name}_slope", form.numeric_slope_expr, form.args,
                      f"{doc}: its log-slope d log C / d log (tokens)")


_m, _a, _s = _moe, _attn, _step

#: Every closed form :mod:`speclib.core` evaluates, by function name.
NUMERIC = (
    # --- the expert tax (speclib.formulas.moe) ---
    Formula("experts_activated", _m.numeric_form(_m.experts_activated_expr), (_m.B, _m.k, _m.E),
            "expected distinct routed experts touched by B tokens"),
    Formula("expert_hit_probability", -expm1(_m.B * log1p(-_m.q)), (_m.B, _m.q),
            "probability that B tokens touch an expert each picks with probability q (skewed routing sums it "
            "over the experts)"),
    Formula("experts_activated_rate", _m.numeric_form(_m.experts_activated_rate_expr), (_m.B, _m.k, _m.E),
            "dA/dB: fresh routed experts per extra token"),
    Formula("dense_intensity", _m.dense_intensity_expr, (_m.B, _m.b, _m.R),
            "dense FFN arithmetic intensity, capped at the ridge"),
    Formula("moe_intensity", _m.numeric_form(_m.moe_intensity_expr), (_m.B, _m.k, _m.E, _m.n_s, _m.b, _m.R),
            "MoE FFN arithmetic intensity, capped at the ridge"),
    Formula("moe_intensity_uncapped", _m.numeric_form(_m.moe_intensity_uncapped_expr),
            (_m.B, _m.k, _m.E, _m.n_s, _m.b), "MoE FFN arithmetic intensity, uncapped"),
    Formula("dense_knee", _m.dense_knee_expr, (_m.b, _m.R), "batch where the dense line meets the ridge"),
    Formula("moe_ridge_batch", _m.moe_ridge_batch_expr, (_m.k, _m.E, _m.n_s, _m.b, _m.R), "batch where the saturated MoE line meets the ridge"),
    Formula("expert_knee", _m.expert_knee_expr, (_m.k, _m.E), "E/k: where the coupon count saturates"),
    Formula("moe_slope_ratio", _m.moe_slope_ratio_expr, (_m.k, _m.E, _m.n_s), "saturated MoE slope over the dense slope"),
    Formula("gemm_ridge", _m.gemm_ridge_expr, (_m.R_w, _m.R_a),
            "ridge of a GEMM with weights and activations in two precisions (W4A8: the fp8 ridge)"),
    # --- attention (speclib.formulas.attention) ---
    Formula("attention_intensity", _a.intensity_expr, (_a.T, _a.S, _a.m_c, _a.m_q, _a.f),
            "attention arithmetic intensity of T queries over S context tokens"),
    Formula("hca_context", _a.hca_context_expr, (_a.S, _a.c_hca), "context HCA attends over"),
    Formula("csa_context", _a.csa_context_expr, (_a.S, _a.c_csa, _a.K_csa), "context CSA's main attention attends over"),
    Formula("indexer_context", _a.indexer_context_expr, (_a.S, _a.c_csa), "context CSA's indexer scores"),
    Formula("window_context", _a.window_context_expr, (_a.S, _a.W_win), "context a sliding window attends over"),
    Formula("compute_bound_width", _a.compute_bound_width_expr, (_a.m_c, _a.f, _a.R),
            "verify width at which long-context attention reaches the ridge"),
    Formula("attention_cache_copies", _a.cache_copies_expr, (_a.h_split, _a.n_kvh),
            "copies of a sequence's attention cache read when its query heads are split over h_split GPUs"),
    Formula("split_attention_intensity", _a.split_intensity_expr, (_a.T, _a.S, _a.m_c, _a.m_q, _a.f, _a.h_split, _a.n_kvh),
            "one GPU's attention intensity with a sequence's query heads split over h_split GPUs"),
    Formula("split_compute_bound_width", _a.split_compute_bound_width_expr, (_a.m_c, _a.f, _a.R, _a.h_split, _a.n_kvh),
            "verify width at which one GPU's long-context attention reaches the ridge, heads split over h_split GPUs"),
    Formula("csa_intensity", _a.csa_intensity_expr, (_a.T, _a.S, _a.m_c, _a.m_q, _a.f, _a.c_csa, _a.K_csa, _a.omega),
            "CSA main attention intensity, each query position selecting its own top K (overlap omega)"),
    Formula("mha_form_crossover", _a.mha_form_crossover_expr, (_a.d_c, _a.d_r, _a.d_n, _a.d_v),
            "verify width past which MLA's up-projected form needs fewer FLOPs"),
    Formula("mla_context_bytes", _a.mla_context_bytes_expr, (_a.d_c, _a.d_r, _a.b_kv), "MLA m_c"),
    Formula("mla_query_bytes", _a.mla_query_bytes_expr, (_a.n_h, _a.d_c, _a.d_r, _a.b_q), "MLA m_q"),
    Formula("mla_flops_per_pair", _a.mla_flops_per_pair_expr, (_a.n_h, _a.d_c, _a.d_r), "MLA f"),
    Formula("mha_flops_per_pair", _a.mha_flops_per_pair_expr, (_a.n_h, _a.d_n, _a.d_r, _a.d_v),
            "MLA's up-projected (prefill) form: FLOPs per query-key pair"),
    Formula("gqa_context_bytes", _a.gqa_context_bytes_expr, (_a.n_kv, _a.d_h, _a.b_kv), "GQA m_c"),
    Formula("gqa_query_bytes", _a.gqa_query_bytes_expr, (_a.n_h, _a.d_h, _a.b_q), "GQA m_q"),
    Formula("gqa_flops_per_pair", _a.gqa_flops_per_pair_expr, (_a.n_h, _a.d_h), "GQA f"),
    Formula("indexer_context_bytes", _a.indexer_context_bytes_expr, (_a.d_h, _a.b_kv), "CSA indexer m_c"),
    Formula("indexer_query_bytes", _a.indexer_query_bytes_expr, (_a.n_h, _a.d_h, _a.b_q), "CSA indexer m_q"),
    Formula("indexer_flops_per_pair", _a.indexer_flops_per_pair_expr, (_a.n_h, _a.d_h), "CSA indexer f"),
    # --- acceptance (speclib.formulas.acceptance) ---
    Formula("committed", _acc.expected_committed_stable_expr, (_acc.alpha, _acc.gamma),
            "expected tokens committed per verify pass, alpha < 1"),
    Formula("committed_at_one", _acc.expected_committed_at_one_expr, (_acc.gamma,), "the same at alpha = 1"),
    Formula("first_survival", _acc.first_survival_expr, (_acc.A_2, _acc.s_3),
            "the first position's survival from AL(2) - 1 and s_3, the first three decaying at one rate"),
    Formula("committed_at_zero", _acc.committed_at_zero_expr, (), "tokens committed with no drafts"),
    Formula("iid_survival", _acc.iid_survival_expr, (_acc.alpha, _acc._d),
            "survival of draft position d under i.i.d. acceptance"),
    # --- pricing a step (speclib.formulas.cost, .parallel) ---
    *_rooflines(),
    Formula("rank_max_touched", _m.rank_max_expr, (_m.E, _m.G, _m.h_i, _m.c_G),
            "expected experts touched on the most loaded of G GPUs holding E / G routed experts each"),
    Formula("rank_max_picks", _m.rank_max_picks_expr, (_m.n_p, _m.G, _m.c_G),
            "expected token picks the most loaded of G GPUs serves when n_p picks land on them alike"),
    Formula("group_rank_max_picks", _m.group_rank_max_picks_expr, (_m.n_t, _m.k, _m.E, _m.G, _m.n_g, _m.k_g, _m.c_G),
            "expected token picks the most loaded of G GPUs serves under group-limited routing, whole groups per GPU"),
    Formula("group_rank_max_touched", _m.group_rank_max_touched_expr,
            (_m.n_t, _m.k, _m.E, _m.G, _m.n_g, _m.k_g, _m.c_G),
            "expected experts the most loaded of G GPUs reads under group-limited routing, whole groups per GPU"),
    Formula("local_experts", _m.numeric_form(_par.local_experts_expr), (_par.t, _m.k, _m.E, _par.G),
            "distinct routed experts one GPU of an expert-parallel group reads"),
    Formula("comm_cost", _par.comm_cost_expr, _par.COMM_ARGS, "all-to-all time of a step, HBM byte-equivalents"),
    Formula("comm_slope", _par.comm_slope_expr, _par.COMM_ARGS, "its log-slope in tokens"),
    Formula("link_bytes_per_token", _par.link_bytes_per_token_expr, (_m.k, _par.G, _par.h, _par.b_d, _par.b_c),
            "link bytes one token moves per MoE layer"),
    Formula("comm_latency_cost", _par.comm_latency_cost_expr, (_par.n_m, _par.l, _par.M),
            "the all-to-all's latency per MoE layer per step, HBM byte-equivalents"),
    Formula("comm_total_slope", _par.comm_total_slope_expr, _par.COMM_TOTAL_ARGS,
            "log-slope in tokens of the all-to-all priced whole, latency plus bytes over bandwidth"),
    Formula("comm_latency_crossover", _par.comm_latency_crossover_expr,
            (_m.k, _par.G, _par.h, _par.b_d, _par.b_c, _par.L, _par.n_m, _par.l),
            "tokens per GPU at which the all-to-all's bandwidth term equals its latency"),
    # --- speculation (speclib.formulas.speculation) ---
    Formula("speedup", _spec.speedup_expr, (_spec.N, _spec.C_0, _spec.C_v, _spec.c, _spec.gamma),
            "throughput of a draft length over plain decoding"),
    Formula("verify_price", _spec.verify_price_expr, (_spec.C_0, _spec.C_v, _spec.c, _spec.gamma),
            "what a draft of gamma tokens costs per drafted token, x a real token: the verify's cost above a "
            "plain step over gamma, plus the drafter (a secant; the ledger's total is a slope)"),
    Formula("fixed_cost_break_even", _spec.fixed_cost_break_even_expr,
            (_spec.N, _spec.C_0, _spec.C_v, _spec.c, _spec.gamma),
            "the fixed cost per target step at which a draft of gamma tokens breaks even"),
    Formula("priced_speedup", _spec.priced_speedup_expr, (_spec.N, _spec.C_0, _spec.C_g),
            "the same with drafting priced inside the speculative step"),
    Formula("throughput", _spec.throughput_expr, (_spec.B, _spec.N, _spec.C_g),
            "committed output tokens per second of B sequences"),
    # --- a whole model's step in seconds (speclib.formulas.step) ---
    Formula("roofline_time", _s.roofline_time_expr, (_s.F, _s.Q, _s.peak, _s.M),
            "time of work F moving Q bytes on a chip of peak P and bandwidth M"),
    Formula("engine_step", _s.engine_step_expr, (_s.t_k, _s.t_c, _s.a, _s.d, _s.e, _s.B, _s.T, _s.chi, _s.t_x,
                                                 _s.tau, _s.L_s),
            "the calibrated engine step: kernels, compute not hidden, fixed, per sequence, per extra position, "
            "the extra positions' work below peak, per token per layer"),
    Formula("kernel_time", _s.kernel_time_expr, (_s.mu, _s.t_r, _s.nu, _s.t_at),
            "one GPU's calibrated kernel time"),
    Formula("fixed_by_layers", _s.fixed_by_layers_expr, (_s.a_0, _s.L, _s.L_ref),
            "a fixed time per step measured on a model of L_ref layers, for a model of L"),
    Formula("attended_context", _s.attended_context_expr, (_s.S, _s.T),
            "context the T verified positions attend over, on average"),
    Formula("experts_touched", _m.numeric_form(_s.experts_touched_expr), (_s.B, _s.T, _m.k, _m.E),
            "distinct routed experts a step of B x T positions touches"),
    Formula("experts_touched_slots", _m.numeric_form(_s.experts_touched_slots_expr, miss=1 - 1 / _m.E),
            (_s.B, _s.T, _m.k, _m.E), "the same counted over B x T x k single picks, as the sequel's simulator does"),
    Formula("outside_layers_params", _s.outside_layers_params_expr, (_s.V, _s.h, _s.L_m, _m.E),
            "weights a step reads outside its layers: the output head and the MoE layers' routers"),
    Formula("dense_flops", _s.dense_flops_expr, (_s.P_d, _s.B, _s.T), "FLOPs of the dense weights"),
    Formula("dense_bytes", _s.dense_bytes_expr, (_s.P_d, _s.b_d), "bytes of the dense weights"),
    Formula("expert_flops", _s.expert_flops_expr, (_s.w, _m.k, _m.n_s, _s.B, _s.T), "FLOPs of the experts"),
    Formula("expert_bytes", _s.expert_bytes_expr, (_s.w, _s.b_e, _m.n_s, _s.A), "bytes of the experts touched"),
    Formula("expert_flops_padded", _s.expert_flops_padded_expr, (_s.w, _m.k, _m.n_s, _s.B, _s.T, _s.A, _s.m_t),
            "FLOPs of the experts as a grouped GEMM runs them, each expert's tokens padded to its tile"),
    Formula("attention_flops", _s.attention_flops_expr, (_s.B, _s.T, _s.S, _s.L_a, _s.f, _s.L_l, _s.phi),
            "FLOPs of full and linear attention"),
    Formula("attention_bytes", _s.attention_bytes_expr, (_s.B, _s.T, _s.S, _s.L_a, _s.m_c, _s.L_l, _s.sigma),
            "bytes of the KV caches read and the linear-attention states read and written"),
    Formula("attention_read_bytes", _s.attention_read_bytes_expr,
            (_s.B, _s.T, _s.S, _s.L_a, _s.m_c, _s.L_l, _s.sigma),
            "bytes of the KV caches and linear-attention states read, without the states' write-back"),
    Formula("state_write_bytes", _s.state_write_bytes_expr, (_s.B, _s.L_l, _s.sigma),
            "bytes of the linear-attention states a step writes back"),
    Formula("linear_state_bytes", _a.linear_state_bytes_expr, (_a.n_k, _a.n_v, _a.d_k, _a.d_v, _a.K_conv, _a.b_s),
            "bytes of state one sequence keeps in one GatedDeltaNet layer"),
    Formula("linear_flops_per_position", _a.linear_flops_per_position_expr, (_a.n_v, _a.d_k, _a.d_v),
            "FLOPs per position per GatedDeltaNet layer"),
    Formula("linear_replay_bytes", _a.linear_replay_bytes_expr, (_a.n_k, _a.n_v, _a.d_k, _a.d_v, _a.b_s),
            "bytes of one position's inputs a replay of one GatedDeltaNet layer keeps"),
    Formula("served_attention_flops", _s.served_attention_flops_expr,
            (_s.B, _s.T, _s.S, _s.f, _s.L_l, _s.phi) + _s.SERVED_ATTENTION_ARGS,
            "FLOPs of every attention layer of a step, DeepSeek-V4's attention as served"),
    Formula("served_attention_bytes", _s.served_attention_bytes_expr,
            (_s.B, _s.T, _s.S, _s.m_c, _s.L_l, _s.sigma) + _s.SERVED_ATTENTION_ARGS,
            "bytes every attention layer of a step moves, DeepSeek-V4's attention as served"),
    Formula("rollback_bytes", _s.rollback_bytes_expr, (_s.B, _s.T, _s.L_l, _s.rho),
            "bytes a step moves to roll the linear layers back past a rejected draft"),
    Formula("rollback_flops", _s.rollback_flops_expr, (_s.B, _s.T, _s.L_l, _s.psi),
            "FLOPs a step spends to roll the linear layers back past a rejected draft"),
    Formula("linear_intensity", _a.linear_intensity_expr, (_a.T, _a.n_k, _a.n_v, _a.d_k, _a.d_v, _a.K_conv, _a.b_s),
            "GatedDeltaNet arithmetic intensity of T positions per sequence"),
    # --- drafting (speclib.formulas.drafters) ---
    Formula("constant_draft_time", _draft.constant_draft_time_expr, (_draft.c, _draft.gamma, _draft.t_0),
            "drafting at a constant fraction c of a plain step"),
    Formula("mtp_draft_time", _draft.mtp_draft_time_expr, (_draft.gamma, _draft.t_pass),
            "gamma MTP passes in series"),
    Formula("dflash_draft_time", _draft.dflash_draft_time_expr, (_draft.gamma, _draft.t_pass),
            "one DFlash pass for any gamma in 1..D, none at gamma = 0"),
    Formula("drafter_crossover_batch", _draft.crossover_batch_expr,
            (_draft.gamma, _draft.b, _draft.P_m, _draft.w_m, _draft.E, _draft.n_s, _draft.P_f, _draft.D, _draft.peak,
             _draft.M), "batch below which a DFlash block is cheaper than gamma MTP passes (experts saturated)"),
    # --- memory capacity (speclib.formulas.capacity) ---
    Formula("weight_bytes", _cap.weight_bytes_expr, (_cap.b_e, _cap.P_e, _cap.b_p, _cap.P_p, _cap.b_h, _cap.P_h),
            "bytes of the whole model's weights, every expert included"),
    Formula("sequence_bytes", _cap.sequence_bytes_expr,
            (_cap.S, _cap.L_f, _cap.m_c, _cap.L_l, _cap.sigma, _cap.L_csa, _cap.c_csa, _cap.m_i, _cap.L_hca,
             _cap.c_hca, _cap.L_w, _cap.W_win),
            "bytes one sequence keeps at context S: KV caches, linear-attention states, V4 compressed caches"),
    Formula("memory_per_gpu", _cap.memory_per_gpu_expr, (_cap.W, _cap.B, _cap.m, _cap.n),
            "bytes each of n GPUs holds for B sequences"),
    Formula("max_batch", _cap.max_batch_expr, (_cap.C, _cap.r, _cap.n, _cap.W, _cap.m),
            "largest batch whose weights and caches fit in n GPUs with a fraction r kept free"),
    Formula("gpu_sequence_bytes", _cap.gpu_sequence_bytes_expr,
            (_cap.S, _cap.g, _cap.g_s, _cap.s_c, _cap.s_l, _cap.L_f, _cap.m_c, _cap.L_l, _cap.sigma, _cap.rho_m,
             _cap.L_csa,
             _cap.c_csa, _cap.m_i, _cap.L_hca, _cap.c_hca, _cap.L_w, _cap.W_win, _cap.m_d),
            "bytes one GPU holds per sequence: its share of the caches with the draft's slots, states, drafter cache"),
    Formula("gpu_weight_bytes", _cap.gpu_weight_bytes_expr, (_cap.W, _cap.W_d, _cap.R_w, _cap.n),
            "bytes of weights on one GPU: what it holds whole and its share of the rest"),
    Formula("gpu_max_batch", _cap.gpu_max_batch_expr, (_cap.C, _cap.r, _cap.W_g, _cap.m_g),
            "largest group batch whose weights and caches fit on every GPU"),
    Formula("min_gpus", _cap.min_gpus_expr, (_cap.B, _cap.m, _cap.W, _cap.C, _cap.r),
            "GPUs needed to hold the weights and B sequences (a real number: round up)"),
    # --- what the sequel's chapters draw (speclib.formulas.serving) ---
    Formula("cache_bytes", _fig.cache_bytes_expr, (_s.B, _s.S, _s.L_a, _s.m_c, _s.L_l, _s.sigma),
            "bytes of KV cache and linear-attention state B sequences keep at context S"),
    Formula("kv_state_crossing", _fig.kv_state_crossing_expr, (_s.L_a, _s.m_c, _s.L_l, _s.sigma),
            "context at which a sequence's KV cache weighs as much as its linear-attention state"),
    Formula("time_per_output_token", _fig.time_per_output_token_expr, (_spec.B, _fig.X),
            "time per output token of each of B sequences in a closed loop committing X tokens per second"),
    Formula("closed_loop_throughput", _fig.closed_loop_throughput_expr, (_spec.B, _fig.tau),
            "throughput of B sequences in a closed loop at a time per output token tau"),
    # --- serving workloads (speclib.formulas.workload) ---
    Formula("mean_decode_context", _work.mean_decode_context_expr, (_work.I_in, _work.O_out),
            "mean cached context over a request's decode steps"),
    Formula("littles_law_batch", _work.littles_law_batch_expr,
            (_work.X_total, _work.n_tp, _work.I_in, _work.O_out, _work.tau),
            "decoding requests implied by a run's throughput and time per token"),
    Formula("prefill_share_seconds", _work.prefill_share_seconds_expr,
            (_work.B_dec, _work.I_in, _work.O_out, _work.P_act, _work.L_att, _work.f_pair, _work.n_tp, _work.peak_p),
            "seconds of prefill one closed-loop decode step of B sequences carries, at peak"),
    Formula("prefill_share_roofline", _work.prefill_share_roofline_expr,
            (_work.B_dec, _work.I_in, _work.O_out, _work.P_act, _work.L_att, _work.f_pair, _work.n_tp, _work.peak_p,
             _work.Q_p, _work.M_bw),
            "seconds of prefill one closed-loop decode step of B sequences carries, by its roofline"),
    Formula("speculative_tpot", _work.speculative_tpot_expr, (_work.C_g, _work.N_c, _work.p_s),
            "time per output token of a sequence that speculates in a closed loop, the prefill it carries included"),
    Formula("user_speed", _work.user_speed_expr, (_work.B_run, _work.C_users, _work.tau),
            "tokens per second each of C users sees when B_r of them decode at once"),
    Formula("throughput_per_gpu", _work.throughput_per_gpu_expr, (_work.B_run, _work.tau, _work.n_tp),
            "output tokens per second per GPU of B_r sequences decoding at tau per token"),
    Formula("running_batch", _work.running_batch_expr, (_work.C_users, _work.M_held),
            "the sequences decoding at once when C users share a deployment that holds M_h"),
    Formula("concurrent_speedup", _work.concurrent_speedup_expr,
            (_work.N_c, _work.C_0, _work.C_g, _work.R_0, _work.R_g),
            "throughput of a draft length over plain decoding, each arm at its own running batch"),
    Formula("cost_per_million_tokens", _work.cost_per_million_tokens_expr, (_work.P_hour, _work.X_gpu),
            "price of a million output tokens at a GPU-hour price and a throughput per GPU"),
    # --- one GPU's share of a step split over GPUs (speclib.core.layout) ---
    Formula("gqa_kv_share", _s.gqa_kv_share_expr, (_s.n_tp, _s.n_kv),
            "share of a grouped-query layer's KV cache one of n_tp GPUs reads"),
    Formula("allreduce_time", _s.allreduce_time_expr, (_s.n_c, _s.l_c, _s.n_tp, _s.B, _s.T, _s.h_a, _s.b_a, _s.W_link),
            "seconds of a step's tensor-parallel all-reduces"),
)

FORMULAS = {formula.name: formula for formula in NUMERIC}
if len(FORMULAS) != len(NUMERIC):  # pragma: no cover - a name listed twice
    raise ValueError("duplicate names in the formula catalogue")
