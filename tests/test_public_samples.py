"""Real engine output from public GitHub threads (speclib/data/samples/public/), read by the
readers a deployment uses. Every expected number here is the quoted lines' own numbers, typed in
by hand from the files (and their sources), and combined in the test by arithmetic, not by the
code under test; a test of a file also parses the file with plain string splitting, so a reader
that misread a field, skipped a line or weighted wrongly would fail."""
from __future__ import annotations

import json
import math
import re
from importlib import resources
from pathlib import Path

import pytest

from speclib.evidence import engine_metrics as em
from speclib.tools import cli

PUBLIC = Path(str(resources.files("speclib").joinpath("data", "samples", "public")))

#: The vLLM logs' SpecDecoding lines, typed from the files: (Accepted, Drafted, per-position rates, printed mean).
VLLM = {
    "vllm-ascend-13640-deepseek-v4-flash-dspark-k7.log": [
        (44, 161, [0.739, 0.478, 0.261, 0.174, 0.130, 0.087, 0.043], 2.91),
        (106, 385, [0.691, 0.418, 0.382, 0.182, 0.127, 0.073, 0.055], 2.93)],
    "vllm-club3090-105-qwen3.6-27b-mtp-k6.log": [
        (987, 1584, [0.917, 0.837, 0.648, 0.538, 0.451, 0.348], 4.74),
        (983, 1566, [0.912, 0.782, 0.667, 0.556, 0.471, 0.379], 4.77)],
    "vllm-qwen36-27b-3090-1-mtp-k5.log": [
        (513, 620, [0.960, 0.863, 0.823, 0.782, 0.710], 5.14),
        (925, 1175, [0.945, 0.877, 0.800, 0.694, 0.621], 4.94)],
    "vllm-aeon7-6-qwen3.6-27b-dflash-k15.log": [
        (89, 975, [0.600, 0.385, 0.215, 0.108, 0.062] + [0.0] * 10, 2.37)],
    "vllm-pr24127-opt125m-ngram-k5.log": [
        (262, 295, [0.983, 0.949, 0.915, 0.881, 0.712], 5.44)],
}
#: The SGLang logs' Decode lines, typed from the files: (#running-req, accept len).
SGLANG = {
    "sglang-11948-qwen3-8b-eagle3-steps3.log": [(1, 2.17), (1, 1.95), (1, 1.80), (1, 2.05), (1, 1.80)],
    "sglang-pr6081-deepseek-mtp-dp-attention.log": [(8, 2.90), (8, 2.86), (8, 2.94), (8, 2.65), (8, 2.58)],
}
SWEEP = PUBLIC / "vllm-pr24243-minicpm3-eagle3-sweep.json"


def test_every_public_file_is_tested_and_has_its_source_beside_it():
    data = sorted(p.name for p in PUBLIC.iterdir() if p.suffix in (".log", ".json"))
    assert data == sorted([*VLLM, *SGLANG, SWEEP.name])
    for name in data:
        source = (PUBLIC / f"{name}.source.md").read_text(encoding="utf-8")
        assert re.search(r"- URL: https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+[ \n]", source), name
        assert "Posted:" in source and "What is quoted:" in source, name


def _plain_vllm_lines(path):
    """The file's SpecDecoding lines by string splitting: (accepted, drafted, rates, printed mean)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if "SpecDecoding metrics:" not in line:
            continue
        fields = dict(part.split(": ", 1) for part in line.split("SpecDecoding metrics: ", 1)[1].split(", ")
                      if ": " in part)
        rates_text = line.split("Per-position acceptance rate: ", 1)[1].split(", Avg", 1)[0]
        rows.append((int(fields["Accepted"].split()[0]), int(fields["Drafted"].split()[0]),
                     [float(x) for x in rates_text.split(", ")], float(fields["Mean acceptance length"])))
    return rows


@pytest.mark.parametrize("name", sorted(VLLM))
def test_the_typed_lines_are_the_files_lines(name):
    assert _plain_vllm_lines(PUBLIC / name) == VLLM[name]


@pytest.mark.parametrize("name", sorted(VLLM))
def test_each_printed_mean_is_its_own_counts(name):
    """The source's own arithmetic: vLLM printed 1 + accepted / drafts to two decimals, and the
    drafts are Drafted over the positions (so every draft was full length)."""
    for accepted, drafted, rates, mean in VLLM[name]:
        k = len(rates)
        assert drafted % k == 0
        assert abs(1 + accepted / (drafted / k) - mean) <= 0.005 + 1e-9
        assert abs(sum(rates) * drafted / k - accepted) <= 0.0005 * k * drafted / k + 1e-9


@pytest.mark.parametrize("name", sorted(VLLM))
def test_the_vllm_reader_weighs_the_public_lines_by_their_drafts(name):
    lines = VLLM[name]
    k = len(lines[0][2])
    drafts = [drafted / k for _, drafted, _, _ in lines]
    got = em.read_engine_metrics(PUBLIC / name)
    assert got.format == "vllm-log" and got.measured and got.gamma == k and got.lines == len(lines)
    assert got.drafts == pytest.approx(sum(drafts), abs=1e-9)
    assert got.accepted_tokens == sum(accepted for accepted, *_ in lines)
    assert got.accept_length == pytest.approx(1 + sum(a for a, *_ in lines) / sum(drafts), rel=1e-12)
    for j in range(k):
        expected = sum(n * rates[j] for n, (_, _, rates, _) in zip(drafts, lines)) / sum(drafts)
        assert got.survival.values[j] == pytest.approx(expected, abs=1e-12)
    assert len(got.notes) == 1  # no line's printed mean disagrees with its counts


def test_hand_counts_of_two_public_runs():
    """Two runs worked by hand: DeepSeek-V4-Flash with DSpark (23 + 55 drafts of 7) and the
    pre-merge n-gram line of vLLM PR #24127 (59 drafts of 5)."""
    dspark = em.read_engine_metrics(PUBLIC / "vllm-ascend-13640-deepseek-v4-flash-dspark-k7.log")
    assert dspark.drafts == 78 and dspark.accept_length == pytest.approx(1 + 150 / 78)
    assert dspark.survival.values[0] == pytest.approx((23 * 0.739 + 55 * 0.691) / 78)
    ngram = em.read_engine_metrics(PUBLIC / "vllm-pr24127-opt125m-ngram-k5.log")
    assert ngram.drafts == 59 and ngram.accept_length == pytest.approx(1 + 262 / 59)
    assert list(ngram.survival.values) == pytest.approx([0.983, 0.949, 0.915, 0.881, 0.712], abs=1e-12)


def test_an_older_line_without_per_position_rates_is_refused_by_name(tmp_path):
    """vLLM PR #15902's line (https://github.com/vllm-project/vllm/pull/15902, its description's
    "AFTER" example) gives no per-position rates, so no drafts: refused, naming the missing field."""
    log = tmp_path / "old.log"
    log.write_text("SpecDecoding metrics: Draft acceptance rate: 100.0%, Accepted: 66 tokens, Drafted: 66 tokens\n")
    with pytest.raises(ValueError, match=r"old\.log: line 1: .*without Per-position acceptance rate.*PR #16665"):
        em.read_engine_metrics(log)


@pytest.mark.parametrize("name", sorted(SGLANG))
def test_the_sglang_reader_weighs_the_public_lines_by_running_requests(name):
    lines = SGLANG[name]
    text = PUBLIC.joinpath(name).read_text(encoding="utf-8")
    plain = [(int(line.split("#running-req: ")[1].split(",")[0]), float(line.split("accept len: ")[1].split(",")[0]))
             for line in text.splitlines() if "Decode batch" in line]
    assert plain == lines
    got = em.read_engine_metrics(PUBLIC / name, gamma=3)
    weighted = sum(n * length for n, length in lines) / sum(n for n, _ in lines)
    assert got.accept_length == pytest.approx(weighted, rel=1e-12) and got.lines == len(lines)
    assert not got.measured and got.gamma == 3


def test_sglang_eagle3_run_accept_len_counts_the_bonus_token():
    """Issue #11948 ran 3 steps, 4 draft tokens; SGLang 0.5.3 printed accept rate = accept len / 4,
    which is the convention the reader assumes (accept len counts the bonus token)."""
    text = PUBLIC.joinpath("sglang-11948-qwen3-8b-eagle3-steps3.log").read_text(encoding="utf-8")
    pairs = [(float(m[1]), float(m[2])) for m in re.finditer(r"accept len: ([\d.]+), accept rate: ([\d.]+)", text)]
    assert len(pairs) == 5
    for length, rate in pairs:
        assert abs(length / 4 - rate) <= 0.005 + 1e-9
    assert em.read_engine_metrics(PUBLIC / "sglang-11948-qwen3-8b-eagle3-steps3.log",
                                  gamma=3).accept_length == pytest.approx(9.77 / 5)


def test_sglang_mtp_lengths_rule_out_a_single_draft_step():
    """PR #6081's comment does not state its draft steps; its lengths (up to 2.94) need two or more."""
    path = PUBLIC / "sglang-pr6081-deepseek-mtp-dp-attention.log"
    with pytest.raises(ValueError, match=r"2\.786 must lie in \[1, 2\] for 1 drafted tokens"):
        em.read_engine_metrics(path, gamma=1)
    assert em.read_engine_metrics(path, gamma=2).accept_length == pytest.approx(13.93 / 5)


def test_speclib_acceptance_prints_a_public_log(capsys):
    code = cli.main(["acceptance", str(PUBLIC / "vllm-club3090-105-qwen3.6-27b-mtp-k6.log")])
    out = capsys.readouterr().out
    assert code == 0
    assert f"{1 + 1970 / 525:.4f}" in out  # 987 + 983 accepted over 264 + 261 drafts
    assert f"{(264 * 0.917 + 261 * 0.912) / 525:.4f}" in out
    code = cli.main(["acceptance", str(PUBLIC / "sglang-11948-qwen3-8b-eagle3-steps3.log"), "--gamma", "3"])
    assert code == 0 and "1.9540" in capsys.readouterr().out


def test_the_public_sweep_is_consistent_with_itself():
    """The MiniCPM3 EAGLE-3 measurement (vLLM PR #24243): each stated speedup and mean length is
    its block's own numbers; the block cut off in the stored copy carries nulls, not numbers."""
    runs = json.loads(SWEEP.read_text(encoding="utf-8"))["quoted"]
    assert [r["concurrency"] for r in runs] == [10, 1, 5]
    for r in runs:
        assert round(1 + r["num_accepted_tokens"] / r["num_drafts"], 2) == r["mean_acceptance_length"]
        assert r["num_draft_tokens"] == 6 * r["num_drafts"]  # six draft tokens per draft, exactly
        if r["speedup"] is None:
            assert r["baseline_seconds"] is None and r["speculative_seconds"] is None and "incomplete" in r
            continue
        assert round(r["baseline_seconds"] / r["speculative_seconds"], 2) == r["speedup"]
        # five printed rates leave part of accepted / drafts to an unprinted sixth position
        gap = r["num_accepted_tokens"] / r["num_drafts"] - sum(r["acceptance_rate_at_token"])
        assert 0.05 < gap < 0.10 and not math.isclose(gap, 0.0)
    assert [r["speedup"] for r in runs[:2]] == [1.62, 1.71]
