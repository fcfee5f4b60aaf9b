"""Hardware and model presets as frozen dataclasses.

Hardware numbers are dense (no structured sparsity) datasheet peaks. Model
presets hold architecture numbers only; every quantity the cost model uses
(W_attn, W_E, m_c, m_q, f) is derived from them by the formulas in
:mod:`speclib.attention` and :mod:`speclib.moe`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np
import sympy as sp

from . import attention as _attn
from ._checks import checked_choice

#: Precisions from narrowest to widest. A chip without tensor cores for a
#: precision runs it on the next wider one it has (MXFP4 weights on Hopper are
#: dequantised and multiplied in fp8), so it gets that precision's peak while
#: the bytes moved stay those of the narrow format.
PRECISIONS = ("fp4", "fp8", "bf16")

TB = 1e12
PFLOPS = 1e15


@dataclass(frozen=True)
class Hardware:
    """One accelerator: HBM bandwidth and dense peak FLOP/s per precision."""

    name: str
    memory_bandwidth: float  # bytes/s
    bf16_flops: float
    fp8_flops: Optional[float]
    fp4_flops: Optional[float]
    source: str
    aliases: tuple = ()

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


@dataclass(frozen=True)
class MLAAttention:
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

    kind = "mla"

    def _subs(self):
        return {
            _attn.n_h: self.n_heads,
            _attn.d_c: self.kv_lora_rank,
            _attn.d_r: self.rope_dim,
            _attn.b_kv: self.kv_bytes,
            _attn.b_q: self.query_bytes,
        }

    @property
    def context_bytes(self) -> float:
        """m_c: bytes read per context token."""
        return float(_attn.mla_context_bytes_expr.subs(self._subs()))

    @property
    def query_bytes_per_token(self) -> float:
        """m_q: bytes read per query token."""
        return float(_attn.mla_query_bytes_expr.subs(self._subs()))

    @property
    def flops_per_pair(self) -> float:
        """f: FLOPs per query-context pair."""
        return float(_attn.mla_flops_per_pair_expr.subs(self._subs()))

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
        return int(q + kv + o)

    def _indexer_subs(self):
        return {
            _attn.n_h: self.indexer_heads,
            _attn.d_h: self.indexer_head_dim,
            _attn.b_kv: self.indexer_key_bytes,
            _attn.b_q: self.query_bytes,
        }

    def variant_constants(self, variant: str, S):
        """(m_c, m_q, f, effective context) for ``variant`` at context ``S``."""
        if variant == "mla":
            return self.context_bytes, self.query_bytes_per_token, self.flops_per_pair, S
        if variant == "gqa":
            raise ValueError("variant 'gqa' needs a GQA model; this model uses MLA ('mla', 'hca', 'csa', 'indexer')")
        if self.hca_ratio is None:
            raise ValueError(f"variant {variant!r} needs a model with DeepSeek-V4 HCA/CSA attention; this one has only 'mla'")
        if variant == "hca":
            return self.context_bytes, self.query_bytes_per_token, self.flops_per_pair, np.divide(S, self.hca_ratio)
        if variant == "csa":
            return (
                self.context_bytes,
                self.query_bytes_per_token,
                self.flops_per_pair,
                np.minimum(np.divide(S, self.csa_ratio), self.csa_top_k),
            )
        subs = self._indexer_subs()
        return (
            float(_attn.indexer_context_bytes_expr.subs(subs)),
            float(_attn.indexer_query_bytes_expr.subs(subs)),
            float(_attn.indexer_flops_per_pair_expr.subs(subs)),
            np.divide(S, self.csa_ratio),
        )


@dataclass(frozen=True)
class GQAAttention:
    """Grouped-query attention (MHA when n_kv_heads == n_heads)."""

    n_heads: int
    n_kv_heads: int
    head_dim: int
    kv_bytes: float = 2.0
    query_bytes: float = 2.0

    kind = "gqa"

    def _subs(self):
        return {
            _attn.n_h: self.n_heads,
            _attn.n_kv: self.n_kv_heads,
            _attn.d_h: self.head_dim,
            _attn.b_kv: self.kv_bytes,
            _attn.b_q: self.query_bytes,
        }

    @property
    def context_bytes(self) -> float:
        return float(_attn.gqa_context_bytes_expr.subs(self._subs()))

    @property
    def query_bytes_per_token(self) -> float:
        return float(_attn.gqa_query_bytes_expr.subs(self._subs()))

    @property
    def flops_per_pair(self) -> float:
        return float(_attn.gqa_flops_per_pair_expr.subs(self._subs()))

    def projection_params(self, hidden: int) -> int:
        qkv = hidden * (self.n_heads + 2 * self.n_kv_heads) * self.head_dim
        return int(qkv + self.n_heads * self.head_dim * hidden)

    def variant_constants(self, variant: str, S):
        if variant != "gqa":
            raise ValueError(f"variant {variant!r} needs an MLA model; this model uses GQA (variant 'gqa')")
        return self.context_bytes, self.query_bytes_per_token, self.flops_per_pair, S


@dataclass(frozen=True)
class MoEFFN:
    """Routed experts (top-k of E) plus always-on shared experts."""

    n_routed: int
    top_k: int
    n_shared: int
    expert_width: int  # intermediate size of one expert
    weight_bytes: float  # bytes per parameter as stored (MXFP4: 0.53)
    precision: str = "fp4"  # the GEMM precision the experts run in

    is_moe = True

    def expert_params(self, hidden: int) -> int:
        """W_E: gate, up and down projections of one expert."""
        return 3 * hidden * self.expert_width


@dataclass(frozen=True)
class DenseFFN:
    """A gated dense FFN."""

    width: int
    weight_bytes: float
    precision: str = "fp8"

    is_moe = False

    def expert_params(self, hidden: int) -> int:
        """The whole FFN, treated as one always-on expert."""
        return 3 * hidden * self.width


@dataclass(frozen=True)
class Model:
    """A transformer layer's architecture numbers (the layer count cancels in
    every ratio the book draws; ``n_layers`` is kept for totals)."""

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


# --- hardware ---------------------------------------------------------------

B200 = Hardware(
    name="B200",
    memory_bandwidth=8 * TB,
    bf16_flops=2.25 * PFLOPS,
    fp8_flops=4.5 * PFLOPS,
    fp4_flops=9 * PFLOPS,
    source="NVIDIA DGX B200 datasheet (per GPU, dense); as used by Finn (2026)",
)

H100_SXM = Hardware(
    name="H100-SXM",
    memory_bandwidth=3.35 * TB,
    bf16_flops=989.4e12,
    fp8_flops=1978.9e12,
    fp4_flops=None,
    source="NVIDIA H100 Tensor Core GPU datasheet, SXM5 (dense = half the sparsity figures)",
    aliases=("H100",),
)

H200 = Hardware(
    name="H200",
    memory_bandwidth=4.8 * TB,
    bf16_flops=989.4e12,
    fp8_flops=1978.9e12,
    fp4_flops=None,
    source="NVIDIA H200 Tensor Core GPU datasheet, SXM (dense = half the sparsity figures)",
    aliases=("H200-SXM",),
)

MI300X = Hardware(
    name="MI300X",
    memory_bandwidth=5.3 * TB,
    bf16_flops=1307.4e12,
    fp8_flops=2614.9e12,
    fp4_flops=None,
    source="AMD Instinct MI300X data sheet (dense peak)",
)

_HARDWARE = [B200, H100_SXM, H200, MI300X]

# --- models -------------------------------------------------------------------

DEEPSEEK_V4_FLASH = Model(
    name="DeepSeek-V4-Flash",
    hidden_size=4096,
    attention=MLAAttention(
        n_heads=64,
        kv_lora_rank=512,
        rope_dim=64,
        q_lora_rank=1024,
        q_head_dim=512,
        kv_proj_width=512,
        o_head_dim=512,
        o_groups=8,
        o_lora_rank=1024,
        # The up-projected widths of DeepSeek-V3 (128 no-rope key, 128 value per
        # head); the paper's "T ~ 170" is d_c(d_n + d_v)/(2 d_c - d_n - d_v) with them.
        mha_nope_dim=128,
        mha_v_dim=128,
        kv_bytes=1.0,
        query_bytes=2.0,
        hca_ratio=128,
        csa_ratio=4,
        csa_top_k=512,
        indexer_heads=64,
        indexer_head_dim=128,
        indexer_key_bytes=1.0,
    ),
    # MXFP4: a 4-bit value plus one 8-bit scale per 32 values = 4.25 bits; the
    # paper's charts use 0.53 bytes (its appendix text says ~0.5).
    ffn=MoEFFN(n_routed=256, top_k=6, n_shared=1, expert_width=2048, weight_bytes=0.53, precision="fp4"),
    proj_weight_bytes=1.0,
    proj_precision="fp8",
    attention_precision="bf16",
    source="Finn (2026), per the DeepSeek-V4 report's Flash configuration",
    aliases=("deepseek-v4-flash", "v4-flash"),
)

LLAMA_3_70B = Model(
    name="Llama-3-70B",
    hidden_size=8192,
    attention=GQAAttention(n_heads=64, n_kv_heads=8, head_dim=128, kv_bytes=2.0, query_bytes=2.0),
    ffn=DenseFFN(width=28672, weight_bytes=2.0, precision="bf16"),
    proj_weight_bytes=2.0,
    proj_precision="bf16",
    attention_precision="bf16",
    n_layers=80,
    source="Meta Llama 3 70B config.json (hidden 8192, 64 heads, 8 KV heads, FFN 28672, 80 layers); bf16 weights and cache",
    aliases=("llama-3-70b", "llama3-70b", "llama-3.1-70b", "llama-3.3-70b"),
)

_MODELS = [DEEPSEEK_V4_FLASH, LLAMA_3_70B]

DEFAULT_MODEL = DEEPSEEK_V4_FLASH
DEFAULT_HARDWARE = B200


def _lookup(kind: str, name, registry):
    if isinstance(name, str):
        key = name.strip().lower()
        for item in registry:
            if key == item.name.lower() or key in (a.lower() for a in item.aliases):
                return item
    known = ", ".join(item.name for item in registry)
    raise ValueError(f"unknown {kind} {name!r}; known {kind}s: {known}")


def hardware(name: str) -> Hardware:
    """The hardware preset called ``name`` (case-insensitive)."""
    return _lookup("hardware", name, _HARDWARE)


def model(name: str) -> Model:
    """The model preset called ``name`` (case-insensitive)."""
    return _lookup("model", name, _MODELS)


def hardware_names() -> list:
    return [h.name for h in _HARDWARE]


def model_names() -> list:
    return [m.name for m in _MODELS]


def resolve(model_arg=None, hardware_arg=None):
    """Turn ``model=``/``hardware=`` arguments (preset, name or None) into presets."""
    if model_arg is None:
        m = DEFAULT_MODEL
    elif isinstance(model_arg, Model):
        m = model_arg
    else:
        m = model(model_arg)
    if hardware_arg is None:
        h = DEFAULT_HARDWARE
    elif isinstance(hardware_arg, Hardware):
        h = hardware_arg
    else:
        h = hardware(hardware_arg)
    return m, h
