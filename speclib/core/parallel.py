"""Expert parallelism: the routed experts of every MoE layer spread over G GPUs,
and the all-to-all traffic that spreading costs.

Assumptions (each one is a choice; the chapter ``expert_parallelism`` argues
for them):

* **Batch per GPU.** ``B`` is the number of sequences *each* GPU decodes.
  Attention and its projections are data-parallel: every GPU holds a full
  copy of the attention weights and runs attention for its own B sequences
  only, so those costs are the single-GPU ones at batch B. The EP group as a
  whole decodes G*B sequences.
* **Experts.** Each GPU holds E/G of the routed experts (contiguous blocks; G
  need not divide E, E/G is then an average) and a replica of every shared
  expert, which it applies to its own tokens without any traffic.
* **Uniform routing.** Each of the G*t tokens of a step (t = B*q per GPU, q
  the verify width) picks k distinct routed experts uniformly at random,
  independently of every other token, as in the paper's single-GPU model.
* **Dispatch and combine.** A token's hidden vector (h elements) is sent to
  the GPU of each routed expert it picks (dispatch, ``dispatch_bytes`` per
  element: 1, fp8, by default) and that expert's output comes back (combine,
  ``combine_bytes``: 2, bf16), as DeepEP does. A pick that lands on the
  token's own GPU (probability 1/G) moves nothing. Picks are not merged per
  destination GPU (a token picking two experts on one GPU sends twice), so
  the traffic is an upper bound for deduplicating kernels.
* **Link accounting.** By symmetry every GPU sends as many bytes as it
  receives. The interconnect figure is the per-GPU bandwidth with both
  directions counted (NVLink 5: 1.8 TB/s = 900 GB/s each way), so the time is
  (bytes sent + bytes received) / bandwidth. It is expressed in HBM
  byte-equivalents, bytes x (HBM bandwidth / link bandwidth), so it adds to
  the roofline costs of :mod:`speclib.core.cost` directly.
* **Latency.** Each MoE layer's all-to-all also waits for
  :data:`MESSAGES_PER_LAYER` message latencies per step, a dispatch and a combine, whatever the tokens: DeepEP's low-latency
  kernels send one message per token and routed pick and one count per
  expert, all in flight at once, so a phase costs one latency, not one per
  message or per peer. The latency is the interconnect preset's (the time a
  dispatch or a combine that moves next to nothing takes, measured);
  ``latency=False`` prices the all-to-all by bandwidth alone, as this model
  did before. The latency is paid by a plain step and a verify step alike,
  so it makes a speculated token cheaper relative to the step; the bandwidth
  charges every token.
* **No overlap.** The communication time adds to the compute/memory time.
  Overlapping it with other work (two micro-batches, as DeepSeek's serving
  stack does) would hide it up to the size of the other work; this model
  leaves that out.
* **One flat network.** All G GPUs share one interconnect preset; a G larger
  than the preset's domain (8 GPUs on an HGX board, 72 in an NVL72 rack) is
  refused rather than silently mixing two networks.

Every formula is a sympy expression in :mod:`speclib.formulas.parallel`, built
on those of :mod:`speclib.formulas.cost` and :mod:`speclib.formulas.moe`; the
interconnects are presets (:func:`speclib.presets.interconnect`).
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_array, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import Interconnect, default_interconnect, interconnect, interconnect_names, resolve
from . import cost as _cost
from . import moe as _moe
from . import speculation as _spec
from .cost import CostModel, check_batch, check_context, check_draft_cost
from .deployment import Deployment


interconnect_preset = interconnect  # for functions whose argument ``interconnect`` shadows it

#: Messages on the critical path of one MoE layer's all-to-all in a step. In
#: DeepEP's low-latency mode (``csrc/kernels/internode_ll.cu``) the dispatch
#: sends one message per token and routed pick (not merged per destination
#: GPU) and then one count message per expert, each from its own warp, all in
#: flight at once; each receiver waits for the counts of every peer, and the
#: combine does the same on the way back. The messages overlap, so a phase
#: costs one message latency whatever the number of peers: a dispatch and a
#: combine, two per MoE layer.
MESSAGES_PER_LAYER = 2

#: The local MoE roofline, its arguments those of the single-GPU one plus G.
EP_MOE_ROOFLINE = _cost.Roofline("ep_moe", 1)


def check_gpus(G_value, n_routed: int) -> int:
    return checked_int("G", G_value, lo=1, hi=n_routed)


class ExpertParallelCostModel(CostModel):
    """:class:`speclib.core.cost.CostModel` with the MoE spread over ``G`` GPUs and
    an all-to-all communication term; ``B`` is sequences per GPU.

    ``ffn`` is the local MoE roofline (A_local distinct experts), ``comm``
    the all-to-all's time in HBM byte-equivalents (its latency, unless
    ``latency=False``, plus its bytes over the link bandwidth), and
    ``verify`` adds ``comm`` to the single-GPU sum of projections, FFN and
    attention. With no interconnect (``interconnect=FREE_NETWORK`` in the
    functions below) the communication term is zero, which isolates what
    spreading the experts does to the MoE tax.
    """

    def __init__(self, model, hardware, G: int, interconnect_preset, query_bytes: bool = False,
                 *, dispatch_bytes: float = 1.0, combine_bytes: float = 2.0, latency: bool = True,
                 attention: str = _cost.DEFAULT_ATTENTION):
        if not model.ffn.is_moe:
            raise ValueError(f"expert parallelism needs a mixture-of-experts model; {model.name} has a dense FFN")
        super().__init__(model, hardware, query_bytes, attention)
        ffn = model.ffn
        self.G = check_gpus(G, ffn.n_routed)
        #: None: a free network (the all-to-all costs nothing).
        self.interconnect = interconnect_preset
        self.include_comm = interconnect_preset is not None
        domain = interconnect_preset.domain_size if self.include_comm else None
        if domain is not None and self.G > domain:
            raise ValueError(
                f"G must be in [1, {domain}] on {interconnect_preset.name} (one all-to-all domain holds {domain} GPUs); "
                f"got {self.G}. Use a larger domain (such as {NVL72!r}) or a scale-out preset such as 'InfiniBand-NDR'"
            )
        self.dispatch_bytes = float(checked_array("dispatch_bytes", dispatch_bytes, lo=0, lo_open=True))
        self.combine_bytes = float(checked_array("combine_bytes", combine_bytes, lo=0, lo_open=True))
        self.rooflines["moe"] = _cost.BoundRoofline(
            EP_MOE_ROOFLINE,
            (ffn.top_k, ffn.n_routed, ffn.n_shared, float(model.expert_params), ffn.weight_bytes,
             hardware.gemm_ridge(ffn.precision, model.activations), float(self.G)),
        )
        self._comm_args = None if not self.include_comm else (
            ffn.top_k, float(self.G), model.hidden_size, self.dispatch_bytes, self.combine_bytes,
            hardware.memory_bandwidth, interconnect_preset.bandwidth,
        )
        if not isinstance(latency, (bool, np.bool_)):
            raise ValueError(f"latency must be True or False; got {latency!r}")
        #: Whether the all-to-all waits for its messages' latency (always
        #: False without communication, or at G = 1, where nothing is sent).
        self.latency = bool(latency) and self.include_comm and self.G > 1
        if self.latency and interconnect_preset.latency is None:
            raise ValueError(f"interconnect {interconnect_preset.name!r} has no latency (latency_us in its preset: "
                             "no published measurement); pass latency=False to price its all-to-all by bandwidth "
                             "alone")
        #: (messages per MoE layer per step, seconds each)
        self._latency_args = (float(MESSAGES_PER_LAYER), interconnect_preset.latency) if self.latency \
            else None

    def with_latency(self, latency: bool) -> "ExpertParallelCostModel":
        """The same cost model with its all-to-all's latency priced (True) or
        left out (False)."""
        if bool(latency) == self.latency or not self.include_comm or self.G == 1:
            return self
        return expert_parallel_cost_model(self.model, self.hardware, self.G, self.interconnect,
                                          query_bytes=self.query_bytes, dispatch_bytes=self.dispatch_bytes,
                                          combine_bytes=self.combine_bytes, latency=latency,
                                          attention=self.attention_kind)

    # costs -------------------------------------------------------------------
    def comm_latency(self, tokens=0.0):
        """The all-to-all's latency per step in HBM byte-equivalents, the same
        for any number of tokens (zero when it is left out)."""
        if self._latency_args is None:
            return 0.0 * np.asarray(tokens, dtype=float)
        return nf.comm_latency_cost(*self._latency_args, self.hardware.memory_bandwidth) + 0.0 * np.asarray(
            tokens, dtype=float)

    def comm(self, tokens):
        """All-to-all time of a step of ``tokens`` tokens per GPU, in HBM
        byte-equivalents: its latency plus its bytes over the link bandwidth
        (zero at G = 1 or without communication)."""
        if not self.include_comm:
            return 0.0 * np.asarray(tokens, dtype=float)
        return nf.comm_cost(tokens, *self._comm_args) + self.comm_latency(tokens)

    def latency_crossover(self) -> float:
        """Tokens per GPU at which the all-to-all's bandwidth term equals its
        latency (the latency dominates below it); inf without latency or traffic."""
        if self._latency_args is None:
            return float("inf")
        k, G, h, b_d, b_c, _, L = self._comm_args
        return float(nf.comm_latency_crossover(k, G, h, b_d, b_c, L, *self._latency_args))

    def verify(self, batch, width, context):
        return super().verify(batch, width, context) + self.comm(batch * width)

    def local_experts(self, tokens):
        """A_local: distinct routed experts one GPU reads at ``tokens`` per GPU."""
        return nf.local_experts(tokens, self.model.ffn.top_k, self.model.ffn.n_routed, float(self.G))

    # slopes ------------------------------------------------------------------
    def comm_slope(self, tokens):
        """d log C_comm / d log tokens: 1 by bandwidth alone, the bandwidth
        term's share of the all-to-all with its latency."""
        if not self.include_comm or self.G == 1:
            return 0.0 * np.asarray(tokens, dtype=float)
        if self._latency_args is not None:
            return nf.comm_total_slope(tokens, *self._comm_args, *self._latency_args) + 0 * np.asarray(tokens,
                                                                                                       dtype=float)
        return nf.comm_slope(tokens, *self._comm_args) + 0 * np.asarray(tokens, dtype=float)


_cache: dict = {}

#: The ``interconnect`` that costs nothing: the all-to-all is free, which
#: isolates what spreading the experts does to the expert tax.
FREE_NETWORK = "free"

#: The network of the post's 64-GPU expert-parallel group: one NVLink 5 domain
#: of 72 GPUs, as a GB200 NVL72 rack joins them. An HGX B200 board's NVLink 5
#: (the B200 preset's own) joins 8, too few for G = 64; the book prices the
#: group on B200s (the paper's chip and peaks) joined by this domain.
NVL72 = "NVLink5-NVL72"


def network(hardware, interconnect):
    """The interconnect preset (None for :data:`FREE_NETWORK`); the chip's own by default."""
    if isinstance(interconnect, str) and interconnect.strip().lower() == FREE_NETWORK:
        return None
    if interconnect is None:
        return default_interconnect(hardware)
    try:
        return interconnect_preset(interconnect)
    except ValueError as error:
        raise ValueError(f"{error} (or {FREE_NETWORK!r}: no link cost)") from None


def expert_parallel_cost_model(model=None, hardware=None, G: int = 8, interconnect=None, *, query_bytes: bool = False,
                               dispatch_bytes: float = 1.0, combine_bytes: float = 2.0,
                               latency: bool = True,
                               attention: str = _cost.DEFAULT_ATTENTION) -> ExpertParallelCostModel:
    """The (cached) :class:`ExpertParallelCostModel` of ``model`` on
    ``hardware`` with experts over ``G`` GPUs joined by ``interconnect``: a
    preset or its name, :data:`FREE_NETWORK` for no link cost, or None for the
    scale-up network the chip preset names (:func:`speclib.presets.default_interconnect`).
    ``latency``: price the all-to-all with its messages' latency (the
    interconnect preset's; refused, naming the field, for one without) or,
    False, by bandwidth alone. ``attention``: DeepSeek-V4's attention as
    served or as the paper prices it (:data:`speclib.core.cost.ATTENTIONS`).
    Pass it as ``Deployment(cost_model=...)`` to :func:`speclib.speedup` and
    the rest for what the wrappers below leave out (``query_bytes``,
    ``latency``, ``attention``)."""
    model, hardware = resolve(model, hardware)
    net = network(hardware, interconnect)
    attention = _cost.check_attention(attention)
    key = (model, hardware, G, net, bool(query_bytes), dispatch_bytes, combine_bytes, latency, attention)
    if key not in _cache:
        _cache[key] = ExpertParallelCostModel(model, hardware, G, net, query_bytes, dispatch_bytes=dispatch_bytes,
                                              combine_bytes=combine_bytes, latency=latency, attention=attention)
    return _cache[key]


def local_experts_activated(tokens_per_gpu, k_value, E_value, G_value):
    """Expected distinct routed experts one GPU reads when each of the
    ``G * tokens_per_gpu`` tokens of the EP group picks ``k`` of ``E`` experts
    uniformly and the GPU holds ``E/G`` of them; broadcasts over tokens."""
    tokens = checked_array("tokens_per_gpu", tokens_per_gpu, lo=0, lo_open=True)
    k_arr, E_arr = _moe._check_experts(k_value, E_value)
    G_arr = checked_array("G", G_value, lo=1, integer=True)
    if (G_arr > E_arr).any():
        raise ValueError("G must be in [1, E] (each GPU holds at least one expert)")
    return scalar_or_array(nf.local_experts(tokens, k_arr, E_arr, G_arr))


def comm_bytes_per_token(model=None, G: int = 8, *, dispatch_bytes: float = 1.0, combine_bytes: float = 2.0) -> float:
    """Link bytes one token moves through its GPU's ports per MoE layer (sent
    plus received), from :data:`speclib.formulas.parallel.link_bytes_per_token_expr`."""
    model, _ = resolve(model, None)
    if not model.ffn.is_moe:
        raise ValueError(f"expert parallelism needs a mixture-of-experts model; {model.name} has a dense FFN")
    G = check_gpus(G, model.ffn.n_routed)
    return float(nf.link_bytes_per_token(model.ffn.top_k, G, model.hidden_size, dispatch_bytes, combine_bytes))


# --- speedup and gamma* ---------------------------------------------------------------


def speedup(alpha, gamma, B, S, c_draft=0.1, model=None, hardware=None, *, G: int = 8, interconnect=None):
    """:func:`speclib.speedup` with the experts over ``G`` GPUs joined by
    ``interconnect`` (as :func:`expert_parallel_cost_model` reads it); ``B`` is
    sequences per GPU. ``alpha`` may be a survival curve."""
    cm = expert_parallel_cost_model(model, hardware, G, interconnect)
    return _spec.speedup(alpha, gamma, B, S, c_draft, deployment=Deployment(cost_model=cm))


def optimal_gamma(alpha, B, S, c_draft=0.1, model=None, hardware=None, gamma_max: int = 64, *, G: int = 8,
                  interconnect=None):
    """:func:`speclib.optimal_gamma` with the experts over ``G`` GPUs joined
    by ``interconnect``; ``B`` is sequences per GPU. Returns (gamma*, speedup)."""
    cm = expert_parallel_cost_model(model, hardware, G, interconnect)
    return _spec.optimal_gamma(alpha, B, S, c_draft, gamma_max=gamma_max, deployment=Deployment(cost_model=cm))


COMPONENTS = ("attn_proj", "moe", "attention", "comm")


def marginal_cost(B, S, c_draft=0.1, model=None, hardware=None, *, G: int = 8, interconnect=None, verify_width=2):
    """The paper's ledger (:func:`speclib.marginal_cost`) with expert
    parallelism: each component's slope r, the communication term's slope
    (1 by bandwidth alone, below 1 where its latency dominates), and
    ``total`` = the slopes blended by each component's share of a plain
    decode step, plus ``c_draft`` (:func:`ledger` of the cost model the other
    arguments name)."""
    cm = expert_parallel_cost_model(model, hardware, G, interconnect)
    return ledger(cm, B, S, c_draft, verify_width=verify_width)


def ledger(cost_model: ExpertParallelCostModel, B, S, c_draft=0.1, *, verify_width=2):
    """:func:`marginal_cost` of an :class:`ExpertParallelCostModel` (any
    network, with or without the all-to-all's latency); ``comm_share`` is
    the all-to-all's share of a plain step's cost."""
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    width = checked_array("verify_width", verify_width, lo=1)
    cm = cost_model
    if not isinstance(cm, ExpertParallelCostModel):
        raise ValueError(f"cost_model must be an ExpertParallelCostModel (expert_parallel_cost_model); got {cm!r}")
    B_arr, S_arr, c_arr = np.broadcast_arrays(B_arr, S_arr, c_arr)
    costs = {
        "attn_proj": cm.proj(B_arr),
        "moe": cm.ffn(B_arr),
        "attention": cm.attention(B_arr, 1.0, S_arr),
        "comm": cm.comm(B_arr) + 0 * B_arr,
    }
    slopes = {
        "attn_proj": cm.proj_slope(B_arr),
        "moe": cm.ffn_slope(B_arr),
        "attention": cm.attention_slope(B_arr, width, S_arr),
        "comm": cm.comm_slope(B_arr) + 0 * B_arr,
    }
    total_cost = sum(costs.values())
    out = {name: scalar_or_array(slopes[name]) for name in COMPONENTS}
    out["drafter"] = scalar_or_array(c_arr)
    out["total"] = scalar_or_array(sum(slopes[n] * costs[n] / total_cost for n in COMPONENTS) + c_arr)
    out["comm_share"] = scalar_or_array(costs["comm"] / total_cost)
    return out
