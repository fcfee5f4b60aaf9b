"""The attention roofline: arithmetic intensity of T query tokens over S
context tokens, for the attention layouts of :mod:`speclib.presets` (MLA and
DeepSeek-V4's HCA/CSA variants, GQA/MHA). The closed forms, and the constants
(m_c, m_q, f) an architecture implies, are in :mod:`speclib.formulas.attention`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._checks import checked_array, checked_choice, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import GQAAttention, resolve


#: Variant names accepted by :func:`attention_intensity`.
VARIANTS = ("mla", "hca", "csa", "indexer", "gqa")
#: KV-cache formats for a hybrid's full attention (:func:`hybrid_architecture`):
#: bytes per cached element.
KV_FORMATS = {"bf16": 2.0, "fp8": 1.0}


def intensity_from_constants(T, S, context_bytes, query_bytes, flops_per_pair):
    """AI(T, S) for explicit constants (m_c, m_q, f); broadcasts."""
    T_arr = checked_array("T", T, lo=0, lo_open=True)
    S_arr = checked_array("S", S, lo=0, lo_open=True)
    m_c_arr = checked_array("context_bytes", context_bytes, lo=0, lo_open=True)
    m_q_arr = checked_array("query_bytes", query_bytes, lo=0)
    f_arr = checked_array("flops_per_pair", flops_per_pair, lo=0, lo_open=True)
    return scalar_or_array(nf.attention_intensity(T_arr, S_arr, m_c_arr, m_q_arr, f_arr))


#: Overlap of a CSA verify's per-position selections (omega of
#: :data:`speclib.formulas.attention.csa_read_expr`) that the chapters read by
#: default: 0, each position its own top-k, as DeepSeek's sparse attention
#: selects; 1 is the post's reading, one selection shared by the verify.
CSA_OVERLAP = 0.0


def split_of(tp=1, dp_attention=False) -> int:
    """GPUs a sequence's query heads are split over: ``tp`` under tensor
    parallelism, 1 under data-parallel attention (each GPU holds whole heads
    of its own sequences)."""
    tp = checked_int("tp", tp, lo=1)
    if not isinstance(dp_attention, (bool, np.bool_)):
        raise ValueError(f"dp_attention must be True or False; got {dp_attention!r}")
    if dp_attention and tp == 1:
        raise ValueError("dp_attention splits attention by sequence over the tensor-parallel GPUs: it needs tp > 1")
    return 1 if dp_attention else tp


def cache_copies(model=None, tp=1, dp_attention=False) -> float:
    """How many copies of a sequence's attention cache the ``tp`` GPUs read
    for the work of one (:data:`speclib.formulas.attention.cache_copies_expr`):
    ``tp`` for MLA under tensor parallelism (every GPU reads the whole latent,
    computing 1/tp of the heads), max(1, tp/n_kv) for GQA, 1 under
    data-parallel attention. One GPU's attention intensity is the one-GPU
    intensity with m_c multiplied by it."""
    model, _ = resolve(model, None)
    h = split_of(tp, dp_attention)
    return float(nf.attention_cache_copies(float(h), float(model.attention.kv_heads or 1)))


def attention_intensity(T, S, model=None, variant=None, *, query_bytes: bool = True, tp=1, dp_attention=False,
                        csa_overlap=CSA_OVERLAP):
    """Arithmetic intensity (FLOP/byte) of ``T`` query tokens per sequence over
    ``S`` tokens of (original, uncompressed) context, on one GPU of a group of
    ``tp`` (heads split over them; ``dp_attention``: whole heads per GPU).

    ``variant``: ``"mla"`` (the full-length MLA, the paper's Table 1), ``"hca"``
    (MLA over the context compressed by the model's HCA ratio), ``"csa"`` (CSA's
    main attention: MLA over the top-k selected compressed positions, each
    query position its own selection, overlapping by ``csa_overlap``: 0
    separate, 1 one shared selection as the post reads it),
    ``"indexer"`` (CSA's score-only indexer over the lightly compressed
    context), ``"gqa"`` for GQA/MHA models. ``None`` means the model's own
    full attention. ``query_bytes=False`` drops the m_q*T term, as the paper's
    ledger does.
    """
    model, _ = resolve(model, None)
    T_arr = checked_array("T", T, lo=0, lo_open=True)
    S_arr = checked_array("S", S, lo=0, lo_open=True)
    omega = checked_array("csa_overlap", csa_overlap, lo=0, hi=1)
    attn = model.attention
    variant = attn.kind if variant is None else checked_choice("variant", variant, VARIANTS)
    context_bytes, q_bytes, flops, S_eff = attn.variant_constants(variant, S_arr)
    if not query_bytes:
        q_bytes = 0.0
    context_bytes = context_bytes * cache_copies(model, tp, dp_attention)
    if variant == "csa":
        return scalar_or_array(nf.csa_intensity(T_arr, S_arr, context_bytes, q_bytes, flops, attn.csa_ratio,
                                                attn.csa_top_k, omega))
    return scalar_or_array(nf.attention_intensity(T_arr, S_eff, context_bytes, q_bytes, flops))


def compute_bound_width(model=None, hardware=None, variant=None, *, tp=1, dp_attention=False) -> float:
    """Verify width T at which the long-context attention intensity of one GPU
    reaches the ridge of the attention precision (the paper's T ~ 1.16 for
    MLA on one B200; ``tp`` times that for MLA split by head over ``tp`` GPUs,
    :data:`speclib.formulas.attention.split_compute_bound_width_expr`)."""
    model, hardware = resolve(model, hardware)
    attn = model.attention
    variant = attn.kind if variant is None else checked_choice("variant", variant, VARIANTS)
    context_bytes, _, flops, _ = attn.variant_constants(variant, 1.0)
    ridge = hardware.ridge(model.attention_precision)
    h = split_of(tp, dp_attention)
    return float(nf.split_compute_bound_width(context_bytes, flops, ridge, float(h), float(attn.kv_heads or 1)))


def mha_form_crossover(model=None) -> float:
    """Verify width past which MLA's up-projected (MHA) form needs fewer FLOPs
    than the absorbed (MQA) form (the paper's T ~ 170)."""
    model, _ = resolve(model, None)
    attn = model.attention
    if attn.kind != "mla" or attn.mha_nope_dim is None:
        raise ValueError("model must use MLA with up-projected head widths (mha_nope_dim, mha_v_dim)")
    return float(nf.mha_form_crossover(attn.kv_lora_rank, attn.rope_dim, attn.mha_nope_dim, attn.mha_v_dim))


def linear_intensity(T, model="Qwen3.6-35B-A3B"):
    """Arithmetic intensity (FLOP/byte) of a hybrid model's linear attention
    (GatedDeltaNet) for ``T`` positions per sequence: its state is read once
    per step whatever ``T`` and the context are. Broadcasts over ``T``."""
    m, _ = resolve(model, None)
    if not m.is_hybrid:
        raise ValueError(f"model must be a hybrid with linear-attention layers; {m.name} has none")
    T_arr = checked_array("T", T, lo=0, lo_open=True)
    return scalar_or_array(nf.linear_intensity(T_arr, **m.linear_attention.architecture()))


def hybrid_architecture(model="Qwen3.6-35B-A3B", *, full_attention_layers=None, kv_format=None):
    """``model``'s whole-step architecture with ``full_attention_layers`` of
    its layers full attention (the rest linear) and its KV cache in
    ``kv_format`` (None keeps the model's own)."""
    m, _ = resolve(model, None)
    if not m.is_hybrid:
        raise ValueError(f"model must be a hybrid with linear-attention layers; {m.name} has none")
    arch = m.step_architecture()
    layers = arch.attention_layers + arch.linear_layers
    changes = {}
    if full_attention_layers is not None:
        n = checked_int("full_attention_layers", full_attention_layers, lo=1, hi=layers)
        changes.update(attention_layers=n, linear_layers=layers - n)
    if kv_format is not None:
        b_kv = KV_FORMATS[checked_choice("kv_format", kv_format, tuple(KV_FORMATS))]
        attn = m.attention
        changes["context_bytes"] = float(nf.gqa_context_bytes(attn.n_kv_heads, attn.head_dim, b_kv))
    return dataclasses.replace(arch, **changes) if changes else arch


def kv_state_bytes(S, arch) -> dict:
    """Bytes one sequence of a step architecture ``arch`` keeps at context
    ``S``: ``kv`` (full-attention layers), ``state`` (linear-attention
    layers), ``total``, and ``all_full`` (every layer full attention, the
    same KV per layer)."""
    S_arr = checked_array("S", S, lo=0)
    layers = arch.attention_layers + arch.linear_layers
    m_c, sigma = arch.context_bytes, arch.state_bytes
    return {
        "kv": nf.cache_bytes(1.0, S_arr, arch.attention_layers, m_c, 0, sigma),
        "state": nf.cache_bytes(1.0, S_arr, 0, m_c, arch.linear_layers, sigma),
        "total": nf.cache_bytes(1.0, S_arr, arch.attention_layers, m_c, arch.linear_layers, sigma),
        "all_full": nf.cache_bytes(1.0, S_arr, layers, m_c, 0, sigma),
    }


def kv_state_crossing(arch):
    """The context at which ``arch``'s KV cache weighs as much as its state
    (None without linear layers)."""
    if arch.linear_layers == 0:
        return None
    return float(nf.kv_state_crossing(arch.attention_layers, arch.context_bytes, arch.linear_layers, arch.state_bytes))


def with_gqa_attention(model="DeepSeek-V4-Flash", *, n_kv_heads=8, head_dim=128):
    """A what-if: ``model`` with its attention replaced by GQA (same query
    heads, ``n_kv_heads`` KV heads of ``head_dim``, the same cache and query
    bytes); experts, projections' formats and everything else unchanged."""
    model, _ = resolve(model, None)
    heads = model.attention.n_heads
    n_kv_heads = checked_int("n_kv_heads", n_kv_heads, lo=1, hi=heads)
    if heads % n_kv_heads:
        raise ValueError(f"n_kv_heads must divide the model's {heads} query heads; got {n_kv_heads}")
    attention = GQAAttention(n_heads=heads, n_kv_heads=n_kv_heads, head_dim=checked_int("head_dim", head_dim, lo=1),
                             kv_bytes=model.attention.kv_bytes, query_bytes=model.attention.query_bytes)
    return dataclasses.replace(
        model, name=f"{model.name} with GQA {heads}/{n_kv_heads} (what-if)", attention=attention, aliases=(),
        source=f"what-if: {model.name} with GQA attention ({heads} query, {n_kv_heads} KV heads of {head_dim})")


def mha_counterpart(model="Llama-3-70B"):
    """A GQA model with one KV head per query head: its MHA counterpart."""
    m, _ = resolve(model, None)
    if m.attention.kind != "gqa":
        raise ValueError(f"model must use GQA attention; {m.name} uses {m.attention.kind.upper()}")
    attn = dataclasses.replace(m.attention, n_kv_heads=m.attention.n_heads)
    return dataclasses.replace(m, name=f"{m.name} as MHA", attention=attn, aliases=())


def v4_attention_what_if(model=None, *, hca_ratio=None, csa_ratio=None, csa_top_k=None):
    """``model`` with DeepSeek-V4's compression knobs changed (None keeps them)."""
    m, _ = resolve(model, None)
    attn = m.attention
    if getattr(attn, "hca_ratio", None) is None:
        raise ValueError(f"model must have DeepSeek-V4 HCA/CSA attention; {m.name} has none")
    changes = {k: v for k, v in (("hca_ratio", hca_ratio), ("csa_ratio", csa_ratio), ("csa_top_k", csa_top_k))
               if v is not None}
    return dataclasses.replace(m, attention=dataclasses.replace(attn, **changes)) if changes else m
