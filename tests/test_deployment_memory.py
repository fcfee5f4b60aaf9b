"""What a deployment holds (speclib.Deployment.max_batch / memory): each
counted term checked by hand for one configuration, from the model's config
numbers and the engines' replication rules, and the served attention's
pricing against the paper's."""
import math

import numpy as np
import pytest

import speclib
import speclib.core.parallel
from speclib import presets
from speclib.core import capacity

GB = 1e9
B200_USABLE = 0.9 * 180e9  # B200: 180 GB of HBM, 10 % kept free
H200_USABLE = 0.9 * 141e9


def by_hand(usable, weights_per_gpu, per_sequence):
    return math.floor((usable - weights_per_gpu) / per_sequence)


# --- the caches, by layout ------------------------------------------------------------------
def test_an_mla_latent_is_held_whole_on_every_gpu_under_tensor_parallelism():
    # DeepSeek-V3: 61 layers of (512 + 64) bf16 latent = 1,152 bytes per token per layer, whole on each GPU
    d = speclib.Deployment("deepseek-v3", "H200", tp=8)
    per_sequence = 61 * 1152 * 4096
    weights = capacity.weight_bytes("deepseek-v3") / 8
    assert d.max_batch(4096) == by_hand(H200_USABLE, weights, per_sequence)
    assert d.memory(4096).cache == pytest.approx(per_sequence)


def test_data_parallel_attention_splits_the_latent_and_holds_attention_weights_whole():
    d = speclib.Deployment("deepseek-v3", "H200", tp=8, ep=8, dp_attention=True, engine="SGLang")
    m = presets.model("deepseek-v3")
    # held whole on every GPU: 61 layers' attention projections (fp8) and SGLang's embedding (bf16);
    # its output head stays split over the group
    whole = 61 * 187_105_280 * 1.0 + 129_280 * 7168 * 2
    held = d.memory(4096)
    assert held.replicated == pytest.approx(whole)
    assert held.per_gpu_weights == pytest.approx(whole + (capacity.weight_bytes(m) - whole) / 8)
    assert held.cache == pytest.approx(61 * 1152 * 4096 / 8)  # each GPU its own eighth of the sequences
    # vLLM and TensorRT-LLM keep the output head whole too
    assert speclib.Deployment("deepseek-v3", "H200", tp=8, ep=8, dp_attention=True).memory(4096).replicated \
        == pytest.approx(whole + 129_280 * 7168 * 2)


def test_a_gqa_cache_splits_by_kv_head_down_to_one_head_per_gpu():
    # Llama-3-70B: 80 layers x 8 KV heads x 128 x (key + value) x 2 bytes = 327,680 bytes per token
    per_token = 80 * 8 * 128 * 2 * 2
    # (16 GPUs replicate each KV head twice: a GB200 NVL72 domain, since an HGX board joins 8 and tp 16 is refused there)
    for tp, share, chip in ((4, 1 / 4, "H200"), (8, 1 / 8, "H200"), (16, 1 / 8, "GB200")):
        held = speclib.Deployment("llama-3-70b", chip, tp=tp).memory(8192)
        assert held.cache == pytest.approx(per_token * 8192 * share)


def test_the_reserve_is_kept_free():
    loose = speclib.Deployment("llama-3-70b", "H200", tp=4, reserve=0.0).max_batch(4096)
    tight = speclib.Deployment("llama-3-70b", "H200", tp=4, reserve=0.3).max_batch(4096)
    per_sequence = 80 * 8 * 128 * 2 * 2 * 4096 / 4
    weights = capacity.weight_bytes("llama-3-70b") / 4
    assert (loose, tight) == (by_hand(141e9, weights, per_sequence), by_hand(0.7 * 141e9, weights, per_sequence))


# --- what a speculative deployment adds ---------------------------------------------------
def test_a_snapshot_rollback_holds_fewer_sequences_by_the_snapshot_bytes():
    # Qwen3.6-35B-A3B: 30 GatedDeltaNet layers of 1,114,112 state bytes each = 33.4 MB per sequence; a snapshot
    # keeps one more per draft position (vLLM: 1 + gamma state pages per layer)
    state = 30 * 1_114_112
    d = speclib.Deployment("qwen3.6", "B200", drafter="qwen3.6-mtp")
    plain, drafting = d.memory(4096, 0), d.memory(4096, 8)
    assert drafting.rollback == pytest.approx(8 * state)
    kv = 10 * 2048  # 10 full-attention layers of 2 KV heads x 256 x 2 x 2 bytes
    # vLLM's draft slots: the 8 drafted and 8 lookahead positions, in the target's and the drafter's caches
    assert drafting.cache == pytest.approx(kv * (4096 + 16))
    assert drafting.drafter_cache == pytest.approx(2048 * (4096 + 16))
    extra = 8 * state + (kv + 2048) * 16
    assert drafting.per_sequence == pytest.approx(plain.per_sequence + extra)
    assert d.max_batch(4096, 8) < d.max_batch(4096, 0)
    assert d.max_batch(4096, 8) == by_hand(B200_USABLE, plain.per_gpu_weights, plain.per_sequence + extra)
    recompute = d.replace(rollback="recompute")
    assert recompute.max_batch(4096, 8) > d.max_batch(4096, 8)


def test_the_drafters_weights_are_its_own_not_the_heads_it_shares():
    # DeepSeek-V3's MTP module: 11.5 B unique parameters by its checkpoint's README_WEIGHTS.md (norms aside),
    # in fp8, the 0.9 B embedding and 0.9 B output head shared with the target
    mtp = presets.drafter("deepseek-v3-mtp")
    assert mtp.resident_bytes == pytest.approx(11.5e9, rel=0.015)
    d = speclib.Deployment("deepseek-v3", "B200", tp=8, drafter="deepseek-v3-mtp")
    plain = speclib.Deployment("deepseek-v3", "B200", tp=8)
    assert d.memory(4096).per_gpu_weights - plain.memory(4096).per_gpu_weights == pytest.approx(
        mtp.resident_bytes / 8)


def test_engines_hold_different_draft_slots():
    d = speclib.Deployment("llama-3-70b", "H200", tp=4, drafter="llama-3.3-70b-eagle3")
    per_token = 80 * 8 * 128 * 2 * 2 / 4
    for engine, slots in (("vLLM", 2 * 4), ("SGLang", 2 * 4 + 2), ("TRT", 2 * 4 - 1)):
        held = d.replace(engine=engine).memory(1024, 4)
        assert held.cache == pytest.approx(per_token * (1024 + slots))


# --- one number, three doors ---------------------------------------------------------------
def test_max_batch_takes_the_deployment_and_says_the_same():
    d = speclib.Deployment("qwen3.6", "B200", drafter="qwen3.6-mtp")
    assert speclib.max_batch(deployment=d, context=4096, gamma=3) == d.max_batch(4096, 3) \
        == d.memory(4096, 3).max_batch
    plain = speclib.Deployment("llama-3-70b", "H200", tp=2)
    assert speclib.max_batch("llama-3-70b", "H200", 4096, 2) == plain.max_batch(4096)
    with pytest.raises(ValueError, match="deployment already names"):
        speclib.max_batch("llama-3-70b", deployment=d)
    np.testing.assert_array_equal(d.max_batch([1024, 4096], [[0], [8]]),
                                  [[d.max_batch(1024, 0), d.max_batch(4096, 0)],
                                   [d.max_batch(1024, 8), d.max_batch(4096, 8)]])


def test_a_cost_model_deployment_has_no_memory_to_count():
    d = speclib.Deployment(cost_model=speclib.core.parallel.expert_parallel_cost_model(G=8))
    with pytest.raises(ValueError, match="model and hardware"):
        d.max_batch(4096)


# --- served attention ----------------------------------------------------------------------
def test_served_and_paper_attention_agree_where_nothing_is_compressed():
    for name in ("deepseek-v3", "llama-3-70b", "qwen3.6"):
        paper = speclib.Deployment(name, "B200", roofline="aggregate")
        served = paper.replace(attention="served")
        B, S = np.array([1.0, 64, 512]), np.array([1024.0, 32768, 4096])
        np.testing.assert_array_equal(served.pricing().plain(B, S), paper.pricing().plain(B, S))
        assert served.max_batch(4096) == paper.max_batch(4096)


def test_served_attention_reads_the_compressed_caches_at_32k():
    # DeepSeek-V4-Flash at 32k: each layer reads MLA's 576 bytes a position over the context its compression
    # leaves (CSA: the top 512 of S / 4 plus the 128-token window, and its indexer's keys over S / 4; HCA: S / 128
    # plus the window), not over all 32,768 positions.
    m = presets.model("deepseek-v4-flash")
    a = m.attention
    lay = m.cache_layout()
    S = 32768.0
    attended = S + 1  # one position verified attends over S + ceil(1 / 2)
    window = min(attended, m.sliding_window)
    n_window = m.n_layers - lay["full"] - lay["csa"] - lay["hca"]
    per_layer = {"full": attended, "window": window, "csa": min(attended / a.csa_ratio, a.csa_top_k) + window,
                 "hca": attended / a.hca_ratio + window}
    m_ci = a.variant_constants("indexer", 1.0)[0]
    by_hand = m.context_bytes * (lay["full"] * per_layer["full"] + n_window * per_layer["window"]
                                 + lay["csa"] * per_layer["csa"] + lay["hca"] * per_layer["hca"]) \
        + lay["csa"] * m_ci * attended / a.csa_ratio
    step = speclib.core.step.step_model(m, "B200", attention="served")
    paper = speclib.core.step.step_model(m, "B200", attention="paper")
    assert step.components(1.0, 1.0, S)["attention"][1] == pytest.approx(by_hand)
    assert paper.components(1.0, 1.0, S)["attention"][1] == pytest.approx(m.n_layers * m.context_bytes * attended)
    assert by_hand < paper.components(1.0, 1.0, S)["attention"][1] / 10


def test_every_combination_prices_served_attention():
    for kw in (dict(), dict(roofline="aggregate"), dict(tp=8, step_time="calibrated"),
               dict(tp=8, ep=8, dp_attention=True, step_time="calibrated"), dict(drafter="deepseek-v4-flash-mtp")):
        paper = speclib.Deployment("deepseek-v4-flash", "B200", attention="paper", **kw)
        served = paper.replace(attention="served")
        assert served.pricing(whole_step=True).plain(64, 32768) < paper.pricing(whole_step=True).plain(64, 32768)
        assert speclib.optimal_gamma(0.8, 64, 32768, deployment=served) != speclib.optimal_gamma(
            0.8, 64, 32768, deployment=paper)
        assert served.max_batch(32768) > paper.max_batch(32768)
