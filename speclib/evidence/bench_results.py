"""Serving-benchmark result files read into one kind of record, so a step-time
model can be fitted to the user's own engine.

Three formats are read (the field names are those the tools write; the
source read for them is cited beside each):

* ``vllm``: ``vllm bench serve --save-result`` (and the older
  ``benchmarks/benchmark_serving.py --save-result``), one JSON object per
  file, or one per line with ``--append-result``. Read from
  vllm-project/vllm ``vllm/benchmarks/serve.py`` @ def9ce85ba1079af970a58ed3d42dd861ae35d58
  (``result_json``: ``date``, ``endpoint_type``, ``backend``, ``label``,
  ``model_id``, ``tokenizer_id``, ``num_prompts``, the ``--metadata KEY=VALUE``
  pairs as strings, ``request_rate`` (``"inf"`` when unset), ``burstiness``,
  ``max_concurrency`` (null when unset); then ``duration``, ``completed``,
  ``failed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``request_goodput``, ``output_throughput``,
  ``total_token_throughput``, ``max_output_tokens_per_s``,
  ``max_concurrent_requests``, ``mean_/median_/std_/pNN_`` ``ttft_ms``,
  ``tpot_ms``, ``itl_ms`` (``e2el_ms`` on request), and with
  ``--save-detailed`` the per-request ``input_lens``, ``output_lens``,
  ``ttfts``, ``itls``, ``generated_texts``, ``errors``); the older script at
  vllm-project/vllm ``benchmarks/benchmark_serving.py`` @ 8668d7c05027b98ac66bd5540955dd2ce3a0f318
  writes the same names without ``max_concurrency`` (its runs had no cap).
  The speculative-decoding fields, read from the fork
  local-inference-lab/vllm ``vllm/benchmarks/serve.py`` @ 12068ee6871c89e5b41222063a5ea0e1bd093b1a
  (the stored upstream copy predates them): ``spec_decode_acceptance_rate``
  (percent), ``spec_decode_acceptance_length`` (1 + accepted / drafts),
  ``spec_decode_num_drafts``, ``spec_decode_draft_tokens``,
  ``spec_decode_accepted_tokens``, ``spec_decode_per_position_acceptance_rates``.
* ``sglang``: ``python -m sglang.bench_serving --output-file`` (JSON lines,
  one run per line). Read from the fork bzhng-development/sglang
  ``python/sglang/bench_serving.py`` @ 4700856a84c9598a49eaf577e6531040f1483b3a
  (``result``: ``tag``, ``backend``, ``dataset_name``, ``request_rate``
  (``Infinity`` when unset), ``max_concurrency``, ``random_input_len``,
  ``random_output_len``, ``server_info`` (the server's ``/get_server_info``:
  its launch arguments such as ``model_path``, ``tp_size``,
  ``speculative_algorithm``, ``speculative_num_steps``,
  ``speculative_eagle_topk``), ``duration``, ``completed``,
  ``total_input_tokens``, ``total_output_tokens``,
  ``total_output_tokens_retokenized``, ``request_throughput``,
  ``input_throughput``, ``output_throughput``, ``total_throughput``,
  ``mean_/median_/std_/p99_`` ``e2e_latency_ms``, ``ttft_ms``, ``tpot_ms``,
  ``itl_ms``, ``concurrency`` (the *achieved* mean number of requests in
  flight, not the cap), ``accept_length`` (the server's average accepted
  length per verify step, bonus token included; null without speculation)).
  Older versions, e.g. sgl-project/sglang ``python/sglang/bench_serving.py``
  @ 50a613687fe1ffc6f1bb630c684a24c428a54a74, wrote only median TTFT and ITL
  and no ``mean_tpot_ms``: such lines are refused (the TPOT is not in them).
* ``inferencemax``: the JSON list shipped in ``speclib/data/decode-benchmarks``
  (``Hardware``, ``Framework``, ``Precision``, ``TP``, ``Conc``,
  ``TTFT (ms)``, ``TPOT (ms)``, ``E2EL (s)``, ``TPUT per GPU``), as
  :func:`speclib.evidence.validation.load_measurements` reads it. The records
  do not state the lengths: they come from ``ISL``/``OSL`` keys if present,
  else from the workload folder the file sits in (``1k1k-70b`` is 1024 in,
  1024 out; ``1k8k`` is 1024 in, 8192 out). ``TPUT per GPU`` counts input
  and output tokens, so the output throughput is
  ``TPUT per GPU * TP * O / (I + O)``.

What each record holds: ``input_len`` and ``output_len`` are the mean tokens
per completed request, from the per-request ``input_lens``/``output_lens``
when the file has them for every completed request, else
``total_*_tokens / completed``; ``tpot_ms`` and ``ttft_ms`` are the means;
``concurrency`` is the configured cap (``max_concurrency``, or InferenceMAX's
``Conc``), None for a request-rate run without one; ``accept_length`` is
tokens per verify step, bonus included (the convention of
:func:`speclib.evidence.engines.alpha_from_accept_length`), so it lies in
``[1, gamma + 1]``; ``gamma`` is the draft length where the file states it
(vLLM: ``spec_decode_draft_tokens / spec_decode_num_drafts`` when that is a
whole number, or a ``num_speculative_tokens`` metadata pair; SGLang: the
server's ``speculative_num_steps`` for a chain draft, ``speculative_eagle_topk``
of 1), ``tp`` likewise (vLLM: a ``tp`` or ``tensor_parallel_size`` metadata
pair; SGLang: ``tp_size``; InferenceMAX: ``TP``); ``engine`` is the serving
engine the tool talked to, named from its ``backend`` (an OpenAI-compatible
endpoint is taken to be the tool's own engine). ``gamma=`` and ``tp=`` label a
file that does not state them; a label that contradicts the file is refused.

Bad input raises a one-line ``ValueError`` naming the file (and the line or
record), the field and what is allowed. The reader writes nothing.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

#: The formats :func:`read_results` reads.
FORMATS = ("vllm", "sglang", "inferencemax")

# Engine names as the rest of speclib spells them (engine-speculation data, validation).
_ENGINE_NAMES = {
    "vllm": "vLLM", "vllm-chat": "vLLM",
    "sglang": "SGLang", "sglang-native": "SGLang", "sglang-oai": "SGLang", "sglang-oai-chat": "SGLang",
    "trt": "TRT", "tensorrt-llm": "TRT",
    "lmdeploy": "LMDeploy", "lmdeploy-chat": "LMDeploy",
    "tgi": "TGI",
}
_TOOL_ENGINE = {"vllm": "vLLM", "sglang": "SGLang"}
# Keys that only one tool writes, used to tell the formats apart.
_INFERENCEMAX_KEYS = ("TPOT (ms)", "Conc", "TPUT per GPU")
_SGLANG_KEYS = ("total_output_tokens_retokenized", "accept_length", "server_info", "dataset_name")
_VLLM_KEYS = ("model_id", "tokenizer_id", "endpoint_type", "spec_decode_acceptance_length")
_WORKLOAD_DIR = re.compile(r"^(\d+)k(\d+)k(?:-|$)")


@dataclass(frozen=True)
class BenchRecord:
    """One benchmark run, whatever tool wrote it (see the module notes)."""

    source: str  # the file's name
    format: str  # "vllm", "sglang" or "inferencemax"
    concurrency: int | None  # the configured cap on requests in flight; None for an uncapped request-rate run
    input_len: float  # mean prompt tokens per completed request
    output_len: float  # mean output tokens per completed request
    tpot_ms: float  # mean time per output token after the first, ms
    output_throughput: float  # output tokens per second, whole deployment
    ttft_ms: float  # mean time to first token, ms
    gamma: int | None  # draft length, where stated
    accept_length: float | None  # tokens per verify step, bonus included, where stated
    tp: int | None  # tensor-parallel degree, where stated
    model: str | None
    engine: str


class _Where:
    """The file (and line or record) a message is about."""

    def __init__(self, path, kind=None, index=None):
        self.path, self.kind, self.index = path, kind, index

    def __str__(self):
        return str(self.path) if self.kind is None else f"{self.path} {self.kind} {self.index}"

    def fail(self, message):
        raise ValueError(f"{self}: {message}")


def _interval(lo, lo_open):
    return f"{'(' if lo_open else '['}{lo:g}, inf)"


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(where, rec, key, fmt, *, lo=0.0, lo_open=False, integer=False, required=True):
    """``rec[key]`` as a float (int if ``integer``) in [lo, inf) or (lo, inf);
    None when absent or null and not ``required``."""
    kind = "an integer" if integer else "a number"
    allowed = f"{kind} in {_interval(lo, lo_open)}"
    value = rec.get(key)
    if value is None:
        if not required:
            return None
        state = "missing" if key not in rec else "null"
        where.fail(f"{key} is {state}; a {fmt} run needs it ({allowed})")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        where.fail(f"{key} must be {allowed}; got {_show(value)}")
    if not math.isfinite(value):
        where.fail(f"{key} must be {allowed}; got {value!r} (NaN and infinities are not measurements)")
    if (value <= lo) if lo_open else (value < lo):
        where.fail(f"{key} must be {allowed}; got {value!r}")
    if integer:
        if value != int(value):
            where.fail(f"{key} must be {allowed}; got {value!r}")
        return int(value)
    return float(value)


def _label(where, rec, key):
    """A ``--metadata KEY=VALUE`` pair (vLLM writes the value as a string): a
    non-negative integer, or None when absent."""
    value = rec.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    where.fail(f"{key} must be a non-negative integer (as --metadata {key}=N writes it); got {_show(value)}")


def _text(where, rec, key):
    value = rec.get(key)
    if value is None or isinstance(value, str):
        return value
    where.fail(f"{key} must be a string or null; got {_show(value)}")


def _engine(where, rec, key, fmt):
    backend = _text(where, rec, key)
    if backend is None:
        return _TOOL_ENGINE.get(fmt, fmt)
    name = backend.strip().lower()
    if name.startswith("openai"):
        return _TOOL_ENGINE.get(fmt, fmt)
    return _ENGINE_NAMES.get(name, backend)


def _mean_len(where, rec, list_key, total_key, completed, fmt):
    total = _number(where, rec, total_key, fmt)
    lens = rec.get(list_key)
    if lens is None:
        return total / completed
    if not isinstance(lens, list):
        where.fail(f"{list_key} must be a list of token counts in [0, inf); got {_show(lens)}")
    for i, n in enumerate(lens):
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
            where.fail(f"{list_key}[{i}] must be a token count in [0, inf); got {_show(n)}")
    # With failed requests the list covers them too; the totals cover only the completed ones.
    return math.fsum(lens) / len(lens) if len(lens) == completed else total / completed


def _merge(where, field, given, stated, how):
    """The user's label and what the file states must agree."""
    if given is not None and stated is not None and given != stated:
        where.fail(f"{field}={given} was given but the file states {stated} ({how})")
    return stated if stated is not None else given


def _check_accept(where, accept_length, gamma, key):
    if accept_length is not None and gamma is not None and accept_length > gamma + 1 + 1e-9:
        where.fail(f"{key} must be in [1, gamma + 1] = [1, {gamma + 1}] for a draft length of {gamma}; "
                   f"got {accept_length!r}")


def _serving(where, rec, fmt, gamma, tp, source):
    """A vLLM or SGLang run."""
    completed = _number(where, rec, "completed", fmt, lo=1, integer=True)
    input_len = _mean_len(where, rec, "input_lens", "total_input_tokens", completed, fmt)
    output_len = _mean_len(where, rec, "output_lens", "total_output_tokens", completed, fmt)
    if output_len <= 0:
        where.fail("total_output_tokens must be a number in (0, inf): a run without output tokens times no "
                   "decoding; got 0")
    if fmt == "sglang" and "mean_tpot_ms" not in rec:
        where.fail("mean_tpot_ms is missing; a sglang run needs it (a number in (0, inf)); older "
                   "sglang.bench_serving versions wrote only median_ttft_ms and median_itl_ms, which do not give it")
    tpot = _number(where, rec, "mean_tpot_ms", fmt, lo_open=True)
    ttft = _number(where, rec, "mean_ttft_ms", fmt)
    throughput = _number(where, rec, "output_throughput", fmt, lo_open=True)
    concurrency = _number(where, rec, "max_concurrency", fmt, lo=1, integer=True, required=False)
    if fmt == "vllm":
        accept_key = "spec_decode_acceptance_length"
        model = _text(where, rec, "model_id")
        how_tp = "metadata tp"
        stated_tp = _label(where, rec, "tp")
        other_tp = _label(where, rec, "tensor_parallel_size")
        if stated_tp is not None and other_tp is not None and stated_tp != other_tp:
            where.fail(f"tp and tensor_parallel_size must agree; got {stated_tp} and {other_tp}")
        stated_tp = other_tp if stated_tp is None else stated_tp
        how_gamma = "metadata num_speculative_tokens"
        stated_gamma = _label(where, rec, "num_speculative_tokens")
        drafts = _number(where, rec, "spec_decode_num_drafts", fmt, integer=True, required=False)
        draft_tokens = _number(where, rec, "spec_decode_draft_tokens", fmt, integer=True, required=False)
        if drafts and draft_tokens is not None and draft_tokens % drafts == 0:
            per_draft = draft_tokens // drafts
            if stated_gamma is not None and stated_gamma != per_draft:
                where.fail(f"num_speculative_tokens must agree with spec_decode_draft_tokens / "
                           f"spec_decode_num_drafts; got {stated_gamma} and {per_draft}")
            stated_gamma, how_gamma = per_draft, "spec_decode_draft_tokens / spec_decode_num_drafts"
    else:
        accept_key = "accept_length"
        info = rec.get("server_info")
        # Named with their parent so a message says which field it means.
        info = {f"server_info.{k}": v for k, v in info.items()} if isinstance(info, dict) else {}
        model = _text(where, info, "server_info.model_path")
        how_tp = "server_info.tp_size"
        stated_tp = _number(where, info, "server_info.tp_size", fmt, lo=1, integer=True, required=False)
        how_gamma = "server_info.speculative_num_steps"
        stated_gamma = None
        chain = info.get("server_info.speculative_eagle_topk") in (None, 1)
        if info.get("server_info.speculative_algorithm") and chain:
            stated_gamma = _number(where, info, "server_info.speculative_num_steps", fmt, lo=1, integer=True,
                                   required=False)
    accept_length = _number(where, rec, accept_key, fmt, lo=1, required=False)
    gamma = _merge(where, "gamma", gamma, stated_gamma, how_gamma)
    tp = _merge(where, "tp", tp, stated_tp, how_tp)
    _check_accept(where, accept_length, gamma, accept_key)
    return BenchRecord(source=source, format=fmt, concurrency=concurrency, input_len=input_len,
                       output_len=output_len, tpot_ms=tpot, output_throughput=throughput, ttft_ms=ttft,
                       gamma=gamma, accept_length=accept_length, tp=tp, model=model,
                       engine=_engine(where, rec, "backend", fmt))


def _inferencemax(where, rec, gamma, tp, source, path):
    fmt = "inferencemax"
    concurrency = _number(where, rec, "Conc", fmt, lo=1, integer=True)
    stated_tp = _number(where, rec, "TP", fmt, lo=1, integer=True)
    tpot = _number(where, rec, "TPOT (ms)", fmt, lo_open=True)
    ttft = _number(where, rec, "TTFT (ms)", fmt)
    per_gpu = _number(where, rec, "TPUT per GPU", fmt, lo_open=True)
    if "ISL" in rec or "OSL" in rec:
        input_len = _number(where, rec, "ISL", fmt, lo_open=True)
        output_len = _number(where, rec, "OSL", fmt, lo_open=True)
    else:
        match = next((m for m in (_WORKLOAD_DIR.match(p.name) for p in Path(path).resolve().parents) if m), None)
        if match is None:
            where.fail("ISL and OSL are missing and no folder above the file names the workload "
                       "('<I>k<O>k', e.g. 1k8k-70b); an inferencemax result needs the lengths")
        input_len, output_len = 1024.0 * int(match.group(1)), 1024.0 * int(match.group(2))
        if input_len <= 0 or output_len <= 0:
            where.fail(f"the workload folder {match.group(0)!r} must give lengths in (0, inf)")
    framework = _text(where, rec, "Framework")
    if framework is None:
        where.fail("Framework is missing; an inferencemax result needs it (a string such as 'VLLM' or 'TRT')")
    tp = _merge(where, "tp", tp, stated_tp, "TP")
    return BenchRecord(source=source, format=fmt, concurrency=concurrency, input_len=input_len,
                       output_len=output_len, tpot_ms=tpot,
                       output_throughput=per_gpu * stated_tp * output_len / (input_len + output_len),
                       ttft_ms=ttft, gamma=gamma, accept_length=None, tp=tp,
                       model=_text(where, rec, "Model"),
                       engine=_ENGINE_NAMES.get(framework.strip().lower(), framework))


def _detect(rec):
    if any(k in rec for k in _INFERENCEMAX_KEYS):
        return "inferencemax"
    if any(k in rec for k in _VLLM_KEYS):
        return "vllm"
    if any(k in rec for k in _SGLANG_KEYS):
        return "sglang"
    return None


def _parse(path, text):
    """The runs in the file as (where, object) pairs: one JSON object, a JSON
    list of them, or one object per line."""
    expected = "a vllm, sglang or inferencemax result (a JSON object, a JSON list, or JSON lines)"
    if not text.strip():
        _Where(path).fail(f"the file is empty; expected {expected}")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as err:
        lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
        try:
            first_ok = len(lines) > 1 and json.loads(lines[0][1]) is not None
        except json.JSONDecodeError:
            first_ok = False
        if not first_ok:
            _Where(path).fail(f"not valid JSON ({err}); expected {expected}")
        items = []
        for i, line in lines:
            try:
                items.append((_Where(path, "line", i), json.loads(line)))
            except json.JSONDecodeError as line_err:
                _Where(path, "line", i).fail(f"not valid JSON ({line_err}); expected one run per line")
        return items
    if isinstance(whole, list):
        if not whole:
            _Where(path).fail(f"the JSON list is empty; expected {expected}")
        return [(_Where(path, "record", i), item) for i, item in enumerate(whole, 1)]
    return [(_Where(path), whole)]


def read_results(path, *, format=None, gamma=None, tp=None) -> tuple:
    """Every run in the benchmark result file at ``path``, as
    :class:`BenchRecord` objects in file order.

    ``format`` is one of :data:`FORMATS`, or None to tell it from the content;
    ``gamma`` (draft length, an integer >= 0) and ``tp`` (an integer >= 1)
    label runs whose file does not state them. Raises ``ValueError`` naming
    the file and the field on bad input (see the module notes).
    """
    if format is not None and format not in FORMATS:
        _Where(path).fail(f"format must be one of {', '.join(map(repr, FORMATS))} or None; got {_show(format)}")
    for name, value, lo in (("gamma", gamma, 0), ("tp", tp, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < lo):
            _Where(path).fail(f"{name} must be an integer in [{lo}, inf) or None; got {_show(value)}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        _Where(path).fail(f"cannot read the file ({type(err).__name__}: {err}); expected a readable UTF-8 text file")
    source = Path(path).name
    records, seen = [], {}
    for where, rec in _parse(path, text):
        if not isinstance(rec, dict):
            where.fail(f"each run must be a JSON object; got {type(rec).__name__}")
        found = _detect(rec)
        if format is not None and found is not None and found != format:
            where.fail(f"format={format!r} was given but the run has {found} fields; "
                       f"pass format={found!r} or format=None")
        fmt = format or found
        if fmt is None:
            where.fail("cannot tell which tool wrote this run (no model_id/tokenizer_id of vllm, no "
                       "dataset_name/total_output_tokens_retokenized of sglang, no 'TPOT (ms)'/'Conc' of "
                       f"inferencemax); pass format= one of {', '.join(map(repr, FORMATS))}")
        seen.setdefault(fmt, str(where))
        if len(seen) > 1:
            first, other = (f"{f} at {w}" for f, w in seen.items())
            where.fail(f"the file mixes formats ({first}, {other}); one file must hold one format")
        if fmt == "inferencemax":
            records.append(_inferencemax(where, rec, gamma, tp, source, path))
        else:
            records.append(_serving(where, rec, fmt, gamma, tp, source))
    return tuple(records)
