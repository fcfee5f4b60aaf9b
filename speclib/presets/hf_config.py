"""Models from Hugging Face style ``config.json`` files: the reader behind
every model preset (:mod:`speclib.presets.catalog` reads the shipped configs
in ``speclib/presets/models``) and behind ``speclib --model-config``.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from .._checks import checked_array, checked_choice, checked_int
from .architecture import PRECISIONS, DenseFFN, GatedDeltaNet, GQAAttention, MLAAttention, Model, MoEFFN

_MISSING = object()

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
    "served_as": "other checkpoints of this architecture, as they are named (e.g. DeepSeek-R1 for DeepSeek-V3): "
                 "model() accepts them and the commands' headers name the one asked for",
    "source": "where the numbers come from",
    "weight_bytes": "bytes per parameter of every weight (overridden by the two below)",
    "ffn_weight_bytes": "bytes per parameter of the FFN / experts (MXFP4: 0.53)",
    "ffn_precision": "GEMM precision of the FFN / experts: fp4, fp8 or bf16",
    "proj_weight_bytes": "bytes per parameter of the attention projections",
    "proj_precision": "GEMM precision of the attention projections",
    "attention_precision": "precision of the attention matmuls (default bf16)",
    "activations": "precision of the GEMMs' activations as served (default: the quantization_config's, else as "
                   "each GEMM's weights; fp8 with fp4 experts is W4A8, run at the fp8 rate)",
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
    "state_bytes": "linear attention: bytes per state element (default: the config's dtype)",
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
        elif method == "compressed-tensors" and _float8_group(r, quant) is not None:
            # llm-compressor's FP8 checkpoints (RedHatAI / neuralmagic): every
            # Linear of the decoder in fp8 with the output head in "ignore";
            # without input activations in the group the weights are
            # dequantised and multiplied in bf16 (W8A16)
            proj = ffn = (1.0, "fp8")
        elif method == "compressed-tensors" and "mxfp4" in str(quant.get("format", "")).lower():
            # Kimi-K3's recipe: the routed experts in MXFP4; attention, shared
            # experts, dense FFNs and the output head in its "ignore" list stay
            # unquantised
            ffn = (MXFP4_BYTES, "fp4")
        elif method in ("awq", "gptq"):
            bits = quant.get("bits")
            if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
                raise r.error(f"quantization_config.bits must be one of 2, 3, 4, 8; got {bits!r}")
            # Weight-only formats: dequantised and multiplied in 16-bit.
            proj = ffn = (bits / 8, "bf16")
        else:
            raise r.error(
                "quantization_config.quant_method must be one of 'fp8', 'mxfp4', 'awq', 'gptq', "
                "'compressed-tensors' with an mxfp4 format or a group of 8-bit float weights "
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


def _float8_group(r: _ConfigReader, quant: Mapping):
    """The one config group of a compressed-tensors ``quantization_config``
    whose weights are 8-bit floats (llm-compressor's FP8 schemes), or None."""
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping):
        return None
    found = [g for g in groups.values() if isinstance(g, Mapping) and isinstance(g.get("weights"), Mapping)
             and g["weights"].get("type") == "float" and g["weights"].get("num_bits") == 8]
    if len(found) > 1:
        raise r.error("quantization_config.config_groups: give one group of 8-bit float weights")
    return found[0] if found else None


def _activations(r: _ConfigReader, extra: Mapping):
    """The precision the GEMMs' activations are served in: the "speclib"
    block's ``activations``, else what the quantization_config says (a
    compressed-tensors FP8 group without input activations is W8A16: bf16),
    else None (as each GEMM's weights)."""
    if "activations" in extra:
        return r.choice("speclib.activations", extra["activations"], PRECISIONS)
    quant = r.cfg.get("quantization_config")
    if isinstance(quant, Mapping) and str(quant.get("quant_method", "")).lower() == "compressed-tensors":
        group = _float8_group(r, quant)
        if group is not None and group.get("input_activations") is None:
            return "bf16"
    return None


def _kv_cache_bytes(r: _ConfigReader, default: float) -> float:
    """Bytes per cached element: a compressed-tensors ``kv_cache_scheme`` of
    8-bit floats stores 1, else ``default`` (the config's dtype)."""
    quant = r.cfg.get("quantization_config")
    scheme = quant.get("kv_cache_scheme") if isinstance(quant, Mapping) else None
    if isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8:
        return 1.0
    return default


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
            output_gate=_flag(r, "mla_use_output_gate"),
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


def _flag(r: _ConfigReader, key: str) -> bool:
    value = r.cfg.get(key, False)
    if not isinstance(value, bool):
        raise r.error(f"{key} must be true or false; got {value!r}")
    return value


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
    gate = r.cfg.get("attn_output_gate", False)
    if not isinstance(gate, bool):
        raise r.error(f"attn_output_gate must be true or false; got {gate!r}")
    return GQAAttention(n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim, kv_bytes=kv_bytes,
                        query_bytes=query_bytes, output_gate=gate)


#: The spellings of a hybrid's layer kinds in ``layer_types``.
_LAYER_KINDS = ("full_attention", "linear_attention")


def _linear_layers(r: _ConfigReader, n_layers: Optional[int], state_bytes: float):
    """(GatedDeltaNet layout, how many layers use it) of a hybrid
    (Qwen3-Next, Qwen3.5/3.6), or (None, 0). The layer kinds come from
    ``layer_types`` or, failing that, ``full_attention_interval`` (every
    interval-th layer full); both given must agree. Kimi's
    ``linear_attn_config`` (Kimi Delta Attention) is read by
    :func:`_kimi_linear_layers`."""
    if isinstance(r.cfg.get("linear_attn_config"), Mapping):
        return _kimi_linear_layers(r, n_layers, state_bytes)
    if not r.present("linear_num_value_heads"):
        return None, 0
    if n_layers is None:
        raise r.error("a hybrid model needs num_hidden_layers (to count its linear-attention layers)")
    kinds = r.cfg.get("layer_types")
    counted = None
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != n_layers or not set(kinds) <= set(_LAYER_KINDS):
            raise r.error(f"layer_types must list {n_layers} entries, each one of {', '.join(map(repr, _LAYER_KINDS))}")
        counted = kinds.count("linear_attention")
    if r.present("full_attention_interval"):
        interval = r.integer("full_attention_interval")
        by_interval = n_layers - n_layers // interval
        if counted is not None and counted != by_interval:
            raise r.error(f"layer_types has {counted} linear-attention layers but full_attention_interval "
                          f"{interval} gives {by_interval}")
        counted = by_interval
    if counted is None:
        raise r.error("a hybrid model needs layer_types or full_attention_interval")
    layout = GatedDeltaNet(
        n_key_heads=r.integer("linear_num_key_heads"),
        n_value_heads=r.integer("linear_num_value_heads"),
        key_head_dim=r.integer("linear_key_head_dim"),
        value_head_dim=r.integer("linear_value_head_dim"),
        conv_kernel=r.integer("linear_conv_kernel_dim"),
        state_bytes_per_element=state_bytes,
    )
    return layout, counted


def _kimi_linear_layers(r: _ConfigReader, n_layers: Optional[int], state_bytes: float):
    """Kimi Linear / Kimi-K3's ``linear_attn_config``: ``kda_layers`` and
    ``full_attn_layers`` (1-based, together every layer once), ``num_heads``
    heads of ``head_dim`` for queries, keys and values alike, a short
    convolution of ``short_conv_kernel_size``. Kimi Delta Attention is
    GatedDeltaNet's layout with a per-channel decay gate; with
    ``use_full_rank_gate`` that gate goes through a ``head_dim``-wide
    bottleneck (the checkpoint's f_a_proj [head_dim, hidden] and f_b_proj
    [heads x head_dim, head_dim])."""
    lin = _ConfigReader(r.cfg["linear_attn_config"], f"{r.where}: linear_attn_config")
    if n_layers is None:
        raise r.error("a hybrid model needs num_hidden_layers (to count its linear-attention layers)")
    kda, full = lin.cfg.get("kda_layers"), lin.cfg.get("full_attn_layers")
    for key, layers in (("kda_layers", kda), ("full_attn_layers", full)):
        if not isinstance(layers, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in layers):
            raise lin.error(f"{key} must be a list of 1-based layer numbers")
    if sorted(kda + full) != list(range(1, n_layers + 1)):
        raise lin.error(f"kda_layers and full_attn_layers must together list every layer 1..{n_layers} once")
    heads, head_dim = lin.integer("num_heads"), lin.integer("head_dim")
    full_rank = lin.cfg.get("use_full_rank_gate", False)
    if not isinstance(full_rank, bool):
        raise lin.error(f"use_full_rank_gate must be true or false; got {full_rank!r}")
    layout = GatedDeltaNet(
        n_key_heads=heads,
        n_value_heads=heads,
        key_head_dim=head_dim,
        value_head_dim=head_dim,
        conv_kernel=lin.integer("short_conv_kernel_size"),
        state_bytes_per_element=state_bytes,
        decay_gate_rank=head_dim if full_rank else None,
    )
    return layout, len(kda)


def _moe_layers(r: _ConfigReader, n_layers: Optional[int]) -> Optional[int]:
    """How many of the layers are MoE, under either family's placement rule."""
    if n_layers is None:
        return None
    listed = r.cfg.get("moe_layers")  # Llama-4: the MoE layers, listed
    if listed is not None:
        if not isinstance(listed, list) or not all(isinstance(i, int) and 0 <= i < n_layers for i in listed):
            raise r.error(f"moe_layers must be a list of layer indices in [0, {n_layers})")
        return len(set(listed))
    if r.present("interleave_moe_layer_step"):  # Llama-4: every step-th layer is MoE, the last of each step
        step = r.integer("interleave_moe_layer_step")
        return sum(1 for i in range(n_layers) if (i + 1) % step == 0)
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
    top_k_key = "num_experts_per_token" if r.present("num_experts_per_token") else "num_experts_per_tok"  # Kimi
    top_k = r.integer(top_k_key)
    if top_k > n_routed:
        raise r.error(f"{top_k_key} ({top_k}) must be at most {experts_key} ({n_routed})")
    width_key = "moe_intermediate_size" if r.present("moe_intermediate_size") else "intermediate_size"
    width = r.integer(width_key)
    shared_key = "num_shared_experts" if r.present("num_shared_experts") else "n_shared_experts"  # Kimi
    n_shared = r.integer(shared_key, 0, lo=0)
    latent, dense_params = None, 0
    if r.present("routed_expert_hidden_size"):
        # Kimi-K3's latent MoE: tokens go down to this width before the routed
        # experts and back up after them (two hidden x latent projections per
        # MoE layer); its shared experts work at the full hidden width and,
        # like the projections, are kept unquantised, so both count as the
        # layer's dense part rather than as experts of the routed shape.
        hidden = r.integer("hidden_size")
        latent = r.integer("routed_expert_hidden_size")
        dense_params = 2 * hidden * latent + n_shared * 3 * hidden * width
        n_shared = 0
    if str(r.cfg.get("model_type", "")).startswith("llama4"):
        # Llama-4 (Scout, Maverick): every MoE layer also has one shared expert
        # of the routed width; the config implies it rather than counting it.
        n_shared = 1
    if r.present("shared_expert_intermediate_size"):
        # Qwen2-MoE style: one wide shared expert, counted in units of a routed one.
        shared_width = r.integer("shared_expert_intermediate_size", lo=0)
        if shared_width % width:
            raise r.error(
                f"shared_expert_intermediate_size ({shared_width}) must be a multiple of {width_key} ({width})"
            )
        n_shared = shared_width // width
    # group-limited routing (DeepSeek-V3/R1): top_k experts within the top topk_group of n_group groups
    n_group = r.integer("n_group", 1, lo=1)
    topk_group = r.integer("topk_group", n_group, lo=1)
    if n_routed % n_group or topk_group > n_group or topk_group * (n_routed // n_group) < top_k:
        raise r.error(f"n_group ({n_group}) must divide {experts_key} ({n_routed}) and topk_group ({topk_group}) be "
                      f"at most n_group, its groups holding at least {top_k_key} ({top_k}) experts")
    ffn = MoEFFN(
        n_routed=n_routed, top_k=top_k, n_shared=n_shared, expert_width=width, weight_bytes=ffn_bytes,
        precision=ffn_precision, latent_size=latent, dense_params=dense_params, n_group=n_group,
        topk_group=topk_group,
    )
    n_moe = _moe_layers(r, n_layers)
    n_dense = 0 if n_moe is None else n_layers - n_moe
    # Llama-4 names its dense layers' width intermediate_size_mlp (intermediate_size is the expert's).
    dense_key = "intermediate_size_mlp" if r.present("intermediate_size_mlp") else "intermediate_size"
    dense_width = r.integer(dense_key) if n_dense else None
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
    ``decoder_sparse_step``), Llama (dense ``intermediate_size``, GQA
    ``num_key_value_heads``), Llama-4 (``interleave_moe_layer_step`` or
    ``moe_layers``, dense width ``intermediate_size_mlp``, one shared expert
    implied by ``model_type`` llama4), gpt-oss (``num_local_experts``,
    MXFP4 experts) and Kimi-K3 (``num_experts_per_token``,
    ``num_shared_experts``, the latent MoE's ``routed_expert_hidden_size``,
    gated MLA ``mla_use_output_gate``, Kimi Delta Attention layers in
    ``linear_attn_config``, MXFP4 experts by ``compressed-tensors``) families; ``torch_dtype`` and
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
    kv_bytes = r.number("speclib.kv_bytes", extra.get("kv_bytes", _kv_cache_bytes(r, act_bytes)))
    query_bytes = r.number("speclib.query_bytes", extra.get("query_bytes", 2.0))
    if r.present("kv_lora_rank") or r.present("o_groups"):
        attention = _mla_attention(r, extra, kv_bytes, query_bytes)
    else:
        attention = _gqa_attention(r, hidden, kv_bytes, query_bytes)
    ffn, n_dense, dense_width = _ffn(r, n_layers, ffn_bytes, ffn_precision)
    linear, n_linear = _linear_layers(r, n_layers, r.number("speclib.state_bytes", extra.get("state_bytes", act_bytes)))

    default_name = Path(where).stem if where != "model config" else "custom model"
    aliases = extra.get("aliases", ())
    if isinstance(aliases, str) or not all(isinstance(a, str) for a in aliases):
        raise r.error("speclib.aliases must be a list of strings")
    served_as = extra.get("served_as", ())
    if isinstance(served_as, str) or not all(isinstance(a, str) for a in served_as):
        raise r.error("speclib.served_as must be a list of strings")
    aliases = tuple(aliases) + tuple(a.lower() for a in served_as if a.lower() not in {b.lower() for b in aliases})
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
        linear_attention=linear,
        n_linear_layers=n_linear,
        compress_ratios=tuple(r.cfg.get("compress_ratios") or ()),
        # DeepSeek-V4's every-layer window of uncompressed tokens; a GQA model's
        # sliding-window layers (gpt-oss, Mistral) are counted as full attention.
        sliding_window=r.integer("sliding_window", None) if r.present("o_groups") else None,
        # the checkpoint's own drafter: DeepSeek and GLM spell it num_nextn_predict_layers, Qwen3.5/3.6
        # mtp_num_hidden_layers (vLLM's SpeculativeConfig.hf_config_override reads the same keys)
        mtp_layers=r.integer(r.first_present("num_nextn_predict_layers", "mtp_num_hidden_layers")
                             or "num_nextn_predict_layers", 0, lo=0),
        activations=_activations(r, extra),
    )
