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
  the roofline costs of :mod:`speclib.cost` directly.
* **No overlap.** The communication time adds to the compute/memory time.
  Overlapping it with other work (two micro-batches, as DeepSeek's serving
  stack does) would hide it up to the size of the other work; this model
  leaves that out, so it is the pessimistic end.
* **One flat network.** All G GPUs share one interconnect preset; a G larger
  than the preset's domain (8 GPUs on an HGX board, 72 in an NVL72 rack) is
  refused rather than silently mixing two networks.

Every formula is a sympy expression built on :mod:`speclib.cost` and
:mod:`speclib.moe`; the numeric functions are lambdified once at import.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import sympy as sp

from . import cost as _cost
from . import moe as _moe
from . import speculation as _spec
from ._checks import checked_array, checked_int, scalar_or_array
from .cost import CostModel, check_batch, check_context, check_draft_cost
from .presets import Hardware, lookup, resolve
from .tables import NumberTable, RendersAsTable

t = _cost.t  # tokens per GPU in one step
k, E, n_s, b, W_E, R = _moe.k, _moe.E, _moe.n_s, _moe.b, _cost.W_E, _cost.R
G = sp.Symbol("G", positive=True)  # GPUs the routed experts are spread over
_G_SYMBOL = G  # for functions whose argument G shadows the symbol
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

#: The local MoE roofline, its arguments those of the single-GPU one plus G.
EP_MOE_ROOFLINE = _cost.Roofline("ep_moe", ep_moe_cost_expr, ep_moe_slope_expr, (t, k, E, n_s, W_E, b, R, G), 1)
_local_experts = sp.lambdify((t, k, E, G), _moe.numeric_form(local_experts_expr), "numpy")
_comm_args = (t, k, G, h, b_d, b_c, M, L)
_comm_cost = sp.lambdify(_comm_args, comm_cost_expr, "numpy")
_comm_slope = sp.lambdify(_comm_args, comm_slope_expr + 0 * t, "numpy")

# --- interconnect presets ------------------------------------------------------------

GB = 1e9


@dataclass(frozen=True)
class Interconnect:
    """A GPU-to-GPU network as one GPU sees it.

    ``bandwidth``: bytes/s per GPU with both directions counted (half of it
    each way). ``domain_size``: the most GPUs it joins into one all-to-all
    domain (None for a scale-out network with no such limit).
    """

    name: str
    bandwidth: float
    domain_size: Optional[int]
    source: str
    aliases: tuple = ()


NVLINK4 = Interconnect(
    name="NVLink4",
    bandwidth=900 * GB,
    domain_size=8,
    source="NVIDIA H100 and H200 Tensor Core GPU datasheets (SXM): fourth-generation NVLink, 900 GB/s per GPU "
    "(18 links x 50 GB/s, both directions); 8 GPUs per HGX baseboard through NVSwitch",
    aliases=("nvlink-4", "nvlink 4"),
)

NVLINK5 = Interconnect(
    name="NVLink5",
    bandwidth=1800 * GB,
    domain_size=72,
    source="NVIDIA DGX B200 and GB200 NVL72 datasheets: fifth-generation NVLink, 1.8 TB/s per GPU "
    "(18 links x 100 GB/s, both directions); up to 72 GPUs in one NVLink domain in an NVL72 rack "
    "(an 8-GPU HGX B200 board has the same per-GPU bandwidth but only 8 GPUs)",
    aliases=("nvlink-5", "nvlink 5"),
)

INFINITY_FABRIC_MI300 = Interconnect(
    name="InfinityFabric-MI300",
    bandwidth=7 * 128 * GB,
    domain_size=8,
    source="AMD Instinct MI300X and MI325X data sheets: 7 AMD Infinity Fabric links per GPU at 128 GB/s peak each "
    "(both directions), 896 GB/s per GPU, fully connecting 8 GPUs on a platform board",
    aliases=("if-mi300x", "infinity-fabric-mi300x", "if-mi325x"),
)

INFINITY_FABRIC_MI355 = Interconnect(
    name="InfinityFabric-MI355",
    bandwidth=7 * 153.6 * GB,
    domain_size=8,
    source="AMD Instinct MI355X data sheet: 7 AMD Infinity Fabric links per GPU at 153.6 GB/s peak each "
    "(both directions), 1,075.2 GB/s per GPU, fully connecting 8 GPUs on a platform board",
    aliases=("if-mi355x", "infinity-fabric-mi355x"),
)

INFINIBAND_NDR = Interconnect(
    name="InfiniBand-NDR",
    bandwidth=2 * 50 * GB,
    domain_size=None,
    source="NVIDIA ConnectX-7 / Quantum-2 InfiniBand NDR: one 400 Gb/s (50 GB/s each way) port per GPU, "
    "the usual scale-out network of H100/H200/B200 clusters",
    aliases=("ib-ndr", "infiniband", "ndr"),
)

_INTERCONNECTS = [NVLINK4, NVLINK5, INFINITY_FABRIC_MI300, INFINITY_FABRIC_MI355, INFINIBAND_NDR]

#: The scale-up network each chip preset ships with, by hardware name.
DEFAULT_INTERCONNECT = {
    "B200": "NVLink5",
    "GB300": "NVLink5",
    "B300": "NVLink5",
    "H100-SXM": "NVLink4",
    "H200": "NVLink4",
    "MI300X": "InfinityFabric-MI300",
    "MI325X": "InfinityFabric-MI300",
    "MI355X": "InfinityFabric-MI355",
}


def interconnect(name) -> Interconnect:
    """The interconnect preset called ``name`` (case-insensitive), or
    ``name`` itself if it already is an :class:`Interconnect`."""
    if isinstance(name, Interconnect):
        return name
    return lookup("interconnect", name, _INTERCONNECTS)


_lookup_interconnect = interconnect  # for functions whose argument shadows the name


def interconnect_names() -> list:
    return [item.name for item in _INTERCONNECTS]


def default_interconnect(hardware) -> Interconnect:
    """The scale-up interconnect of ``hardware`` (a preset or its name)."""
    _, hw = resolve(None, hardware)
    if hw.name not in DEFAULT_INTERCONNECT:
        raise ValueError(
            f"no default interconnect for hardware {hw.name!r}; pass interconnect= one of {', '.join(interconnect_names())}"
        )
    return interconnect(DEFAULT_INTERCONNECT[hw.name])


# --- the cost model ------------------------------------------------------------------


def check_gpus(G_value, n_routed: int) -> int:
    return checked_int("G", G_value, lo=1, hi=n_routed)


class ExpertParallelCostModel(CostModel):
    """:class:`speclib.cost.CostModel` with the MoE spread over ``G`` GPUs and
    an all-to-all communication term; ``B`` is sequences per GPU.

    ``ffn`` is the local MoE roofline (A_local distinct experts), ``comm``
    the link time in HBM byte-equivalents, and ``verify`` adds ``comm`` to the
    single-GPU sum of projections, FFN and attention. With
    ``include_comm=False`` the communication term is zero (a free network),
    which isolates what spreading the experts does to the MoE tax.
    """

    def __init__(self, model, hardware, G: int, interconnect_preset: Interconnect, query_bytes: bool = False,
                 *, include_comm: bool = True, dispatch_bytes: float = 1.0, combine_bytes: float = 2.0):
        if not model.ffn.is_moe:
            raise ValueError(f"expert parallelism needs a mixture-of-experts model; {model.name} has a dense FFN")
        super().__init__(model, hardware, query_bytes)
        ffn = model.ffn
        self.G = check_gpus(G, ffn.n_routed)
        self.interconnect = interconnect_preset
        domain = interconnect_preset.domain_size
        if domain is not None and self.G > domain:
            raise ValueError(
                f"G must be in [1, {domain}] on {interconnect_preset.name} (one all-to-all domain holds {domain} GPUs); "
                f"got {self.G}. Use a larger domain or a scale-out preset such as 'InfiniBand-NDR'"
            )
        self.include_comm = bool(include_comm)
        self.dispatch_bytes = float(checked_array("dispatch_bytes", dispatch_bytes, lo=0, lo_open=True))
        self.combine_bytes = float(checked_array("combine_bytes", combine_bytes, lo=0, lo_open=True))
        self.rooflines["moe"] = _cost.BoundRoofline(
            EP_MOE_ROOFLINE,
            (ffn.top_k, ffn.n_routed, ffn.n_shared, float(model.expert_params), ffn.weight_bytes,
             hardware.ridge(ffn.precision), float(self.G)),
        )
        self._comm_args = (
            ffn.top_k,
            float(self.G),
            model.hidden_size,
            self.dispatch_bytes,
            self.combine_bytes,
            hardware.memory_bandwidth,
            interconnect_preset.bandwidth,
        )

    # costs -------------------------------------------------------------------
    def comm(self, tokens):
        """All-to-all time of a step of ``tokens`` tokens per GPU, in HBM
        byte-equivalents (zero at G = 1 or without communication)."""
        if not self.include_comm:
            return 0.0 * np.asarray(tokens, dtype=float)
        return _comm_cost(tokens, *self._comm_args)

    def verify(self, batch, width, context):
        return super().verify(batch, width, context) + self.comm(batch * width)

    def local_experts(self, tokens):
        """A_local: distinct routed experts one GPU reads at ``tokens`` per GPU."""
        return _local_experts(tokens, self.model.ffn.top_k, self.model.ffn.n_routed, float(self.G))

    # slopes ------------------------------------------------------------------
    def comm_slope(self, tokens):
        if not self.include_comm or self.G == 1:
            return 0.0 * np.asarray(tokens, dtype=float)
        return _comm_slope(tokens, *self._comm_args)


_cache: dict = {}


def expert_parallel_cost_model(model=None, hardware=None, G: int = 8, interconnect=None, *, query_bytes: bool = False,
                               include_comm: bool = True, dispatch_bytes: float = 1.0,
                               combine_bytes: float = 2.0) -> ExpertParallelCostModel:
    """The (cached) :class:`ExpertParallelCostModel` of ``model`` on
    ``hardware`` with experts over ``G`` GPUs joined by ``interconnect``
    (default: the chip's scale-up network, see :data:`DEFAULT_INTERCONNECT`)."""
    model, hardware = resolve(model, hardware)
    net = default_interconnect(hardware) if interconnect is None else _lookup_interconnect(interconnect)
    key = (model, hardware, G, net, bool(query_bytes), bool(include_comm), dispatch_bytes, combine_bytes)
    if key not in _cache:
        _cache[key] = ExpertParallelCostModel(model, hardware, G, net, query_bytes, include_comm=include_comm,
                                              dispatch_bytes=dispatch_bytes, combine_bytes=combine_bytes)
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
    return scalar_or_array(_local_experts(tokens, k_arr, E_arr, G_arr))


def comm_bytes_per_token(model=None, G: int = 8, *, dispatch_bytes: float = 1.0, combine_bytes: float = 2.0) -> float:
    """Link bytes one token moves through its GPU's ports per MoE layer (sent
    plus received), from :data:`link_bytes_per_token_expr`."""
    model, _ = resolve(model, None)
    if not model.ffn.is_moe:
        raise ValueError(f"expert parallelism needs a mixture-of-experts model; {model.name} has a dense FFN")
    G = check_gpus(G, model.ffn.n_routed)
    values = {k: model.ffn.top_k, _G_SYMBOL: G, h: model.hidden_size, b_d: dispatch_bytes, b_c: combine_bytes}
    return float(link_bytes_per_token_expr.subs(values))


# --- speedup and gamma* ---------------------------------------------------------------


def speedup(alpha, gamma, B, S, c_draft=0.1, model=None, hardware=None, *, G: int = 8, interconnect=None,
            include_comm: bool = True, query_bytes: bool = False):
    """:func:`speclib.speedup` with the experts over ``G`` GPUs; ``B`` is
    sequences per GPU. ``alpha`` may be a survival curve."""
    cm = expert_parallel_cost_model(model, hardware, G, interconnect, query_bytes=query_bytes, include_comm=include_comm)
    return _spec.speedup(alpha, gamma, B, S, c_draft, cost_model=cm)


def optimal_gamma(alpha, B, S, c_draft=0.1, model=None, hardware=None, gamma_max: int = 64, *, G: int = 8,
                  interconnect=None, include_comm: bool = True, query_bytes: bool = False):
    """:func:`speclib.optimal_gamma` with the experts over ``G`` GPUs; ``B``
    is sequences per GPU. Returns (gamma*, speedup)."""
    cm = expert_parallel_cost_model(model, hardware, G, interconnect, query_bytes=query_bytes, include_comm=include_comm)
    return _spec.optimal_gamma(alpha, B, S, c_draft, gamma_max=gamma_max, cost_model=cm)


COMPONENTS = ("attn_proj", "moe", "attention", "comm")


def marginal_cost(B, S, c_draft=0.1, model=None, hardware=None, *, G: int = 8, interconnect=None,
                  include_comm: bool = True, query_bytes: bool = False, verify_width=2):
    """The paper's ledger (:func:`speclib.marginal_cost`) with expert
    parallelism: each component's slope r, the communication term's slope
    (1 whenever there is traffic), and ``total`` = the slopes blended by each
    component's share of a plain decode step, plus ``c_draft``."""
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    width = checked_array("verify_width", verify_width, lo=1)
    cm = expert_parallel_cost_model(model, hardware, G, interconnect, query_bytes=query_bytes, include_comm=include_comm)
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


# --- presentation: the chapter's derivation and summary -----------------------------------


def derivation(model=None, hardware=None, G: int = 64, interconnect=None, *, dispatch_bytes: float = 1.0,
               combine_bytes: float = 2.0):
    """The expert-parallel model as a sympy step list (a
    :class:`speclib.derivations.Derivation`), with ``model`` on ``hardware``
    and ``G`` GPUs put in at the end; identities are checked before they are
    shown."""
    from .derivations import Derivation, Step

    model, hardware = resolve(model, hardware)
    net = default_interconnect(hardware) if interconnect is None else _lookup_interconnect(interconnect)
    ffn = model.ffn
    if not ffn.is_moe:
        raise ValueError(f"expert parallelism needs a mixture-of-experts model; {model.name} has a dense FFN")
    T = sp.Symbol("T", positive=True)
    A_loc, P, C_comm, r_comm = sp.symbols("A_local P_hit C_comm r_comm")
    single = _moe.experts_activated_expr.subs(_moe.B, t)
    if sp.simplify(local_experts_expr.subs(_G_SYMBOL, 1) - single) != 0:  # pragma: no cover
        raise ArithmeticError("A_local at G = 1 is not the single-GPU coupon count")
    if comm_slope_expr != 1:  # pragma: no cover
        raise ArithmeticError("the communication slope is not 1")
    values = {k: ffn.top_k, E: ffn.n_routed, _G_SYMBOL: G, h: model.hidden_size, b_d: sp.nsimplify(dispatch_bytes),
              b_c: sp.nsimplify(combine_bytes), M: sp.nsimplify(hardware.memory_bandwidth), L: sp.nsimplify(net.bandwidth)}
    per_token_link = link_bytes_per_token_expr.subs(values)
    per_token_hbm = (comm_cost_expr / t).subs(values)
    moe_compute_per_token = (_cost.moe_compute_expr / t).subs(
        {k: ffn.top_k, n_s: ffn.n_shared, W_E: model.expert_params, R: sp.nsimplify(hardware.ridge(ffn.precision))})
    steps = (
        Step("hit", "One expert is hit by at least one of T tokens (the coupon count per expert)",
             (P, expert_hit_probability_expr.subs(_moe.B, T))),
        Step("local", "A GPU's E/G experts see all G t tokens of the group: expected distinct local experts",
             (A_loc, local_experts_expr)),
        Step("one", "At G = 1 this is the single-GPU count A(t)", (local_experts_expr.subs(_G_SYMBOL, 1), single)),
        Step("picks", "Routed picks landing on one GPU (its share of G t k)", (sp.Symbol("picks"), local_picks_expr)),
        Step("bytes", "Link bytes per token (dispatch + combine, each remote pick, sent and received)",
             (sp.Symbol("bytes_link"), link_bytes_per_token_expr)),
        Step("comm", "Communication cost of a step, in HBM byte-equivalents", (C_comm, comm_cost_expr)),
        Step("slope", "Its log-slope in tokens: every token pays in full", (r_comm, comm_slope_expr)),
        Step("value_link", f"{model.name}, G = {G}: link bytes per token per MoE layer",
             (sp.Symbol("bytes_link"), per_token_link), approx=None),
        Step("value_hbm", f"... as HBM byte-equivalents on {hardware.name} + {net.name}",
             (C_comm / t, per_token_hbm), approx=None if per_token_hbm.is_Integer else per_token_hbm),
        Step("value_compute", "for scale: the MoE compute per token, in the same units",
             (sp.Symbol("C_MoE_compute") / t, moe_compute_per_token), approx=moe_compute_per_token),
    )
    return Derivation(f"Expert parallelism: local experts and the all-to-all ({model.name})", steps)


class ExpertParallelSummary(RendersAsTable):
    """Per G: where speculation pays (gamma* >= 1) against the batch per GPU,
    the best speedup and where, and what the all-to-all costs in speedup."""

    def __init__(self, rows, batches, S, alpha, c_draft, label):
        self.rows, self.batches = rows, batches
        self.S, self.alpha, self.c_draft, self.label = S, alpha, c_draft, label

    _HEAD = ("G", "gamma* = 0 (batch per GPU)", "largest gamma*", "best speedup", "at batch",
             "speedup lost to all-to-all (max)", "batches where comm changes gamma*")

    def _caption(self):
        return (f"Expert parallelism, {self.label}: S = {self.S:,.0f}, alpha = {self.alpha:.0%}, drafter "
                f"{self.c_draft:.0%} of a step, batch per GPU {self.batches[0]:,.0f} to {self.batches[-1]:,.0f}")

    def _cells(self, r):
        return (str(r["G"]), r["zero"], str(r["gmax"]), f"{r['best']:.3f}", f"{r['best_at']:,.0f}",
                f"{r['comm_loss']:.1%}", str(r["comm_changes"]))

    def as_table(self) -> NumberTable:
        return NumberTable(self._HEAD, tuple(self._cells(r) for r in self.rows), caption=self._caption(),
                           css_class="speclib-ep-summary", align="rl")


def _zero_runs(B, g):
    zero = g == 0
    edges = np.flatnonzero(np.diff(np.concatenate([[0], zero.astype(np.int8), [0]])))
    runs = [f"{B[a]:,.0f}-{B[b - 1]:,.0f}" for a, b in zip(edges[::2], edges[1::2])]
    return ", ".join(runs) if runs else "never"


def summary(Gs=(1, 8, 64), model=None, hardware=None, *, S=4096, alpha=0.75, c_draft=0.1, interconnect=None,
            B=None) -> ExpertParallelSummary:
    """:class:`ExpertParallelSummary` over ``B`` (default 1..4,096 sequences
    per GPU, whole numbers, about 300 log-spaced)."""
    m, hw = resolve(model, hardware)
    if B is None:
        B = np.unique(np.round(np.geomspace(1, 4096, 300)))
    B = check_batch(B).ravel()
    net = default_interconnect(hw) if interconnect is None else _lookup_interconnect(interconnect)
    rows = []
    for G_value in Gs:
        g, s = optimal_gamma(alpha, B, S, c_draft, m, hw, G=G_value, interconnect=net)
        g0, s0 = optimal_gamma(alpha, B, S, c_draft, m, hw, G=G_value, interconnect=net, include_comm=False)
        best = int(np.argmax(s))
        rows.append(dict(G=G_value, zero=_zero_runs(B, g), gmax=int(g.max()), best=float(s[best]),
                         best_at=float(B[best]), comm_loss=float(np.max(1 - s / s0)),
                         comm_changes=int(np.count_nonzero(g != g0))))
    return ExpertParallelSummary(rows, B, float(S), float(alpha), float(c_draft), f"{m.name} on {hw.name} + {net.name}")
