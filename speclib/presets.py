"""Hardware and model presets as frozen dataclasses.

Hardware numbers are dense (no structured sparsity) datasheet peaks; each
preset's ``source`` names the datasheet and says which figures are derived.
Model presets hold architecture numbers only; every quantity the cost model
uses (W_attn, W_E, m_c, m_q, f) is derived from them by the formulas in
:mod:`speclib.attention` and :mod:`speclib.moe`. Besides the two written out
here, model presets are read from the Hugging Face style ``config.json`` files
in ``speclib/configs`` by :func:`from_hf_config`, which also builds a model
from any such file a user has.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Optional, Union


from . import attention as _attn
from ._checks import checked_array, checked_choice, checked_int

_MISSING = object()

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


class _AttentionConstants:
    """m_c, m_q and f of an attention layout, evaluated once per preset from
    the sympy expressions in :mod:`speclib.attention` that ``_EXPRS`` names
    (context bytes, query bytes, FLOPs per pair) with ``_subs()``."""

    _EXPRS: tuple = ()

    @cached_property
    def _constants(self) -> tuple:
        subs = self._subs()
        return tuple(float(expr.subs(subs)) for expr in self._EXPRS)

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

    kind = "mla"
    _EXPRS = (_attn.mla_context_bytes_expr, _attn.mla_query_bytes_expr, _attn.mla_flops_per_pair_expr)

    def _subs(self):
        return {
            _attn.n_h: self.n_heads,
            _attn.d_c: self.kv_lora_rank,
            _attn.d_r: self.rope_dim,
            _attn.b_kv: self.kv_bytes,
            _attn.b_q: self.query_bytes,
        }

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

    @cached_property
    def _indexer_constants(self) -> tuple:
        """m_c, m_q, f of CSA's score-only indexer."""
        subs = {
            _attn.n_h: self.indexer_heads,
            _attn.d_h: self.indexer_head_dim,
            _attn.b_kv: self.indexer_key_bytes,
            _attn.b_q: self.query_bytes,
        }
        exprs = (_attn.indexer_context_bytes_expr, _attn.indexer_query_bytes_expr, _attn.indexer_flops_per_pair_expr)
        return tuple(float(expr.subs(subs)) for expr in exprs)

    def variant_constants(self, variant: str, S):
        """(m_c, m_q, f, effective context) for ``variant`` at context ``S``."""
        if variant == "mla":
            return (*self._constants, S)
        if variant == "gqa":
            raise ValueError("variant 'gqa' needs a GQA model; this model uses MLA ('mla', 'hca', 'csa', 'indexer')")
        if self.hca_ratio is None:
            raise ValueError(f"variant {variant!r} needs a model with DeepSeek-V4 HCA/CSA attention; this one has only 'mla'")
        if variant == "hca":
            return (*self._constants, _attn._hca_context(S, self.hca_ratio))
        if variant == "csa":
            return (*self._constants, _attn._csa_context(S, self.csa_ratio, self.csa_top_k))
        return (*self._indexer_constants, _attn._indexer_context(S, self.csa_ratio))


@dataclass(frozen=True)
class GQAAttention(_AttentionConstants):
    """Grouped-query attention (MHA when n_kv_heads == n_heads)."""

    n_heads: int
    n_kv_heads: int
    head_dim: int
    kv_bytes: float = 2.0
    query_bytes: float = 2.0

    kind = "gqa"
    _EXPRS = (_attn.gqa_context_bytes_expr, _attn.gqa_query_bytes_expr, _attn.gqa_flops_per_pair_expr)

    def _subs(self):
        return {
            _attn.n_h: self.n_heads,
            _attn.n_kv: self.n_kv_heads,
            _attn.d_h: self.head_dim,
            _attn.b_kv: self.kv_bytes,
            _attn.b_q: self.query_bytes,
        }

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

    def __post_init__(self):
        # A custom model with top_k > n_routed would otherwise surface as a NaN
        # deep inside the cost model.
        checked_int("n_routed", self.n_routed, lo=1)
        checked_int("top_k", self.top_k, lo=1, hi=self.n_routed)
        checked_int("n_shared", self.n_shared, lo=0)
        checked_int("expert_width", self.expert_width, lo=1)
        checked_array("weight_bytes", self.weight_bytes, lo=0, lo_open=True)
        checked_choice("precision", self.precision, PRECISIONS)

    def expert_params(self, hidden: int) -> int:
        """W_E: gate, up and down projections of one expert."""
        return 3 * hidden * self.expert_width


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

    The cost model describes one representative layer: for a MoE model that is
    a MoE layer, so the few dense-FFN layers some MoE models keep at the bottom
    (DeepSeek-V3's first three) do not enter ``optimal_gamma``; they count only
    in the parameter totals (``n_dense_layers`` of width ``dense_ffn_width``).
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
        attention = n_layers * self.attn_proj_params
        if self.ffn.is_moe:
            router = self.hidden_size * self.ffn.n_routed
            ffn = n_ffn_layers * (experts_per_layer * self.expert_params + router)
            if n_dense:
                ffn += n_dense * 3 * self.hidden_size * self.dense_ffn_width
        else:
            ffn = n_layers * self.expert_params
        return int(embeddings + attention + ffn)

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

MI325X = Hardware(
    name="MI325X",
    memory_bandwidth=6.0 * TB,
    bf16_flops=1307.4e12,
    fp8_flops=2614.9e12,
    fp4_flops=None,
    source=(
        "AMD Instinct MI325X data sheet: 256 GB HBM3E at 6 TB/s; dense peaks FP16/BF16 1,307.4 "
        "TFLOPS and FP8 2,614.9 TFLOPS (the sparsity figures are twice these), the same CDNA 3 "
        "compute as MI300X; no FP4 matrix cores, so MXFP4 weights run at the FP8 peak"
    ),
)

MI355X = Hardware(
    name="MI355X",
    memory_bandwidth=8.0 * TB,
    # 256 CUs (8 XCDs x 32) x 2.4 GHz peak engine clock x 8,192 dense FP8
    # FLOP per clock per CU; BF16 runs at half that rate, MXFP4 at twice it.
    bf16_flops=256 * 2.4e9 * 4096,
    fp8_flops=256 * 2.4e9 * 8192,
    fp4_flops=256 * 2.4e9 * 16384,
    source=(
        "AMD Instinct MI355X data sheet: 288 GB HBM3E at 8 TB/s; dense peaks ~2.5 PFLOPS FP16/BF16, "
        "~5.0 PFLOPS FP8, ~10 PFLOPS MXFP4 (20 PFLOPS FP4 is the structured-sparsity figure). "
        "Exact values derived: 256 CUs x 2.4 GHz x 8,192 FP8 FLOP/clock/CU (AMD's ISSCC 2026 "
        "description of CDNA 4), halved for BF16 and doubled for MXFP4"
    ),
)

GB300 = Hardware(
    name="GB300",
    memory_bandwidth=8.0 * TB,
    bf16_flops=2.5 * PFLOPS,
    fp8_flops=5.0 * PFLOPS,
    fp4_flops=15.0 * PFLOPS,
    source=(
        "NVIDIA GB300 NVL72 datasheet, per Blackwell Ultra GPU (rack figure / 72): HBM3e 576 TB/s "
        "-> 8 TB/s; dense FP4 1,080 PFLOPS -> 15 PFLOPS; FP8/FP6 720 PFLOPS and FP16/BF16 360 "
        "PFLOPS are quoted with sparsity, so dense = sparse/2 -> 5 and 2.5 PFLOPS (assumed 2:1, "
        "as for every other precision on the sheet). HGX/DGX B300 parts run at lower clocks; "
        "their dense FP4 figure (13-14 PFLOPS in secondary sources) is not used here"
    ),
    aliases=("GB300-NVL72", "Blackwell-Ultra"),
)

_HARDWARE = [B200, H100_SXM, H200, MI300X, MI325X, MI355X, GB300]

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
    n_layers=43,
    vocab_size=129280,
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
    vocab_size=128256,
    source="Meta Llama 3 70B config.json (hidden 8192, 64 heads, 8 KV heads, FFN 28672, 80 layers); bf16 weights and cache",
    aliases=("llama-3-70b", "llama3-70b", "llama-3.1-70b", "llama-3.3-70b"),
)

# --- models from Hugging Face style config.json files -------------------------

#: Where the shipped configs live (package data).
CONFIG_DIR = Path(__file__).resolve().parent / "configs"

#: Bytes per parameter of MXFP4 as the paper's charts count it (4-bit values
#: plus one 8-bit scale per 32: 4.25 bits, rounded to 0.53 bytes).
MXFP4_BYTES = 0.53

_DTYPE_BYTES = {
    "bfloat16": 2.0,
    "float16": 2.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "float32": 4.0,
    "fp32": 4.0,
    "float8_e4m3fn": 1.0,
    "fp8": 1.0,
}

#: Keys of the optional "speclib" block: what an HF config does not say.
SPECLIB_KEYS = {
    "name": "display name",
    "aliases": "other names model() accepts",
    "source": "where the numbers come from",
    "weight_bytes": "bytes per parameter of every weight (overridden by the two below)",
    "ffn_weight_bytes": "bytes per parameter of the FFN / experts (MXFP4: 0.53)",
    "ffn_precision": "GEMM precision of the FFN / experts: fp4, fp8 or bf16",
    "proj_weight_bytes": "bytes per parameter of the attention projections",
    "proj_precision": "GEMM precision of the attention projections",
    "attention_precision": "precision of the attention matmuls (default bf16)",
    "kv_bytes": "bytes per cached element (default: the config's dtype)",
    "query_bytes": "bytes per query element (default 2)",
    "mha_nope_dim": "MLA: per-head no-rope key width of the up-projected form",
    "mha_v_dim": "MLA: per-head value width of the up-projected form",
    "hca_ratio": "DeepSeek-V4: HCA compression ratio",
    "csa_ratio": "DeepSeek-V4: CSA compression ratio",
    "csa_top_k": "DeepSeek-V4: compressed positions CSA keeps (default: index_topk)",
    "indexer_heads": "DeepSeek-V4: indexer heads (default: index_n_heads)",
    "indexer_head_dim": "DeepSeek-V4: indexer head width (default: index_head_dim)",
    "indexer_key_bytes": "DeepSeek-V4: bytes per indexer key element (default 1)",
}


class _ConfigReader:
    """Typed access to a config dict; every error names the file and the key."""

    def __init__(self, cfg: Mapping, where: str):
        self.cfg = cfg
        self.where = where

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.where}: {message}")

    def present(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def first_present(self, *keys):
        return next((k for k in keys if self.present(k)), None)

    def integer(self, key: str, default=_MISSING, lo: int = 1):
        value = self.cfg.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(f"missing {key!r} (an integer >= {lo})")
            return default
        try:
            return checked_int(key, value, lo=lo)
        except ValueError as exc:
            raise self.error(str(exc)) from None

    def number(self, key: str, value, lo: float = 0.0) -> float:
        try:
            return float(checked_array(key, value, lo=lo, lo_open=True))
        except ValueError as exc:
            raise self.error(str(exc)) from None

    def choice(self, key: str, value, choices) -> str:
        try:
            return checked_choice(key, value, choices)
        except ValueError as exc:
            raise self.error(str(exc)) from None


def _read_config(config):
    if isinstance(config, Mapping):
        return dict(config), "model config"
    if not isinstance(config, (str, os.PathLike)):
        raise ValueError(f"model config must be a path to a config.json or a dict; got {type(config).__name__}")
    path = Path(config)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the model config ({exc.strerror or exc})") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: a model config must be a JSON object")
    return cfg, str(path)


def _weight_formats(r: _ConfigReader, extra: Mapping):
    """(activation bytes, proj bytes, proj precision, ffn bytes, ffn precision)."""
    dtype = r.cfg.get("torch_dtype", r.cfg.get("dtype", "bfloat16"))
    dtype_key = str(dtype).lower().removeprefix("torch.")
    if dtype_key not in _DTYPE_BYTES:
        raise r.error(f"torch_dtype must be one of {', '.join(map(repr, _DTYPE_BYTES))}; got {dtype!r}")
    act_bytes = _DTYPE_BYTES[dtype_key]
    # Without a quantisation recipe the weights are stored, and (for fp32
    # configs, an assumption) multiplied, in 16-bit.
    proj = ffn = (act_bytes, "fp8" if act_bytes == 1.0 else "bf16")
    quant = r.cfg.get("quantization_config")
    if quant is not None:
        if not isinstance(quant, Mapping):
            raise r.error("quantization_config must be an object")
        method = str(quant.get("quant_method", "")).lower()
        if method == "fp8":
            proj = ffn = (1.0, "fp8")
        elif method == "mxfp4":
            ffn = (MXFP4_BYTES, "fp4")  # the experts only; attention stays unquantised
        elif method in ("awq", "gptq"):
            bits = quant.get("bits")
            if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
                raise r.error(f"quantization_config.bits must be one of 2, 3, 4, 8; got {bits!r}")
            # Weight-only formats: dequantised and multiplied in 16-bit.
            proj = ffn = (bits / 8, "bf16")
        else:
            raise r.error(
                "quantization_config.quant_method must be one of 'fp8', 'mxfp4', 'awq', 'gptq' "
                f"(or describe the weights in the \"speclib\" block); got {quant.get('quant_method')!r}"
            )
    if "weight_bytes" in extra:
        both = r.number("speclib.weight_bytes", extra["weight_bytes"])
        proj, ffn = (both, proj[1]), (both, ffn[1])
    proj_bytes = r.number("speclib.proj_weight_bytes", extra.get("proj_weight_bytes", proj[0]))
    ffn_bytes = r.number("speclib.ffn_weight_bytes", extra.get("ffn_weight_bytes", ffn[0]))
    proj_precision = r.choice("speclib.proj_precision", extra.get("proj_precision", proj[1]), PRECISIONS)
    ffn_precision = r.choice("speclib.ffn_precision", extra.get("ffn_precision", ffn[1]), PRECISIONS)
    return act_bytes, proj_bytes, proj_precision, ffn_bytes, ffn_precision


def _compress_ratios(r: _ConfigReader):
    """(csa_ratio, hca_ratio) from DeepSeek-V4's per-layer compress_ratios list."""
    ratios = r.cfg.get("compress_ratios")
    if ratios is None:
        return None, None
    if not isinstance(ratios, list) or not all(isinstance(x, int) and x >= 0 for x in ratios):
        raise r.error("compress_ratios must be a list of non-negative integers (0 = uncompressed layer)")
    used = sorted({x for x in ratios if x > 1})
    if not used:
        return None, None
    # The lightly compressed, sparsely selected layers (CSA) use the smallest
    # ratio, the heavily compressed dense ones (HCA) the largest.
    return used[0], (used[-1] if len(used) > 1 else None)


def _mla_attention(r: _ConfigReader, extra: Mapping, kv_bytes: float, query_bytes: float):
    heads = r.integer("num_attention_heads")
    rope = r.integer("qk_rope_head_dim")
    if r.present("kv_lora_rank"):
        # DeepSeek-V2/V3: the latent (kv_lora_rank) plus a shared rope key is
        # cached; a stored up-projection turns the latent into per-head keys
        # (qk_nope_head_dim) and values (v_head_dim).
        kv_lora = r.integer("kv_lora_rank")
        nope = r.integer("qk_nope_head_dim")
        v_dim = r.integer("v_head_dim")
        return MLAAttention(
            n_heads=heads,
            kv_lora_rank=kv_lora,
            rope_dim=rope,
            q_lora_rank=r.integer("q_lora_rank", None),
            q_head_dim=nope + rope,
            kv_proj_width=kv_lora + rope,
            o_head_dim=v_dim,
            kv_up_proj=True,
            mha_nope_dim=int(extra.get("mha_nope_dim", nope)),
            mha_v_dim=int(extra.get("mha_v_dim", v_dim)),
            kv_bytes=kv_bytes,
            query_bytes=query_bytes,
        )
    # DeepSeek-V4: one head_dim-wide latent per token serves as key and value,
    # queries come out head_dim wide, and the output projection is grouped and
    # low-rank. Counted as the paper counts it: d_c = head_dim with the rope key
    # d_r = qk_rope_head_dim on top (m_c = 576 B for Flash in fp8).
    head_dim = r.integer("head_dim")
    csa_from_list, hca_from_list = _compress_ratios(r)
    csa_ratio = extra.get("csa_ratio", csa_from_list)
    hca_ratio = extra.get("hca_ratio", hca_from_list)
    sparse = hca_ratio is not None
    if sparse and csa_ratio is None:
        raise r.error("an HCA ratio needs a CSA ratio too (speclib.csa_ratio or compress_ratios)")
    indexer = dict(
        csa_top_k=int(extra.get("csa_top_k", r.integer("index_topk"))) if sparse else None,
        indexer_heads=int(extra.get("indexer_heads", r.integer("index_n_heads"))) if sparse else None,
        indexer_head_dim=int(extra.get("indexer_head_dim", r.integer("index_head_dim"))) if sparse else None,
    )
    return MLAAttention(
        n_heads=heads,
        kv_lora_rank=head_dim,
        rope_dim=rope,
        q_lora_rank=r.integer("q_lora_rank"),
        q_head_dim=head_dim,
        kv_proj_width=head_dim,
        o_head_dim=head_dim,
        o_groups=r.integer("o_groups"),
        o_lora_rank=r.integer("o_lora_rank"),
        mha_nope_dim=extra.get("mha_nope_dim"),
        mha_v_dim=extra.get("mha_v_dim"),
        kv_bytes=kv_bytes,
        query_bytes=query_bytes,
        hca_ratio=None if hca_ratio is None else r.number("speclib.hca_ratio", hca_ratio, lo=1),
        csa_ratio=None if csa_ratio is None else r.number("speclib.csa_ratio", csa_ratio, lo=1),
        indexer_key_bytes=r.number("speclib.indexer_key_bytes", extra.get("indexer_key_bytes", 1.0)),
        **indexer,
    )


def _gqa_attention(r: _ConfigReader, hidden: int, kv_bytes: float, query_bytes: float):
    heads = r.integer("num_attention_heads")
    kv_heads = r.integer("num_key_value_heads", heads)
    if heads % kv_heads:
        raise r.error(f"num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})")
    if r.present("head_dim"):
        head_dim = r.integer("head_dim")
    elif hidden % heads:
        raise r.error(f"give head_dim: hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads})")
    else:
        head_dim = hidden // heads
    return GQAAttention(n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim, kv_bytes=kv_bytes, query_bytes=query_bytes)


def _moe_layers(r: _ConfigReader, n_layers: Optional[int]) -> Optional[int]:
    """How many of the layers are MoE, under either family's placement rule."""
    if n_layers is None:
        return None
    first_dense = r.integer("first_k_dense_replace", 0, lo=0)  # DeepSeek
    every = r.integer("moe_layer_freq", 1)  # DeepSeek
    step = r.integer("decoder_sparse_step", 1)  # Qwen-MoE
    mlp_only = r.cfg.get("mlp_only_layers") or []  # Qwen-MoE
    if not isinstance(mlp_only, list):
        raise r.error("mlp_only_layers must be a list of layer indices")
    return sum(
        1
        for i in range(n_layers)
        if i >= first_dense and i % every == 0 and (i + 1) % step == 0 and i not in mlp_only
    )


def _ffn(r: _ConfigReader, n_layers, ffn_bytes: float, ffn_precision: str):
    """(ffn, n_dense_layers, dense_ffn_width)."""
    experts_key = r.first_present("n_routed_experts", "num_local_experts", "num_experts")
    n_routed = r.integer(experts_key, lo=0) if experts_key else 0
    if n_routed <= 1:
        return DenseFFN(width=r.integer("intermediate_size"), weight_bytes=ffn_bytes, precision=ffn_precision), 0, None
    top_k = r.integer("num_experts_per_tok")
    if top_k > n_routed:
        raise r.error(f"num_experts_per_tok ({top_k}) must be at most {experts_key} ({n_routed})")
    width_key = "moe_intermediate_size" if r.present("moe_intermediate_size") else "intermediate_size"
    width = r.integer(width_key)
    n_shared = r.integer("n_shared_experts", 0, lo=0)
    if r.present("shared_expert_intermediate_size"):
        # Qwen2-MoE style: one wide shared expert, counted in units of a routed one.
        shared_width = r.integer("shared_expert_intermediate_size", lo=0)
        if shared_width % width:
            raise r.error(
                f"shared_expert_intermediate_size ({shared_width}) must be a multiple of {width_key} ({width})"
            )
        n_shared = shared_width // width
    ffn = MoEFFN(
        n_routed=n_routed, top_k=top_k, n_shared=n_shared, expert_width=width, weight_bytes=ffn_bytes, precision=ffn_precision
    )
    n_moe = _moe_layers(r, n_layers)
    n_dense = 0 if n_moe is None else n_layers - n_moe
    dense_width = r.integer("intermediate_size") if n_dense else None
    return ffn, n_dense, dense_width


def from_hf_config(config, *, name: Optional[str] = None) -> Model:
    """A :class:`Model` from a Hugging Face style ``config.json`` (a path or an
    already-parsed dict).

    Reads the spellings of the DeepSeek-V2/V3 (``kv_lora_rank``, ``q_lora_rank``,
    ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``,
    ``n_routed_experts``, ``n_shared_experts``, ``first_k_dense_replace``),
    DeepSeek-V4 (``head_dim``, ``o_groups``, ``o_lora_rank``, ``index_*``,
    ``compress_ratios``), Mixtral (``num_local_experts``), Qwen-MoE
    (``num_experts``, ``moe_intermediate_size``, ``mlp_only_layers``,
    ``decoder_sparse_step``) and Llama (dense ``intermediate_size``, GQA
    ``num_key_value_heads``) families; ``torch_dtype`` and
    ``quantization_config`` (``fp8``, ``mxfp4``, ``awq``/``gptq``) set the
    bytes per weight. An optional ``"speclib"`` object supplies what such
    configs do not say (see :data:`SPECLIB_KEYS`), e.g. MXFP4 experts
    (``"ffn_weight_bytes": 0.53, "ffn_precision": "fp4"``) or an fp8 KV cache
    (``"kv_bytes": 1``). A multimodal config's ``text_config`` is read in
    place of the top level.

    Raises ``ValueError`` naming the file and key when something is missing
    or out of range.
    """
    cfg, where = _read_config(config)
    if isinstance(cfg.get("text_config"), Mapping):
        cfg = {**cfg, **cfg["text_config"]}
    extra = cfg.get("speclib") or {}
    r = _ConfigReader(cfg, where)
    if not isinstance(extra, Mapping):
        raise r.error('"speclib" must be an object')
    unknown = sorted(set(extra) - set(SPECLIB_KEYS))
    if unknown:
        raise r.error(f"unknown speclib key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(SPECLIB_KEYS)}")

    hidden = r.integer("hidden_size")
    n_layers = r.integer("num_hidden_layers", None)
    act_bytes, proj_bytes, proj_precision, ffn_bytes, ffn_precision = _weight_formats(r, extra)
    kv_bytes = r.number("speclib.kv_bytes", extra.get("kv_bytes", act_bytes))
    query_bytes = r.number("speclib.query_bytes", extra.get("query_bytes", 2.0))
    if r.present("kv_lora_rank") or r.present("o_groups"):
        attention = _mla_attention(r, extra, kv_bytes, query_bytes)
    else:
        attention = _gqa_attention(r, hidden, kv_bytes, query_bytes)
    ffn, n_dense, dense_width = _ffn(r, n_layers, ffn_bytes, ffn_precision)

    default_name = Path(where).stem if where != "model config" else "custom model"
    aliases = extra.get("aliases", ())
    if isinstance(aliases, str) or not all(isinstance(a, str) for a in aliases):
        raise r.error("speclib.aliases must be a list of strings")
    return Model(
        name=name or extra.get("name") or cfg.get("_name_or_path") or default_name,
        hidden_size=hidden,
        attention=attention,
        ffn=ffn,
        proj_weight_bytes=proj_bytes,
        proj_precision=proj_precision,
        attention_precision=r.choice(
            "speclib.attention_precision", extra.get("attention_precision", "bf16"), PRECISIONS
        ),
        n_layers=n_layers,
        source=str(extra.get("source", f"built from {where}")),
        aliases=tuple(aliases),
        vocab_size=r.integer("vocab_size", None),
        n_dense_layers=n_dense,
        dense_ffn_width=dense_width,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
    )


def shipped_configs() -> dict:
    """The config files shipped in ``speclib/configs``, by file stem."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.json"))}


def _shipped(stem: str) -> Model:
    return from_hf_config(CONFIG_DIR / f"{stem}.json")


DEEPSEEK_V4_PRO = _shipped("deepseek-v4-pro")
DEEPSEEK_V3 = _shipped("deepseek-v3")
MIXTRAL_8X7B = _shipped("mixtral-8x7b")
QWEN3_235B_A22B = _shipped("qwen3-235b-a22b")

_MODELS = [DEEPSEEK_V4_FLASH, DEEPSEEK_V4_PRO, DEEPSEEK_V3, LLAMA_3_70B, MIXTRAL_8X7B, QWEN3_235B_A22B]

DEFAULT_MODEL = DEEPSEEK_V4_FLASH
DEFAULT_HARDWARE = B200


def lookup(kind: str, name, registry):
    """The item of ``registry`` whose name or alias is ``name`` (case-insensitive);
    otherwise a ValueError listing the known names of this ``kind``."""
    if isinstance(name, str):
        key = name.strip().lower()
        for item in registry:
            if key == item.name.lower() or key in (a.lower() for a in item.aliases):
                return item
    known = ", ".join(item.name for item in registry)
    raise ValueError(f"unknown {kind} {name!r}; known: {known}")


def hardware(name: str) -> Hardware:
    """The hardware preset called ``name`` (case-insensitive)."""
    return lookup("hardware", name, _HARDWARE)


def model(name: str) -> Model:
    """The model preset called ``name`` (case-insensitive)."""
    return lookup("model", name, _MODELS)


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


def all_models() -> tuple:
    """Every model preset, in listing order."""
    return tuple(_MODELS)


def all_hardware() -> tuple:
    """Every hardware preset, in listing order."""
    return tuple(_HARDWARE)


def attention_kind(m: Model) -> str:
    """A short description of the model's attention."""
    attn = m.attention
    if attn.kind == "gqa":
        if attn.n_kv_heads == attn.n_heads:
            return f"MHA {attn.n_heads} heads"
        return f"GQA {attn.n_heads}/{attn.n_kv_heads} heads"
    style = "V4 grouped-o" if attn.o_groups else ("V3 up-proj" if attn.kv_up_proj else "MLA")
    sparse = f", CSA {attn.csa_ratio:g}x/HCA {attn.hca_ratio:g}x" if attn.hca_ratio is not None else ""
    return f"MLA {attn.n_heads} heads ({style}{sparse})"


def ffn_kind(m: Model) -> str:
    """A short description of the model's FFN."""
    ffn = m.ffn
    if not ffn.is_moe:
        return f"dense {ffn.width}"
    shared = f" + {ffn.n_shared} shared" if ffn.n_shared else ""
    return f"MoE {ffn.n_routed} top-{ffn.top_k}{shared}"


def describe_model(m: Model) -> dict:
    """The key numbers of a model preset, as the ``speclib presets`` listing shows them."""
    ffn = m.ffn
    return {
        "name": m.name,
        "attention": attention_kind(m),
        "ffn": ffn_kind(m),
        "W_attn": m.attn_proj_params,
        "W_E": m.expert_params,
        "E/k": ffn.n_routed / ffn.top_k if ffn.is_moe else None,
        "m_c": m.context_bytes,
        "m_q": m.query_bytes,
        "f": m.flops_per_pair,
        "weights": f"proj {m.proj_weight_bytes:g} B {m.proj_precision}, ffn {ffn.weight_bytes:g} B {ffn.precision}",
        "source": m.source,
    }


def describe_hardware(h: Hardware) -> dict:
    """The key numbers of a hardware preset: bandwidth, peaks, ridges, fp4 handling."""
    out = {"name": h.name, "bandwidth_TBps": h.memory_bandwidth / TB}
    for p in reversed(PRECISIONS):
        out[f"{p}_PFLOPS"] = h.peak_flops(p) / PFLOPS
    for p in reversed(PRECISIONS):
        out[f"ridge_{p}"] = h.ridge(p)
    fallback = next(p for p in PRECISIONS if h.native(p))
    out["fp4"] = "native" if h.native("fp4") else f"runs at the {fallback} peak"
    out["source"] = h.source
    return out
