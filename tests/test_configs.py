"""Models from config.json files: the shipped configs against hand-derived and
published numbers, every preset end to end, and the parser's error handling."""
import dataclasses
import json

import numpy as np
import pytest

import speclib
from speclib import presets

SHIPPED = ["deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v3", "llama-3-70b", "mixtral-8x7b", "qwen3-235b-a22b",
           "qwen3.6-35b-a3b", "llama-4-scout", "llama-4-maverick", "gpt-oss-120b", "qwen3-30b-a3b", "glm-4.7", "glm-4.7-flash",
           "llama-3.1-8b", "kimi-k3", "qwen3-235b-a22b-fp8", "llama-3.1-70b-fp8", "llama-3.1-8b-fp8"]


def load(stem):
    return presets.from_hf_config(presets.CONFIG_DIR / f"{stem}.json")


def test_the_shipped_configs_are_listed():
    assert sorted(presets.shipped_configs()) == sorted(SHIPPED)


# --- DeepSeek-V4-Flash reproduces the paper's preset -----------------------------
def test_v4_flash_config_derives_the_papers_constants():
    model = load("deepseek-v4-flash")
    # docs/model.md: q_a 4096x1024, q_b 1024x(64*512), kv 4096x512, o_a 8x(4096x1024), o_b 8192x4096
    assert model.attn_proj_params == 4096 * 1024 + 1024 * 64 * 512 + 4096 * 512 + 8 * 4096 * 1024 + 8192 * 4096
    assert model.attn_proj_params == 106_954_752
    assert model.expert_params == 3 * 4096 * 2048  # W_E = 25,165,824
    # docs/model.md: m_c = 576 B, m_q = 73,728 B, f = 139,264 FLOP/pair
    assert (model.context_bytes, model.query_bytes, model.flops_per_pair) == (576, 73_728, 139_264)
    assert (model.ffn.n_routed, model.ffn.top_k, model.ffn.n_shared, model.ffn.weight_bytes) == (256, 6, 1, 0.53)


def test_v4_flash_preset_is_the_papers_architecture_field_by_field():
    """The preset comes from the shipped config; this is the architecture the
    paper and docs/model.md state, written out by hand."""
    paper = presets.Model(
        name="DeepSeek-V4-Flash",
        hidden_size=4096,
        attention=presets.MLAAttention(
            n_heads=64, kv_lora_rank=512, rope_dim=64, q_lora_rank=1024, q_head_dim=512, kv_proj_width=512,
            o_head_dim=512, o_groups=8, o_lora_rank=1024, mha_nope_dim=128, mha_v_dim=128, kv_bytes=1.0,
            query_bytes=2.0, hca_ratio=128, csa_ratio=4, csa_top_k=512, indexer_heads=64, indexer_head_dim=128,
            indexer_key_bytes=1.0,
        ),
        ffn=presets.MoEFFN(n_routed=256, top_k=6, n_shared=1, expert_width=2048, weight_bytes=0.53, precision="fp4"),
        proj_weight_bytes=1.0, proj_precision="fp8", attention_precision="bf16", n_layers=43, vocab_size=129280,
        aliases=("deepseek-v4-flash", "v4-flash"),
        # Two sliding-window-only layers, then CSA and HCA alternating; the
        # 44th entry is the MTP layer's placeholder.
        compress_ratios=(0, 0) + (4, 128) * 20 + (4, 0), sliding_window=128,
        mtp_layers=1,  # the one MTP layer that placeholder stands for
    )
    preset = presets.DEEPSEEK_V4_FLASH
    assert dataclasses.replace(paper, source=preset.source) == preset


def test_llama_preset_is_metas_architecture_field_by_field():
    meta = presets.Model(
        name="Llama-3-70B",
        hidden_size=8192,
        attention=presets.GQAAttention(n_heads=64, n_kv_heads=8, head_dim=128, kv_bytes=2.0, query_bytes=2.0),
        ffn=presets.DenseFFN(width=28672, weight_bytes=2.0, precision="bf16"),
        proj_weight_bytes=2.0, proj_precision="bf16", attention_precision="bf16", n_layers=80, vocab_size=128256,
        aliases=("llama-3-70b", "llama3-70b", "llama-3.1-70b", "llama-3.3-70b"),
    )
    preset = presets.LLAMA_3_70B
    assert dataclasses.replace(meta, source=preset.source) == preset


# --- hand-derived per-layer numbers ------------------------------------------------
def test_deepseek_v3_mla_projections_by_hand():
    model = load("deepseek-v3")
    q_a = 7168 * 1536
    q_b = 1536 * 128 * (128 + 64)  # per head: no-rope 128 + rope 64
    kv_a = 7168 * (512 + 64)  # latent + shared rope key
    kv_b = 512 * 128 * (128 + 128)  # latent -> per-head key (nope) and value
    o = 128 * 128 * 7168
    assert model.attn_proj_params == q_a + q_b + kv_a + kv_b + o
    assert model.expert_params == 3 * 7168 * 2048
    # absorbed MLA with a bf16 cache: (512 + 64) * 2 bytes per context token
    assert model.context_bytes == 1152
    assert model.flops_per_pair == 2 * 128 * (2 * 512 + 64)
    assert model.n_dense_layers == 3 and model.dense_ffn_width == 18432
    assert (model.ffn.n_routed, model.ffn.top_k, model.ffn.n_shared) == (256, 8, 1)


def test_gqa_models_by_hand():
    llama, mixtral, qwen = load("llama-3-70b"), load("mixtral-8x7b"), load("qwen3-235b-a22b")
    # K and V for each KV head, 128 wide, bf16
    assert llama.context_bytes == 2 * 8 * 128 * 2
    assert mixtral.context_bytes == 2 * 8 * 128 * 2
    assert qwen.context_bytes == 2 * 4 * 128 * 2
    assert qwen.attn_proj_params == 4096 * (64 + 2 * 4) * 128 + 64 * 128 * 4096
    assert mixtral.expert_params == 3 * 4096 * 14336
    assert (mixtral.ffn.n_routed, mixtral.ffn.top_k, mixtral.ffn.n_shared) == (8, 2, 0)
    assert (qwen.ffn.n_routed, qwen.ffn.top_k, qwen.ffn.n_shared) == (128, 8, 0)
    assert not llama.ffn.is_moe and llama.ffn.width == 28672


# --- whole-model parameter counts against the published ones --------------------
def tolerance(published, unit):
    """The published count is rounded to ``unit``; allow that rounding or 2 %,
    whichever is larger (norms, biases and small extras are not counted)."""
    return max(0.02 * published, unit / 2)


# (stem, published total, its unit, published active, its unit); the unit is
# that of the last digit printed
PUBLISHED = [
    ("llama-3-70b", 70.6e9, 0.1e9, 70.6e9, 0.1e9),
    ("deepseek-v3", 671e9, 1e9, 37e9, 1e9),  # total without the 14B MTP module
    ("mixtral-8x7b", 46.7e9, 0.1e9, 12.9e9, 0.1e9),
    ("qwen3-235b-a22b", 235e9, 1e9, 22e9, 1e9),
    ("deepseek-v4-flash", 284e9, 1e9, 13e9, 1e9),
    ("deepseek-v4-pro", 1.6e12, 0.1e12, 49e9, 1e9),  # published totals include the MTP layer
    # "17B active parameters out of ~109B total" / "~400B total" (Hugging Face,
    # "Welcome Llama 4 Maverick & Scout on Hugging Face", https://huggingface.co/blog/llama4-release).
    # Scout's 109B counts its vision encoder, which speclib leaves out: the text
    # model is 107.8B, inside the 2 % (2.2B) allowance.
    ("llama-4-scout", 109e9, 1e9, 17e9, 1e9),
    ("llama-4-maverick", 400e9, 1e9, 17e9, 1e9),
    # "30.5B total parameters with 3.3B activated per token" (vLLM-Ascend, Qwen3-30B-A3B
    # tutorial, https://docs.vllm.ai/projects/ascend/en/releases-v0.22.1rc/tutorials/models/Qwen3-30B-A3B.html)
    ("qwen3-30b-a3b", 30.5e9, 0.1e9, 3.3e9, 0.1e9),
]


@pytest.mark.parametrize("stem, total, total_unit, active, active_unit", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_counts_match_the_published_ones(stem, total, total_unit, active, active_unit):
    model = load(stem)
    assert abs(model.total_params() - total) <= tolerance(total, total_unit)
    assert abs(model.active_params() - active) <= tolerance(active, active_unit)


# "117B parameters with 5.1B active parameters" (OpenAI, gpt-oss-120b model page,
# https://developers.openai.com/api/docs/models/gpt-oss-120b.md)
GPT_OSS_TOTAL, GPT_OSS_ACTIVE = 117e9, 5.1e9


def test_gpt_oss_counts_match_the_published_ones():
    model = load("gpt-oss-120b")
    assert abs(model.total_params() - GPT_OSS_TOTAL) <= tolerance(GPT_OSS_TOTAL, 1e9)
    # speclib's active count includes the input embedding (201,088 x 2880 = 0.58B),
    # which a token only looks up; counts such as the published 5.1B leave it out.
    # Allow that table plus the rounding of the last printed digit (0.05B), no more.
    embedding = 201088 * 2880
    assert abs(model.active_params() - GPT_OSS_ACTIVE) <= embedding + 0.05e9
    assert abs(model.active_params() - embedding - GPT_OSS_ACTIVE) <= 0.05e9


def test_llama4_layers_by_hand():
    scout, maverick = load("llama-4-scout"), load("llama-4-maverick")
    expert = 3 * 5120 * 8192
    attention = 5120 * (40 + 2 * 8) * 128 + 40 * 128 * 5120
    embeddings = 2 * 202048 * 5120
    # Scout: 48 MoE layers, 16 routed experts and the implied shared one, a router over the 16
    assert (scout.ffn.n_routed, scout.ffn.top_k, scout.ffn.n_shared, scout.n_dense_layers) == (16, 1, 1, 0)
    assert scout.total_params() == embeddings + 48 * (attention + 17 * expert + 5120 * 16)
    # Maverick: every second layer MoE (interleave step 2), the other 24 dense of width 16384
    assert (maverick.ffn.n_routed, maverick.ffn.n_shared, maverick.n_dense_layers) == (128, 1, 24)
    assert maverick.dense_ffn_width == 16384
    assert maverick.total_params() == (embeddings + 48 * attention + 24 * (129 * expert + 5120 * 128)
                                       + 24 * 3 * 5120 * 16384)
    # one routed and one shared expert per token in either
    assert scout.active_params() == embeddings + 48 * (attention + 2 * expert + 5120 * 16)


def test_llama4_moe_layer_rules():
    base = dict(model_type="llama4_text", num_local_experts=16, num_experts_per_tok=1, intermediate_size=512,
                intermediate_size_mlp=2048)
    every_second = presets.from_hf_config(base_config(**base, interleave_moe_layer_step=2))
    assert every_second.n_dense_layers == 2 and every_second.dense_ffn_width == 2048  # layers 1, 3 are MoE
    listed = presets.from_hf_config(base_config(**base, interleave_moe_layer_step=2, moe_layers=[3]))
    assert listed.n_dense_layers == 3  # an explicit list wins
    assert every_second.ffn.n_shared == 1  # implied by the family
    mixtral_like = presets.from_hf_config(base_config(num_local_experts=16, num_experts_per_tok=1))
    assert mixtral_like.ffn.n_shared == 0


def test_gpt_oss_sliding_window_layers_are_counted_as_full_attention():
    model = load("gpt-oss-120b")
    assert model.sliding_window is None  # the cache is an upper bound, not a V4 window on top
    assert model.context_bytes == 2 * 8 * 64 * 2
    assert (model.ffn.n_routed, model.ffn.top_k, model.ffn.weight_bytes, model.ffn.precision) == (128, 4, 0.53, "fp4")
    assert model.proj_precision == "bf16"


def test_qwen3_30b_by_hand():
    model = load("qwen3-30b-a3b")
    attention = 2048 * (32 + 2 * 4) * 128 + 32 * 128 * 2048
    expert = 3 * 2048 * 768
    assert model.total_params() == 2 * 151936 * 2048 + 48 * (attention + 128 * expert + 2048 * 128)


def test_mixtral_total_by_hand():
    embeddings = 2 * 32000 * 4096
    attention = 4096 * (32 + 2 * 8) * 128 + 32 * 128 * 4096
    experts = 8 * 3 * 4096 * 14336
    router = 4096 * 8
    assert load("mixtral-8x7b").total_params() == embeddings + 32 * (attention + experts + router)


def test_dense_layers_count_in_totals_only():
    v3 = load("deepseek-v3")
    all_moe = dataclasses.replace(v3, n_dense_layers=0)
    dense_ffn, moe_ffn = 3 * 7168 * 18432, 257 * 3 * 7168 * 2048 + 7168 * 256
    assert v3.total_params() - all_moe.total_params() == 3 * (dense_ffn - moe_ffn)
    # the per-layer cost model does not see them
    assert speclib.optimal_gamma(0.75, 64, 4096, model=v3) == speclib.optimal_gamma(0.75, 64, 4096, model=all_moe)


def test_totals_need_layers_and_vocabulary():
    bare = dataclasses.replace(presets.LLAMA_3_70B, vocab_size=None)
    with pytest.raises(ValueError, match="n_layers and vocab_size"):
        bare.total_params()


# --- every preset end to end -------------------------------------------------------
@pytest.mark.parametrize("model", presets.all_models(), ids=lambda m: m.name)
@pytest.mark.parametrize("hardware", presets.all_hardware(), ids=lambda h: h.name)
def test_every_preset_runs_end_to_end(model, hardware):
    B = np.geomspace(1, 30000, 25)[:, None]
    S = np.array([512.0, 8192.0, 131072.0])[None, :]
    gamma_star, speedup = speclib.optimal_gamma(0.75, B, S, 0.1, model=model, hardware=hardware)
    assert gamma_star.shape == (25, 3)
    assert np.all((gamma_star >= 0) & (gamma_star <= 64))
    # priced whole (a hybrid model), a context one GPU holds not one sequence of is NaN, gamma* 0; else a number
    deployment = speclib.Deployment(model, hardware)
    unheld = np.broadcast_to(deployment.whole_step and (deployment.max_batch(S) == 0), speedup.shape)
    assert np.all(np.isnan(speedup[unheld])) and np.all(gamma_star[unheld] == 0)
    assert np.all(speedup[~unheld] >= 1.0) and np.all(np.isfinite(speedup[~unheld]))
    costs = speclib.marginal_cost(B, S, 0.1, model=model, hardware=hardware)
    for name in ("attn_proj", "moe", "attention"):
        assert np.all((costs[name] >= 0) & (costs[name] <= 1 + 1e-12))
    assert np.all(np.isfinite(costs["total"]))


@pytest.mark.parametrize("model", presets.all_models(), ids=lambda m: m.name)
def test_every_preset_is_found_by_name_and_aliases(model):
    assert presets.model(model.name.upper()) is model
    for alias in model.aliases:
        assert presets.model(alias) is model
    assert model.source


def test_v4_pro_is_marked_as_secondary_sourced():
    assert "secondary sources" in presets.DEEPSEEK_V4_PRO.source
    assert "ASSUMED" in presets.DEEPSEEK_V4_PRO.source


def test_a_dense_model_has_no_moe_tax_below_its_knee():
    # Dense FFN: weights read once per step whatever the batch, so a speculated
    # token's FFN slope is 0 until the bf16 knee R*b/2 = 281 tokens on B200.
    costs = speclib.marginal_cost(np.arange(1, 100), 4096, model="llama-3-70b")
    assert np.all(costs["moe"] == 0)
    moe = speclib.marginal_cost(np.arange(1, 100), 4096, model="deepseek-v4-flash")
    assert np.all(moe["moe"] > 0)


# --- the parser ---------------------------------------------------------------------
def base_config(**changes):
    cfg = {
        "hidden_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "intermediate_size": 4096,
        "vocab_size": 1000,
        "torch_dtype": "bfloat16",
    }
    cfg.update(changes)
    return {k: v for k, v in cfg.items() if v is not None}


def test_a_dict_works_as_well_as_a_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(base_config()))
    from_file = presets.from_hf_config(path)
    from_dict = presets.from_hf_config(base_config(), name="config")
    assert dataclasses.replace(from_file, source="") == dataclasses.replace(from_dict, source="")
    assert from_file.name == "config"


def test_a_dense_llama_style_config():
    model = presets.from_hf_config(base_config())
    assert model.attention.kind == "gqa" and model.attention.head_dim == 128
    assert not model.ffn.is_moe and model.proj_precision == "bf16" and model.attention.kv_bytes == 2


def test_text_config_of_a_multimodal_wrapper_is_read():
    wrapped = {"model_type": "llava", "text_config": base_config(hidden_size=2048)}
    assert presets.from_hf_config(wrapped).hidden_size == 2048


@pytest.mark.parametrize("key", ["num_local_experts", "num_experts", "n_routed_experts"])
def test_each_familys_expert_count_spelling(key):
    model = presets.from_hf_config(base_config(**{key: 16, "num_experts_per_tok": 4}))
    assert model.ffn.is_moe and model.ffn.n_routed == 16 and model.ffn.expert_width == 4096


def test_moe_layer_placement_rules():
    qwen_every_other = presets.from_hf_config(
        base_config(num_experts=16, num_experts_per_tok=2, moe_intermediate_size=512, decoder_sparse_step=2)
    )
    assert qwen_every_other.n_dense_layers == 2  # layers 1 and 3 are MoE
    qwen_mlp_only = presets.from_hf_config(
        base_config(num_experts=16, num_experts_per_tok=2, moe_intermediate_size=512, mlp_only_layers=[0])
    )
    assert qwen_mlp_only.n_dense_layers == 1
    deepseek = presets.from_hf_config(
        base_config(n_routed_experts=16, num_experts_per_tok=2, moe_intermediate_size=512, first_k_dense_replace=3)
    )
    assert deepseek.n_dense_layers == 3 and deepseek.dense_ffn_width == 4096


def test_qwen2_style_wide_shared_expert_counts_in_routed_units():
    model = presets.from_hf_config(
        base_config(num_experts=16, num_experts_per_tok=2, moe_intermediate_size=512, shared_expert_intermediate_size=2048)
    )
    assert model.ffn.n_shared == 4


def test_quantisation_recipes_set_the_weight_bytes():
    fp8 = presets.from_hf_config(base_config(quantization_config={"quant_method": "fp8"}))
    assert (fp8.proj_weight_bytes, fp8.proj_precision, fp8.ffn.weight_bytes, fp8.ffn.precision) == (1.0, "fp8", 1.0, "fp8")
    mxfp4 = presets.from_hf_config(
        base_config(num_local_experts=32, num_experts_per_tok=4, quantization_config={"quant_method": "mxfp4"})
    )
    assert (mxfp4.ffn.weight_bytes, mxfp4.ffn.precision, mxfp4.proj_weight_bytes) == (0.53, "fp4", 2.0)
    awq = presets.from_hf_config(base_config(quantization_config={"quant_method": "awq", "bits": 4}))
    assert (awq.ffn.weight_bytes, awq.ffn.precision) == (0.5, "bf16")


def test_v4_compress_ratios_list_gives_csa_and_hca():
    v4 = json.loads((presets.CONFIG_DIR / "deepseek-v4-flash.json").read_text())
    v4["speclib"] = {k: v for k, v in v4["speclib"].items() if k not in ("hca_ratio", "csa_ratio")}
    v4["compress_ratios"] = [128, 128, 4, 128, 4, 0]
    attention = presets.from_hf_config(v4).attention
    assert (attention.csa_ratio, attention.hca_ratio, attention.csa_top_k) == (4, 128, 512)


@pytest.mark.parametrize(
    "config, message",
    [
        (base_config(hidden_size=None), "missing 'hidden_size'"),
        (base_config(hidden_size=0), "hidden_size must be an integer in \\[1, inf\\)"),
        (base_config(num_key_value_heads=3), "multiple of num_key_value_heads"),
        (base_config(num_local_experts=8, num_experts_per_tok=9), "num_experts_per_tok \\(9\\) must be at most"),
        (base_config(torch_dtype="int3"), "torch_dtype must be one of"),
        (base_config(quantization_config={"quant_method": "bitsandbytes"}), "quant_method must be one of"),
        (base_config(speclib={"kv_byts": 1}), "unknown speclib key\\(s\\) 'kv_byts'"),
        (base_config(speclib={"kv_bytes": -1}), "speclib.kv_bytes must be a number in \\(0, inf\\)"),
        (base_config(speclib={"ffn_precision": "fp2"}), "speclib.ffn_precision must be one of"),
        (base_config(num_local_experts=8, num_experts_per_tok=1, moe_layers=[0, 9]), "moe_layers must be a list"),
        (base_config(num_local_experts=8, num_experts_per_tok=1, interleave_moe_layer_step=0),
         "interleave_moe_layer_step must be an integer"),
        (base_config(num_local_experts=8, num_experts_per_tok=2, intermediate_size=None), "missing 'intermediate_size'"),
        (base_config(num_local_experts=8), "missing 'num_experts_per_tok'"),
    ],
)
def test_bad_configs_are_rejected_naming_the_key(config, message):
    with pytest.raises(ValueError, match=message):
        presets.from_hf_config(config)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        presets.from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        presets.from_hf_config(bad)
    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    with pytest.raises(ValueError, match="must be a JSON object"):
        presets.from_hf_config(array)
