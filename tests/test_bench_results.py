"""The benchmark-result reader: each format read into records whose numbers are
the files' own, and bad input refused with one line naming the file and field.

Expected values are computed here from the example files' own fields (e.g.
total_output_tokens / completed), never taken from the reader's output.
"""
import json
import math
from pathlib import Path

import pytest

import speclib
from speclib.evidence.bench_results import FORMATS, BenchRecord, read_results

DATA = Path(__file__).parent / "data" / "bench"
SHIPPED = Path(speclib.__file__).parent / "data" / "decode-benchmarks"

VLLM_REAL = DATA / "vllm_llama8b_h100_c8_excerpt.json"
VLLM_SPEC = DATA / "vllm_spec_decode.json"
SGLANG = DATA / "sglang_eagle3.jsonl"
SGLANG_REAL_OLD = DATA / "sglang_h200_llama70b_online.jsonl"


def _json(path):
    return json.loads(path.read_text())


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- reading ---------------------------------------------------------------

def test_real_vllm_result_is_read_with_its_own_numbers():
    raw = _json(VLLM_REAL)
    (rec,) = read_results(VLLM_REAL)
    assert isinstance(rec, BenchRecord)
    assert rec.format == "vllm" and rec.source == VLLM_REAL.name
    assert rec.concurrency == raw["max_concurrency"] == 8
    # the per-request lists and the totals agree in this file; both give the mean
    assert rec.input_len == pytest.approx(raw["total_input_tokens"] / raw["completed"])
    assert rec.input_len == pytest.approx(sum(raw["input_lens"]) / len(raw["input_lens"]))
    assert rec.output_len == pytest.approx(raw["total_output_tokens"] / raw["completed"])
    assert rec.tpot_ms == raw["mean_tpot_ms"]
    assert rec.ttft_ms == raw["mean_ttft_ms"]
    assert rec.output_throughput == raw["output_throughput"]
    assert rec.output_throughput == pytest.approx(raw["total_output_tokens"] / raw["duration"])
    assert rec.model == raw["model_id"]
    assert rec.engine == "vLLM"  # backend "openai": vLLM's own OpenAI-compatible server
    assert (rec.gamma, rec.accept_length, rec.tp) == (None, None, None)


def test_real_vllm_result_takes_user_labels():
    (rec,) = read_results(VLLM_REAL, gamma=0, tp=1)
    assert (rec.gamma, rec.tp) == (0, 1)


def test_vllm_speculative_fields():
    raw = _json(VLLM_SPEC)
    (rec,) = read_results(VLLM_SPEC)
    assert rec.gamma == raw["spec_decode_draft_tokens"] // raw["spec_decode_num_drafts"] == 3
    assert rec.accept_length == raw["spec_decode_acceptance_length"]
    assert rec.accept_length == pytest.approx(1 + raw["spec_decode_accepted_tokens"] / raw["spec_decode_num_drafts"])
    assert rec.tp == int(raw["tp"])  # --metadata tp=2 is written as a string
    assert rec.concurrency == raw["max_concurrency"]
    assert rec.input_len == raw["total_input_tokens"] / raw["completed"]
    assert rec.output_len == raw["total_output_tokens"] / raw["completed"]


def test_vllm_append_result_file_holds_one_run_per_line(tmp_path):
    first, second = _json(VLLM_SPEC), dict(_json(VLLM_SPEC), max_concurrency=None, mean_tpot_ms=20.0)
    path = tmp_path / "appended.json"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second))
    a, b = read_results(path)
    assert (a.concurrency, b.concurrency) == (16, None)
    assert (a.tpot_ms, b.tpot_ms) == (11.5, 20.0)


def test_old_vllm_result_without_max_concurrency_is_uncapped(tmp_path):
    raw = _json(VLLM_REAL)
    del raw["max_concurrency"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(raw))
    (rec,) = read_results(path)
    assert rec.concurrency is None


def test_sglang_jsonl_two_runs():
    raw = _lines(SGLANG)
    recs = read_results(SGLANG)
    assert len(recs) == len(raw) == 2
    for rec, r in zip(recs, raw):
        assert rec.format == "sglang" and rec.engine == "SGLang"
        assert rec.concurrency == r["max_concurrency"]
        assert rec.input_len == r["total_input_tokens"] / r["completed"]
        assert rec.output_len == r["total_output_tokens"] / r["completed"]
        assert rec.tpot_ms == r["mean_tpot_ms"] and rec.ttft_ms == r["mean_ttft_ms"]
        assert rec.output_throughput == r["output_throughput"]
        assert rec.accept_length == r["accept_length"]
        assert rec.gamma == r["server_info"]["speculative_num_steps"]
        assert rec.tp == r["server_info"]["tp_size"]
        assert rec.model == r["server_info"]["model_path"]
    assert recs[1].concurrency is None  # the request-rate run had no cap


def test_real_old_sglang_file_is_refused_for_its_missing_tpot():
    """A published SGLang file from a version that wrote no mean TPOT."""
    with pytest.raises(ValueError) as err:
        read_results(SGLANG_REAL_OLD)
    msg = str(err.value)
    assert SGLANG_REAL_OLD.name in msg and "line 1" in msg and "mean_tpot_ms" in msg
    assert "\n" not in msg


def test_real_old_sglang_file_lines_are_otherwise_readable(tmp_path):
    """Given a TPOT, the rest of each published line reads as it stands (its
    request_rate may be Infinity, max_concurrency null)."""
    raw = _lines(SGLANG_REAL_OLD)
    path = tmp_path / "with_tpot.jsonl"
    path.write_text("\n".join(json.dumps(dict(r, mean_tpot_ms=r["median_itl_ms"], mean_ttft_ms=r["median_ttft_ms"]))
                              for r in raw))
    recs = read_results(path)
    assert len(recs) == len(raw)
    for rec, r in zip(recs, raw):
        assert rec.concurrency is None
        assert rec.output_len == r["total_output_tokens"] / r["completed"]
        assert rec.output_throughput == r["output_throughput"]


@pytest.mark.parametrize("workload, lengths", [("1k1k-70b", (1024, 1024)), ("1k8k-70b", (1024, 8192))])
def test_shipped_inferencemax_file(workload, lengths):
    path = SHIPPED / workload / "H200" / "FP8.json"
    raw = _json(path)
    recs = read_results(path)
    assert len(recs) == len(raw)
    I, O = lengths
    for rec, r in zip(recs, raw):
        assert rec.format == "inferencemax"
        assert (rec.input_len, rec.output_len) == (I, O)
        assert rec.concurrency == r["Conc"] and rec.tp == r["TP"]
        assert rec.tpot_ms == r["TPOT (ms)"] and rec.ttft_ms == r["TTFT (ms)"]
        # TPUT per GPU counts input and output tokens
        assert rec.output_throughput == pytest.approx(r["TPUT per GPU"] * r["TP"] * O / (I + O))
        assert rec.engine == {"VLLM": "vLLM", "TRT": "TRT"}[r["Framework"].upper()]
        assert (rec.gamma, rec.accept_length, rec.model) == (None, None, None)


def test_every_shipped_inferencemax_file_reads():
    files = sorted(SHIPPED.glob("*/*/*.json"))
    assert files
    for path in files:
        assert len(read_results(path)) == len(_json(path))


def test_explicit_format_and_records_are_frozen():
    (rec,) = read_results(VLLM_SPEC, format="vllm")
    with pytest.raises(AttributeError):
        rec.tpot_ms = 1.0
    assert FORMATS == ("vllm", "sglang", "inferencemax")


# --- refusals --------------------------------------------------------------

def _refused(path, field, **kw):
    with pytest.raises(ValueError) as err:
        read_results(path, **kw)
    msg = str(err.value)
    assert Path(path).name in msg, msg
    assert field in msg, msg
    assert "\n" not in msg, msg
    return msg


def _write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


@pytest.mark.parametrize("field", ["completed", "total_input_tokens", "total_output_tokens", "mean_tpot_ms",
                                   "mean_ttft_ms", "output_throughput"])
def test_missing_field(tmp_path, field):
    raw = _json(VLLM_SPEC)
    del raw[field]
    msg = _refused(_write(tmp_path, "missing.json", raw), field)
    assert "missing" in msg


def test_missing_inferencemax_field(tmp_path):
    raw = _json(SHIPPED / "1k1k-70b" / "H200" / "FP8.json")
    del raw[1]["TPOT (ms)"]
    workload = tmp_path / "1k1k-70b" / "H200"
    workload.mkdir(parents=True)
    msg = _refused(_write(workload, "FP8.json", raw), "TPOT (ms)")
    assert "record 2" in msg


def test_inferencemax_without_a_workload_needs_lengths(tmp_path):
    raw = _json(SHIPPED / "1k1k-70b" / "H200" / "FP8.json")
    _refused(_write(tmp_path, "loose.json", raw), "ISL")
    recs = read_results(_write(tmp_path, "labelled.json", [dict(r, ISL=2048, OSL=512) for r in raw]))
    assert (recs[0].input_len, recs[0].output_len) == (2048, 512)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity(tmp_path, value):
    raw = _json(VLLM_SPEC)
    raw["mean_tpot_ms"] = value
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(raw))  # Python writes NaN / Infinity, as the tools do
    _refused(path, "mean_tpot_ms")


@pytest.mark.parametrize("value", ["12.5", True, [12.5], {"ms": 12.5}])
def test_non_numeric(tmp_path, value):
    raw = _json(VLLM_SPEC)
    raw["mean_tpot_ms"] = value
    _refused(_write(tmp_path, "text.json", raw), "mean_tpot_ms")


@pytest.mark.parametrize("field", ["mean_tpot_ms", "mean_ttft_ms", "output_throughput", "total_input_tokens",
                                   "max_concurrency"])
def test_negative(tmp_path, field):
    raw = _json(VLLM_SPEC)
    raw[field] = -1
    _refused(_write(tmp_path, "negative.json", raw), field)


def test_completed_zero(tmp_path):
    raw = _json(VLLM_SPEC)
    raw["completed"] = 0
    msg = _refused(_write(tmp_path, "zero.json", raw), "completed")
    assert "[1, inf)" in msg


def test_empty_file(tmp_path):
    for text in ("", "  \n\n"):
        path = tmp_path / "empty.json"
        path.write_text(text)
        assert "empty" in _refused(path, "empty")
    assert "empty" in _refused(_write(tmp_path, "empty_list.json", []), "empty")


@pytest.mark.parametrize("text", ['{"completed": 10,', "not json at all", '[{"Conc": 4}', '{"a": 1}\n{"b": '])
def test_bad_json(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    _refused(path, "not valid JSON")


def test_bad_json_line_is_named(tmp_path):
    lines = SGLANG.read_text().splitlines()
    path = tmp_path / "cut.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][:40] + "\n")
    assert "line 2" in _refused(path, "not valid JSON")


def test_unknown_format():
    msg = _refused(VLLM_SPEC, "format", format="trtllm")
    assert "'vllm', 'sglang', 'inferencemax'" in msg


def test_format_contradicting_the_content():
    _refused(VLLM_SPEC, "format", format="sglang")


def test_undetectable_content_asks_for_a_format(tmp_path):
    raw = {k: v for k, v in _json(VLLM_SPEC).items() if k not in ("model_id", "tokenizer_id", "endpoint_type")}
    raw = {k: v for k, v in raw.items() if not k.startswith("spec_decode")}
    path = _write(tmp_path, "bare.json", raw)
    _refused(path, "format=")
    (rec,) = read_results(path, format="vllm")
    assert rec.output_len == raw["total_output_tokens"] / raw["completed"]


def test_mixed_formats(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(_json(VLLM_SPEC)) + "\n" + SGLANG.read_text().splitlines()[0] + "\n")
    assert "line 2" in _refused(path, "mixes formats")


def test_run_that_is_not_an_object(tmp_path):
    _refused(_write(tmp_path, "numbers.json", [1, 2]), "JSON object")


def test_missing_file(tmp_path):
    _refused(tmp_path / "nowhere.json", "cannot read")


@pytest.mark.parametrize("kw, field", [({"gamma": -1}, "gamma"), ({"gamma": 2.5}, "gamma"), ({"tp": 0}, "tp"),
                                       ({"tp": True}, "tp")])
def test_bad_labels(kw, field):
    _refused(VLLM_REAL, field, **kw)


def test_label_contradicting_the_file():
    msg = _refused(VLLM_SPEC, "gamma", gamma=5)
    assert "spec_decode_draft_tokens" in msg
    _refused(SGLANG, "server_info.tp_size", tp=8)
    assert read_results(VLLM_SPEC, gamma=3, tp=2)[0].gamma == 3  # agreeing labels are fine


def test_accept_length_outside_its_range(tmp_path):
    raw = _json(VLLM_SPEC)
    raw["spec_decode_acceptance_length"] = 0.5
    _refused(_write(tmp_path, "low.json", raw), "spec_decode_acceptance_length")
    raw["spec_decode_acceptance_length"] = 4.5  # more than gamma + 1 = 4 tokens per step
    assert "gamma + 1" in _refused(_write(tmp_path, "high.json", raw), "spec_decode_acceptance_length")


def test_no_output_tokens(tmp_path):
    raw = _json(VLLM_SPEC)
    raw["total_output_tokens"] = 0
    _refused(_write(tmp_path, "silent.json", raw), "total_output_tokens")


def test_inferencemax_numbers_are_finite():
    for path in sorted(SHIPPED.glob("*/*/*.json")):
        for rec in read_results(path):
            assert all(math.isfinite(v) for v in (rec.tpot_ms, rec.ttft_ms, rec.output_throughput))
