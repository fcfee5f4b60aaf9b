"""What fits in HBM: a model's resident weights, one sequence's memory at
context S, and the largest batch a chip (or ``tp`` of them) can hold.

The paper prices a layer at any batch; its figures run to 30,000 sequences of
4,096 tokens on one B200, far past what its 180 GB hold. :func:`max_batch`
is the limit a deployment meets first. Counted (the closed forms are in
:mod:`speclib.formulas.capacity`):

* the weights of the whole model, every routed expert included, at each
  group's stored bytes (:meth:`speclib.presets.Model.weight_groups`): FFN /
  experts at the FFN's bytes, projections at theirs, embeddings, output head
  and routers at 2 bytes (bf16);
* per sequence, the caches of every layer (:meth:`speclib.presets.Model.cache_layout`):
  m_c bytes per cached token for full attention (MLA latent, GQA keys and
  values), a GatedDeltaNet layer's fixed state, and DeepSeek-V4's compressed
  caches (S / 4 CSA entries plus their indexer keys, S / 128 HCA entries, and
  a 128-token uncompressed window in every layer).

Not counted: activations, the engine's workspace (CUDA graphs, communication
buffers, sampling) and the fragmentation of a paged cache. They are what the
``reserve`` keeps free: by default 10 % of HBM, the share vLLM leaves when
its ``gpu_memory_utilization`` is at its default of 0.9.

Over several GPUs the engines do not split everything evenly
(:func:`deployment_memory`, :meth:`speclib.Deployment.max_batch`): under
plain tensor parallelism an MLA latent is held whole by every GPU, and a
GQA cache is split by KV head, never below one head per GPU; under
data-parallel attention each GPU holds its own sequences' caches and the
attention weights whole. A speculative deployment also holds the draft
positions' cache slots, a hybrid model's state per draft position (a
snapshot) and its drafter's weights and cache. The model-level functions
here count plain tensor parallelism with no drafter.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .._checks import checked_array, checked_choice, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import resolve
from .cost import DEFAULT_ATTENTION
from .layout import Layout, cache_share


#: Fraction of each GPU's HBM kept free for activations, workspace and
#: fragmentation: vLLM's default ``gpu_memory_utilization`` is 0.9.
DEFAULT_RESERVE = 0.1
#: Bytes per embedding, output-head and router weight (bf16 in fp8/fp4 checkpoints).
BF16_BYTES = 2.0
#: Largest tensor-parallel group the checks accept.
MAX_TP = 1024
#: What max_batch returns when nothing per sequence is cached (context 0 on a
#: model with no fixed state): every batch fits once the weights do.
UNLIMITED = 2**62
GB = 1e9


def check_context(context):
    return checked_array("context", context, lo=0)


def check_tp(tp):
    return checked_array("tp", tp, lo=1, hi=MAX_TP, integer=True)


def check_reserve(reserve) -> float:
    return float(checked_array("reserve", reserve, lo=0, hi=1, hi_open=True))


def _capacity_of(hardware) -> float:
    if hardware.hbm_capacity is None:
        raise ValueError(f"hardware {hardware.name!r} has no HBM capacity (hbm_capacity_GB in its preset)")
    return hardware.hbm_capacity


def weight_bytes(model=None) -> float:
    """Bytes of the whole model's resident weights (every expert)."""
    m, _ = resolve(model, None)
    g = m.weight_groups()
    return float(nf.weight_bytes(m.ffn.weight_bytes, g["ffn"], m.proj_weight_bytes, g["projections"], BF16_BYTES,
                                 g["bf16"]))


#: Which KV cache a sequence keeps: ``"served"``, the cache as the model
#: serves it (DeepSeek-V4's compressed, the default of every entry point,
#: :data:`speclib.core.cost.DEFAULT_ATTENTION`: what memory holds), or
#: ``"paper"``, a full-context cache in every attention layer, the cache the
#: paper's ledger prices the reads of (:data:`speclib.core.cost.ATTENTIONS`).
#: A model without compressed layers keeps the same cache either way.
KV_MODELS = ("served", "paper")


def layout_arguments(model, attention: str = DEFAULT_ATTENTION) -> tuple:
    """The arguments of the printed ``sequence_bytes`` after S, for ``model``
    (a preset or its name): layer counts, bytes and ratios of its caches,
    as served or as the paper prices them (:data:`KV_MODELS`)."""
    m, _ = resolve(model, None)
    lay = m.cache_layout()
    if checked_choice("attention", attention, KV_MODELS) == "paper":
        n_layers = m._layer_counts()[0]
        lay = {"full": n_layers - lay["linear"], "linear": lay["linear"], "csa": 0, "hca": 0, "window": 0}
    attn = m.attention
    linear = m.linear_attention.state_bytes if m.is_hybrid else 0.0
    compressed = lay["csa"] or lay["hca"]
    csa_ratio = float(attn.csa_ratio) if compressed else 1.0
    hca_ratio = float(attn.hca_ratio) if compressed else 1.0
    indexer = float(attn.indexer_head_dim * attn.indexer_key_bytes) if compressed else 0.0
    window = float(m.sliding_window or 0)
    return (lay["full"], m.context_bytes, lay["linear"], linear, lay["csa"], csa_ratio, indexer, lay["hca"], hca_ratio,
            lay["window"], window)


def sequence_bytes(context, model=None, *, attention: str = DEFAULT_ATTENTION):
    """Bytes one sequence keeps at ``context`` cached tokens, over all layers
    (caches and states; see the module notes), as served or as the paper
    prices its cache (:data:`KV_MODELS`); broadcasts."""
    m, _ = resolve(model, None)
    S = check_context(context)
    return scalar_or_array(nf.sequence_bytes(S, *layout_arguments(m, attention)))


@dataclass(frozen=True)
class _PlainLayout:
    """What :func:`deployment_memory` reads of a deployment, for ``model`` on
    ``tp`` GPUs under plain tensor parallelism with no drafter: the
    model-level functions below count with it (a
    :class:`speclib.Deployment` of the same is counted the same)."""

    model: object
    hardware: object
    tp: int
    attention: str = DEFAULT_ATTENTION
    reserve: float = DEFAULT_RESERVE
    engine: str = "vLLM"
    rollback: str = "snapshot"
    drafter: object = None
    cost_model: object = None
    dp_attention: bool = False

    @property
    def layout(self):
        return Layout(self.tp, 1, self.dp_attention and self.tp > 1)

    def memory(self, context, gamma=0, *, reserve=None):
        return deployment_memory(self, context, gamma, reserve=reserve)


def _plain(model, hardware, tp, attention=DEFAULT_ATTENTION, reserve=None, dp_attention=False) -> _PlainLayout:
    """``model`` on ``tp`` GPUs of ``hardware`` under plain tensor parallelism
    (or with its attention split by sequence, ``dp_attention``)."""
    m, hw = resolve(model, hardware)
    return _PlainLayout(m, hw, int(tp), attention, DEFAULT_RESERVE if reserve is None else reserve,
                        dp_attention=bool(dp_attention) and int(tp) > 1)


def memory_per_gpu(batch, context, model=None, tp=1, *, hardware=None, attention=DEFAULT_ATTENTION):
    """Bytes each of ``tp`` GPUs holds for ``batch`` sequences at ``context``
    under plain tensor parallelism (:meth:`speclib.Deployment.memory`)."""
    B = checked_array("batch", batch, lo=0)
    S = check_context(context)
    n = checked_int("tp", tp, lo=1, hi=MAX_TP)
    parts = _held(_plain(model, hardware, n, attention), S, 0.0, DEFAULT_RESERVE)
    return scalar_or_array(parts["per_gpu_weights"] + B * parts["per_sequence"])


def max_batch(model=None, hardware=None, context=4096, tp=None, *, reserve=DEFAULT_RESERVE,
              attention=DEFAULT_ATTENTION, deployment=None, gamma=0):
    """The largest batch of sequences at ``context`` cached tokens that
    ``tp`` GPUs of ``hardware`` hold under plain tensor parallelism (an MLA
    latent whole on every GPU, a GQA cache split by KV head down to one
    head per GPU), with a fraction ``reserve`` of each GPU's HBM kept free;
    0 when the weights alone do not fit. An int, or an int array broadcast
    over ``context`` and ``tp``. ``attention``: the cache as served (the
    default) or as the paper prices it (:data:`KV_MODELS`).

    ``deployment=``: the same count for a :class:`speclib.Deployment` (its
    layout, drafter, rollback and reserve; :meth:`speclib.Deployment.max_batch`),
    with ``gamma`` draft positions per sequence; model, hardware and tp are
    then the deployment's."""
    if deployment is not None:
        if model is not None or hardware is not None or tp is not None:
            raise ValueError("deployment already names the model, hardware and tp: give either deployment= or "
                             "model=/hardware=/tp=, not both")
        if not hasattr(deployment, "max_batch") or not hasattr(deployment, "layout"):
            raise ValueError(f"deployment must be a speclib.Deployment; got {deployment!r}")
        return deployment.max_batch(context, gamma)
    m, hw = resolve(model, hardware)
    S, n, r = check_context(context), check_tp(1 if tp is None else tp), check_reserve(reserve)
    checked_choice("attention", attention, KV_MODELS)
    S, n = np.broadcast_arrays(S, n)
    out = np.zeros(S.shape, dtype=np.int64)
    for width in np.unique(n):
        at = n == width
        out[at] = _held(_plain(m, hw, width, attention, r), S[at], float(gamma), r)["max_batch"]
    return int(out) if out.ndim == 0 else out


def fits(batch, context, model=None, hardware=None, tp=1, *, reserve=DEFAULT_RESERVE):
    """Whether ``batch`` sequences at ``context`` fit (see :func:`max_batch`);
    a bool or a bool array. A fractional batch fits when its ceiling does."""
    B = checked_array("batch", batch, lo=0)
    return scalar_or_bool(np.ceil(B) <= max_batch(model, hardware, context, tp, reserve=reserve))


def scalar_or_bool(arr):
    return bool(arr) if np.ndim(arr) == 0 else np.asarray(arr, dtype=bool)


def min_tp(batch, context, model=None, hardware=None, *, reserve=DEFAULT_RESERVE, powers_of_two: bool = True,
           dp_attention: bool = False):
    """The smallest tensor-parallel size over which ``batch`` sequences at
    ``context`` fit under plain tensor parallelism, or with attention split
    by sequence (``dp_attention``; the attention weights then whole on every
    GPU), a power of two unless ``powers_of_two=False`` (as engines want it
    to divide the heads); None when none up to :data:`MAX_TP` GPUs does (an
    MLA latent held whole on every GPU stops growing with tp under plain
    tensor parallelism: data-parallel attention splits it)."""
    m, hw = resolve(model, hardware)
    B = math.ceil(float(checked_array("batch", batch, lo=0)))
    S, r = float(check_context(context)), check_reserve(reserve)
    widths = [1 << i for i in range(MAX_TP.bit_length())] if powers_of_two else list(range(1, MAX_TP + 1))

    def ok(w):  # grows with w
        held = _held(_plain(m, hw, w, reserve=r, dp_attention=dp_attention), np.asarray(S), 0.0, r)
        return int(held["max_batch"]) >= B

    if not ok(widths[-1]):
        return None
    lo, hi = 0, len(widths) - 1  # the first width that fits, by bisection
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(widths[mid]) else (mid + 1, hi)
    return widths[lo]


@dataclass(frozen=True)
class CapacityCheck:
    """Whether one operating point fits, with the numbers a reader needs."""

    model: str
    hardware: str
    batch: float
    context: float
    tp: int
    reserve: float
    weight_bytes: float
    sequence_bytes: float
    per_gpu_bytes: float
    usable_bytes: float
    max_batch: int
    min_tp: object  # int or None
    cache_share: float = 1.0  # of each sequence's cache, held by one GPU
    latent: bool = False  # an MLA latent, held whole on every GPU under plain tensor parallelism

    @property
    def fits(self) -> bool:
        return math.ceil(self.batch) <= self.max_batch

    def message(self) -> str:
        """One line: fits, or how much memory it needs and the smallest TP that fits."""
        where = f"{self.tp} x {self.hardware}" if self.tp > 1 else f"one {self.hardware}"
        point = f"{self.batch:g} sequences of {self.context:g} tokens"
        total = self.weight_bytes + math.ceil(self.batch) * self.sequence_bytes
        held = ("; the MLA latent is held whole on every GPU under plain tensor parallelism"
                if self.tp > 1 and self.cache_share == 1.0 else
                f"; each GPU holds {self.cache_share:.3g} of the KV cache, one KV head at least"
                if self.tp > 1 and self.cache_share > 1.0 / self.tp else "")
        share = f", {self.per_gpu_bytes / GB:,.0f} GB per GPU{held}," if self.tp > 1 else ""
        need = (f"they need {total / GB:,.0f} GB ({self.weight_bytes / GB:,.0f} GB of weights, "
                f"{(total - self.weight_bytes) / GB:,.0f} GB of caches){share} against "
                f"{self.usable_bytes / GB:,.0f} GB usable per GPU ({1 - self.reserve:.0%} of "
                f"{self.usable_bytes / (1 - self.reserve) / GB:,.0f} GB)")
        if self.fits:
            return f"memory: {point} fit on {where}: {need}; up to {self.max_batch:,} fit"
        smallest = (f"the smallest tensor-parallel size that fits is {self.min_tp}" if self.min_tp is not None
                    else "no tensor-parallel size up to 1024 fits: under plain tensor parallelism every GPU holds "
                    "the whole MLA latent of every sequence (data-parallel attention splits it by sequence)"
                    if self.latent else "no tensor-parallel size up to 1024 fits")
        return f"memory: {point} do not fit on {where}: {need}; {smallest}"


def check(batch, context, model=None, hardware=None, tp=1, *, reserve=DEFAULT_RESERVE, deployment=None,
          gamma=0) -> CapacityCheck:
    """A :class:`CapacityCheck` of one operating point: ``model`` on ``tp``
    GPUs of ``hardware`` under plain tensor parallelism, or ``deployment``
    (its layout, drafter and reserve) drafting ``gamma`` tokens."""
    B = float(checked_array("batch", batch, lo=0))
    S = float(check_context(context))
    if deployment is None:
        m, hw = resolve(model, hardware)
        r = check_reserve(reserve)
        deployment = _plain(m, hw, checked_int("tp", tp, lo=1, hi=MAX_TP), reserve=r)
    elif model is not None or hardware is not None:
        raise ValueError("deployment already names the model and hardware: give either deployment= or "
                         "model=/hardware=, not both")
    d = deployment
    m, hw, n = d.model, d.hardware, d.tp
    held = d.memory(S, gamma)
    r = _reserve_of(d, None)
    smallest = None
    if d.layout.plain:
        widths = [1 << i for i in range(MAX_TP.bit_length())]
        wider = (lambda w: dataclasses.replace(d, tp=w)) if isinstance(d, _PlainLayout) else \
            (lambda w: d.replace(tp=w))  # noqa: E731
        fits_on = [w for w in widths if _accepted(wider, w) and
                   deployment_memory(wider(w), S, gamma).max_batch >= math.ceil(B)]
        smallest = fits_on[0] if fits_on else None
    arch = m.step_architecture()
    return CapacityCheck(
        model=m.name, hardware=hw.name, batch=B, context=S, tp=n, reserve=r, weight_bytes=weight_bytes(m),
        sequence_bytes=float(sequence_bytes(S, m, attention="served" if d.attention == "served" else "paper")),
        per_gpu_bytes=held.per_gpu(math.ceil(B)), usable_bytes=held.usable, max_batch=held.max_batch,
        min_tp=smallest, cache_share=held.cache_share,
        latent=bool(arch.attention_layers and not arch.kv_heads and d.layout.plain),
    )


def _accepted(wider, w) -> bool:
    """Whether the deployment at ``tp = w`` is a layout the engines take (its
    heads split, inside one scale-up domain: :meth:`speclib.core.layout.Layout.check`)."""
    try:
        wider(w)
    except ValueError:
        return False
    return True


# --- what one deployment holds ----------------------------------------------------------
#: What a sequence's hybrid state keeps per draft position, by rollback
#: (:data:`speclib.core.step.ROLLBACKS`).
ROLLBACK_STORAGE = {"none": "nothing", "snapshot": "a whole state per draft position",
                    "recompute": "each draft position's inputs"}

#: Per engine, how many cache slots (``slots``: (a, b) for a gamma + b when
#: gamma > 0) and rollback states (``states``: likewise, beyond the
#: sequence's own) a sequence holds for a draft of gamma tokens, and which
#: weights every GPU holds whole under data-parallel attention besides the
#: attention projections (``whole``: the embedding, the output head). From
#: each engine's source as :data:`REPLICATION` cites it: vLLM schedules the
#: gamma drafted positions and allocates gamma lookahead slots, keeps
#: 1 + gamma state pages per linear layer, and splits its embedding and head
#: over the TP group only (whole on every GPU at TP 1 with DP); SGLang
#: reserves 2 max(steps x topk, num_draft_tokens) slots a step (2 gamma + 2
#: for a chain), keeps num_draft_tokens = gamma + 1 intermediate states, its
#: embedding whole under DP attention and its head split over the whole
#: group by default; TensorRT-LLM adds one slot per draft token plus
#: gamma - 1 for its one-model drafters, keeps gamma + 1 intermediate
#: states, and its embedding and head whole under attention DP.
ENGINE_MEMORY = {
    "vLLM": {"slots": (2, 0), "states": (1, 0), "whole": ("embedding", "head")},
    "SGLang": {"slots": (2, 2), "states": (1, 1), "whole": ("embedding",)},
    "TRT": {"slots": (2, -1), "states": (1, 1), "whole": ("embedding", "head")},
}


def draft_counts(engine: str, gamma):
    """(cache slots, rollback states) a sequence holds for ``gamma`` draft
    tokens on ``engine`` (:data:`ENGINE_MEMORY`); none at gamma = 0."""
    rule = ENGINE_MEMORY[engine]
    g = np.asarray(gamma, dtype=float)
    count = lambda a, b: np.where(g > 0, a * g + b, 0.0)  # noqa: E731
    return count(*rule["slots"]), count(*rule["states"])


#: What each engine replicates over GPUs and what it adds for a draft, with
#: where in its source or documentation it says so: the table the capacity
#: chapter prints. Each row: (what, vLLM, SGLang, TensorRT-LLM).
REPLICATION = (
    ("MLA latent, plain tensor parallelism", "whole on every GPU", "whole on every GPU", "whole on every GPU"),
    ("MLA latent, data-parallel attention", "split by sequence", "split by sequence", "split by sequence"),
    ("GQA, fewer KV heads than GPUs", "one head per GPU: max(1/tp, 1/n_kv) of the cache", "the same, over the "
     "attention group", "the same: ceil(n_kv / tp) heads"),
    ("attention weights, data-parallel attention", "whole on every GPU", "whole on every GPU",
     "whole on every GPU"),
    ("embedding and output head, data-parallel attention", "both whole", "embedding whole, head split",
     "both whole"),
    ("cache slots for a draft of gamma", "2 gamma: the drafted and the lookahead", "2 gamma + 2: twice the "
     "verify's gamma + 1", "2 gamma - 1 (one-model drafters)"),
    ("the drafter's cache", "in the target's pool, its own layers", "in a pool of as many tokens",
     "in the target's pool (one-model)"),
    ("hybrid state for a draft of gamma", "gamma more states per layer", "gamma + 1 more", "gamma + 1 more"),
    ("HBM for weights and caches (default)", "0.92 of it (0.9 up to release 0.19)",
     "all less a reserve: about 0.82 on an H100 at TP8", "0.9 of what weights and a trial step leave"),
)
#: Where each engine's column comes from (bibliography keys).
REPLICATION_SOURCES = {"vLLM": "vllmmemory2026", "SGLang": "sglangmemory2026", "TRT": "trtllmmemory2026"}


@dataclass(frozen=True)
class DeploymentMemory:
    """What one GPU of a deployment holds (bytes), for :meth:`per_gpu`:
    its weights (``weights``: its share of the target's, ``replicated``:
    what it holds whole, ``drafter_weights``: its share of the drafter's)
    and, per sequence of the group's batch, its share of the caches with the
    draft's slots (``cache``), of the hybrid layers' state (``state``) and
    the draft's rollback states (``rollback``), and of the drafter's own
    cache (``drafter_cache``); ``usable``: its HBM less the reserve;
    ``max_batch``: the largest group batch that fits."""

    deployment: object
    context: float
    gamma: float
    usable: float
    weights: float
    replicated: float
    drafter_weights: float
    cache: float
    state: float
    rollback: float
    drafter_cache: float
    cache_share: float
    state_share: float
    per_sequence: float
    per_gpu_weights: float
    max_batch: int

    def per_gpu(self, batch) -> float:
        """Bytes one GPU holds for a group batch of ``batch`` sequences."""
        return self.per_gpu_weights + float(batch) * self.per_sequence

    def rows(self) -> list:
        """(what, bytes per GPU, rule) rows, for a table."""
        d = self.deployment
        cache_rule = ("all of it (one GPU)" if d.tp == 1 else
                      "1/tp: each GPU holds its own sequences (data-parallel attention)" if d.dp_attention else
                      "whole on every GPU: the MLA latent is replicated under tensor parallelism"
                      if not d.model.step_architecture().kv_heads else
                      f"{self.cache_share:.3g} of it: split by KV head, at least one head per GPU")
        return [
            ("target weights (split)", self.weights, f"1/{d.tp} of what is not held whole"),
            ("target weights (held whole)", self.replicated,
             "attention projections (and embedding, head) on every GPU under data-parallel attention"),
            ("drafter weights", self.drafter_weights, f"1/{d.tp} of the drafter's own"),
            ("per sequence: KV cache, with the draft's slots", self.cache, cache_rule),
            ("per sequence: linear-attention state", self.state, f"1/{d.tp} of it (split by head)"),
            ("per sequence: rollback states for the draft", self.rollback, ROLLBACK_STORAGE[d.rollback]),
            ("per sequence: the drafter's cache", self.drafter_cache, "shared out as the target's cache"),
        ]


def check_gamma(gamma) -> float:
    return float(checked_array("gamma", gamma, lo=0, integer=True))


def _held(d, S, g, r) -> dict:
    """The per-GPU parts of :class:`DeploymentMemory` for deployment ``d`` at
    contexts ``S`` (an array), ``gamma`` ``g`` and reserve ``r``."""
    if d.cost_model is not None:
        raise ValueError("max_batch needs the deployment's model and hardware; a cost_model deployment has neither")
    m, hw, n = d.model, d.hardware, float(d.tp)
    arch = m.step_architecture()
    slots, states = draft_counts(d.engine, g)
    L_f, m_c, L_l, sigma, L_csa, c_csa, m_i, L_hca, c_hca, L_w, W_win = layout_arguments(
        m, "served" if d.attention == "served" else "paper")
    s_c, s_l = float(cache_share(arch, d.layout)), 1.0 / n
    rho = {"none": 0.0, "snapshot": arch.state_bytes, "recompute": arch.replay_bytes}[d.rollback] if L_l else 0.0
    drafter = d.drafter
    m_d = drafter.cache_bytes_per_token if drafter is not None else 0.0
    W, W_d = weight_bytes(m), (drafter.resident_bytes if drafter is not None else 0.0)
    R = replicated_weight_bytes(m, d.engine) if d.dp_attention else 0.0
    W_g = float(nf.gpu_weight_bytes(W, W_d, R, n))
    per_seq = nf.gpu_sequence_bytes(S, slots, states, s_c, s_l, L_f, m_c, L_l, sigma, rho, L_csa, c_csa, m_i, L_hca,
                                    c_hca, L_w, W_win, m_d)
    cache = nf.gpu_sequence_bytes(S, slots, states, s_c, s_l, L_f, m_c, 0.0, 0.0, 0.0, L_csa, c_csa, m_i, L_hca,
                                  c_hca, L_w, W_win, 0.0)
    usable = (1 - r) * _capacity_of(hw)
    with np.errstate(divide="ignore", invalid="ignore"):  # nothing cached: no batch limit but the weights
        top = nf.gpu_max_batch(_capacity_of(hw), r, W_g, per_seq)
    top = np.where(per_seq > 0, np.clip(top, 0, UNLIMITED), UNLIMITED if W_g <= usable else 0).astype(np.int64)
    return dict(usable=usable, weights=(W - R) / n, replicated=R, drafter_weights=W_d / n, cache=cache,
                state=s_l * L_l * sigma, rollback=s_l * L_l * rho * states, drafter_cache=s_c * m_d * (S + slots),
                cache_share=s_c, state_share=s_l, per_sequence=per_seq, per_gpu_weights=W_g, max_batch=top)


def replicated_weight_bytes(model, engine: str) -> float:
    """Bytes of ``model``'s weights every GPU holds whole under data-parallel
    attention on ``engine``: the attention projections, and the embedding
    and output head where the engine keeps them whole
    (:data:`ENGINE_MEMORY`)."""
    m = model
    whole = m.proj_weight_bytes * m.step_architecture().attention_params
    table = m.vocab_size * m.hidden_size * BF16_BYTES
    rule = ENGINE_MEMORY[engine]["whole"]
    if "embedding" in rule:
        whole += table
    if "head" in rule and not m.tie_word_embeddings:
        whole += table
    return float(whole)


def _reserve_of(d, reserve) -> float:
    if reserve is None:
        reserve = DEFAULT_RESERVE if d.reserve is None else d.reserve
    return check_reserve(reserve)


def deployment_memory(deployment, context, gamma=0, *, reserve=None) -> DeploymentMemory:
    """What one GPU of ``deployment`` holds at ``context`` cached tokens per
    sequence with ``gamma`` draft positions (see :class:`DeploymentMemory`
    and :data:`speclib.formulas.capacity.gpu_sequence_bytes_expr`), and the
    largest group batch that fits with ``reserve`` (None: the deployment's,
    or :data:`DEFAULT_RESERVE` where it has none) of each GPU's HBM kept
    free. The caches are those the deployment prices: DeepSeek-V4's
    compressed as served with ``attention="served"``, full in every layer as
    the paper prices it otherwise."""
    S = float(checked_array("context", context, lo=0))
    g = check_gamma(gamma)
    parts = _held(deployment, np.asarray(S), g, _reserve_of(deployment, reserve))
    parts = {k: (int(v) if k == "max_batch" else float(v)) for k, v in parts.items()}
    return DeploymentMemory(deployment=deployment, context=S, gamma=g, **parts)


def deployment_max_batch(deployment, context, gamma=0, *, reserve=None):
    """:meth:`speclib.Deployment.max_batch`, broadcast over ``context`` and
    ``gamma``: an int or an int array."""
    S = check_context(context)
    g = checked_array("gamma", gamma, lo=0, integer=True)
    out = _held(deployment, S, g, _reserve_of(deployment, reserve))["max_batch"]
    return int(out) if np.ndim(out) == 0 else out
