"""Memory capacity: datasheet capacities, weight bytes, per-sequence memory and
the largest batch that fits, each checked by an independent route (hand
counts from the configs, a brute-force search over batches, sympy)."""
import json
import math

import numpy as np
import pytest
import sympy as sp

import speclib
from speclib import presets
from speclib.core import capacity
from speclib.formulas import capacity as fcap

GB = 1e9


# --- the presets ---------------------------------------------------------------------------
@pytest.mark.parametrize("name, gb", [("B200", 180), ("H100-SXM", 80), ("H200", 141), ("MI300X", 192),
                                      ("MI325X", 256), ("MI355X", 288), ("GB300", 288)])
def test_every_chip_carries_its_datasheet_capacity_with_a_source(name, gb):
    hw = presets.hardware(name)
    assert hw.hbm_capacity == gb * GB
    assert f"HBM capacity {gb} GB" in hw.source


def test_capacity_field_is_validated_by_the_reader(tmp_path, monkeypatch):
    from speclib.presets import catalog

    data = json.loads((catalog.DATA_DIR / "hardware.json").read_text())
    del data["hardware"][0]["hbm_capacity_GB"]
    (tmp_path / "hardware.json").write_text(json.dumps(data))
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"B200.*missing fields \['hbm_capacity_GB'\]"):
        catalog.read_table("hardware")


def test_the_public_max_batch_is_the_capacity_modules():
    assert speclib.max_batch is capacity.max_batch


# --- weights ------------------------------------------------------------------------------
@pytest.mark.parametrize("model", presets.model_names())
def test_weight_groups_add_up_to_the_parameter_total(model):
    m = presets.model(model)
    assert sum(m.weight_groups().values()) == m.total_params()


def test_llama_weights_by_hand():
    # 80 layers x (attention 8192 x (64 + 2*8) x 128 + 64 x 128 x 8192, FFN 3 x 8192 x 28672) in bf16,
    # embeddings and head 2 x 128256 x 8192 in bf16.
    attention = 80 * (8192 * 80 * 128 + 64 * 128 * 8192)
    ffn = 80 * 3 * 8192 * 28672
    head = 2 * 128256 * 8192
    assert capacity.weight_bytes("llama-3-70b") == 2.0 * (attention + ffn + head)


def test_v4_flash_weights_count_every_expert_at_mxfp4():
    m = presets.DEEPSEEK_V4_FLASH
    experts = 43 * 257 * 3 * 4096 * 2048  # all 256 routed + 1 shared expert of every layer
    routers = 43 * 4096 * 256
    head = 2 * 129280 * 4096
    expected = 0.53 * experts + 1.0 * 43 * m.attn_proj_params + 2.0 * (routers + head)
    assert capacity.weight_bytes(m) == pytest.approx(expected, rel=1e-12)
    assert 150 * GB < expected < 160 * GB  # 284B parameters, mostly 4.24-bit experts


# --- one sequence's memory -------------------------------------------------------------
def test_gqa_and_mla_caches_are_m_c_per_token_per_layer():
    S = np.array([1.0, 1000.0, 131072.0])
    assert np.allclose(capacity.sequence_bytes(S, "llama-3-70b"), 80 * 2 * 8 * 128 * 2 * S)
    assert np.allclose(capacity.sequence_bytes(S, "deepseek-v3"), 61 * (512 + 64) * 2 * S)


def test_qwen36_keeps_ten_kv_caches_and_thirty_fixed_states():
    # docs/sequel.md: 20,480 B per token over the 10 full layers; 1,114,112 B of state per linear layer.
    S = np.array([0.0, 512.0, 1600.0])
    assert np.allclose(capacity.sequence_bytes(S, "qwen3.6"), 20_480 * S + 30 * 1_114_112)


def _v4_by_layer(S, m):
    """DeepSeek-V4's cache, one layer at a time from its compress_ratios list."""
    total = 0.0
    for ratio in m.compress_ratios[: m.n_layers]:
        total += min(S, m.sliding_window) * 576  # the uncompressed window every layer keeps
        if ratio == 4:
            total += S / 4 * (576 + 128)  # CSA entries and their fp8 indexer keys
        elif ratio == 128:
            total += S / 128 * 576  # HCA entries
    return total


@pytest.mark.parametrize("S", [1, 100, 128, 4096, 65536, 1_048_576])
def test_v4_compressed_cache_layer_by_layer(S):
    m = presets.DEEPSEEK_V4_FLASH
    assert m.cache_layout() == {"full": 0, "linear": 0, "csa": 21, "hca": 20, "window": 43}
    assert capacity.sequence_bytes(S, m) == pytest.approx(_v4_by_layer(S, m), rel=1e-12)


def test_v4_without_a_per_layer_list_is_counted_as_full_attention():
    m = presets.DEEPSEEK_V4_FLASH
    import dataclasses

    unknown = dataclasses.replace(m, compress_ratios=(4, 128))
    assert capacity.sequence_bytes(4096, unknown) == 43 * 576 * 4096


# --- what fits ----------------------------------------------------------------------------
def _brute_force_max_batch(model, hw, S, tp, reserve):
    usable = (1 - reserve) * presets.hardware(hw).hbm_capacity * tp
    w, per = capacity.weight_bytes(model), capacity.sequence_bytes(S, model)
    B = 0
    while w + (B + 1) * per <= usable:
        B += 1
    return B


@pytest.mark.parametrize("model, hw, S, tp", [("deepseek-v4-flash", "B200", 4096, 1), ("llama-3-70b", "H200", 8192, 1),
                                              ("llama-3-70b", "H100", 2048, 4), ("qwen3.6", "B200", 512, 1),
                                              ("mixtral-8x7b", "MI300X", 32768, 2)])
def test_max_batch_matches_a_brute_force_search(model, hw, S, tp):
    assert capacity.max_batch(model, hw, S, tp) == _brute_force_max_batch(model, hw, S, tp, capacity.DEFAULT_RESERVE)
    B = capacity.max_batch(model, hw, S, tp)
    assert capacity.fits(B, S, model, hw, tp) and not capacity.fits(B + 1, S, model, hw, tp)


def test_max_batch_is_zero_when_the_weights_alone_do_not_fit():
    assert capacity.max_batch("deepseek-v3", "B200", 1024) == 0
    assert capacity.max_batch("deepseek-v3", "B200", 1024, tp=8) > 0


def test_max_batch_broadcasts_and_is_monotone():
    S = np.array([512, 4096, 32768, 131072])
    out = capacity.max_batch(None, None, S)
    assert out.dtype.kind == "i" and np.all(np.diff(out) <= 0)
    tps = capacity.max_batch(None, None, 4096, np.array([1, 2, 4, 8]))
    assert np.all(np.diff(tps) > 0)


def test_the_papers_largest_batches_cannot_fit_on_one_b200():
    check = capacity.check(30_000, 4096)
    assert not check.fits and check.max_batch == capacity.max_batch(None, None, 4096)
    # Under plain tensor parallelism every GPU holds the whole MLA latent of all 30,000 sequences (560 GB at
    # 18.7 MB each): no tensor-parallel width fits them. Split by sequence (data-parallel attention), eight GPUs
    # hold 8 x 162 GB usable, four hold 648 GB, short of the 714 GB needed.
    assert check.min_tp is None and "holds the whole MLA latent" in check.message()
    per_sequence = capacity.sequence_bytes(4096)
    need = capacity.weight_bytes() + 30_000 * per_sequence
    for gpus, enough in ((4, False), (8, True)):
        split = speclib.Deployment(None, None, tp=gpus, dp_attention=True, attention="served")
        assert (split.max_batch(4096) >= 30_000) is enough
        assert (gpus * 0.9 * 180e9 >= need) is enough  # the hand count (the attention weights aside)
    # With the paper's uncompressed MLA (576 B per token in all 43 layers) the caches alone take terabytes.
    assert 30_000 * 43 * 576 * 4096 > 3e12


def test_reserve_is_the_fraction_kept_free():
    full = capacity.max_batch("llama-3-70b", "H200", 4096, tp=2, reserve=0.0)
    assert full == _brute_force_max_batch("llama-3-70b", "H200", 4096, 2, 0.0)
    assert 0 < capacity.max_batch("llama-3-70b", "H200", 4096, tp=2, reserve=0.3) < full


def test_min_tp_is_the_smallest_that_fits():
    for B, S in ((64, 4096), (200, 8192), (1, 1)):
        n = capacity.min_tp(B, S, "llama-3-70b", "H100", powers_of_two=False)
        assert capacity.fits(B, S, "llama-3-70b", "H100", n)
        assert n == 1 or not capacity.fits(B, S, "llama-3-70b", "H100", n - 1)
        p2 = capacity.min_tp(B, S, "llama-3-70b", "H100")
        assert p2 >= n and p2 & (p2 - 1) == 0 and p2 < 2 * n


def test_min_tp_is_none_where_the_kv_heads_stop_splitting():
    # Llama-3-70B has 8 KV heads: past 8 GPUs each still holds one head of every sequence's cache, 80 layers x
    # 2 x 128 x 2 bytes = 40,960 bytes per token. 1,000 sequences of 32,768 tokens need 1.34 TB on every GPU.
    per_gpu = 1000 * 32768 * 80 * 2 * 128 * 2
    assert per_gpu > 80e9 and capacity.min_tp(1000, 32768, "llama-3-70b", "H100") is None
    for gpus in (8, 16):  # by hand: the weights split 1/tp, one KV head of every sequence on each GPU
        by_hand = (0.9 * 80e9 - capacity.weight_bytes("llama-3-70b") / gpus) // (32768 * 80 * 2 * 128 * 2)
        assert capacity.max_batch("llama-3-70b", "H100", 32768, gpus) == by_hand


def test_check_message_says_what_it_needs_in_one_line():
    text = capacity.check(30_000, 4096).message()
    assert "\n" not in text and "do not fit" in text and "no tensor-parallel size" in text
    assert "smallest tensor-parallel size that fits is 2" in capacity.check(600, 4096).message()
    assert "fit on one B200" in capacity.check(64, 4096).message()


# --- the closed forms --------------------------------------------------------------------
def test_max_batch_expr_is_the_largest_batch_satisfying_the_inequality():
    B, W, m, n, C, r = fcap.B, fcap.W, fcap.m, fcap.n, fcap.C, fcap.r
    values = {C: 180e9, r: sp.Rational(1, 10), n: 2, W: 154e9, m: 18.7e6}
    b = int(fcap.max_batch_expr.subs(values))
    usable = fcap.usable_expr.subs(values)
    assert fcap.memory_per_gpu_expr.subs(values | {B: b}) <= usable < fcap.memory_per_gpu_expr.subs(values | {B: b + 1})


def test_min_gpus_expr_inverts_the_memory_per_gpu():
    assert sp.simplify(fcap.memory_per_gpu_expr.subs(fcap.n, fcap.min_gpus_expr) - fcap.usable_expr) == 0


# --- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    (dict(context=-1), "context"), (dict(context=float("nan")), "context"), (dict(context=float("inf")), "context"),
    (dict(tp=0), "tp"), (dict(tp=1.5), "tp"), (dict(tp=4096), "tp"), (dict(reserve=1.0), "reserve"),
    (dict(reserve=-0.1), "reserve"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = dict(context=4096, tp=1) | kwargs
    reserve = args.pop("reserve", capacity.DEFAULT_RESERVE)
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        capacity.max_batch(None, None, args["context"], args["tp"], reserve=reserve)


def test_a_chip_without_a_capacity_cannot_be_checked():
    import dataclasses

    bare = dataclasses.replace(presets.B200, hbm_capacity=None)
    with pytest.raises(ValueError, match="no HBM capacity"):
        capacity.max_batch(None, bare, 4096)
    assert math.isfinite(capacity.weight_bytes())
