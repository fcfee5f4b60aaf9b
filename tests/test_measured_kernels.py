"""The paper's kernel claims held against NVIDIA's measured tables
(speclib.evidence.measured_kernels), checked by independent routes: the
numbers read straight out of the shipped JSON by hand here, the coupon count
by the hand formula E(1 - (1 - k/E)^T) and a Monte Carlo draw of routing,
the memory-bound time and T* by hand arithmetic from the datasheet numbers
(H200: 4.8 TB/s, 989.4 dense bf16 TFLOP/s) and DeepSeek-V3's published
shape (hidden 7168, experts of width 2048, top-8 of 256; 128 heads, a latent
of 512 + 64)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from speclib.evidence import measured_kernels as mk

DATA = Path(__file__).resolve().parents[1] / "speclib" / "data" / "silicon"
H200_BW, H200_BF16 = 4.8e12, 989.4e12


def _json(name):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _moe_config(name, dtype, hidden, inter, topk, experts):
    for c in _json(name)["tables"]["moe"]["configs"]:
        if (c["dtype"], c["hidden"], c["inter"], c["topk"], c["experts"], c["moe_tp"], c["moe_ep"],
                c["distribution"]) == (dtype, hidden, inter, topk, experts, 1, 1, "balanced"):
            return c
    raise AssertionError("shape not in the file")


# --- (a) the expert tax ------------------------------------------------------------------------------


@pytest.mark.parametrize("name, chip, engine", [("h200-sglang.json", "H200", "SGLang"),
                                                ("b300-trt.json", "B300", "TRT"),
                                                ("h100-sxm-vllm.json", "H100-SXM", "vLLM")])
def test_the_moe_times_are_the_files_own(name, chip, engine):
    c = _moe_config(name, "fp8_block", 7168, 2048, 8, 256)
    tokens = [t for t in c["tokens"] if t <= mk.MOE_MAX_TOKENS]
    ms = [v for t, v in zip(c["tokens"], c["latency_ms"]) if t <= mk.MOE_MAX_TOKENS]
    r = mk.expert_tax(chip, engine, "DeepSeek-V3")
    assert r.missing == "" and r.dtype == "fp8_block"
    assert list(r.tokens) == tokens
    assert np.allclose(r.measured_s, np.array(ms) * 1e-3, rtol=1e-12)
    assert r.measured_ratio[list(r.tokens).index(8)] == pytest.approx(ms[tokens.index(8)] / ms[0])


def test_the_h200_sglang_moe_at_one_and_eight_tokens_by_hand():
    # read by eye from h200-sglang.json: 0.1087 ms at one token, 0.4182 ms at eight
    r = mk.expert_tax("H200", "SGLang")
    assert r.measured_s[0] == pytest.approx(0.1087e-3)
    assert r.at(8)[0] == pytest.approx(0.4182 / 0.1087)


def test_the_coupon_count_is_the_closed_form_and_a_monte_carlo_draw():
    r = mk.expert_tax("H200", "TRT")
    k, E = 8, 256
    by_hand = E * (1 - (1 - k / E) ** r.tokens)
    assert np.allclose(r.distinct, by_hand, rtol=1e-12)
    assert r.coupon_ratio[0] == 1.0 and r.distinct[0] == pytest.approx(8.0)
    rng = np.random.default_rng(7)
    for T in (2, 8, 32):
        touched = [len({e for _ in range(T) for e in rng.choice(E, k, replace=False)}) for _ in range(4000)]
        assert np.mean(touched) == pytest.approx(r.distinct[list(r.tokens).index(T)], rel=0.01)


def test_the_memory_bound_time_is_the_experts_bytes_over_the_bandwidth():
    # one token reads its 8 experts: 3 x 7168 x 2048 parameters each, one byte apiece in fp8
    r = mk.expert_tax("H200", "SGLang")
    assert r.predicted_s[0] == pytest.approx(8 * 3 * 7168 * 2048 / H200_BW)
    assert np.allclose(r.predicted_s / r.predicted_s[0], r.coupon_ratio)
    # the most experts 0.1087 ms could read at 4.8 TB/s, 44 MB each
    assert r.readable_experts[0] == pytest.approx(0.1087e-3 * H200_BW / (3 * 7168 * 2048))


def test_a_second_moe_preset_reads_its_own_shape():
    c = _moe_config("b200-vllm.json", "bfloat16", 4096, 1536, 8, 128)
    r = mk.expert_tax("B200", "vLLM", "Qwen3-235B-A22B")
    assert r.dtype == "bfloat16" and r.measured_s[0] == pytest.approx(c["latency_ms"][0] * 1e-3)
    assert r.distinct[0] == pytest.approx(8.0) and r.distinct[-1] == pytest.approx(128.0, rel=1e-6)


def test_a_shape_the_tables_lack_is_said_not_filled():
    # gpt-oss-120b's experts (hidden 2880) are not in the H100 TensorRT-LLM file on one GPU
    assert not any(c["hidden"] == 2880 and c["moe_tp"] == c["moe_ep"] == 1
                   for c in _json("h100-sxm-trt.json")["tables"]["moe"]["configs"])
    r = mk.expert_tax("H100-SXM", "TRT", "gpt-oss-120b")
    assert len(r.tokens) == 0 and "measures no MoE of hidden 2880" in r.missing


def test_a_dense_model_and_an_unknown_chip_are_refused():
    with pytest.raises(ValueError, match="mixture-of-experts"):
        mk.expert_tax("H200", "SGLang", "Llama-3.1-8B")
    with pytest.raises(ValueError, match="chip"):
        mk.expert_tax("MI300X", "SGLang")


# --- (b) the verify cost of attention ----------------------------------------------------------------


def _attention_cell(name, table, batch, context, **shape):
    for c in _json(name)["tables"][table]["configs"]:
        if all(c[key] == value for key, value in shape.items()):
            return c["latency_ms"][c["batch"].index(batch)][c["context"].index(context)] * 1e-3
    return None


@pytest.mark.parametrize("name, chip, engine", [("h200-trt.json", "H200", "TRT"), ("b200-sglang.json", "B200", "SGLang")])
def test_mla_positions_are_the_tables_head_counts_read_by_hand(name, chip, engine):
    r = mk.verify_cost(chip, engine, "DeepSeek-V3")  # 8 GPUs: 16 of the 128 heads on each
    assert (r.heads, r.tp, r.batch, r.context) == (16, 8, 64, 4096)
    assert list(r.T) == [1, 2, 4, 8]  # 16, 32, 64, 128 heads are measured; 48, 80, 96, 112 are not
    for T, s in zip(r.T, r.seconds):
        cell = _attention_cell(name, "mla", 64, 4096, heads=16 * int(T), kv_dtype="bfloat16")
        assert s == pytest.approx(cell / 64, rel=1e-12)
    assert sum("no MLA kernel at" in why for why in r.missing) == 4


def test_gqa_positions_are_the_tables_head_counts_read_by_hand():
    r = mk.verify_cost("H100-SXM", "vLLM", "Llama-3.1-8B")  # 2 GPUs: 16 query heads over 4 KV heads each
    assert (r.heads, r.kv_heads) == (16, 4) and list(r.T) == [1, 2, 3, 4]
    for T, s in zip(r.T, r.seconds):
        cell = _attention_cell("h100-sxm-vllm.json", "gqa", 64, 4096, heads=16 * int(T), kv_heads=4, head_dim=128,
                               kv_dtype="bfloat16")
        assert s == pytest.approx(cell / 64, rel=1e-12)


def test_an_engine_without_mla_tables_says_so():
    assert "mla" not in _json("h200-vllm.json")["tables"]
    r = mk.verify_cost("H200", "vLLM", "DeepSeek-V3")
    assert len(r.T) == 0 and r.missing == ("h200-vllm.json measures no MLA attention",)


def test_t_star_on_the_h200_by_hand():
    # m_c R / f for one GPU: the whole latent (512 + 64, bf16) over 16 of the heads' FLOPs
    m_c = (512 + 64) * 2
    f_per_gpu = 2 * 16 * ((512 + 64) + 512)
    assert mk.verify_cost("H200", "SGLang").ridge_T == pytest.approx(m_c * (H200_BF16 / H200_BW) / f_per_gpu)
    # GQA: 4 KV heads of 128 (K and V, bf16) per GPU against 16 query heads
    assert mk.verify_cost("H200", "SGLang", "Llama-3.1-8B").ridge_T == pytest.approx(
        2 * 4 * 128 * 2 * (H200_BF16 / H200_BW) / (2 * 16 * 256))


def test_the_roofline_ratio_by_hand_on_the_h200():
    # one GPU: bytes = the latent of 4096 tokens + T queries of 16 heads; FLOPs = 2 x 16 x 1088 per pair
    def t(T):
        S, heads = 4096, 16
        byte = S * 576 * 2 + T * heads * 576 * 2
        flop = 2 * heads * 1088 * T * S
        return max(byte / H200_BW, flop / H200_BF16)

    r = mk.verify_cost("H200", "SGLang")
    assert np.allclose(r.roofline_ratio, [t(T) / t(1) for T in r.T], rtol=1e-9)
    assert r.roofline_ratio[-1] > 1.1  # past T* = 6.8 the roofline rises


def test_gaps_name_what_is_missing():
    g = mk.gaps()
    assert ("MLA DeepSeek-V3", "B300", "vLLM", "b300-vllm.json measures no MLA attention") in g
    assert not any(what.startswith("MoE DeepSeek-V3") for what, *_ in g)  # every file holds its experts


# --- the figures draw what the tables hold ------------------------------------------------------------


def test_the_expert_tax_figure_draws_the_files_ratios_and_the_coupon_count():
    import matplotlib

    matplotlib.use("Agg")
    from speclib.presentation.figures import measured_kernels as figures
    from speclib.presentation.static import artist

    fig = figures.expert_tax()
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["H100-SXM", "H200", "B200", "B300"]
    c = _moe_config("b200-trt.json", "fp8_block", 7168, 2048, 8, 256)
    x, y = artist(fig, "measured_b200_TRT").get_data()
    assert x[3] == c["tokens"][3] == 8 and y[3] == pytest.approx(c["latency_ms"][3] / c["latency_ms"][0])
    x, y = artist(fig, "coupon_b200").get_data()
    assert y[-1] == pytest.approx(256 * (1 - (1 - 8 / 256) ** x[-1]) / 8)


def test_the_verify_cost_figure_marks_t_star_and_notes_the_missing_mla_tables():
    import matplotlib

    matplotlib.use("Agg")
    from speclib.presentation.figures import measured_kernels as figures
    from speclib.presentation.static import artist

    fig = figures.verify_cost()
    assert artist(fig, "ridge_h200").get_xdata()[0] == pytest.approx(
        (512 + 64) * 2 * (H200_BF16 / H200_BW) / (2 * 16 * 1088))
    T, ratio = artist(fig, "mla_h200_SGLang").get_data()
    cell = lambda heads: _attention_cell("h200-sglang.json", "mla", 64, 4096, heads=heads, kv_dtype="bfloat16")
    assert list(T) == [1, 2, 4, 8] and ratio[-1] == pytest.approx(cell(128) / cell(16))
    assert len(artist(fig, "mla_h200_vLLM").get_xdata()) == 0
    assert any("vLLM: no MLA table" in t.get_text() for t in fig.axes[1].texts)


def test_the_summary_table_has_a_row_per_chip_and_engine_and_a_dash_where_a_table_lacks_a_kernel():
    from speclib.presentation.figures import measured_kernels as figures

    rows = figures.summary_table().rows
    assert len(rows) == 12 and rows[2][:2] == ("H100-SXM", "vLLM") and rows[2][5] == "–"
    assert rows[0][3] == f"{256 * (1 - (1 - 8 / 256) ** 8) / 8:.2f}"


def test_the_glued_facts_are_the_tables_extremes():
    from speclib.presentation.figures import measured_kernels as figures

    f = figures.facts()
    ratios = []
    for chip in ("h100-sxm", "h200", "b200", "b300"):
        for engine in ("sglang", "trt", "vllm"):
            c = _moe_config(f"{chip}-{engine}.json", "bfloat16", 4096, 1536, 8, 128)
            ratios.append(c["latency_ms"][c["tokens"].index(8)] / c["latency_ms"][0])
    assert (f["qwen_few_lo"], f["qwen_few_hi"]) == pytest.approx((min(ratios), max(ratios)))
    assert f["qwen_coupon_few"] == pytest.approx(128 * (1 - (1 - 8 / 128) ** 8) / 8)
    assert f["gqa_hi"] < 1.05 and f["knee"] == 32
