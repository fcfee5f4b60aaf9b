"""What an engine log states of its deployment (speclib.evidence.log_deployment): the SGLang log
posted with DP attention prices as the server that wrote it, its layout read from the rank labels
by hand here; what a log cannot state is said, and a log of another layout is read as that layout
or refused."""
from pathlib import Path

import pytest

import speclib
from speclib.evidence.log_deployment import log_deployment

SAMPLES = Path(speclib.__file__).parent / "data" / "samples"
DP_LOG = SAMPLES / "public" / "sglang-pr6081-deepseek-mtp-dp-attention.log"
LINE = ("[2025-05-31 18:31:21{ranks}] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, "
        "accept len: 2.90, cuda graph: True, gen throughput (token/s): 171.01, #queue-req: 0\n")


def write(tmp_path, *ranks):
    path = tmp_path / "sglang.log"
    path.write_text("".join(LINE.format(ranks=r) for r in ranks), encoding="utf-8")
    return path


def test_the_posted_dp_attention_log_prices_as_its_own_server():
    # the five lines read: DP0 TP0, DP6 TP6, DP5 TP5, DP7 TP7, DP2 TP2; eight requests each
    stated = log_deployment(DP_LOG)
    assert (stated.engine, stated.tp, stated.dp_attention, stated.ep) == ("SGLang", 8, True, None)
    assert stated.ranks == ((0, 0, None), (6, 6, None), (5, 5, None), (7, 7, None), (2, 2, None))
    assert stated.running == (8,) * 5
    assert any("expert parallelism" in u for u in stated.unstated) and "the chip" in stated.unstated
    dep = stated.deployment("deepseek-r1", "H200", step_time="calibrated", c_draft=0.05)
    assert dep == speclib.Deployment("deepseek-r1", "H200", tp=8, engine="SGLang", dp_attention=True,
                                     step_time="calibrated", c_draft=0.05)
    # the plain TP8 deployment the chapter used to price holds fewer sequences: its MLA cache is whole on every GPU
    assert dep.max_batch(2048) > speclib.Deployment("deepseek-r1", "H200", tp=8).max_batch(2048)


def test_an_option_that_contradicts_the_log_names_the_parameter():
    with pytest.raises(ValueError, match=r"^tp: the log states 8"):
        log_deployment(DP_LOG).deployment("deepseek-r1", "H200", tp=4)
    with pytest.raises(ValueError, match=r"^engine: the log states 'SGLang'"):
        log_deployment(DP_LOG).deployment("deepseek-r1", "H200", engine="vLLM")


def test_attention_groups_wider_than_one_gpu_and_expert_ranks(tmp_path):
    # DP attention over 8 GPUs in groups of two: DP rank d logs from its first GPU, TP rank 2d
    stated = log_deployment(write(tmp_path, " DP0 TP0 EP0", " DP1 TP2 EP2", " DP3 TP6 EP6"))
    assert (stated.tp, stated.dp_attention, stated.ep) == (8, True, 8)  # EP 6 seen: 8, the divisor of 8 above it
    assert "each DP rank on 2 GPUs" in " ".join(stated.stated)


@pytest.mark.parametrize("ranks, message", [
    ((" DP0 TP0", " DP1 TP0"), "plain data parallelism"),      # replicas number their TP ranks from 0
    ((" DP0 TP0", " DP0 TP0"), "only DP rank 0"),               # one rank cannot tell the two apart
])
def test_replicas_and_undecidable_logs_are_refused(tmp_path, ranks, message):
    with pytest.raises(ValueError, match=message):
        log_deployment(write(tmp_path, *ranks))


def test_a_log_that_states_no_width_says_so():
    stated = log_deployment(SAMPLES / "sglang-decode.log")  # TP0 only: plain tensor parallelism logs rank 0 alone
    assert stated.tp is None and not stated.dp_attention
    assert any("tensor-parallel width" in u for u in stated.unstated)
    assert stated.deployment("qwen3-30b-a3b", "H200", tp=2).tp == 2  # the width is the caller's to give
    vllm = log_deployment(SAMPLES / "public" / "vllm-club3090-105-qwen3.6-27b-mtp-k6.log")
    assert (vllm.engine, vllm.tp, vllm.dp_attention) == ("vLLM", None, False)


def test_a_file_that_is_no_engine_log_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"notes.txt: neither an SGLang scheduler log"):
        log_deployment(path)
