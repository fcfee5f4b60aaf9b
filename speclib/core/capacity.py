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
buffers, sampling), a drafter's weights and a multi-token-prediction module,
and the fragmentation of a paged cache. They are what the ``reserve`` keeps
free: by default 10 % of HBM, the share vLLM leaves when its
``gpu_memory_utilization`` is at its default of 0.9. Tensor parallelism over
``tp`` GPUs is taken to split weights and caches evenly; an engine that
replicates a cache over GPUs (an MLA latent or fewer KV heads than GPUs
under plain tensor parallelism, without data-parallel attention) holds
more, so :func:`max_batch` is an upper bound there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import checked_array, checked_choice, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import resolve


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
#: serves it (DeepSeek-V4's compressed, the default: what memory holds), or
#: ``"paper"``, a full-context cache in every attention layer, the cache the
#: paper's ledger prices the reads of (:data:`speclib.core.cost.ATTENTIONS`).
#: A model without compressed layers keeps the same cache either way.
KV_MODELS = ("served", "paper")


def layout_arguments(model, attention: str = "served") -> tuple:
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


def sequence_bytes(context, model=None, *, attention: str = "served"):
    """Bytes one sequence keeps at ``context`` cached tokens, over all layers
    (caches and states; see the module notes), as served or as the paper
    prices its cache (:data:`KV_MODELS`); broadcasts."""
    m, _ = resolve(model, None)
    S = check_context(context)
    return scalar_or_array(nf.sequence_bytes(S, *layout_arguments(m, attention)))


def memory_per_gpu(batch, context, model=None, tp=1):
    """Bytes each of ``tp`` GPUs holds for ``batch`` sequences at ``context``."""
    m, _ = resolve(model, None)
    B = checked_array("batch", batch, lo=0)
    S, n = check_context(context), check_tp(tp)
    return scalar_or_array(nf.memory_per_gpu(weight_bytes(m), B, nf.sequence_bytes(S, *layout_arguments(m)), n))


def max_batch(model=None, hardware=None, context=4096, tp=1, *, reserve=DEFAULT_RESERVE, attention="served"):
    """The largest batch of sequences at ``context`` cached tokens whose
    weights plus caches fit in ``tp`` GPUs of ``hardware``, with a fraction
    ``reserve`` of each GPU's HBM kept free; 0 when the weights alone do not
    fit. An int, or an int array broadcast over ``context`` and ``tp``.
    ``attention``: the cache as served (the default) or as the paper prices
    it (:data:`KV_MODELS`)."""
    m, hw = resolve(model, hardware)
    S, n, r = check_context(context), check_tp(tp), check_reserve(reserve)
    per_sequence = nf.sequence_bytes(S, *layout_arguments(m, attention))
    with np.errstate(divide="ignore", invalid="ignore"):  # nothing cached (S = 0): no batch limit but the weights
        out = nf.max_batch(_capacity_of(hw), r, n, weight_bytes(m), per_sequence)
    weights_fit = weight_bytes(m) <= (1 - r) * _capacity_of(hw) * n
    out = np.where(per_sequence > 0, np.clip(out, 0, UNLIMITED), np.where(weights_fit, UNLIMITED, 0))
    return int(out) if np.ndim(out) == 0 else out.astype(np.int64)


def fits(batch, context, model=None, hardware=None, tp=1, *, reserve=DEFAULT_RESERVE):
    """Whether ``batch`` sequences at ``context`` fit (see :func:`max_batch`);
    a bool or a bool array. A fractional batch fits when its ceiling does."""
    B = checked_array("batch", batch, lo=0)
    return scalar_or_bool(np.ceil(B) <= max_batch(model, hardware, context, tp, reserve=reserve))


def scalar_or_bool(arr):
    return bool(arr) if np.ndim(arr) == 0 else np.asarray(arr, dtype=bool)


def min_tp(batch, context, model=None, hardware=None, *, reserve=DEFAULT_RESERVE, powers_of_two: bool = True):
    """The smallest tensor-parallel size over which ``batch`` sequences at
    ``context`` fit (a power of two unless ``powers_of_two=False``, as
    engines want it to divide the heads); None past :data:`MAX_TP` GPUs."""
    m, hw = resolve(model, hardware)
    B = float(checked_array("batch", batch, lo=0))
    S, r = float(check_context(context)), check_reserve(reserve)
    per_sequence = float(nf.sequence_bytes(S, *layout_arguments(m)))
    need = float(nf.min_gpus(math.ceil(B), per_sequence, weight_bytes(m), _capacity_of(hw), r))
    n = max(1, math.ceil(need - 1e-9))
    if powers_of_two:
        n = 1 << (n - 1).bit_length()
    return n if n <= MAX_TP else None


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

    @property
    def fits(self) -> bool:
        return math.ceil(self.batch) <= self.max_batch

    def message(self) -> str:
        """One line: fits, or how much memory it needs and the smallest TP that fits."""
        where = f"{self.tp} x {self.hardware}" if self.tp > 1 else f"one {self.hardware}"
        point = f"{self.batch:g} sequences of {self.context:g} tokens"
        total = self.weight_bytes + math.ceil(self.batch) * self.sequence_bytes
        share = f", {self.per_gpu_bytes / GB:,.0f} GB per GPU," if self.tp > 1 else ""
        need = (f"they need {total / GB:,.0f} GB ({self.weight_bytes / GB:,.0f} GB of weights, "
                f"{(total - self.weight_bytes) / GB:,.0f} GB of caches){share} against "
                f"{self.usable_bytes / GB:,.0f} GB usable per GPU ({1 - self.reserve:.0%} of "
                f"{self.usable_bytes / (1 - self.reserve) / GB:,.0f} GB)")
        if self.fits:
            return f"memory: {point} fit on {where}: {need}; up to {self.max_batch:,} fit"
        smallest = ("no tensor-parallel size up to 1024 fits" if self.min_tp is None
                    else f"the smallest tensor-parallel size that fits is {self.min_tp}")
        return f"memory: {point} do not fit on {where}: {need}; {smallest}"


def check(batch, context, model=None, hardware=None, tp=1, *, reserve=DEFAULT_RESERVE) -> CapacityCheck:
    """A :class:`CapacityCheck` of one operating point."""
    m, hw = resolve(model, hardware)
    B = float(checked_array("batch", batch, lo=0))
    S, r = float(check_context(context)), check_reserve(reserve)
    n = checked_int("tp", tp, lo=1, hi=MAX_TP)
    return CapacityCheck(
        model=m.name, hardware=hw.name, batch=B, context=S, tp=n, reserve=r, weight_bytes=weight_bytes(m),
        sequence_bytes=float(sequence_bytes(S, m)), per_gpu_bytes=float(memory_per_gpu(math.ceil(B), S, m, n)),
        usable_bytes=(1 - r) * _capacity_of(hw), max_batch=max_batch(m, hw, S, n, reserve=r),
        min_tp=min_tp(B, S, m, hw, reserve=r),
    )
