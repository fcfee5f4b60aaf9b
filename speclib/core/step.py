"""A whole model's forward step in seconds, component by component, priced
either as the paper prices a step (each component its own roofline, the
times added) or as the sequel's simulator does (one roofline per precision
stream over every component in it). The closed forms are in
:mod:`speclib.formulas.step`.
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_array, checked_choice
from ..formulas import numpy_functions as nf
from ..presets import StepArchitecture, resolve
from . import moe as _moe
from .cost import DEFAULT_ATTENTION, served_layers


#: How a step's components compose into its time.
ROOFLINES = ("per-component", "aggregate")
#: How the experts a step touches are counted: the paper's coupon count
#: (each position picks k distinct experts) or the sequel's simulator's (each
#: of the k picks independently).
EXPERT_COUNTS = ("top-k", "slots")
#: The components of a step, as :mod:`speclib.formulas.step` names them.
COMPONENTS = ("dense", "ffn", "attention")
#: How the linear-attention layers' state is rolled back past a rejected
#: draft (:data:`speclib.formulas.step.rollback_bytes_expr`): ``"none"``
#: leaves it out, as the sequel's simulator does; ``"snapshot"`` keeps the
#: whole state after every verified position; ``"recompute"`` keeps each
#: position's inputs and replays the accepted ones.
ROLLBACKS = ("none", "snapshot", "recompute")
#: What vLLM and SGLang do for GatedDeltaNet and Mamba layers under
#: speculative decoding, and so the default of a
#: :class:`speclib.core.deployment.Deployment`: a snapshot per verified
#: position. vLLM's ``fused_recurrent_gated_delta_rule`` kernel
#: (``vllm/model_executor/layers/fla/ops/fused_recurrent.py``) stores the
#: state after each of a sequence's verified positions in its own cache slot
#: (``ssm_state_indices[sequence, position]``, laid out by
#: ``vllm/v1/attention/backends/gdn_attn.py`` with ``num_speculative_tokens
#: + 1`` slots per sequence) and starts the next step from slot
#: ``num_accepted_tokens - 1``; SGLang's ``MambaPool`` keeps an
#: ``intermediate_ssm_state_cache`` and an ``intermediate_conv_window_cache``
#: with one entry per draft token and copies the accepted one into the
#: sequence's state after the verify (``update_mamba_state_after_mtp_verify``).
#: Replaying instead is TensorRT-LLM's method for Mamba-2 (NVIDIA/TensorRT-LLM
#: pull request 13453) and is proposed for vLLM (ReplaySSM, vllm-project/vllm
#: issue 47572, pull requests 49847 and 49887).
DEFAULT_ROLLBACK = "snapshot"


def check_roofline(value) -> str:
    return checked_choice("roofline", value, ROOFLINES)


def check_rollback(value) -> str:
    return checked_choice("rollback", value, ROLLBACKS)


def check_state_write(value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"state_write must be True or False; got {value!r}")
    return bool(value)


def rollback_constants(architecture: StepArchitecture, rollback: str) -> tuple:
    """(rho, psi) of ``rollback`` for ``architecture``'s linear layers: the
    bytes and FLOPs each verified position past the first costs per sequence
    and layer (:data:`speclib.formulas.step.rollback_bytes_expr`). A hybrid
    architecture without the numbers a rollback needs is refused, naming the
    field."""
    a = architecture
    rollback = check_rollback(rollback)
    if rollback == "none" or a.linear_layers == 0:
        return 0.0, 0.0
    needs = {"snapshot": ("state_bytes",), "recompute": ("replay_bytes", "linear_flops")}[rollback]
    for field in needs:
        if not getattr(a, field) > 0:
            raise ValueError(f"rollback={rollback!r} needs {field} of the linear-attention layers; {a.name} has "
                             f"{a.linear_layers} of them with {field} = {getattr(a, field)!r}")
    if rollback == "snapshot":
        return float(a.state_bytes), 0.0
    return 2.0 * float(a.replay_bytes), float(a.linear_flops)


class StepModel:
    """Seconds of one forward step of ``architecture`` on ``hardware``, for B
    sequences of T positions at context S (arrays broadcast, assumed checked).

    ``roofline``: ``"per-component"`` adds each component's roofline time,
    ``"aggregate"`` takes one roofline per precision stream (the sequel's
    simulator: with every weight, cache and state in one precision, one max of
    sums). ``expert_count``: see :data:`EXPERT_COUNTS`. ``routing``: a
    measured popularity (one share per routed expert, summing to 1) in place
    of uniform routing (:func:`speclib.core.moe.experts_activated`).
    ``linear_attention_flops``: the sequel's simulator charges none for
    linear attention; True charges its FLOPs too. ``rollback``: how the
    linear layers' state is rolled back past a rejected draft
    (:data:`ROLLBACKS`; ``"none"`` here, as the simulator has it; a
    :class:`~speclib.core.deployment.Deployment` defaults to what the engines
    do, :data:`DEFAULT_ROLLBACK`), priced with the attention component.
    ``state_write``: a GatedDeltaNet step writes back each state it reads
    (:data:`speclib.formulas.step.state_write_bytes_expr`, 2 sigma moved per
    sequence and layer); False leaves the write out, as the sequel's
    simulator does (its step reads each state once).
    """

    def __init__(self, architecture: StepArchitecture, hardware, *, roofline: str = "per-component",
                 expert_count: str = "top-k", linear_attention_flops: bool = False, routing=None,
                 rollback: str = "none", served_attention: tuple | None = None, state_write: bool = True):
        self.architecture = architecture
        self.served_attention = None if served_attention is None else tuple(float(x) for x in served_attention)
        self.hardware = hardware
        self.roofline = check_roofline(roofline)
        self.rollback = check_rollback(rollback)
        self.state_write = check_state_write(state_write)
        self._rollback = rollback_constants(architecture, self.rollback)
        self.expert_count = checked_choice("expert_count", expert_count, EXPERT_COUNTS)
        self.linear_attention_flops = bool(linear_attention_flops)
        self.routing = None if routing is None else _moe.check_routing(routing, architecture.n_routed,
                                                                       architecture.top_k)
        a = architecture
        self._precision = {"dense": a.dense_precision, "ffn": a.ffn_precision, "attention": a.attention_precision}
        self._peak = {name: hardware.peak_flops(p) for name, p in self._precision.items()}
        if a.bf16_params and a.dense_params:  # the head and routers in bf16: the dense FLOPs' mean peak
            rest = a.dense_params - a.bf16_params
            self._peak["dense"] = a.dense_params / (rest / self._peak["dense"] + a.bf16_params
                                                    / hardware.peak_flops("bf16"))

    def experts_touched(self, B, T, F=nf):
        """Distinct routed experts a step touches (0 without routed experts).
        ``F`` evaluates the closed forms here and below: the numpy functions,
        or a figure's array language, which records them for the browser."""
        a = self.architecture
        if not a.is_moe:
            return 0.0 * B * T
        if self.routing is not None:
            tokens = np.broadcast_to(B * T, np.broadcast(B, T).shape)
            if self.expert_count == "top-k":  # each position picks expert i with probability k p_i
                return _moe.skewed_count(tokens, a.top_k * self.routing)
            return _moe.skewed_count(a.top_k * tokens, self.routing)  # k independent single picks
        count = F.experts_touched if self.expert_count == "top-k" else F.experts_touched_slots
        with np.errstate(divide="ignore"):  # k == E: see speclib.formulas.moe.numeric_form
            return count(B, T, a.top_k, a.n_routed)

    def cache_bytes(self, B, T, S, F=nf):
        """Bytes the step reads from the attention layers' caches (the KV
        cache or MLA latent, and DeepSeek-V4's compressed caches as served),
        without the linear layers' state: what a tensor-parallel split shares
        out by KV head (:class:`speclib.core.layout.ParallelStep`)."""
        a = self.architecture
        if self.served_attention is not None:
            return F.served_attention_bytes(B, T, S, a.context_bytes, 0.0, 0.0, *self.served_attention)
        return F.attention_bytes(B, T, S, a.attention_layers, a.context_bytes, 0.0, 0.0)

    def components(self, B, T, S, F=nf) -> dict:
        """{component: (FLOPs, bytes)} of one step."""
        a = self.architecture
        phi = a.linear_flops if self.linear_attention_flops else 0.0
        if self.served_attention is not None:
            attention_flops = F.served_attention_flops(B, T, S, a.flops_per_pair, a.linear_layers, phi,
                                                       *self.served_attention)
            attention_bytes = F.served_attention_bytes(B, T, S, a.context_bytes, a.linear_layers, a.state_bytes,
                                                       *self.served_attention)
            if not self.state_write and a.linear_layers:
                attention_bytes = attention_bytes - F.state_write_bytes(B, a.linear_layers, a.state_bytes)
        else:
            attention_flops = F.attention_flops(B, T, S, a.attention_layers, a.flops_per_pair, a.linear_layers, phi)
            moved = F.attention_bytes if self.state_write else F.attention_read_bytes
            attention_bytes = moved(B, T, S, a.attention_layers, a.context_bytes, a.linear_layers, a.state_bytes)
        if self.rollback != "none" and a.linear_layers:
            rho, psi = self._rollback
            attention_bytes = attention_bytes + F.rollback_bytes(B, T, a.linear_layers, rho)
            attention_flops = attention_flops + F.rollback_flops(B, T, a.linear_layers, psi)
        return {
            "dense": (F.dense_flops(a.dense_params, B, T), F.dense_bytes(a.dense_params, a.dense_bytes)),
            "ffn": (F.expert_flops(a.ffn_params, a.top_k, a.n_shared, B, T),
                    F.expert_bytes(a.ffn_params, a.ffn_bytes, a.n_shared, self.experts_touched(B, T, F))),
            "attention": (attention_flops, attention_bytes),
        }

    def flop_time(self, B, T, S, F=nf, precision=None):
        """Seconds of the step's FLOPs at the chip's peak: each component at
        its precision's peak, or the weights' GEMMs at ``precision``'s."""
        total = 0.0
        for name, (flops, _) in self.components(B, T, S, F).items():
            peak = self._peak[name] if precision is None or name == "attention" \
                else self.hardware.peak_flops(precision)
            total = total + flops / peak
        return total

    def component_times(self, B, T, S, F=nf) -> dict:
        """{component: seconds}, each priced by its own roofline."""
        M = self.hardware.memory_bandwidth
        return {name: F.roofline_time(flops, moved, self._peak[name], M)
                for name, (flops, moved) in self.components(B, T, S, F).items()}

    def time(self, B, T, S, F=nf):
        """Seconds of the step."""
        return self.compose(self.components(B, T, S, F), F)

    def compose(self, parts: dict, F=nf):
        """Seconds of {component: (FLOPs, bytes)} by this model's rule: each
        component its own roofline (per-component), or one roofline per
        precision stream (aggregate), the dense weights kept in bf16 (the
        output head and routers of an fp8 or fp4 checkpoint) in the bf16
        stream."""
        M = self.hardware.memory_bandwidth
        if self.roofline == "per-component":
            return sum(F.roofline_time(flops, moved, self._peak[name], M) for name, (flops, moved) in parts.items())
        a = self.architecture
        streams = {}

        def add(precision, flops, moved):
            total, bytes_ = streams.get(precision, (0.0, 0.0))
            streams[precision] = (total + flops, bytes_ + moved)

        for name, (flops, moved) in parts.items():
            if name == "dense" and a.bf16_params and a.dense_precision != "bf16":
                f16 = a.bf16_params / a.dense_params  # FLOPs go with the weights
                b16 = a.bf16_params * 2.0 / (a.dense_params * a.dense_bytes)
                add("bf16", f16 * flops, b16 * moved)
                add(a.dense_precision, (1 - f16) * flops, (1 - b16) * moved)
            else:
                add(self._precision[name], flops, moved)
        return sum(F.roofline_time(flops, moved, self.hardware.peak_flops(p), M)
                   for p, (flops, moved) in streams.items())


_cache: dict = {}


def served_attention_constants(model) -> tuple | None:
    """The constants of :data:`speclib.formulas.step.served_attention_bytes_expr`
    after (B, T, S, m_c, L_l, sigma) for ``model``: its layers by kind (full
    MLA, window only, CSA, HCA), its indexer's bytes and FLOPs per compressed
    position, the CSA and HCA ratios, CSA's top-k and the sliding window
    (:func:`speclib.core.cost.served_layers`). None for a model whose
    attention nothing compresses: it is served as the paper prices it."""
    v = served_layers(model)
    if v is None:
        return None
    return (v["full"], v["window"], v["csa"], v["hca"], v["m_ci"], v["f_i"], v["csa_ratio"], v["hca_ratio"],
            v["top_k"], v["window_tokens"])


#: How a whole step prices DeepSeek-V4's attention: as the paper prices it,
#: every layer MLA over the whole context, or as served (compressed, by
#: layer); the same choice as :data:`speclib.core.cost.ATTENTIONS`.
ATTENTIONS = ("paper", "served")


def step_model(model=None, hardware=None, *, roofline: str = "per-component", expert_count: str = "top-k",
               linear_attention_flops: bool = False, routing=None, rollback: str = "none",
               attention: str = DEFAULT_ATTENTION, state_write: bool = True) -> StepModel:
    """The (cached) :class:`StepModel` of a whole ``model`` on ``hardware``;
    ``attention``: :data:`ATTENTIONS` (as served unless ``"paper"``)."""
    model, hardware = resolve(model, hardware)
    served = (served_attention_constants(model) if checked_choice("attention", attention, ATTENTIONS) == "served"
              else None)
    shares = None
    if routing is not None:
        if not model.ffn.is_moe:
            raise ValueError(f"routing is for mixture-of-experts models; {model.name} is dense")
        shares = _moe.check_routing(routing, model.ffn.n_routed, model.ffn.top_k)
    key = (model, hardware, check_roofline(roofline), checked_choice("expert_count", expert_count, EXPERT_COUNTS),
           bool(linear_attention_flops), None if shares is None else shares.tobytes(), check_rollback(rollback),
           served, check_state_write(state_write))
    if key not in _cache:
        _cache[key] = StepModel(model.step_architecture(), hardware, roofline=roofline, expert_count=expert_count,
                                linear_attention_flops=linear_attention_flops, routing=shares, rollback=rollback,
                                served_attention=served, state_write=state_write)
    return _cache[key]


def step_time(B, T, S, model=None, hardware=None, *, roofline: str = "per-component", expert_count: str = "top-k",
              routing=None, rollback: str = "none"):
    """Seconds of one forward step of the whole ``model`` over ``B`` sequences
    of ``T`` positions each at context ``S``; broadcasts. ``routing``: a
    measured expert popularity instead of uniform routing. ``rollback``: see
    :data:`ROLLBACKS`. DeepSeek-V4's attention as served
    (:func:`step_model` prices it as the paper does with ``attention="paper"``)."""
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    T_arr = checked_array("T", T, lo=1, integer=True)
    S_arr = checked_array("S", S, lo=0)
    out = step_model(model, hardware, roofline=roofline, expert_count=expert_count, routing=routing,
                     rollback=rollback).time(B_arr, T_arr, S_arr)
    return float(out) if np.ndim(out) == 0 else out
