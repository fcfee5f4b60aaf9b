"""GLM-4.7, GLM-4.7-Flash and Llama-3.1-8B: the shipped configs against their
config.json values written out here, against hand-derived per-layer numbers and
against the parameter counts their publishers print."""
import dataclasses

import pytest

from speclib import presets
from speclib.evidence import engines


def load(stem):
    return presets.from_hf_config(presets.CONFIG_DIR / f"{stem}.json")


# --- the config.json values, as the presets' sources cite them ----------------------
# zai-org/GLM-4.7 (glm4_moe): the architecture keys of its config.json
GLM47_CONFIG = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": 5120,
    "num_hidden_layers": 92, "first_k_dense_replace": 3, "intermediate_size": 12288,
    "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "attention_bias": True,
    "partial_rotary_factor": 0.5, "use_qk_norm": True, "n_routed_experts": 160, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "moe_intermediate_size": 1536, "n_group": 1, "topk_group": 1,
    "num_nextn_predict_layers": 1, "vocab_size": 151552, "tie_word_embeddings": False, "dtype": "bfloat16",
}
# zai-org/GLM-4.7-Flash (glm4_moe_lite): DeepSeek-style MLA and MoE keys
GLM47_FLASH_CONFIG = {
    "architectures": ["Glm4MoeLiteForCausalLM"], "model_type": "glm4_moe_lite", "hidden_size": 2048,
    "num_hidden_layers": 47, "first_k_dense_replace": 1, "intermediate_size": 10240,
    "num_attention_heads": 20, "num_key_value_heads": 20, "q_lora_rank": 768, "kv_lora_rank": 512,
    "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256, "n_routed_experts": 64,
    "n_shared_experts": 1, "num_experts_per_tok": 4, "moe_intermediate_size": 1536, "n_group": 1, "topk_group": 1,
    "num_nextn_predict_layers": 1, "vocab_size": 154880, "tie_word_embeddings": False, "dtype": "bfloat16",
}
# meta-llama/Llama-3.1-8B-Instruct (llama)
LLAMA31_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}

CONFIGS = {"glm-4.7": GLM47_CONFIG, "glm-4.7-flash": GLM47_FLASH_CONFIG, "llama-3.1-8b": LLAMA31_8B_CONFIG}


@pytest.mark.parametrize("stem", CONFIGS)
def test_the_config_values_give_the_shipped_architecture(stem):
    preset = load(stem)
    built = presets.from_hf_config(CONFIGS[stem])
    assert dataclasses.replace(built, name=preset.name, source=preset.source, aliases=preset.aliases) == preset


#: Each preset's architecture as its config.json states it, written out field by field.
FIELD_BY_FIELD = {
    "glm-4.7": lambda: presets.Model(
        name="GLM-4.7",
        hidden_size=5120,
        attention=presets.GQAAttention(n_heads=96, n_kv_heads=8, head_dim=128, kv_bytes=2.0, query_bytes=2.0),
        ffn=presets.MoEFFN(n_routed=160, top_k=8, n_shared=1, expert_width=1536, weight_bytes=2.0, precision="bf16"),
        proj_weight_bytes=2.0, proj_precision="bf16", attention_precision="bf16", n_layers=92, vocab_size=151552,
        n_dense_layers=3, dense_ffn_width=12288, aliases=("glm-4.7", "glm4.7"),
        mtp_layers=1,  # num_nextn_predict_layers
    ),
    "glm-4.7-flash": lambda: presets.Model(
        name="GLM-4.7-Flash",
        hidden_size=2048,
        attention=presets.MLAAttention(
            n_heads=20, kv_lora_rank=512, rope_dim=64, q_lora_rank=768, q_head_dim=192 + 64, kv_proj_width=512 + 64,
            o_head_dim=256, kv_up_proj=True, mha_nope_dim=192, mha_v_dim=256, kv_bytes=2.0, query_bytes=2.0,
        ),
        ffn=presets.MoEFFN(n_routed=64, top_k=4, n_shared=1, expert_width=1536, weight_bytes=2.0, precision="bf16"),
        proj_weight_bytes=2.0, proj_precision="bf16", attention_precision="bf16", n_layers=47, vocab_size=154880,
        n_dense_layers=1, dense_ffn_width=10240, aliases=("glm-4.7-flash", "glm4.7-flash"),
        mtp_layers=1,  # num_nextn_predict_layers
    ),
    "llama-3.1-8b": lambda: presets.Model(
        name="Llama-3.1-8B",
        hidden_size=4096,
        attention=presets.GQAAttention(n_heads=32, n_kv_heads=8, head_dim=128, kv_bytes=2.0, query_bytes=2.0),
        ffn=presets.DenseFFN(width=14336, weight_bytes=2.0, precision="bf16"),
        proj_weight_bytes=2.0, proj_precision="bf16", attention_precision="bf16", n_layers=32, vocab_size=128256,
        aliases=("llama-3.1-8b", "llama-3.1-8b-instruct", "llama3.1-8b"),
    ),
}


@pytest.mark.parametrize("stem", sorted(FIELD_BY_FIELD))
def test_the_preset_is_the_architecture_field_by_field(stem):
    preset = load(stem)
    assert dataclasses.replace(FIELD_BY_FIELD[stem](), source=preset.source) == preset


# --- hand-derived per-layer numbers ------------------------------------------------
def test_glm47_by_hand():
    model = load("glm-4.7")
    attention = 5120 * (96 + 2 * 8) * 128 + 96 * 128 * 5120
    expert = 3 * 5120 * 1536
    assert model.attn_proj_params == attention and model.expert_params == expert
    assert model.context_bytes == 2 * 8 * 128 * 2  # K and V of 8 KV heads, bf16
    embeddings = 2 * 151552 * 5120
    moe_layer = attention + 161 * expert + 5120 * 160
    dense_layer = attention + 3 * 5120 * 12288
    assert model.total_params() == embeddings + 89 * moe_layer + 3 * dense_layer


def test_glm47_flash_mla_by_hand():
    model = load("glm-4.7-flash")
    q_a = 2048 * 768
    q_b = 768 * 20 * (192 + 64)
    kv_a = 2048 * (512 + 64)  # latent + shared rope key
    kv_b = 512 * 20 * (192 + 256)  # latent -> per-head key (nope) and value
    o = 20 * 256 * 2048
    assert model.attn_proj_params == q_a + q_b + kv_a + kv_b + o
    assert model.expert_params == 3 * 2048 * 1536
    # absorbed MLA with a bf16 cache: (512 + 64) * 2 bytes per context token, the
    # 576-wide row vLLM caches for glm4_moe_lite
    assert model.context_bytes == 1152
    assert model.flops_per_pair == 2 * 20 * (2 * 512 + 64)
    assert model.n_dense_layers == 1 and model.dense_ffn_width == 10240
    assert (model.ffn.n_routed, model.ffn.top_k, model.ffn.n_shared) == (64, 4, 1)


def test_llama31_8b_by_hand():
    model = load("llama-3.1-8b")
    attention = 4096 * (32 + 2 * 8) * 128 + 32 * 128 * 4096
    ffn = 3 * 4096 * 14336
    assert model.total_params() == 2 * 128256 * 4096 + 32 * (attention + ffn)
    assert model.active_params() == model.total_params()
    assert model.context_bytes == 2 * 8 * 128 * 2


# --- whole-model parameter counts against the published ones --------------------
def tolerance(published, unit):
    """As in test_configs: the published count is rounded to ``unit``; allow that
    rounding or 2 %, whichever is larger (norms, biases and small extras are not
    counted)."""
    return max(0.02 * published, unit / 2)


# "GLM-4.5 has 355 billion total parameters with 32 billion active parameters"
# (zai-org/GLM-4.5 model card; the GLM-4.5 technical report, Table 1); GLM-4.7 keeps
# that architecture key for key.
GLM47_TOTAL, GLM47_ACTIVE = 355e9, 32e9
# "GLM-4.7-Flash is a 30B-A3B MoE model" (zai-org/GLM-4.7-Flash model card)
FLASH_TOTAL, FLASH_ACTIVE = 30e9, 3e9
# 8.03B parameters (the Hugging Face page of meta-llama/Llama-3.1-8B-Instruct, from its
# safetensors; Meta's model card prints 8B)
LLAMA_TOTAL = 8.03e9


def test_glm47_total_matches_the_published_one():
    # the published 355B may include the MTP layer (about 4B), which speclib leaves out;
    # the 2 % allowance (7.1B) holds either way
    assert abs(load("glm-4.7").total_params() - GLM47_TOTAL) <= tolerance(GLM47_TOTAL, 1e9)


def test_glm47_flash_total_matches_the_published_one():
    assert abs(load("glm-4.7-flash").total_params() - FLASH_TOTAL) <= tolerance(FLASH_TOTAL, 1e9)


@pytest.mark.parametrize("stem, active", [("glm-4.7", GLM47_ACTIVE), ("glm-4.7-flash", FLASH_ACTIVE)])
def test_glm_active_counts_match_the_published_ones(stem, active):
    """speclib's active count includes the input embedding and the output head; GLM's
    activated counts leave both out (as gpt-oss's 5.1B leaves out its input
    embedding, test_configs). Allow those two tables plus the rounding of the
    published count, no more."""
    model = load(stem)
    tables = 2 * model.vocab_size * model.hidden_size
    assert abs(model.active_params() - active) <= tables + tolerance(active, 1e9)
    assert abs(model.active_params() - tables - active) <= tolerance(active, 1e9)


def test_llama31_8b_count_matches_the_published_one():
    model = load("llama-3.1-8b")
    assert abs(model.total_params() - LLAMA_TOTAL) <= tolerance(LLAMA_TOTAL, 0.01e9)
    # printed to 0.01B: within that rounding too (only the 65 RMSNorm vectors are left out)
    assert abs(model.total_params() - LLAMA_TOTAL) <= 0.005e9


# --- the sweeps that can now be priced ------------------------------------------------
@pytest.mark.parametrize("hf_config, stem", [
    ("zai-org/GLM-4.7-FP8", "glm-4.7"),
    ("zai-org/GLM-4.7-Flash", "glm-4.7-flash"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
])
def test_the_sweeps_name_the_new_presets(hf_config, stem):
    runs = [r for r in engines.load_sweeps() if r.model["hf_config"] == hf_config]
    assert runs and all(r.model["preset"] == stem for r in runs)
    assert stem in presets.shipped_configs()
