"""The capacity chapter's tables of what each engine replicates and of what
one GPU of a speculative deployment holds: each number against a hand count
from the models' configuration numbers (typed here, not read from speclib)."""
import math

import pytest

from speclib.core import capacity
from speclib.presentation.figures import common
from speclib.presentation.figures import deployment_capacity as chapter

S = 4096
#: vLLM's usable share of a GPU's HBM by default, and the chips' HBM (bytes).
USABLE = 0.9
B200, H200 = 180e9, 141e9

# Qwen3.6-35B-A3B: 40 layers, one in four full attention (2 KV heads of 256), the other 30 GatedDeltaNet
# (16 key heads, 32 value heads of 128, a convolution of 4 taps), all in bf16.
QWEN_FULL, QWEN_LINEAR = 10, 30
QWEN_KV_PER_TOKEN = QWEN_FULL * 2 * 256 * 2 * 2
QWEN_STATE = 32 * 128 * 128 * 2 + (2 * 16 * 128 + 32 * 128) * 4 * 2  # recurrent state + convolution window
# its MTP layer: 535,822,336 dense parameters, of which the output head (508,559,360) is the target's; 256 routed
# experts and a shared one of 3 x 2048 x 512 parameters; bf16; one full-attention layer of cache
QWEN_MTP_WEIGHTS = (535_822_336 - 508_559_360 + 257 * 3 * 2048 * 512) * 2
QWEN_MTP_CACHE = 2 * 256 * 2 * 2

# DeepSeek-V3: 61 MLA layers caching a 512-wide latent and a 64-wide rope key in bf16; 128 heads, hidden 7,168,
# query rank 1,536, 128-wide no-rope and value heads, 64-wide rope heads; fp8 projections; vocabulary 129,280.
V3_LATENT = 61 * (512 + 64) * 2
V3_ATTENTION = 61 * (7168 * 1536 + 1536 * 128 * (128 + 64) + 7168 * (512 + 64) + 512 * 128 * (128 + 128)
                     + 128 * 128 * 7168)
V3_TABLE = 129_280 * 7168 * 2  # the embedding in bf16 (the head is as large, and untied)

# Llama-3-70B: 80 layers, 8 KV heads of 128, bf16.
LLAMA_KV_PER_TOKEN = 80 * 8 * 128 * 2 * 2


def rows(name):
    """{what: (unit, values)} of a worked table."""
    columns = chapter.worked_deployments()[name]
    return {what: (unit, tuple(values)) for what, unit, *values in chapter.memory_rows(columns, S)}


def test_a_snapshot_rollback_keeps_a_whole_state_per_draft_position():
    table = rows("qwen")
    assert QWEN_LINEAR * QWEN_STATE == 30 * 1_114_112
    assert table["per sequence: linear-attention state"][1] == pytest.approx([QWEN_LINEAR * QWEN_STATE / 1e6] * 2)
    # vLLM keeps one state page more per drafted token: 8 of them at gamma = 8, none with no draft
    assert table["rollback states for the draft, per sequence and linear layer"] == ("states", (0.0, 8.0))
    assert table["per sequence: rollback states for the draft"][1] == pytest.approx(
        [0.0, 8 * QWEN_LINEAR * QWEN_STATE / 1e6])
    # 2 gamma cache slots: the drafted positions and the drafter's lookahead
    assert table["cache slots for the draft, per sequence"][1] == (0.0, 16.0)
    assert table["per sequence: KV cache, with the draft's slots"][1] == pytest.approx(
        [QWEN_KV_PER_TOKEN * S / 1e6, QWEN_KV_PER_TOKEN * (S + 16) / 1e6])
    assert table["per sequence: the drafter's cache"][1] == pytest.approx(
        [QWEN_MTP_CACHE * S / 1e6, QWEN_MTP_CACHE * (S + 16) / 1e6])
    assert table["drafter weights"][1] == pytest.approx([QWEN_MTP_WEIGHTS / 1e9] * 2)


def test_the_largest_batch_is_what_the_usable_memory_less_the_weights_holds():
    table = rows("qwen")
    weights = capacity.weight_bytes("Qwen3.6-35B-A3B") + QWEN_MTP_WEIGHTS
    for gamma, slots, states, fit in zip((0, 8), (0, 16), (0, 8), table["largest batch the group holds"][1]):
        per_sequence = ((QWEN_KV_PER_TOKEN + QWEN_MTP_CACHE) * (S + slots)
                        + QWEN_LINEAR * QWEN_STATE * (1 + states))
        assert fit == math.floor((USABLE * B200 - weights) / per_sequence), gamma
    assert table["largest batch the group holds"][1][1] < table["largest batch the group holds"][1][0]
    assert "target weights, held whole" not in table  # nothing is held whole on one GPU: the row is left out


def test_the_latent_is_whole_under_plain_tensor_parallelism_and_split_with_data_parallel_attention():
    table = rows("deepseek")
    slots = 2 * chapter.WORKED_GAMMA + 2  # SGLang: twice the verify's gamma + 1
    assert table["cache slots for the draft, per sequence"][1] == (slots, slots)
    plain, split = table["per sequence: KV cache, with the draft's slots"][1]
    assert plain == pytest.approx(V3_LATENT * (S + slots) / 1e6)
    assert split == pytest.approx(V3_LATENT * (S + slots) / 8 / 1e6)
    # SGLang holds the attention projections (fp8) and the embedding whole under data-parallel attention, its
    # output head split over the group
    whole = V3_ATTENTION * 1 + V3_TABLE
    assert table["target weights, held whole"][1] == pytest.approx([0.0, whole / 1e9])
    total = capacity.weight_bytes("DeepSeek-V3")
    assert table["target weights, split"][1] == pytest.approx([total / 8 / 1e9, (total - whole) / 8 / 1e9])
    assert table["usable memory of one GPU"][1] == pytest.approx([USABLE * H200 / 1e9] * 2)
    fit_plain, fit_split = table["largest batch the group holds"][1]
    assert fit_split > 5 * fit_plain


def test_the_engines_hold_different_draft_slots():
    table = rows("llama")
    g = chapter.WORKED_GAMMA
    slots = (2 * g, 2 * g + 2, 2 * g - 1)  # vLLM, SGLang, TensorRT-LLM
    assert table["cache slots for the draft, per sequence"][1] == tuple(float(s) for s in slots)
    assert table["per sequence: KV cache, with the draft's slots"][1] == pytest.approx(
        [LLAMA_KV_PER_TOKEN / 4 * (S + s) / 1e6 for s in slots])  # 8 KV heads over 4 GPUs: two each
    assert "per sequence: linear-attention state" not in table  # zero everywhere: left out


def test_the_memory_table_shows_each_row_in_its_unit():
    table = chapter.worked_memory_table("qwen")
    assert table.columns == ("what", "MTP loaded, no draft", "drafting 8 tokens")
    shown = {row[0]: row[1:] for row in table.rows}
    assert shown["per sequence: rollback states for the draft (MB)"] == (
        "0.0", f"{8 * QWEN_LINEAR * QWEN_STATE / 1e6:,.1f}")
    assert "Qwen3.6-35B-A3B on one B200" in table.caption and "10%" in table.caption


def test_the_replication_table_is_the_library_s_with_its_engines():
    table = chapter.replication_table()
    assert table.columns == ("what", "vLLM", "SGLang", "TensorRT-LLM")
    assert [row[0] for row in table.rows] == [row[0].replace("gamma", "\u03b3") for row in capacity.REPLICATION]
    assert not any("gamma" in cell for row in table.rows for cell in row)
    slots = dict((row[0], row[1:]) for row in table.rows)["cache slots for a draft of \u03b3"]
    assert [s.split(":")[0].split(" (")[0] for s in slots] == ["2 \u03b3", "2 \u03b3 + 2", "2 \u03b3 - 1"]
    assert set(capacity.REPLICATION_SOURCES) == set(common.ENGINE_NAMES)


def test_the_capacity_table_shows_a_group_that_does_not_exist_as_none():
    table = chapter.capacity_table(models=("DeepSeek-V4-Flash", "Llama-3-70B"), chips=("B200",))
    assert table.columns[-2:] == ("B200s for 30,000, plain TP", "B200s for 30,000, DP attention")
    flash, llama = table.rows
    # plain TP: every GPU holds the compressed caches of all 30,000 sequences (560 GB) against 162 GB; eight
    # B200s with data-parallel attention hold 8 x 162 GB against the 154 GB of weights and 560 GB of caches
    assert flash[-2:] == ("none", "8")
    # Llama's 8 KV heads: at least an eighth of 30,000 x 80 x 327,680 x 4,096 bytes (5 TB) on every GPU
    assert llama[-2] == "none" and 30_000 * LLAMA_KV_PER_TOKEN * S / 8 > USABLE * B200
