"""Layouts the engines accept: tensor parallelism splits the attention heads
as vLLM and SGLang split them, and a tensor-parallel group stays inside one
scale-up domain. Expected values come from brute force over the split itself
(every GPU gets whole query heads and whole or replicated KV heads), not from
the rule under test."""
import pytest

import speclib
from speclib.core.layout import head_split_ok, head_splits


def split_by_assignment(tp, n_heads, kv_heads):
    """Brute force: deal the query heads out to tp GPUs in equal blocks, and
    give each GPU the KV heads its query heads read; the split is the
    engines' if every GPU holds the same number of query heads and either
    distinct KV heads in equal numbers or one KV head shared by equal groups
    of GPUs."""
    if n_heads % tp:
        return False
    if not kv_heads:
        return True
    per = n_heads // tp
    group = n_heads // kv_heads  # query heads per KV head
    kv_of_gpu = [sorted({q // group for q in range(g * per, (g + 1) * per)}) for g in range(tp)]
    if any(len(k) != len(kv_of_gpu[0]) for k in kv_of_gpu):
        return False
    if len(kv_of_gpu[0]) > 1 or tp <= kv_heads:  # distinct blocks of KV heads, none shared
        flat = [k for ks in kv_of_gpu for k in ks]
        return len(flat) == len(set(flat)) == kv_heads
    sharers = {}
    for ks in kv_of_gpu:
        sharers[ks[0]] = sharers.get(ks[0], 0) + 1
    return len(sharers) == kv_heads and len(set(sharers.values())) == 1


@pytest.mark.parametrize("n_heads,kv_heads", [(64, 8), (32, 8), (48, 8), (40, 8), (96, 8), (64, 4), (128, 0),
                                              (28, 4), (12, 2), (64, 64)])
def test_head_split_matches_brute_force(n_heads, kv_heads):
    for tp in range(1, 2 * n_heads + 1):
        assert head_split_ok(tp, n_heads, kv_heads) == split_by_assignment(tp, n_heads, kv_heads), tp


def test_llama_70b_heads():
    # 64 query heads, 8 KV heads: 16 replicates each KV head over two GPUs; 3 splits no head evenly
    assert head_splits(64, 8) == [1, 2, 4, 8, 16, 32, 64]
    assert head_split_ok(12, 48, 8) is False  # 48 heads split by 12, but 12 GPUs cannot share 8 KV heads evenly


@pytest.mark.parametrize("model,hardware,tp,words", [
    ("llama-3-70b", "H200", 3, ("tp must", "64 attention heads", "8 KV heads", "got tp=3")),
    ("deepseek-r1", "H200", 6, ("tp must", "128 attention heads", "got tp=6")),
    ("llama-3-70b", "H100", 16, ("tp must be at most 8", "got tp=16")),
    ("deepseek-r1", "B200", 16, ("tp must be at most 8", "NVLink5", "got tp=16")),  # an HGX B200 board joins 8
    ("deepseek-r1", "GB200", 128, ("tp must be at most 72", "NVLink5-NVL72", "got tp=128")),
])
def test_refused_layouts_name_the_parameter_on_one_line(model, hardware, tp, words):
    with pytest.raises(ValueError) as err:
        speclib.Deployment(model, hardware, tp=tp)
    text = str(err.value)
    assert "\n" not in text and all(w in text for w in words), text


def test_accepted_layouts():
    for model, hardware, tp in (("llama-3-70b", "H200", 2), ("llama-3-70b", "H200", 8), ("deepseek-r1", "H200", 8)):
        assert speclib.Deployment(model, hardware, tp=tp).tp == tp
    # data-parallel attention runs whole heads on every GPU: no head split to refuse
    assert speclib.Deployment("deepseek-r1", "H200", tp=8, ep=8, dp_attention=True).dp_attention


def test_expert_parallel_must_divide_the_experts():
    with pytest.raises(ValueError, match="ep must divide"):
        speclib.Deployment("qwen3-235b-a22b", "H200", tp=8, ep=3)


def test_tp_beyond_the_board_needs_a_larger_domain():
    # B200s joined as an NVL72 rack joins them: 16 and 64 fit in its 72, 128 does not; the step's all-reduces
    # are priced over the named domain (its measured 8-GPU figure, held beyond it), not refused
    for tp in (16, 64):
        dep = speclib.Deployment("deepseek-r1", "B200", tp=tp, interconnect="nvl72")
        assert dep.interconnect == "NVLink5-NVL72" and dep.parallel_step().interconnect.domain_size == 72
    assert speclib.Deployment("deepseek-r1", "GB200", tp=16).tp == 16
    with pytest.raises(ValueError) as err:
        speclib.Deployment("deepseek-r1", "B200", tp=128, interconnect="NVLink5-NVL72")
    assert "\n" not in str(err.value) and "tp must be at most 72" in str(err.value)
    with pytest.raises(ValueError, match="unknown interconnect 'nvlink9'"):
        speclib.Deployment("deepseek-r1", "B200", tp=8, interconnect="nvlink9")


def test_the_same_chip_prices_the_same_over_either_nvlink5_domain():
    # one HGX board's 8 B200s and 8 B200s of an NVL72 domain: the same link per GPU, the same step
    board = speclib.Deployment("deepseek-r1", "B200", tp=8)
    rack = speclib.Deployment("deepseek-r1", "B200", tp=8, interconnect="NVLink5-NVL72")
    assert float(board.parallel_step().time(8.0, 1.0, 4096.0)) == float(rack.parallel_step().time(8.0, 1.0, 4096.0))
