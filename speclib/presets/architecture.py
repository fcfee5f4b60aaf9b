"""What a chip, a model and an interconnect are: frozen dataclasses holding
architecture and datasheet numbers. Every quantity the cost model uses
(W_attn, W_E, m_c, m_q, f, ridges) is derived from them here, by the formulas
of :mod:`speclib.formulas` printed to numpy; the presets themselves are data
(:mod:`speclib.presets.catalog`).
"""
from __future__ import annotations

import dataclasses
import math
import re

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Optional, Union

import numpy as np

from .._checks import checked_array, checked_choice, checked_int
from ..formulas import numpy_functions as nf


def _evaluate(functions, values: dict) -> tuple:
    """Each named function of the printed formulas at ``values``, its
    arguments picked from ``values`` by name."""
    return tuple(float(getattr(nf, name)(*(values[a] for a in nf.ARGUMENTS[name]))) for name in functions)


#: Precisions from narrowest to widest. A chip without tensor cores for a
#: precision runs it on the next wider one it has (MXFP4 weights on Hopper are
#: dequantised and multiplied in fp8), so it gets that precision's peak while
#: the bytes moved stay those of the narrow format.
PRECISIONS = ("fp4", "fp8", "bf16")
#: Bytes per stored weight of a checkpoint in each precision. fp4 depends on
#: the block format: NVIDIA's NVFP4 keeps one 8-bit scale per 16 values (4.5
#: bits), the OCP MXFP4 of AMD's checkpoints one per 32 (4.25 bits).
NVFP4_BYTES = (4 + 8 / 16) / 8
MXFP4_BYTES = (4 + 8 / 32) / 8
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": NVFP4_BYTES}
#: Vendors whose fp4 checkpoints are MXFP4 rather than NVFP4.
MXFP4_VENDORS = ("AMD",)
#: Bytes per cached KV (or MLA latent) element of each cache precision.
KV_BYTES = {"bf16": 2.0, "fp8": 1.0}
#: Bytes per embedding, output-head and router weight: fp8 and fp4
#: checkpoints keep them in bf16.
BF16_BYTES = 2.0


def weight_bytes_for(precision: str, vendor: str = "") -> float:
    """Bytes per weight of a ``precision`` checkpoint served on a chip of ``vendor``."""
    precision = checked_choice("weights", precision, PRECISIONS)
    if precision == "fp4" and vendor in MXFP4_VENDORS:
        return MXFP4_BYTES
    return WEIGHT_BYTES[precision]


def gemm_precision(weights: str, activations: Optional[str] = None) -> str:
    """The precision a GEMM multiplies in: the wider of its weights' and its
    activations' (None: as its weights, W4A4 for fp4 weights). A W4A8 GEMM,
    fp4 weights against fp8 activations, runs on the fp8 tensor cores at the
    fp8 peak, so its ridge is the fp8 one
    (:data:`speclib.formulas.moe.gemm_ridge_expr`)."""
    weights = checked_choice("weights", weights, PRECISIONS)
    if activations is None:
        return weights
    activations = checked_choice("activations", activations, PRECISIONS)
    return max(weights, activations, key=PRECISIONS.index)

@dataclass(frozen=True)
class Hardware:
    """One accelerator: HBM bandwidth, HBM capacity and dense peak FLOP/s per
    precision, and the name of the scale-up network it ships with (an
    :class:`Interconnect` preset, or None). ``hbm_capacity`` is the memory
    the datasheet gives one GPU, in bytes (None: not known, so no capacity
    check is possible)."""

    name: str
    memory_bandwidth: float  # bytes/s
    bf16_flops: float
    fp8_flops: Optional[float]
    fp4_flops: Optional[float]
    source: str
    aliases: tuple = ()
    interconnect: Optional[str] = None
    hbm_capacity: Optional[float] = None  # bytes
    #: Whose chip and software stack ("NVIDIA", "AMD"): the calibrated step
    #: prices each verified position past the first by it.
    vendor: str = ""
    #: The chip's architecture ("Hopper", "Blackwell", "CDNA 3", "CDNA 4"):
    #: a chip the calibrated step has not seen takes the constants of the
    #: fitted chips of its generation, else of its vendor.
    generation: str = ""

    def __post_init__(self):
        if self.hbm_capacity is not None:
            checked_array("hbm_capacity", self.hbm_capacity, lo=0, lo_open=True)

    def peak_flops(self, precision: str) -> float:
        """Dense peak for ``precision``; a precision the chip lacks falls back to
        the next wider one it supports (see :data:`PRECISIONS`)."""
        precision = checked_choice("precision", precision, PRECISIONS)
        for p in PRECISIONS[PRECISIONS.index(precision):]:
            value = getattr(self, f"{p}_flops")
            if value is not None:
                return value
        raise AssertionError("bf16 is always present")  # pragma: no cover

    def native(self, precision: str) -> bool:
        """Whether the chip has tensor cores for ``precision`` itself."""
        precision = checked_choice("precision", precision, PRECISIONS)
        return getattr(self, f"{precision}_flops") is not None

    def ridge(self, precision: str) -> float:
        """Ridge point R = peak FLOP/s / bandwidth, in FLOP per byte."""
        return self.peak_flops(precision) / self.memory_bandwidth

    def gemm_ridge(self, weights: str, activations: Optional[str] = None) -> float:
        """The ridge of a GEMM with ``weights`` and ``activations`` in those
        precisions (None: as the weights): the smaller of the two ridges, the
        wider format's (:data:`speclib.formulas.moe.gemm_ridge_expr`)."""
        own = self.ridge(weights)
        return own if activations is None else float(nf.gemm_ridge(own, self.ridge(activations)))


class _AttentionConstants:
    """m_c, m_q and f of an attention layout, evaluated once per preset by the
    functions of :mod:`speclib.formulas.numpy_functions` that ``_FORMULAS``
    names (context bytes, query bytes, FLOPs per pair) on the layout's
    ``architecture()`` numbers, matched to each function's arguments by name."""

    _FORMULAS: tuple = ()

    def architecture(self) -> dict:
        """The layout's numbers under the names the sympy expressions of
        :mod:`speclib.formulas.attention` give them (n_h, d_c, b_kv, ...)."""
        raise NotImplementedError  # pragma: no cover - each layout defines it

    @cached_property
    def _constants(self) -> tuple:
        return _evaluate(self._FORMULAS, self.architecture())

    @property
    def context_bytes(self) -> float:
        """m_c: bytes read per context token."""
        return self._constants[0]

    @property
    def query_bytes_per_token(self) -> float:
        """m_q: bytes read per query token."""
        return self._constants[1]

    @property
    def flops_per_pair(self) -> float:
        """f: FLOPs per query-context pair."""
        return self._constants[2]


@dataclass(frozen=True)
class MLAAttention(_AttentionConstants):
    """Multi-head latent attention, with DeepSeek-V4's compressed variants.

    Widths are element counts; ``*_bytes`` are bytes per element.
    """

    n_heads: int
    kv_lora_rank: int  # d_c, the cached latent
    rope_dim: int  # d_r, the shared rope key
    q_lora_rank: Optional[int]
    q_head_dim: int  # per-head query width out of the query projection
    kv_proj_width: int  # output width of the hidden -> KV down projection
    o_head_dim: int  # per-head width entering the output projection
    o_groups: Optional[int] = None  # grouped low-rank output projection (V4)
    o_lora_rank: Optional[int] = None
    kv_up_proj: bool = False  # V2/V3: a latent -> per-head K/V up projection is stored
    mha_nope_dim: Optional[int] = None  # d_n of the up-projected (MHA) form
    mha_v_dim: Optional[int] = None  # d_v of the up-projected (MHA) form
    kv_bytes: float = 1.0
    query_bytes: float = 2.0
    # DeepSeek-V4 sparse variants (None when the model has none)
    hca_ratio: Optional[float] = None
    csa_ratio: Optional[float] = None
    csa_top_k: Optional[int] = None
    indexer_heads: Optional[int] = None
    indexer_head_dim: Optional[int] = None
    indexer_key_bytes: float = 1.0
    # Kimi (gated MLA): a per-head sigmoid gate on the attention output,
    # sigma(W_g x) with W_g of n_heads * o_head_dim rows, before the output projection
    output_gate: bool = False

    kind = "mla"
    _FORMULAS = ("mla_context_bytes", "mla_query_bytes", "mla_flops_per_pair")
    #: KV heads a tensor-parallel split can divide: none, the latent is one
    #: cache every query head reads (:data:`speclib.formulas.step.gqa_kv_share_expr`)
    kv_heads = 0

    @property
    def prefill_flops_per_pair(self) -> float:
        """f of a prompt's prefill: the up-projected (MHA) form where the
        model stores the up-projection (V2/V3), else the absorbed form's f."""
        if self.kv_up_proj and self.mha_nope_dim and self.mha_v_dim:
            return float(nf.mha_flops_per_pair(self.n_heads, self.mha_nope_dim, self.rope_dim, self.mha_v_dim))
        return self.flops_per_pair

    def architecture(self) -> dict:
        return {"n_h": self.n_heads, "d_c": self.kv_lora_rank, "d_r": self.rope_dim, "b_kv": self.kv_bytes,
                "b_q": self.query_bytes}

    def projection_params(self, hidden: int) -> int:
        """Weights of the attention projections (everything but the cache)."""
        q_out = self.n_heads * self.q_head_dim
        q = hidden * self.q_lora_rank + self.q_lora_rank * q_out if self.q_lora_rank else hidden * q_out
        kv = hidden * self.kv_proj_width
        if self.kv_up_proj:
            kv += self.kv_lora_rank * self.n_heads * (self.mha_nope_dim + self.mha_v_dim)
        o_in = self.n_heads * self.o_head_dim
        if self.o_groups:
            o = o_in * self.o_lora_rank + self.o_groups * self.o_lora_rank * hidden
        else:
            o = o_in * hidden
        gate = o_in * hidden if self.output_gate else 0
        return int(q + kv + o + gate)

    @cached_property
    def _indexer_constants(self) -> tuple:
        """m_c, m_q, f of CSA's score-only indexer."""
        return _evaluate(("indexer_context_bytes", "indexer_query_bytes", "indexer_flops_per_pair"),
                         {"n_h": self.indexer_heads, "d_h": self.indexer_head_dim, "b_kv": self.indexer_key_bytes,
                          "b_q": self.query_bytes})

    def variant_constants(self, variant: str, S, F=nf):
        """(m_c, m_q, f, effective context) for ``variant`` at context ``S``;
        ``F`` evaluates the closed forms (the numpy functions, or a figure's
        array language, which records them for the browser)."""
        if variant == "mla":
            return (*self._constants, S)
        if variant == "gqa":
            raise ValueError("variant 'gqa' needs a GQA model; this model uses MLA ('mla', 'hca', 'csa', 'indexer')")
        if self.hca_ratio is None:
            raise ValueError(f"variant {variant!r} needs a model with DeepSeek-V4 HCA/CSA attention; this one has only 'mla'")
        if variant == "hca":
            return (*self._constants, F.hca_context(S, self.hca_ratio))
        if variant == "csa":
            return (*self._constants, F.csa_context(S, self.csa_ratio, self.csa_top_k))
        return (*self._indexer_constants, F.indexer_context(S, self.csa_ratio))


@dataclass(frozen=True)
class GQAAttention(_AttentionConstants):
    """Grouped-query attention (MHA when n_kv_heads == n_heads). With
    ``output_gate`` (Qwen3-Next, Qwen3.5/3.6) the query projection also
    produces a per-head gate on the attention output, doubling its width."""

    n_heads: int
    n_kv_heads: int
    head_dim: int
    kv_bytes: float = 2.0
    query_bytes: float = 2.0
    output_gate: bool = False

    kind = "gqa"
    _FORMULAS = ("gqa_context_bytes", "gqa_query_bytes", "gqa_flops_per_pair")

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads

    @property
    def prefill_flops_per_pair(self) -> float:
        return self.flops_per_pair

    def architecture(self) -> dict:
        return {"n_h": self.n_heads, "n_kv": self.n_kv_heads, "d_h": self.head_dim, "b_kv": self.kv_bytes,
                "b_q": self.query_bytes}

    def projection_params(self, hidden: int) -> int:
        q_heads = self.n_heads * (2 if self.output_gate else 1)
        qkv = hidden * (q_heads + 2 * self.n_kv_heads) * self.head_dim
        return int(qkv + self.n_heads * self.head_dim * hidden)

    def variant_constants(self, variant: str, S, F=nf):
        if variant != "gqa":
            raise ValueError(f"variant {variant!r} needs an MLA model; this model uses GQA (variant 'gqa')")
        return self.context_bytes, self.query_bytes_per_token, self.flops_per_pair, S


@dataclass(frozen=True)
class GatedDeltaNet:
    """Linear attention as Qwen3-Next and Qwen3.5/3.6 run it (GatedDeltaNet):
    each sequence keeps a fixed recurrent state per layer, read every step
    whatever its context, instead of a KV cache that grows with it."""

    n_key_heads: int
    n_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    state_bytes_per_element: float = 2.0
    # Kimi Delta Attention: a per-channel decay gate through a low-rank
    # bottleneck (hidden -> rank -> value channels) in place of GatedDeltaNet's
    # one decay per value head; None for GatedDeltaNet
    decay_gate_rank: Optional[int] = None

    kind = "gdn"

    def __post_init__(self):
        for name in ("n_key_heads", "n_value_heads", "key_head_dim", "value_head_dim", "conv_kernel"):
            checked_int(name, getattr(self, name), lo=1)
        checked_array("state_bytes_per_element", self.state_bytes_per_element, lo=0, lo_open=True)
        if self.decay_gate_rank is not None:
            checked_int("decay_gate_rank", self.decay_gate_rank, lo=1)

    def architecture(self) -> dict:
        """The layout's numbers under the names of :mod:`speclib.formulas.attention`."""
        return {"n_k": self.n_key_heads, "n_v": self.n_value_heads, "d_k": self.key_head_dim,
                "d_v": self.value_head_dim, "K_conv": self.conv_kernel, "b_s": self.state_bytes_per_element}

    @cached_property
    def _constants(self) -> tuple:
        return _evaluate(("linear_state_bytes", "linear_flops_per_position", "linear_replay_bytes"),
                         self.architecture())

    @property
    def state_bytes(self) -> float:
        """sigma: bytes of state one sequence keeps in one layer."""
        return self._constants[0]

    @property
    def flops_per_position(self) -> float:
        """phi: FLOPs per position per layer of the gated delta rule."""
        return self._constants[1]

    @property
    def replay_bytes(self) -> float:
        """Bytes of one position's inputs (queries, keys, values before the
        short convolution, and the two gates) that a replay of one layer
        keeps to roll its state back (:mod:`speclib.core.step`)."""
        return self._constants[2]

    def projection_params(self, hidden: int) -> int:
        """Weights of one layer: the input projection to queries, keys, values
        and the output gate, the per-head decay and update gates (with
        ``decay_gate_rank``: a per-head update gate and a per-channel decay
        gate through a rank-``decay_gate_rank`` bottleneck), the short
        convolution, and the output projection."""
        key_dim = self.n_key_heads * self.key_head_dim
        value_dim = self.n_value_heads * self.value_head_dim
        if self.decay_gate_rank is None:
            gates = hidden * 2 * self.n_value_heads
        else:
            gates = hidden * self.n_value_heads + self.decay_gate_rank * (hidden + value_dim)
        in_proj = hidden * (2 * key_dim + 2 * value_dim) + gates
        conv = (2 * key_dim + value_dim) * self.conv_kernel
        return int(in_proj + conv + value_dim * hidden)


@dataclass(frozen=True)
class MoEFFN:
    """Routed experts (top-k of E) plus always-on shared experts.

    A latent MoE (Kimi-K3) projects each token from the hidden width down to
    ``latent_size`` before its routed experts and back up after them, so an
    expert's projections are ``latent_size`` wide. ``dense_params``: weights
    per MoE layer that every token uses outside the routed experts and that
    are stored and multiplied like the attention projections (a latent MoE's
    down and up projections, and shared experts the checkpoint keeps
    unquantised at the full hidden width); 0 for other models, whose shared
    experts are ``n_shared`` experts of the routed shape."""

    n_routed: int
    top_k: int
    n_shared: int
    expert_width: int  # intermediate size of one expert
    weight_bytes: float  # bytes per parameter as stored (MXFP4: 0.53)
    precision: str = "fp4"  # the GEMM precision the experts run in
    latent_size: Optional[int] = None  # width the routed experts work in (None: the hidden width)
    dense_params: int = 0  # per MoE layer, at the projections' bytes and precision
    #: group-limited routing (DeepSeek-V3/R1's ``n_group``, ``topk_group``):
    #: a token picks its top_k experts within its top ``topk_group`` of
    #: ``n_group`` groups of experts; 1 and 1: ungrouped
    n_group: int = 1
    topk_group: int = 1

    is_moe = True

    def __post_init__(self):
        # A custom model with top_k > n_routed would otherwise surface as a NaN
        # deep inside the cost model.
        checked_int("n_routed", self.n_routed, lo=1)
        checked_int("top_k", self.top_k, lo=1, hi=self.n_routed)
        checked_int("n_shared", self.n_shared, lo=0)
        checked_int("expert_width", self.expert_width, lo=1)
        checked_array("weight_bytes", self.weight_bytes, lo=0, lo_open=True)
        checked_choice("precision", self.precision, PRECISIONS)
        if self.latent_size is not None:
            checked_int("latent_size", self.latent_size, lo=1)
        checked_int("dense_params", self.dense_params, lo=0)
        checked_int("n_group", self.n_group, lo=1, hi=self.n_routed)
        checked_int("topk_group", self.topk_group, lo=1, hi=self.n_group)
        if self.n_routed % self.n_group:
            raise ValueError(f"n_group must divide n_routed ({self.n_routed}); got {self.n_group}")
        if self.topk_group * (self.n_routed // self.n_group) < self.top_k:
            raise ValueError(f"topk_group: {self.topk_group} of {self.n_group} groups hold fewer than top_k "
                             f"({self.top_k}) experts")

    @property
    def groups(self):
        """(n_group, topk_group) of a group-limited router, None for one that is not."""
        return (self.n_group, self.topk_group) if self.topk_group < self.n_group else None

    def expert_params(self, hidden: int) -> int:
        """W_E: gate, up and down projections of one expert (in the latent
        width for a latent MoE)."""
        return 3 * (self.latent_size or hidden) * self.expert_width


@dataclass(frozen=True)
class DenseFFN:
    """A gated dense FFN."""

    width: int
    weight_bytes: float
    precision: str = "fp8"

    def __post_init__(self):
        checked_int("width", self.width, lo=1)
        checked_array("weight_bytes", self.weight_bytes, lo=0, lo_open=True)
        checked_choice("precision", self.precision, PRECISIONS)

    is_moe = False

    def expert_params(self, hidden: int) -> int:
        """The whole FFN, treated as one always-on expert."""
        return 3 * hidden * self.width


@dataclass(frozen=True)
class Model:
    """A transformer layer's architecture numbers (the layer count cancels in
    every ratio the book draws; ``n_layers``, ``vocab_size`` and the dense-layer
    fields are kept for totals such as :meth:`total_params`).

    The paper's cost model describes one representative layer: for a MoE
    model that is a MoE layer, so the few dense-FFN layers some MoE models keep
    at the bottom (DeepSeek-V3's first three) do not enter its ledger; they
    count in the parameter totals (``n_dense_layers`` of width
    ``dense_ffn_width``) and in the whole-model step (:meth:`step_architecture`).
    A hybrid model has ``n_linear_layers`` layers of ``linear_attention`` and
    the rest of ``attention``.
    """

    name: str
    hidden_size: int
    attention: Union[MLAAttention, GQAAttention]
    ffn: Union[MoEFFN, DenseFFN]
    proj_weight_bytes: float = 1.0
    proj_precision: str = "fp8"
    attention_precision: str = "bf16"
    n_layers: Optional[int] = None
    source: str = ""
    aliases: tuple = ()
    vocab_size: Optional[int] = None
    n_dense_layers: int = 0  # layers of a MoE model whose FFN is dense
    dense_ffn_width: Optional[int] = None  # intermediate size of those layers
    tie_word_embeddings: bool = False
    linear_attention: Optional[GatedDeltaNet] = None  # a hybrid's linear-attention layout
    n_linear_layers: int = 0  # layers that use it; the rest use ``attention``
    compress_ratios: tuple = ()  # DeepSeek-V4: each layer's KV compression (0 = sliding window only)
    sliding_window: Optional[int] = None  # DeepSeek-V4: uncompressed recent tokens every layer keeps
    #: multi-token-prediction (MTP / NextN) layers the checkpoint ships: a drafter of its own
    #: (``num_nextn_predict_layers`` or ``mtp_num_hidden_layers`` in its config; 0: none)
    mtp_layers: int = 0
    #: the precision the decoder GEMMs' activations are quantised to as served
    #: (``quantization_config`` or the "speclib" block's ``activations``):
    #: None, as narrow as each GEMM's weights (W8A8 for fp8, W4A4 for fp4
    #: experts, the paper's reading); "fp8" with fp4 experts is W4A8, whose
    #: experts run at the fp8 rate (:func:`gemm_precision`)
    activations: Optional[str] = None

    def __post_init__(self):
        if self.activations is not None:
            object.__setattr__(self, "activations", checked_choice("activations", self.activations, PRECISIONS))

    @property
    def ffn_gemm_precision(self) -> str:
        """The precision the FFN's (the experts') GEMMs run in: the wider of
        their weights' and the activations' (:func:`gemm_precision`)."""
        return gemm_precision(self.ffn.precision, self.activations)

    @property
    def proj_gemm_precision(self) -> str:
        """The precision the attention projections' GEMMs run in (:func:`gemm_precision`)."""
        return gemm_precision(self.proj_precision, self.activations)

    @property
    def attn_proj_params(self) -> int:
        """W_attn."""
        return self.attention.projection_params(self.hidden_size)

    @property
    def expert_params(self) -> int:
        """W_E (for a dense model, the whole FFN)."""
        return self.ffn.expert_params(self.hidden_size)

    @property
    def context_bytes(self) -> float:
        """m_c of the full attention."""
        return self.attention.context_bytes

    @property
    def query_bytes(self) -> float:
        """m_q of the full attention."""
        return self.attention.query_bytes_per_token

    @property
    def flops_per_pair(self) -> float:
        """f of the full attention."""
        return self.attention.flops_per_pair

    @property
    def is_hybrid(self) -> bool:
        """Whether some layers use linear attention."""
        return self.linear_attention is not None and self.n_linear_layers > 0

    def quantised(self, weights: Optional[str] = None, kv_cache: Optional[str] = None, vendor: str = "",
                  activations: Optional[str] = None) -> "Model":
        """This model served from a ``weights`` checkpoint (every decoder
        GEMM's weights, projections and experts, stored and multiplied in
        that precision; fp4 as NVFP4, or MXFP4 on a chip whose ``vendor``
        stores it so: :func:`weight_bytes_for`) with its KV cache in
        ``kv_cache`` and its GEMMs' activations in ``activations`` (W4A8:
        fp4 weights, ``activations="fp8"``); None keeps the preset's own.
        Embeddings, the output head and the routers stay in bf16
        (:data:`BF16_BYTES`), as the released fp8 and fp4 checkpoints keep
        them."""
        changes = {}
        if activations is not None:
            changes["activations"] = checked_choice("activations", activations, PRECISIONS)
        if weights is not None:
            b = weight_bytes_for(weights, vendor)
            changes.update(proj_weight_bytes=b, proj_precision=weights,
                           ffn=dataclasses.replace(self.ffn, weight_bytes=b, precision=weights))
        if kv_cache is not None:
            kv = KV_BYTES[checked_choice("kv_cache", kv_cache, tuple(KV_BYTES))]
            changes["attention"] = dataclasses.replace(self.attention, kv_bytes=kv)
        return dataclasses.replace(self, **changes) if changes else self

    # --- whole-model totals --------------------------------------------------
    def _layer_counts(self):
        if self.n_layers is None or self.vocab_size is None:
            raise ValueError(
                f"model {self.name!r} needs n_layers and vocab_size for parameter totals; "
                "build it from a config with num_hidden_layers and vocab_size"
            )
        n_dense = self.n_dense_layers if self.ffn.is_moe else 0
        if n_dense and self.dense_ffn_width is None:
            raise ValueError(f"model {self.name!r} has dense layers but no dense_ffn_width")
        return self.n_layers, self.n_layers - n_dense, n_dense

    def _params(self, experts_per_layer) -> int:
        n_layers, n_ffn_layers, n_dense = self._layer_counts()
        embeddings = self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)
        attention = self._attention_params(n_layers)
        if self.ffn.is_moe:
            router = self.hidden_size * self.ffn.n_routed
            ffn = n_ffn_layers * (experts_per_layer * self.expert_params + router + self.ffn.dense_params)
            if n_dense:
                ffn += n_dense * 3 * self.hidden_size * self.dense_ffn_width
        else:
            ffn = n_layers * self.expert_params
        return int(embeddings + attention + ffn)

    def outside_layers_params(self) -> int:
        """The weights a step reads outside its layers, whatever the batch:
        the output head and, for a mixture of experts, every MoE layer's router
        (:data:`speclib.formulas.step.outside_layers_params_expr`); what the
        paper's per-layer ledger leaves out. DeepSeek-V4-Flash: 575 million,
        530 million of them the head."""
        _, n_ffn_layers, _ = self._layer_counts()
        moe_layers, experts = (n_ffn_layers, self.ffn.n_routed) if self.ffn.is_moe else (0, 1)
        return int(round(float(nf.outside_layers_params(self.vocab_size, self.hidden_size, moe_layers, experts))))

    def _attention_params(self, n_layers: int) -> int:
        """Attention and linear-attention projection weights over all layers."""
        if not self.is_hybrid:
            return n_layers * self.attn_proj_params
        linear = self.n_linear_layers * self.linear_attention.projection_params(self.hidden_size)
        return (n_layers - self.n_linear_layers) * self.attn_proj_params + linear

    def weight_groups(self) -> dict:
        """The whole model's resident parameters (every expert, not only the
        active ones) by how they are stored: ``ffn`` (routed and shared
        experts, or a dense model's FFNs) at the FFN's bytes, ``projections``
        (attention and linear-attention projections, a MoE model's dense-FFN
        layers) at the projections' bytes, ``bf16`` (embeddings, output head,
        routers) at 2 bytes, as the released fp8/fp4 checkpoints keep them.
        They add up to :meth:`total_params`."""
        n_layers, n_ffn_layers, n_dense = self._layer_counts()
        h, ffn = self.hidden_size, self.ffn
        embeddings = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        projections = self._attention_params(n_layers)
        if ffn.is_moe:
            experts = n_ffn_layers * (ffn.n_routed + ffn.n_shared) * self.expert_params
            routers = n_ffn_layers * h * ffn.n_routed
            projections += n_dense * 3 * h * self.dense_ffn_width if n_dense else 0
            projections += n_ffn_layers * ffn.dense_params
        else:
            experts, routers = n_layers * self.expert_params, 0
        return {"ffn": int(experts), "projections": int(projections), "bf16": int(embeddings + routers)}

    def cache_layout(self) -> dict:
        """How many layers keep which kind of per-sequence memory: ``full``
        (a KV cache over the whole context, m_c bytes per token), ``linear``
        (a fixed recurrent state), and DeepSeek-V4's ``csa`` and ``hca``
        (a cache compressed by the CSA / HCA ratio; CSA also keeps one
        indexer key per compressed position) and ``window`` (layers that keep
        the last ``sliding_window`` tokens uncompressed: every V4 layer).

        A V4 model whose config lists no per-layer ``compress_ratios`` for
        every layer is counted as full attention in every layer: an upper
        bound on its memory."""
        n_layers = self._layer_counts()[0]
        linear = self.n_linear_layers if self.is_hybrid else 0
        ratios = self.compress_ratios[:n_layers]
        attn = self.attention
        if getattr(attn, "hca_ratio", None) is None or len(ratios) < n_layers:
            return {"full": n_layers - linear, "linear": linear, "csa": 0, "hca": 0, "window": 0}
        csa = sum(1 for r in ratios if r == attn.csa_ratio)
        hca = sum(1 for r in ratios if r == attn.hca_ratio)
        full = sum(1 for r in ratios if r == 1)
        window = n_layers if self.sliding_window else 0
        if csa + hca + full + sum(1 for r in ratios if r == 0) != n_layers:
            raise ValueError(f"model {self.name!r}: compress_ratios may only hold 0, 1, the CSA ratio "
                             f"{attn.csa_ratio:g} and the HCA ratio {attn.hca_ratio:g}")
        return {"full": full, "linear": linear, "csa": csa, "hca": hca, "window": window}

    @property
    def family(self) -> str:
        """The model's family: the letters its name starts with ("DeepSeek"
        for DeepSeek-V3 and V4, "Llama" for Llama 3 and 4, "Qwen", "GLM",
        "gpt" for gpt-oss, ...). A fitted step is held out a family at a time."""
        match = re.match(r"[A-Za-z]+", self.name)
        return match.group(0) if match else self.name

    def step_architecture(self) -> "StepArchitecture":
        """What one forward step of the whole model touches (every layer and
        the output head), for :class:`speclib.core.step.StepModel`."""
        return _step_architecture(self)

    def total_params(self) -> int:
        """Parameters of the whole model: embeddings (and an untied output head),
        attention projections, FFNs (every routed and shared expert, routers,
        dense layers). Norms, biases, multi-token-prediction modules and
        DeepSeek-V4's compressors and indexers are left out."""
        ffn = self.ffn
        return self._params(ffn.n_routed + ffn.n_shared if ffn.is_moe else 1)

    def active_params(self) -> int:
        """Parameters one token uses: as :meth:`total_params` but with only the
        ``top_k`` routed experts (plus the shared ones) of each MoE layer."""
        ffn = self.ffn
        return self._params(ffn.top_k + ffn.n_shared if ffn.is_moe else 1)


@dataclass(frozen=True)
class Interconnect:
    """A GPU-to-GPU network as one GPU sees it.

    ``bandwidth``: bytes/s per GPU with both directions counted (half of it
    each way). ``domain_size``: the most GPUs it joins into one all-to-all
    domain (None for a scale-out network with no such limit). ``latency``:
    seconds of one all-to-all message on a step's critical path, what a
    dispatch or a combine that moves next to nothing takes (None: not known,
    so the all-to-all can only be priced by bandwidth), with its
    ``latency_source``.
    """

    name: str
    bandwidth: float
    domain_size: Optional[int]
    source: str
    aliases: tuple = ()
    latency: Optional[float] = None
    latency_source: str = ""
    #: seconds one small all-reduce takes over n GPUs, ((n, seconds), ...) by
    #: n (empty: no published measurement), with its source
    allreduce_latency: tuple = ()
    allreduce_latency_source: str = ""

    def __post_init__(self):
        if self.latency is not None:
            checked_array("latency", self.latency, lo=0, lo_open=True)
        points = []
        for n, seconds in self.allreduce_latency:
            points.append((checked_int("allreduce_latency (GPUs)", n, lo=2),
                           float(checked_array("allreduce_latency", seconds, lo=0, lo_open=True))))
        object.__setattr__(self, "allreduce_latency", tuple(sorted(points)))

    def allreduce_latency_at(self, gpus: int) -> float:
        """Seconds of one small all-reduce over ``gpus`` GPUs: 0 on one GPU;
        the measured figure, interpolated linearly in log2 of the GPUs between
        measured counts, and held at the nearest count beyond them. A network
        with none is refused, naming the field."""
        gpus = checked_int("tp", gpus, lo=1)
        if gpus == 1:
            return 0.0
        if not self.allreduce_latency:
            raise ValueError(f"interconnect {self.name!r} has no allreduce_latency_us (no published all-reduce "
                             "latency): a step split over GPUs cannot be priced on it")
        counts = [n for n, _ in self.allreduce_latency]
        times = [t for _, t in self.allreduce_latency]
        return float(np.interp(math.log2(gpus), [math.log2(n) for n in counts], times))


@dataclass(frozen=True)
class StepArchitecture:
    """What one forward step of a whole network touches, in the terms of
    :mod:`speclib.formulas.step`: the ``dense`` weights every position uses
    (projections, routers, the output head), the ``ffn`` (one routed expert's
    weights summed over the MoE layers, with top-k of ``n_routed`` routed and
    ``n_shared`` shared experts per position; a dense FFN is one shared expert
    with no routed ones), and the attention (``attention_layers`` with m_c
    bytes per cached token and f FLOPs per pair; ``linear_layers`` with a
    fixed state of ``state_bytes`` per sequence and ``linear_flops`` per
    position; ``replay_bytes`` of one position's inputs a replay keeps to roll
    that state back). Built by :meth:`Model.step_architecture` and by drafter
    presets.
    """

    name: str
    dense_params: float
    dense_bytes: float
    dense_precision: str
    ffn_params: float = 0.0
    ffn_bytes: float = 1.0
    ffn_precision: str = "bf16"
    n_routed: int = 0
    top_k: int = 0
    n_shared: int = 0
    #: a group-limited router's (n_group, topk_group), None for one that is not
    expert_groups: Optional[tuple] = None
    attention_layers: int = 0
    context_bytes: float = 0.0
    flops_per_pair: float = 0.0
    attention_precision: str = "bf16"
    linear_layers: int = 0
    state_bytes: float = 0.0
    linear_flops: float = 0.0
    replay_bytes: float = 0.0
    #: what a step split over several GPUs needs (:mod:`speclib.core.layout`):
    #: the attention projections among the dense weights (replicated on every
    #: GPU under data-parallel attention), the KV heads a tensor-parallel split
    #: divides (0: one cache every query head reads, MLA's latent), the hidden
    #: size (the all-reduced activations per position), the layers and the
    #: layers with routed experts
    attention_params: float = 0.0
    #: the query heads of a full-attention layer, which tensor-parallel attention splits (0: not known)
    n_heads: int = 0
    #: the dense weights kept and multiplied in bf16 (the output head and the
    #: routers of an fp8 or fp4 checkpoint), among ``dense_params``
    bf16_params: float = 0.0
    kv_heads: int = 0
    hidden_size: int = 0
    n_layers: int = 0
    moe_layers: int = 0
    #: what a prompt's prefill needs: the active weights per token, f of the
    #: prefill's attention (:attr:`MLAAttention.prefill_flops_per_pair`), and
    #: the bytes of the weights every token reads (the dense weights) and of
    #: one expert summed over the MoE layers are ``dense_params`` x
    #: ``dense_bytes`` and ``ffn_params`` x ``ffn_bytes``
    active_params: float = 0.0
    prefill_flops_per_pair: float = 0.0

    def __post_init__(self):
        checked_array("dense_params", self.dense_params, lo=0)
        checked_array("ffn_params", self.ffn_params, lo=0)
        for name in ("dense_bytes", "ffn_bytes"):
            checked_array(name, getattr(self, name), lo=0, lo_open=True)
        for name in ("dense_precision", "ffn_precision", "attention_precision"):
            checked_choice(name, getattr(self, name), PRECISIONS)
        checked_int("n_routed", self.n_routed, lo=0)
        checked_int("top_k", self.top_k, lo=0, hi=self.n_routed)
        checked_int("n_shared", self.n_shared, lo=0)
        checked_int("attention_layers", self.attention_layers, lo=0)
        checked_int("linear_layers", self.linear_layers, lo=0)

    @property
    def is_moe(self) -> bool:
        return self.n_routed > 0


@lru_cache(maxsize=512)  # a model is a frozen value; Deployments rebuild the same few by the thousand
def _step_architecture(model: "Model") -> StepArchitecture:
    n_layers, n_ffn_layers, n_dense = model._layer_counts()
    h = model.hidden_size
    ffn = model.ffn
    attention = model._attention_params(n_layers)
    # the weights outside the layers: the output head, and the routers of the MoE layers
    in_bf16 = model.outside_layers_params()
    dense = attention + in_bf16
    if ffn.is_moe:
        dense += n_ffn_layers * ffn.dense_params  # a latent MoE's dense part
        if n_dense:
            dense += n_dense * 3 * h * model.dense_ffn_width
        experts = dict(ffn_params=float(n_ffn_layers * model.expert_params), n_routed=ffn.n_routed,
                       top_k=ffn.top_k, n_shared=ffn.n_shared, expert_groups=ffn.groups)
    else:
        experts = dict(ffn_params=float(n_layers * model.expert_params), n_shared=1)
    linear = model.linear_attention if model.is_hybrid else None
    # the output head and the routers in bf16, the rest at the projections' bytes: their mean per dense weight
    dense_bytes = (in_bf16 * BF16_BYTES + (dense - in_bf16) * model.proj_weight_bytes) / dense
    return StepArchitecture(
        name=model.name,
        dense_params=float(dense),
        dense_bytes=float(dense_bytes),
        dense_precision=model.proj_gemm_precision,
        ffn_bytes=ffn.weight_bytes,
        ffn_precision=model.ffn_gemm_precision,
        **experts,
        attention_layers=n_layers - (model.n_linear_layers if linear else 0),
        context_bytes=model.context_bytes,
        flops_per_pair=model.flops_per_pair,
        attention_precision=model.attention_precision,
        linear_layers=model.n_linear_layers if linear else 0,
        state_bytes=linear.state_bytes if linear else 0.0,
        linear_flops=linear.flops_per_position if linear else 0.0,
        replay_bytes=linear.replay_bytes if linear else 0.0,
        attention_params=float(attention),
        bf16_params=float(in_bf16),
        kv_heads=int(model.attention.kv_heads),
        n_heads=int(model.attention.n_heads),
        hidden_size=int(h),
        n_layers=int(n_layers),
        moe_layers=int(n_ffn_layers if ffn.is_moe else 0),
        active_params=float(model.active_params()),
        prefill_flops_per_pair=float(model.attention.prefill_flops_per_pair),
    )


#: Drafter kinds: ``mtp`` drafts one position per pass (gamma passes in
#: series), ``dflash`` one block of positions per pass (one pass for any gamma
#: up to the block).
DRAFTER_KINDS = ("mtp", "eagle3", "dflash")
#: The kinds that draft one position per pass, in series (gamma passes for gamma tokens).
CHAINED_KINDS = ("mtp", "eagle3")


def _dense_bytes_without_bf16(step) -> float:
    """Bytes per dense weight of ``step`` outside its bf16 part (its
    ``dense_bytes`` is the mean over both)."""
    if not step.bf16_params:
        return step.dense_bytes
    rest = step.dense_params - step.bf16_params
    return (step.dense_bytes * step.dense_params - 2.0 * step.bf16_params) / rest


@dataclass(frozen=True)
class Drafter:
    """A drafter priced by its own roofline: ``step`` is what one of its
    passes touches (its own weights; no KV cache), ``block`` the positions a
    DFlash pass drafts. ``acceptance`` names its measured survival curve
    (:func:`speclib.core.acceptance.drafter_curves`), ``target`` the model it
    drafts for."""

    name: str
    kind: str
    step: StepArchitecture
    source: str
    block: Optional[int] = None
    #: the longest draft it is run to where no measured survival curve caps
    #: it (the longest in the measured runs of it), and where that comes from
    depth: Optional[int] = None
    depth_source: str = ""
    target: Optional[str] = None
    acceptance: Optional[str] = None
    aliases: tuple = ()
    shared_params: float = 0.0
    cache_bytes_per_token: float = 0.0
    #: decoder layers one pass runs (its output head aside): what a pass
    #: costs per layer beyond its roofline (:mod:`speclib.core.calibrated`)
    layers: int = 1

    def __post_init__(self):
        checked_choice("kind", self.kind, DRAFTER_KINDS)
        checked_int("layers", self.layers, lo=1)
        if self.kind == "dflash":
            checked_int("block", self.block, lo=1)
        elif self.block is not None:
            raise ValueError(f"block is for DFlash drafters; {self.name} is {self.kind}")
        if self.depth is not None:
            checked_int("depth", self.depth, lo=1)
            if not self.depth_source:
                raise ValueError(f"depth_source must say where {self.name}'s depth of {self.depth} comes from")

    @property
    def max_gamma(self) -> Optional[int]:
        """The longest draft the drafter makes: its block (one DFlash call)
        and its depth, the shorter; None where neither bounds it."""
        caps = [c for c in (self.block, self.depth) if c is not None]
        return min(caps) if caps else None

    @property
    def max_gamma_reason(self) -> str:
        """Why :attr:`max_gamma` bounds a draft, for a message."""
        if self.block is not None and (self.depth is None or self.block <= self.depth):
            return f"{self.name} drafts one block of {self.block} positions per pass"
        if self.depth is not None:
            return f"{self.name} is run to at most {self.depth} drafted tokens"
        return f"{self.name} has no longest draft"

    @property
    def positions_per_pass(self) -> int:
        """Positions one pass drafts per sequence: one (MTP) or its block (DFlash)."""
        return self.block if self.kind == "dflash" else 1

    @property
    def precision(self) -> str:
        """The precision its weights are served in (its experts' where they differ: "fp8 (experts fp4)")."""
        s = self.step
        return s.dense_precision if s.ffn_precision == s.dense_precision or not s.ffn_params else (
            f"{s.dense_precision} (experts {s.ffn_precision})")

    def quantised(self, weights: Optional[str] = None, vendor: str = "") -> "Drafter":
        """This drafter served from a ``weights`` checkpoint: its dense weights
        and experts stored and multiplied in that precision
        (:func:`weight_bytes_for`), its output head kept in bf16; None keeps
        the preset's own."""
        if weights is None:
            return self
        b = weight_bytes_for(weights, vendor)
        s = self.step
        dense = (s.dense_params - s.bf16_params) * b + s.bf16_params * BF16_BYTES
        step = dataclasses.replace(s, dense_bytes=dense / s.dense_params if s.dense_params else b,
                                   dense_precision=weights, ffn_bytes=b, ffn_precision=weights)
        return dataclasses.replace(self, step=step)

    @property
    def resident_bytes(self) -> float:
        """Bytes of weights the drafter holds beyond its target's: its own
        dense weights (those it shares with the target, its output head,
        are held once, by the target) and every one of its experts."""
        s = self.step
        own_dense = s.dense_params - self.shared_params
        bf16_own = max(s.bf16_params - self.shared_params, 0.0)
        dense = (own_dense - bf16_own) * _dense_bytes_without_bf16(s) + bf16_own * 2.0
        experts = (s.n_routed + s.n_shared) * s.ffn_params * s.ffn_bytes
        return float(dense + experts)
