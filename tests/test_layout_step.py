"""One GPU's share of a step split over GPUs (speclib.core.layout): what each
GPU reads under tensor parallelism, expert parallelism and data-parallel
attention, the all-reduces it waits on, and the most loaded GPU when the
experts are split whole.

Independent routes: byte counts from the model configs by hand (heads, head
widths, layers), the all-reduce from NCCL's published small-message latency
and the link's datasheet bandwidth, and a Monte Carlo draw of top-k routing
for the most loaded GPU."""
import numpy as np
import pytest

import speclib
from speclib import presets
from speclib.core import moe
from speclib.core.layout import Layout, ParallelStep
from speclib.core.step import step_model

B, S = np.float64(16.0), np.float64(4096.0)


def _attention_bytes(deployment):
    return float(deployment.parallel_step().components(B, np.float64(1.0), S)["attention"][1])


def test_an_mla_latent_is_read_whole_by_every_gpu_under_tensor_parallelism():
    # DeepSeek-V3/R1: 61 layers, a 512-wide latent and a 64-wide rope key per token, bf16: every query head reads
    # it, so a GPU holding 16 of the 128 heads reads all of it
    latent = 16 * 61 * (512 + 64) * 2 * (4096 + 1)
    for tp in (1, 8):
        assert _attention_bytes(speclib.Deployment("deepseek-r1", "H200", tp=tp)) == pytest.approx(latent, rel=1e-12)
    # ... split by sequence under data-parallel attention: an eighth each
    dp = speclib.Deployment("deepseek-r1", "H200", tp=8, dp_attention=True)
    assert _attention_bytes(dp) == pytest.approx(latent / 8, rel=1e-12)


def test_grouped_query_heads_split_down_to_one_head_per_gpu():
    # Llama-3-70B: 8 KV heads of 128, 80 layers, bf16 keys and values
    llama = 16 * 80 * 2 * 8 * 128 * 2 * (4096 + 1)
    for tp in (1, 2, 4, 8):
        assert _attention_bytes(speclib.Deployment("llama-3-70b", "H200", tp=tp)) == pytest.approx(llama / tp,
                                                                                                   rel=1e-12)
    # Qwen3.6-35B-A3B: 2 KV heads of 256 in its 10 full-attention layers; over 8 GPUs each KV head is held by 4,
    # so each GPU reads half the cache; its 30 linear layers' state, read and written back, splits by head,
    # an eighth each
    m = presets.model("Qwen3.6-35B-A3B")
    a = m.step_architecture()
    full = 16 * 10 * 2 * 2 * 256 * 2 * (4096 + 1)
    state = 2 * 16 * 30 * a.state_bytes
    got = _attention_bytes(speclib.Deployment(m, "B200", tp=8, rollback="none"))
    assert got == pytest.approx(full / 2 + state / 8, rel=1e-12)


def test_data_parallel_attention_keeps_the_attention_weights_whole_on_every_gpu():
    plain = speclib.Deployment("deepseek-r1", "H200", tp=8).parallel_step()
    dp = speclib.Deployment("deepseek-r1", "H200", tp=8, dp_attention=True).parallel_step()
    a = plain.architecture
    one = np.float64(1.0)
    extra = a.attention_params * a.dense_bytes * (1 - 1 / 8)  # each GPU holds all of them instead of an eighth
    assert dp.components(B, one, S)["dense"][1] - plain.components(B, one, S)["dense"][1] == pytest.approx(extra)
    assert dp.components(B, one, S)["dense"][0] == pytest.approx(plain.components(B, one, S)["dense"][0])


#: NCCL's all-reduce of a small message (AIConfigurator's measured database, nccl-tests, NCCL 2.29.2, 2 KiB):
#: H200 6.31, 9.59 and 15.98 us at 2, 4 and 8 GPUs.
NCCL_H200_US = {2: 6.31, 4: 9.59, 8: 15.98}


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_tensor_parallelism_waits_on_two_all_reduces_a_layer(tp):
    # DeepSeek-R1 on H200s: 61 layers, 7,168 bf16 activations per position, NVLink 4 at 450 GB/s each way
    step = speclib.Deployment("deepseek-r1", "H200", tp=tp).parallel_step()
    for T in (1.0, 4.0):
        message = B * T * 7168 * 2
        expected = 2 * 61 * (NCCL_H200_US[tp] * 1e-6 + 2 * (tp - 1) / tp * message / 450e9)
        assert step.communication(B, np.float64(T)) == pytest.approx(expected, rel=1e-12)
    assert speclib.Deployment("deepseek-r1", "H200").parallel_step().communication(B, np.float64(1.0)) == 0.0
    # with experts split whole and attention by sequence, the all-to-all instead: a dispatch and a combine's
    # latency per MoE layer (pplx-kernels on NVLink 4: 41.65 us) and their bytes
    ep = speclib.Deployment("deepseek-r1", "H200", tp=8, ep=8, dp_attention=True).parallel_step()
    assert ep.communication(B, np.float64(1.0)) > 58 * 2 * 41.65e-6


def test_the_most_loaded_gpu_is_a_monte_carlo_draws():
    """Tokens each pick 8 distinct experts of 256, dealt to 8 GPUs: the most
    loaded GPU's touched experts and token picks, drawn, against the normal
    approximation (within its error at a handful of tokens: 8 %; at one
    token, eight picks over eight GPUs, it is 10 % low)."""
    rng = np.random.default_rng(0)
    E, k, G = 256, 8, 8
    rank = np.arange(E) % G
    for routing in (None, moe.measured_popularity()):
        p = np.full(E, 1 / E) if routing is None else routing / routing.sum()
        for N in (4, 32, 128):
            # k distinct experts per token, drawn with weights p: the k largest of log p plus Gumbel noise
            keys = np.log(p)[None, None, :] + rng.gumbel(size=(1000, N, E)).astype(np.float32)
            picks = np.argpartition(-keys, k, axis=-1)[..., :k].reshape(1000, -1)
            hit = np.zeros((1000, E), dtype=bool)
            np.put_along_axis(hit, picks, True, axis=1)
            touched = np.stack([hit[:, rank == g].sum(axis=1) for g in range(G)], axis=1).max(axis=1)
            counts = np.stack([(rank[picks] == g).sum(axis=1) for g in range(G)], axis=1)
            served = counts.max(axis=1) / (N * k / G)
            got_touched, got_served = moe.rank_max_load(np.array([float(N)]), k, E, G, routing)
            assert got_touched[0] == pytest.approx(np.mean(touched), rel=0.08), (routing is None, N)
            assert got_served[0] == pytest.approx(np.mean(served), rel=0.08), (routing is None, N)
    # one GPU holds every expert: the coupon count, exactly
    t, s = moe.rank_max_load(np.array([4.0]), k, E, 1)
    assert t[0] == pytest.approx(moe.experts_activated(4.0, k, E)) and s[0] == 1.0
    assert moe.normal_max_constant(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-6)  # E[max of two] = 1/sqrt(pi)


def test_an_expert_parallel_step_waits_for_its_most_loaded_gpu():
    tp = speclib.Deployment("deepseek-r1", "B200", tp=8).parallel_step()
    ep = speclib.Deployment("deepseek-r1", "B200", tp=8, ep=8).parallel_step()
    a = tp.architecture
    one = np.float64(1.0)
    for batch in (4.0, 64.0):
        touched, _ = moe.rank_max_load(np.array([batch]), 8, 256, 8)
        expected = a.ffn_params * a.ffn_bytes * (a.n_shared + 8 * touched[0]) / 8
        assert ep.components(np.float64(batch), one, S)["ffn"][1] == pytest.approx(expected, rel=1e-12)
        # above the mean: slicing every expert over the 8 GPUs reads the touched experts' mean share
        assert ep.components(np.float64(batch), one, S)["ffn"][1] > tp.components(np.float64(batch), one, S)["ffn"][1]


@pytest.mark.parametrize("layout, model, message", [
    (dict(tp=8, ep=3), "deepseek-r1", r"^ep must divide tp"),
    (dict(tp=6, ep=6, dp_attention=True), "deepseek-r1", r"^ep must divide the routed experts \(256"),
    (dict(tp=6), "deepseek-r1", r"^tp must divide DeepSeek-V3's 128 attention heads"),
    (dict(tp=8, ep=8), "llama-3-70b", r"^ep splits routed experts over GPUs; Llama-3-70B has none"),
    (dict(tp=1, dp_attention=True), "deepseek-r1", r"^dp_attention splits attention by sequence over the "
                                                  r"tensor-parallel GPUs: it needs tp > 1"),
    (dict(tp=2, dp_attention="yes"), "deepseek-r1", r"^dp_attention must be True or False"),
])
def test_a_layout_the_engine_cannot_run_is_refused_naming_the_field(layout, model, message):
    with pytest.raises(ValueError, match=message) as info:
        speclib.Deployment(model, "H200", **layout)
    assert "\n" not in str(info.value)


def test_data_parallel_attention_needs_attention_layers_to_split():
    import dataclasses

    arch = dataclasses.replace(presets.model("deepseek-r1").step_architecture(), attention_layers=0)
    with pytest.raises(ValueError, match=r"^dp_attention splits the attention cache by sequence; .* has no attention"):
        Layout(8, dp_attention=True).check(arch)


def test_one_gpu_is_the_step_itself():
    base = step_model("deepseek-r1", "H200")
    one = ParallelStep(base, Layout(1))
    T = np.float64(3.0)
    assert one.time(B, T, S) == base.time(B, T, S) and one.communication(B, T) == 0.0
