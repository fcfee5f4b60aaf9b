"""DeepSeek-V4's attention as served: the ledger's option that prices each
layer over the context its compression ratio leaves it, held against a
brute-force sum over the config's layers and a hand count of bytes; the
paper's pricing stays the default; the KV cache the capacity check sizes,
either way; and the refusals."""
from __future__ import annotations

import json

import numpy as np
import pytest

import speclib
from speclib import presets
from speclib.core import attention, capacity, cost
from speclib.formulas import numpy_functions as nf
from speclib.presets.catalog import MODELS_DIR

FLASH = presets.model("DeepSeek-V4-Flash")
B200 = presets.hardware("B200")


def _config_ratios():
    """The per-layer compression ratios as the config file lists them (the
    last entry is the multi-token-prediction layer's)."""
    config = json.loads((MODELS_DIR / "deepseek-v4-flash.json").read_text())
    return config["compress_ratios"][:config["num_hidden_layers"]], config


def _layer_by_layer(B, q, S, query_bytes=False):
    """The served attention of one layer, averaged over the config's layers one
    at a time: a sliding window alone (ratio 0), CSA (4: MLA over the top 512
    compressed positions and the window, each verified position reading its
    own selection, an indexer over all S / 4), HCA (128: MLA over S / 128 and
    the window)."""
    ratios, config = _config_ratios()
    W, top = config["sliding_window"], config["index_topk"]
    R = B200.ridge("bf16")
    m_c, f = FLASH.context_bytes, FLASH.flops_per_pair
    m_q = FLASH.query_bytes if query_bytes else 0.0
    m_ci = config["index_head_dim"] * 1.0  # one fp8 key of 128 per compressed position
    f_i = 2 * config["index_n_heads"] * config["index_head_dim"]
    m_qi = config["index_n_heads"] * config["index_head_dim"] * 2.0 if query_bytes else 0.0
    total = 0.0
    for r in ratios:
        if r == 0:
            total = total + nf.attn_cost(B, q, np.minimum(S, W), m_c, m_q, f, R)
        elif r == 4:  # each of the q verified positions gathers its own top-512 selection; the window once
            selected = np.minimum(S / 4, top)
            compute = B * f * (selected + np.minimum(S, W)) * q / R
            memory = B * (m_c * (q * selected + np.minimum(S, W)) + m_q * q)
            total = total + np.maximum(compute, memory)
            total = total + nf.attn_cost(B, q, S / 4, m_ci, m_qi, f_i, R)
        else:
            assert r == 128
            total = total + nf.attn_cost(B, q, S / 128 + np.minimum(S, W), m_c, m_q, f, R)
    return total / len(ratios)


@pytest.mark.parametrize("query_bytes", [False, True])
def test_the_served_ledger_is_the_average_over_the_configs_layers(query_bytes):
    cm = cost.cost_model(FLASH, B200, query_bytes, attention="served")
    B = np.array([1.0, 7.0, 64.0, 4096.0])
    for S in (100.0, 512.0, 4096.0, 131072.0):
        for q in (1.0, 2.0, 9.0):
            np.testing.assert_allclose(cm.attention(B, q, S), _layer_by_layer(B, q, S, query_bytes), rtol=1e-12)


def test_a_hand_count_of_the_bytes_at_4k():
    """At S = 4,096 and one query a sequence every part is memory-bound (MLA's
    intensity 241.8 and the indexer's 128 are under the bf16 ridge of 281.25),
    so the cost is the bytes: 2 window layers read 128 latents of 576 B; 21
    CSA layers read 512 + 128 latents and 1,024 indexer keys of 128 B; 20 HCA
    layers read 32 + 128 latents."""
    window = 2 * 576 * 128
    csa = 21 * (576 * (512 + 128) + 128 * 1024)
    hca = 20 * 576 * (4096 // 128 + 128)
    per_layer = (window + csa + hca) / 43
    cm = cost.cost_model(FLASH, B200, attention="served")
    assert float(cm.attention(1.0, 1.0, 4096.0)) == pytest.approx(per_layer, rel=1e-12)
    assert float(cost.cost_model(FLASH, B200, attention="paper").attention(1.0, 1.0, 4096.0)) == 576 * 4096  # full MLA
    assert float(cost.cost_model(FLASH, B200).attention(1.0, 1.0, 4096.0)) == pytest.approx(per_layer, rel=1e-12)


def test_its_slope_is_the_parts_slopes_weighted_by_cost():
    cm = cost.cost_model(FLASH, B200, attention="served")
    B, S = np.array([1.0, 64.0]), 8192.0
    for q in (1.0, 2.0, 4.0):
        h = 1e-6
        numeric = (np.log(cm.attention(B, q * (1 + h), S)) - np.log(cm.attention(B, q * (1 - h), S))) / (
            np.log(1 + h) - np.log(1 - h))
        np.testing.assert_allclose(cm.attention_slope(B, q, S), numeric, rtol=1e-5, atol=1e-7)


def test_served_is_the_default_and_the_paper_is_named():
    assert speclib.Deployment().attention == "served"
    B = np.array([1.0, 64.0, 30_000.0])
    np.testing.assert_array_equal(speclib.speedup(0.75, 3, B, 4096, 0.1),
                                  speclib.speedup(0.75, 3, B, 4096, 0.1,
                                                  deployment=speclib.Deployment(attention="served")))
    # and the option changes what it should
    paper = speclib.speedup(0.75, 3, B, 4096, 0.1, deployment=speclib.Deployment(attention="paper"))
    assert not np.allclose(paper, speclib.speedup(0.75, 3, B, 4096, 0.1))


def test_a_model_nothing_compresses_is_priced_the_same_either_way():
    for name in ("Llama-3-70B", "DeepSeek-V3"):
        a, b = cost.cost_model(name, "H200"), cost.cost_model(name, "H200", attention="served")
        np.testing.assert_array_equal(a.verify(np.array([1.0, 64.0]), 3.0, 4096.0),
                                      b.verify(np.array([1.0, 64.0]), 3.0, 4096.0))


def test_the_kv_cache_either_way():
    # the paper prices a full MLA latent of 576 B per token in each of the 43 layers
    assert capacity.sequence_bytes(4096, FLASH, attention="paper") == 43 * 576 * 4096
    assert capacity.sequence_bytes(4096, FLASH) == capacity.sequence_bytes(4096, FLASH, attention="served")
    assert capacity.sequence_bytes(4096, FLASH, attention="paper") / capacity.sequence_bytes(4096, FLASH) == \
        pytest.approx(5.43, abs=0.005)  # "5.4 times smaller" as served
    assert capacity.max_batch(FLASH, B200, 4096, attention="paper") < capacity.max_batch(FLASH, B200, 4096)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match=r"^attention must be one of 'paper', 'served'") as info:
        speclib.Deployment(attention="compressed")
    assert "\n" not in str(info.value)
    for field, value in (("hca_ratio", 0.5), ("csa_ratio", 0.0), ("hca_ratio", -4.0), ("csa_ratio", float("inf"))):
        model = attention.v4_attention_what_if(FLASH, **{field: value})
        with pytest.raises(ValueError, match=rf"^{field}: a compression ratio keeps 1/ratio of the context, a fraction "
                                             r"that must be in \(0, 1\]") as info:
            speclib.Deployment(model, "B200", attention="served")
        assert "\n" not in str(info.value)
        speclib.Deployment(model, "B200", attention="paper")  # the paper's pricing does not read it
    with pytest.raises(ValueError, match=r"^attention must be 'paper' with cost_model"):
        speclib.Deployment(cost_model=cost.cost_model(attention="paper"), attention="served")
    with pytest.raises(ValueError, match=r"^attention must be 'served' with cost_model"):
        speclib.Deployment(cost_model=cost.cost_model(), attention="paper")
    assert speclib.Deployment(cost_model=cost.cost_model(attention="paper")).attention == "paper"  # its own
    with pytest.raises(ValueError, match=r"^attention must be one of 'served', 'paper'"):
        capacity.max_batch(FLASH, B200, 4096, attention="uncompressed")
