"""Kimi-K3: the shipped config against its config.json values written out here,
against a hand count of the released checkpoint's weight matrices, and against
the parameter counts its technical report prints; and the reader's Kimi
spellings (latent MoE, gated MLA, Kimi Delta Attention, compressed-tensors
MXFP4), including the errors they raise."""
import copy
import dataclasses

import pytest

from speclib import presets


def load():
    return presets.from_hf_config(presets.CONFIG_DIR / "kimi-k3.json")


# --- the architecture keys of moonshotai/Kimi-K3's config.json (text_config) --------
FULL = [4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 93]
KDA = [i for i in range(1, 94) if i not in FULL]
K3_TEXT_CONFIG = {
    "model_type": "kimi_linear", "dtype": "bfloat16", "hidden_size": 7168, "num_hidden_layers": 93,
    "vocab_size": 163840, "tie_word_embeddings": False, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "intermediate_size": 33792, "num_attention_heads": 96, "num_key_value_heads": 96, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "mla_use_nope": True, "mla_use_output_gate": True, "num_experts": 896, "num_experts_per_token": 16,
    "num_shared_experts": 2, "moe_intermediate_size": 3072, "routed_expert_hidden_size": 3584,
    "linear_attn_config": {"full_attn_layers": FULL, "kda_layers": KDA, "head_dim": 128, "num_heads": 96,
                           "short_conv_kernel_size": 4, "use_full_rank_gate": True, "gate_lower_bound": -5.0},
    "quantization_config": {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"},
}
K3_CONFIG = {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
             "text_config": K3_TEXT_CONFIG, "speclib": {"state_bytes": 4}}


def test_the_config_values_give_the_shipped_architecture():
    preset = load()
    built = presets.from_hf_config(K3_CONFIG)
    assert dataclasses.replace(built, name=preset.name, source=preset.source, aliases=preset.aliases) == preset


def test_the_preset_is_the_architecture_field_by_field():
    preset = load()
    expected = presets.Model(
        name="Kimi-K3",
        hidden_size=7168,
        attention=presets.MLAAttention(
            n_heads=96, kv_lora_rank=512, rope_dim=64, q_lora_rank=1536, q_head_dim=128 + 64, kv_proj_width=512 + 64,
            o_head_dim=128, kv_up_proj=True, mha_nope_dim=128, mha_v_dim=128, kv_bytes=2.0, query_bytes=2.0,
            output_gate=True,
        ),
        # routed experts in the 3,584-wide latent; the two shared experts (full width,
        # bf16) and the latent's down and up projections are each MoE layer's dense part
        ffn=presets.MoEFFN(n_routed=896, top_k=16, n_shared=0, expert_width=3072, weight_bytes=0.53, precision="fp4",
                           latent_size=3584, dense_params=2 * 7168 * 3584 + 2 * 3 * 7168 * 3072),
        proj_weight_bytes=2.0, proj_precision="bf16", attention_precision="bf16", n_layers=93, vocab_size=163840,
        n_dense_layers=1, dense_ffn_width=33792, aliases=("kimi-k3", "kimik3", "k3"),
        linear_attention=presets.GatedDeltaNet(n_key_heads=96, n_value_heads=96, key_head_dim=128, value_head_dim=128,
                                               conv_kernel=4, state_bytes_per_element=4.0, decay_gate_rank=128),
        n_linear_layers=69,
    )
    assert dataclasses.replace(expected, source=preset.source) == preset


# --- a hand count of the checkpoint's weight matrices ---------------------------------
# The released safetensors, as a public listing of the checkpoint prints their
# shapes (packed MXFP4 experts unpacked: [3072, 1792] bytes hold [3072, 3584]
# values). One-dimensional tensors (norms, A_log, dt_bias, the router's
# correction bias) and the attention-residual projections ([1, 7168]) are left
# out, as speclib leaves them out.
H, VOCAB = 7168, 163840
KDA_LAYER = (3 * 12288 * H  # q_proj, k_proj, v_proj
             + 3 * 12288 * 4  # q_conv1d, k_conv1d, v_conv1d [12288, 1, 4]
             + 128 * H + 12288 * 128  # f_a_proj, f_b_proj (the decay gate)
             + 96 * H  # b_proj
             + 12288 * H + H * 12288)  # g_proj, o_proj
MLA_LAYER = (1536 * H + 18432 * 1536  # q_a_proj, q_b_proj
             + 576 * H + 24576 * 512  # kv_a_proj_with_mqa, kv_b_proj
             + 12288 * H + H * 12288)  # g_proj, o_proj
EXPERT = 3 * 3072 * 3584  # w1, w3 [3072, 3584]; w2 [3584, 3072]
MOE_DENSE = 3584 * H + H * 3584 + 3 * 6144 * H  # routed_expert_down/up_proj; shared_experts gate/up/down
ROUTER = 896 * H
DENSE_FFN = 3 * 33792 * H  # layer 0's mlp
EMBEDDINGS = 2 * VOCAB * H  # embed_tokens and lm_head


def test_the_totals_are_the_checkpoints_weight_matrices():
    model = load()
    total = EMBEDDINGS + 69 * KDA_LAYER + 24 * MLA_LAYER + DENSE_FFN + 92 * (896 * EXPERT + MOE_DENSE + ROUTER)
    active = EMBEDDINGS + 69 * KDA_LAYER + 24 * MLA_LAYER + DENSE_FFN + 92 * (16 * EXPERT + MOE_DENSE + ROUTER)
    assert model.total_params() == total
    assert model.active_params() == active
    assert model.linear_attention.projection_params(H) == KDA_LAYER
    assert model.attn_proj_params == MLA_LAYER
    assert model.expert_params == EXPERT


def test_the_weight_groups_keep_the_checkpoints_precisions():
    # routed experts in MXFP4; attention, shared experts, the latent projections and
    # the dense FFN unquantised (the config's "ignore" list), embeddings and routers bf16
    groups = load().weight_groups()
    assert groups["ffn"] == 92 * 896 * EXPERT
    assert groups["projections"] == 69 * KDA_LAYER + 24 * MLA_LAYER + DENSE_FFN + 92 * MOE_DENSE
    assert groups["bf16"] == EMBEDDINGS + 92 * ROUTER


def test_the_cache_and_state_by_hand():
    model = load()
    # 24 MLA layers cache the 576-wide row (512 latent + 64) in bf16
    assert model.context_bytes == 576 * 2
    assert model.cache_layout() == {"full": 24, "linear": 69, "csa": 0, "hca": 0, "window": 0}
    # each KDA layer keeps a 128 x 128 state per head, 96 heads, and its short
    # convolution's window over queries, keys and values (3 x 12,288 channels,
    # 4 wide), in fp32
    assert model.linear_attention.state_bytes == (96 * 128 * 128 + 3 * 12288 * 4) * 4


# --- the counts the technical report prints -----------------------------------------
# Kimi K3 technical report (arXiv 2607.24653), Table 1: 2.78T total and 104.2B
# activated parameters; the abstract rounds them to 2.8T and 104B. The total
# includes the 401M vision tower (speclib counts the language model only).
K3_TOTAL, K3_ACTIVE = 2.78e12, 104.2e9


def test_the_total_matches_the_technical_report():
    # printed to 0.01T: allow that rounding plus the vision tower and the left-out
    # vectors, well inside 0.5 %
    assert abs(load().total_params() - K3_TOTAL) <= 0.005e12 + 0.401e9 + 0.2e9


def test_the_active_count_matches_the_technical_report():
    """speclib's active count includes the input embedding (a table lookup, no
    multiply); the report's 104.2B does not. Without it the two agree to the
    report's rounding (0.05B) plus the left-out vectors."""
    model = load()
    input_embedding = VOCAB * H
    assert abs(model.active_params() - input_embedding - K3_ACTIVE) <= 0.05e9 + 0.2e9
    assert abs(model.active_params() - K3_ACTIVE) > 0.5e9  # with it, they would not agree


# --- the reader's Kimi spellings ------------------------------------------------------
def _text(**changes):
    cfg = copy.deepcopy(K3_CONFIG)
    cfg["text_config"].update(changes)
    return cfg


def test_a_latent_moe_counts_its_experts_in_the_latent_width():
    model = presets.from_hf_config(K3_CONFIG)
    assert model.expert_params == 3 * 3584 * 3072
    # without the latent key the same experts would be hidden-wide and the shared
    # experts two experts of the routed shape
    plain = presets.from_hf_config(_text(routed_expert_hidden_size=None))
    assert plain.expert_params == 3 * 7168 * 3072 and plain.ffn.n_shared == 2 and plain.ffn.dense_params == 0


def test_the_mla_output_gate_adds_one_projection():
    gated = presets.from_hf_config(K3_CONFIG).attn_proj_params
    plain = presets.from_hf_config(_text(mla_use_output_gate=False)).attn_proj_params
    assert gated - plain == 96 * 128 * 7168


def test_the_kimi_top_k_spelling_is_read():
    assert presets.from_hf_config(_text(num_experts_per_token=8)).ffn.top_k == 8


@pytest.mark.parametrize("changes, message", [
    ({"linear_attn_config": {**K3_TEXT_CONFIG["linear_attn_config"], "kda_layers": KDA[:-1]}},
     r"linear_attn_config: kda_layers and full_attn_layers must together list every layer 1\.\.93 once"),
    ({"linear_attn_config": {**K3_TEXT_CONFIG["linear_attn_config"], "num_heads": None}},
     r"linear_attn_config: missing 'num_heads'"),
    ({"linear_attn_config": {**K3_TEXT_CONFIG["linear_attn_config"], "use_full_rank_gate": "yes"}},
     r"use_full_rank_gate must be true or false"),
    ({"mla_use_output_gate": 1}, r"mla_use_output_gate must be true or false"),
    ({"quantization_config": {"quant_method": "compressed-tensors", "format": "int4-pack-quantized"}},
     r"quantization_config\.quant_method must be one of .*'compressed-tensors' with an mxfp4 format"),
])
def test_bad_kimi_configs_are_refused_naming_the_key(changes, message):
    with pytest.raises(ValueError, match=message):
        presets.from_hf_config(_text(**changes))


def test_the_preset_is_found_by_name_and_prices_a_step():
    model = presets.model("Kimi-K3")
    assert presets.model("kimi-k3") is model and presets.model("k3") is model
    step = model.step_architecture()
    assert step.attention_layers == 24 and step.linear_layers == 69
    # every position reads the dense part: attention, the latent projections, the
    # shared experts, routers, layer 0's FFN and the output head
    assert step.dense_params == (69 * KDA_LAYER + 24 * MLA_LAYER + DENSE_FFN + 92 * (MOE_DENSE + ROUTER) + VOCAB * H)
    assert step.ffn_params == 92 * EXPERT and (step.n_routed, step.top_k, step.n_shared) == (896, 16, 0)
