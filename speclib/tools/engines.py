"""How three serving engines read a draft length per batch size, as data.

Each engine gets an *emitter* (a table of ``(lo, hi, K)`` batch ranges to the
engine's own configuration) and an *expander* (an engine configuration back
to one draft length per batch size, by the engine's own lookup rule). The
expanders restate the engines' lookup code, so a test can check that what
speclib emits makes the engine pick the draft length speclib meant, and that
the engines' documented examples survive the round trip.

Sources, checked against the engines' documentation and code:

vLLM, dynamic speculative decoding
  docs/features/speculative_decoding/dynamic_speculative_decoding.md and
  vllm/v1/spec_decode/dynamic/utils.py (``validate_and_normalize_dynamic_sd_schedule``,
  ``build_dynamic_sd_schedule_lookup``) in vllm-project/vllm.
  ``num_speculative_tokens_per_batch_size`` is a list of inclusive
  ``[start_bs, end_bs, K]`` ranges; the first must start at 1, ranges may not
  overlap, a gap takes the previous K, batch sizes past the last range keep the
  last K, and every K is clipped to ``num_speculative_tokens`` (which must be
  > 0). Not used with data parallelism > 1 (the docs' Limitations). The list
  form is what releases read, from v0.25.0 on; a dict form ``{"1-16": 3}`` was
  a draft of pull request #32374 that no release reads. On Model Runner V1 any
  table turns full CUDA graphs into piecewise ones for the whole server
  (vllm/config/vllm.py, ``_maybe_override_dynamic_sd_cudagraph_mode``), K = 0
  ranges included; Model Runner V2 captures one full graph per K in the table
  (pull request #45953). See :func:`vllm_limits` and ENGINE_FACTS.md.
  The context axis ``[bs_lo, bs_hi, ctx_lo, ctx_hi, K]`` is a *proposal*:
  RFC vllm-project/vllm#48627 and the open pull request #48944 (a rectangular
  batch x context grid, context buckets contiguous from 1, the last bucket
  open-ended). Not in a vLLM release as far as we could verify.

TensorRT-LLM, ``DecodingBaseConfig`` (MTPDecodingConfig, Eagle3DecodingConfig, ...)
  release 1.3.0rc27's LLM API reference (llm-api/reference/MTPDecodingConfig.html,
  DecodeCudaGraphConfig.html) and tensorrt_llm/llmapi/llm_args.py at an
  upstream commit whose fields match that reference (:data:`TRTLLM_SOURCE`;
  fields ``max_draft_len``, ``max_concurrency``, ``draft_len_schedule`` and the
  validator ``validate_draft_len_schedule_and_sort``), the lookup
  ``get_draft_len_for_batch_size`` in tensorrt_llm/_torch/speculative/utils.py
  (pull request NVIDIA/TensorRT-LLM#10860). A key of ``draft_len_schedule``
  is the *upper* end of a batch range: ``{4: 4, 8: 2, 32: 1}`` drafts 4 at
  batch 1-4, 2 at 5-8, 1 at 9-32 and 0 above 32. The smallest key must map to
  ``max_draft_len``, no value may exceed it, and ``max_concurrency`` and
  ``draft_len_schedule`` are mutually exclusive (a ``max_concurrency`` alone
  becomes ``{max_concurrency: max_draft_len}``). ``speculative_config`` is a
  union told apart by ``decoding_type`` (``MTP``, ``Eagle3``, ``Draft_Target``,
  ``DFlash``, ``NGram``, ...), each of which refuses ``max_draft_len`` 0. YAML
  goes in through ``--config`` (alias ``--extra_llm_api_options``)
  (docs/source/features/speculative-decoding.md).

SGLang
  docs/advanced_features/speculative_decoding.md: ``--speculative-num-steps``
  (depth), ``--speculative-eagle-topk`` (branching) and
  ``--speculative-num-draft-tokens``, which "if topk=1 ... is adjusted to
  num_steps + 1"; one fixed depth per server.
  docs/advanced_features/adaptive_speculative_decoding.md and
  python/sglang/srt/speculative/adaptive_spec_params.py: ``--speculative-adaptive``
  with ``--speculative-adaptive-config file.json`` holding
  ``candidate_steps`` (default ``[1, 3, 7]``), tiers of
  ``speculative_num_steps`` pre-built at start-up; the controller moves
  between tiers on an EMA of the accepted length (documented for EAGLE with
  topk 1), and the initial ``--speculative-num-steps`` is snapped to a tier.
  SGLang's current source (python/sglang/srt/speculative/adaptive_spec_params.py
  and adaptive_step_router.py, batch-size slots since pull request
  sgl-project/sglang#24055) keys the config by batch size instead:
  ``{"1": {"candidate_steps": [...]}, "8": {...}}``, a batch padded to its
  CUDA-graph size and then served by the slot with the largest key at or below
  it; steps of 0 turn drafting off; EAGLE and EAGLE3 with topk 1, not with
  attention data parallelism; a config without a batch-size key is refused.
  A slot with one candidate never switches, so one slot per batch range pins
  the range's draft length on one server.
"""
from __future__ import annotations

import bisect
import json
import shlex
from dataclasses import dataclass

#: vLLM's open end of the context axis (vllm/v1/spec_decode/dynamic/utils.py).
VLLM_CTX_INFINITY = 2**31 - 1


@dataclass(frozen=True)
class Range:
    """Batch sizes ``lo``..``hi`` (inclusive) decode with draft length ``k``."""

    lo: int
    hi: int
    k: int


def ranges_from_lookup(ks) -> list:
    """Per-batch draft lengths (index 0 = batch 1) as merged inclusive ranges."""
    out = []
    for b, k in enumerate(ks, start=1):
        k = int(k)
        if out and out[-1].k == k:
            out[-1] = Range(out[-1].lo, b, k)
        else:
            out.append(Range(b, b, k))
    return out


def expand_ranges(ranges, max_batch: int) -> list:
    """Draft length at batch 1..max_batch of speclib's own ``ranges``."""
    ks = [None] * max_batch
    for r in ranges:
        for b in range(r.lo, min(r.hi, max_batch) + 1):
            ks[b - 1] = r.k
    if any(k is None for k in ks):
        raise ValueError("ranges do not cover every batch size")
    return ks


# --- vLLM -----------------------------------------------------------------------
def vllm_config(ranges, *, method: str | None = None, model: str | None = None) -> dict:
    """``speculative_config`` with ``num_speculative_tokens_per_batch_size``.

    ``model`` is the drafter's checkpoint (vLLM's key of that name; none for
    MTP, which drafts with the target's own layers, or n-gram).
    ``num_speculative_tokens`` is the table's largest K; vLLM sizes its buffers
    with it and rejects 0, so a table that never speculates still says 1."""
    config = {}
    if method:
        config["method"] = method
    if model:
        config["model"] = model
    config["num_speculative_tokens"] = max(1, max(r.k for r in ranges))
    config["num_speculative_tokens_per_batch_size"] = [[r.lo, r.hi, r.k] for r in ranges]
    return config


def vllm_context_config(cells, contexts, *, method: str | None = None, model: str | None = None) -> dict:
    """The proposed context-axis form: ``cells`` maps each batch range to one
    K per context bucket; ``contexts`` are the bucket bounds ``(lo, hi)``."""
    config = {}
    if method:
        config["method"] = method
    if model:
        config["model"] = model
    config["num_speculative_tokens"] = max(1, max(k for _, ks in cells for k in ks))
    config["num_speculative_tokens_per_batch_size"] = [
        [lo, hi, c_lo, c_hi, k] for (lo, hi), ks in cells for (c_lo, c_hi), k in zip(contexts, ks)
    ]
    return config


def context_buckets(contexts) -> list:
    """Contiguous context buckets from 1, one per context length, split at the
    geometric mean of neighbours; the last is open-ended (vLLM's proposal
    requires buckets from 1 without gaps)."""
    contexts = sorted(contexts)
    bounds, lo = [], 1
    for a, b in zip(contexts, contexts[1:]):
        hi = max(lo, int((a * b) ** 0.5))
        bounds.append((lo, hi))
        lo = hi + 1
    bounds.append((lo, VLLM_CTX_INFINITY))
    return bounds


def _vllm_entries(schedule):
    if not isinstance(schedule, list) or not schedule:
        raise ValueError("num_speculative_tokens_per_batch_size must be a non-empty list")
    arities = {len(e) if isinstance(e, (list, tuple)) else None for e in schedule}
    if not arities <= {3, 5} or len(arities) != 1:
        raise ValueError("entries must all be 3-item [bs_lo, bs_hi, K] or all 5-item [bs_lo, bs_hi, ctx_lo, ctx_hi, K]")
    parsed = []
    for e in schedule:
        lo, hi, *ctx, k = (int(x) for x in e)
        c_lo, c_hi = ctx if ctx else (1, VLLM_CTX_INFINITY)
        if lo <= 0 or hi <= 0 or lo > hi or c_lo <= 0 or c_lo > c_hi or k < 0:
            raise ValueError(f"bad entry {e!r}")
        parsed.append((lo, hi, c_lo, c_hi, k))
    bs_ranges = sorted({(lo, hi) for lo, hi, *_ in parsed})
    prev = 0
    for lo, hi in bs_ranges:
        if lo <= prev:
            raise ValueError("batch-size ranges must be non-overlapping")
        prev = hi
    if bs_ranges[0][0] != 1:
        raise ValueError("the first batch-size range must start at 1")
    ctx_ranges = sorted({(c_lo, c_hi) for *_, c_lo, c_hi, _ in parsed})
    if len(parsed) != len(bs_ranges) * len(ctx_ranges):
        raise ValueError("the (batch size x context) grid must be rectangular")
    if ctx_ranges[0][0] != 1 or any(b[0] != a[1] + 1 for a, b in zip(ctx_ranges, ctx_ranges[1:])):
        raise ValueError("context ranges must start at 1 and be contiguous")
    return parsed, ctx_ranges


#: Where the options vLLM's form sets beside its speculative_config were read:
#: ``max_num_seqs`` (SchedulerConfig, an int >= 1, the most sequences one
#: step runs, which must not exceed max_num_batched_tokens) and the
#: ``--config FILE.yaml`` loader that takes a file of engine arguments, a
#: nested mapping (speculative_config) passed on as JSON
#: (``FlexibleArgumentParser.load_config_file``, which also takes underscores
#: for dashes), in release v0.34.0's wheel on PyPI, the release whose SpeculativeConfig the
#: schedule's form is checked against (tests/data/engines/vllm-serving-args.json and
#: vllm-0.34.0-speculative-config.json).
VLLM_SERVING_SOURCE = ("vLLM v0.34.0 vllm/config/scheduler.py (SchedulerConfig.max_num_seqs) and "
                       "vllm/utils/argparse_utils.py (FlexibleArgumentParser.load_config_file)")


def vllm_serving(config: dict, max_batch: int) -> dict:
    """vLLM's form of a schedule: ``speculative_config`` with ``max_num_seqs``
    beside it, the most sequences a step runs, set to ``max_batch`` (the
    batch the table is priced to), as one file of engine arguments
    (``vllm serve MODEL --config FILE.yaml``; JSON is YAML)."""
    return {"max_num_seqs": int(max_batch), "speculative_config": config}


def speculative_config_of(document: dict) -> dict:
    """The ``speculative_config`` of vLLM's form (:func:`vllm_serving`), or
    ``document`` itself where it is one."""
    return document.get("speculative_config", document)


def expand_vllm(config: dict, max_batch: int, context: int | None = None) -> list:
    """K at batch 1..max_batch as vLLM's ``build_dynamic_sd_schedule_lookup``
    builds it (gaps and the tail take the previous K; K clipped to
    ``num_speculative_tokens``); with the context axis, in the bucket of
    ``context`` (vLLM's ``bucket_of``: the first bucket whose end is >= it).
    ``config`` is a speculative_config or vLLM's whole form (:func:`vllm_serving`)."""
    config = speculative_config_of(config)
    top = int(config["num_speculative_tokens"])
    if top <= 0:
        raise ValueError("num_speculative_tokens must be > 0")
    parsed, ctx_ranges = _vllm_entries(config["num_speculative_tokens_per_batch_size"])
    bucket = ctx_ranges[-1]
    if context is not None:
        bucket = next((c for c in ctx_ranges if context <= c[1]), ctx_ranges[-1])
    entries = sorted((lo, hi, k) for lo, hi, c_lo, c_hi, k in parsed if (c_lo, c_hi) == bucket)
    if context is None and len(ctx_ranges) > 1:
        raise ValueError("this schedule has a context axis: give context=")
    dense = [0] * (max_batch + 1)
    nxt, last = 1, None
    for lo, hi, k in entries:
        if lo > nxt and last is not None:
            for b in range(nxt, min(lo, max_batch + 1)):
                dense[b] = min(top, last)
        for b in range(max(lo, nxt), min(hi, max_batch) + 1):
            dense[b] = min(top, k)
        nxt, last = max(nxt, hi + 1), k
        if nxt > max_batch:
            break
    for b in range(nxt, max_batch + 1):
        dense[b] = min(top, last)
    return dense[1:]


# --- TensorRT-LLM ------------------------------------------------------------------
def trtllm_schedule(ranges) -> tuple:
    """(``max_draft_len``, ``draft_len_schedule``, ``max_concurrency``) of
    ``ranges``: each range's upper end is a key; a trailing K = 0 range is left
    implicit (TensorRT-LLM drafts 0 above the last key). ``max_concurrency`` is
    the largest batch that speculates (None if none does)."""
    ranges = list(ranges)
    while len(ranges) > 1 and ranges[-1].k == 0:
        ranges.pop()
    first = ranges[0].k
    if any(r.k > first for r in ranges):
        raise ValueError("TensorRT-LLM needs the first range's draft length to be the largest (max_draft_len)")
    schedule = {r.hi: r.k for r in ranges}
    speculating = [r.hi for r in ranges if r.k > 0]
    return first, schedule, (max(speculating) if speculating else None)


def trtllm_config(ranges, *, decoding_type: str = "MTP", speculative_model: str | None = None,
                  max_batch_size: int | None = None) -> dict:
    """The LLM API's options (a mapping for the YAML file): ``max_batch_size``
    and a ``cuda_graph_config`` that captures decode graphs up to it with
    padding on (:func:`trtllm_serving`), then ``speculative_config``;
    ``speculative_model`` is the drafter's checkpoint (none for MTP or NGram).
    A table that never drafts gets no ``speculative_config``: TensorRT-LLM
    refuses ``max_draft_len`` 0 for MTP, Eagle3, Draft_Target, DFlash and
    NGram (their validators), so the server runs without speculation."""
    max_draft_len, schedule, _ = trtllm_schedule(ranges)
    out = trtllm_serving(max_batch_size) if max_batch_size else {}
    if max_draft_len == 0:  # never drafts: every decoding type refuses max_draft_len 0, so none is written
        return out
    spec = {"decoding_type": decoding_type, "max_draft_len": max_draft_len}
    if speculative_model:
        spec["speculative_model"] = speculative_model
    spec["draft_len_schedule"] = schedule
    out["speculative_config"] = spec
    return out


#: The TensorRT-LLM release whose LLM API the options below are checked against (tests/data/engines/
#: trtllm-llm-args.json): its API reference (MTPDecodingConfig, DecodeCudaGraphConfig) gives the fields' types,
#: and tensorrt_llm/llmapi/llm_args.py at upstream commit :data:`TRTLLM_COMMIT`, whose DecodingBaseConfig and
#: cuda-graph classes declare what that reference documents, gives the validators: ``BaseCudaGraphConfig``
#: (``batch_sizes``, ``max_batch_size``: "If neither is provided, a default max_batch_size of 128 is used",
#: ``enable_padding``: "batches are rounded up to the nearest cuda_graph_batch_size"),
#: ``DecodeCudaGraphConfig._merge_schedule_keys`` (each draft_len_schedule key gets a graph of its own),
#: ``validate_draft_len_schedule_and_sort``, and the LLM API's ``max_batch_size`` and ``cuda_graph_config``.
#: The commit is not tied to the release tag (the tags could not be read; the PyPI packages are stubs).
TRTLLM_RELEASE = "1.3.0rc27"
TRTLLM_COMMIT = "0004396720054fd8e205cbf616f21f0b57c6b412"
TRTLLM_SOURCE = (f"TensorRT-LLM {TRTLLM_RELEASE}'s LLM API reference and tensorrt_llm/llmapi/llm_args.py at "
                 f"commit {TRTLLM_COMMIT[:10]} (whose fields match it; the commit is not tied to the tag)")


def trtllm_serving(max_batch_size: int) -> dict:
    """The options that let TensorRT-LLM run the batch a schedule is priced
    to on CUDA graphs: ``max_batch_size`` and ``cuda_graph_config`` with
    graphs up to it and padding on (by default graphs stop at 128 sequences
    and a batch off the captured list runs eagerly)."""
    n = int(max_batch_size)
    return {"max_batch_size": n, "cuda_graph_config": {"max_batch_size": n, "enable_padding": True}}


def expand_trtllm(spec: dict, max_batch: int) -> list:
    """Draft length at batch 1..max_batch as TensorRT-LLM reads ``spec`` (the
    ``speculative_config`` mapping): the validator's rules, then
    ``get_draft_len_for_batch_size`` (the first key >= the batch, 0 above the
    last key; no schedule: ``max_draft_len`` everywhere)."""
    max_draft_len = spec.get("max_draft_len")
    schedule = spec.get("draft_len_schedule")
    concurrency = spec.get("max_concurrency")
    if schedule is not None and concurrency is not None:
        raise ValueError("max_concurrency and draft_len_schedule are mutually exclusive")
    if concurrency is not None:
        schedule = {int(concurrency): int(max_draft_len)}
    if schedule is None:
        return [int(max_draft_len)] * max_batch
    schedule = {int(b): int(k) for b, k in schedule.items()}
    if any(b < 1 for b in schedule) or any(k < 0 for k in schedule.values()):
        raise ValueError("draft_len_schedule keys must be >= 1 and values >= 0")
    if max_draft_len is not None:
        if schedule[min(schedule)] != max_draft_len:
            raise ValueError("draft_len_schedule's smallest key must map to max_draft_len")
        if any(k > max_draft_len for k in schedule.values()):
            raise ValueError("draft_len_schedule values must be <= max_draft_len")
    keys = sorted(schedule)
    out = []
    for b in range(1, max_batch + 1):
        i = bisect.bisect_left(keys, b)
        out.append(schedule[keys[i]] if i < len(keys) else 0)
    return out


# --- SGLang --------------------------------------------------------------------------
def sglang_adaptive_args(tiers, initial: int, algorithm: str = "EAGLE", draft_model: str | None = None,
                         config_path: str = "adaptive_spec.json") -> str:
    """The flags of the documented adaptive mode: a topk-1 chain starting at
    tier ``initial``, the tiers in ``config_path``."""
    return (sglang_static_args(initial, algorithm, draft_model)
            + f" --speculative-adaptive --speculative-adaptive-config {config_path}")


def sglang_adaptive_config(tiers) -> dict:
    """The adaptive config file of the documented tier mode: one batch-size
    slot from batch 1 holding every tier as ``candidate_steps``, so the
    controller switches among them on the accepted length alone (SGLang
    0.5.23's ``_load_adaptive_config`` refuses a file without an
    integer-string batch-size key; the other knobs keep SGLang's defaults)."""
    return {"1": {"candidate_steps": sorted(int(t) for t in tiers)}}


def sglang_static_args(k: int, algorithm: str = "EAGLE", draft_model: str | None = None) -> str:
    """One server's flags for a fixed draft of ``k`` tokens: a topk-1 chain
    (``--speculative-num-steps k``, num_draft_tokens k + 1) for the EAGLE
    family and STANDALONE, the block's draft tokens (k drafted + 1) for
    DFLASH; the drafter's checkpoint first where there is one; no flags at
    ``k`` = 0 (plain decoding)."""
    if k == 0:
        return ""
    path = f" --speculative-draft-model-path {shlex.quote(draft_model)}" if draft_model else ""
    if algorithm == "DFLASH":
        return f"--speculative-algorithm DFLASH{path} --speculative-num-draft-tokens {k + 1}"
    return (f"--speculative-algorithm {algorithm}{path} --speculative-eagle-topk 1 "
            f"--speculative-num-steps {k} --speculative-num-draft-tokens {k + 1}")


def sglang_slots_config(ranges) -> dict:
    """The batch-size-keyed ``--speculative-adaptive-config`` of SGLang's
    current source with one slot per batch range, keyed by the range's first
    batch and pinned to its draft length by a single candidate."""
    return {str(r.lo): {"candidate_steps": [int(r.k)]} for r in ranges}


def sglang_slots_args(ranges, algorithm: str = "EAGLE", draft_model: str | None = None,
                      config_path: str = "adaptive_spec.json") -> str:
    """The server flags that read :func:`sglang_slots_config`: a topk-1 chain
    sized for the deepest slot, adaptive mode on."""
    top = max(1, max(int(r.k) for r in ranges))
    return (sglang_static_args(top, algorithm, draft_model)
            + f" --speculative-adaptive --speculative-adaptive-config {config_path}")


def expand_sglang_slots(config: dict, max_batch: int, cuda_graph_bs=None) -> list:
    """Draft length at batch 1..max_batch of a batch-size-keyed adaptive
    config, as SGLang's ``AdaptiveStepRouter`` routes a batch: padded up to the
    next CUDA-graph batch size (when ``cuda_graph_bs`` is given), then the
    slot with the largest key at or below it (the first slot below every key).
    Checked as ``_load_adaptive_config`` checks it; a slot must hold one
    candidate (with several, the controller picks among them on accepted
    length, not by batch size)."""
    slots = {}
    for key, entry in config.items():
        if not str(key).isdigit():
            continue
        steps = entry.get("candidate_steps") if isinstance(entry, dict) else None
        if not isinstance(steps, list) or not steps or not all(isinstance(x, int) and x >= 0 for x in steps):
            raise ValueError(f"BS {key}: candidate_steps must be a list of non-negative ints, got {steps!r}")
        if len(set(steps)) != 1:
            raise ValueError(f"BS {key}: {len(set(steps))} candidates; a pinned slot holds one")
        slots[int(key)] = steps[0]
    if not slots:
        raise ValueError("the adaptive config must contain at least one integer-string batch-size key")
    keys = sorted(slots)
    graphs = sorted(cuda_graph_bs) if cuda_graph_bs else None
    out = []
    for b in range(1, max_batch + 1):
        padded = b
        if graphs is not None:
            i = bisect.bisect_left(graphs, b)
            if i < len(graphs):
                padded = graphs[i]
        out.append(slots[keys[max(0, bisect.bisect_right(keys, padded) - 1)]])
    return out


def parse_sglang_args(args: str) -> dict:
    """The speculative flags of an SGLang command line, checked as SGLang
    resolves them: the algorithm, the drafter's path (None without one),
    num_steps, topk and num_draft_tokens (num_steps + 1 when topk is 1; a
    DFLASH block drafts num_draft_tokens - 1); {} when speculation is off."""
    words = shlex.split(args)
    flags = {}
    for i, w in enumerate(words):
        if w.startswith("--speculative-"):
            nxt = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else True
            flags[w[2:]] = nxt
    if not flags:
        return {}
    algorithm = flags.get("speculative-algorithm", "EAGLE")
    if algorithm == "DFLASH":
        tokens = int(flags["speculative-num-draft-tokens"])
        steps, topk = tokens - 1, 1
    else:
        steps = int(flags["speculative-num-steps"])
        topk = int(flags.get("speculative-eagle-topk", 1))
        tokens = int(flags.get("speculative-num-draft-tokens", steps + 1))
    if topk == 1 and tokens != steps + 1:
        raise ValueError(f"with topk 1 SGLang uses num_draft_tokens = num_steps + 1 = {steps + 1}; got {tokens}")
    out = {"algorithm": algorithm, "draft_model": flags.get("speculative-draft-model-path"), "num_steps": steps,
           "topk": topk, "num_draft_tokens": tokens}
    if "speculative-adaptive" in flags:
        out["adaptive"] = True
    return out


def dumps_json(obj, indent: str = "") -> str:
    """JSON with objects indented and lists of numbers on one line (a range
    per line), readable and parseable by any JSON reader."""
    step = indent + "  "
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{step}{json.dumps(str(k))}: {dumps_json(v, step)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(obj, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in obj):
            return "[" + ", ".join(json.dumps(v) for v in obj) + "]"
        return "[\n" + ",\n".join(step + dumps_json(v, step) for v in obj) + "\n" + indent + "]"
    return json.dumps(obj)


# --- what each engine's per-batch table can and cannot do ---------------------------------
#: vLLM's documented limits of num_speculative_tokens_per_batch_size
#: (docs/features/speculative_decoding/dynamic_speculative_decoding.md, "Limitations").
VLLM_TESTED_METHODS = ("eagle", "eagle3", "dflash")
#: The releases that read the table, and in which form (ENGINE_FACTS.md, section 1): the
#: ``[start_bs, end_bs, K]`` list is what vLLM's releases read, documented from v0.25.0 on
#: (docs.vllm.ai/en/v0.25.0/features/speculative_decoding/dynamic_speculative_decoding/;
#: ``validate_and_normalize_dynamic_sd_schedule`` in vllm/v1/spec_decode/dynamic/utils.py); the
#: ``{"lo-hi": K}`` dict was a draft of pull request vllm-project/vllm#32374 (its
#: ``DynamicSpeculativeDecodingManager`` parsed ``"N"`` and ``"N-M"`` keys) that no release reads.
VLLM_TABLE_RELEASE = "v0.25.0"
#: What the table costs on Model Runner V1 (vllm/config/vllm.py @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164,
#: ``VllmConfig._maybe_override_dynamic_sd_cudagraph_mode``): with any table set and full CUDA graphs asked for,
#: V1 overrides cudagraph_mode to PIECEWISE for the whole server, K = 0 ranges included; Model Runner V2
#: captures a full graph for each K + 1 the table names (pull request vllm-project/vllm#45953). Measured, on
#: V1 with a table whose every K is 0 (vLLM 0.27.1, one H100 NVL, issue vllm-project/vllm#49548): TPOT
#: +6.56 % at concurrency 2 and +21.58 % at 189 over the same server without the table.
VLLM_ZERO_RANGE_TAX = {2: 0.0656, 189: 0.2158}


def vllm_limits(method: str, ranges=None, max_batch: int | None = None) -> list:
    """What vLLM's documentation and source say of a per-batch table with
    ``method`` (and, given the table's ``ranges``, of its ranges of K = 0;
    given ``max_batch``, of the max_num_seqs set beside it)."""
    lines = [f"num_speculative_tokens_per_batch_size takes this list of [start_bs, end_bs, K] from vLLM "
             f"{VLLM_TABLE_RELEASE} on; the {{\"lo-hi\": K}} form of an earlier draft of pull request #32374 is in "
             "no release"]
    if max_batch is not None:
        lines.append(f"max_num_seqs {int(max_batch):,} runs the batch the table is priced to: save the JSON as "
                     "FILE.yaml and run vllm serve MODEL --config FILE.yaml, or pass --max-num-seqs "
                     f"{int(max_batch)} and the speculative_config as --speculative-config; vLLM refuses a "
                     "max_num_batched_tokens below max_num_seqs (fields as read in " + VLLM_SERVING_SOURCE + ")")
    if method not in VLLM_TESTED_METHODS:
        lines.append(f"vLLM documents num_speculative_tokens_per_batch_size as tested with eagle, eagle3 and "
                     f"dflash; with method {method} it may or may not work: try it on your version before relying "
                     "on it")
    zero = [r for r in (ranges or ()) if r.k == 0]
    lo, hi = sorted(VLLM_ZERO_RANGE_TAX)
    lines.append("on Model Runner V1 any per-batch table turns full CUDA graphs into piecewise ones for the whole "
                 "server (VllmConfig._maybe_override_dynamic_sd_cudagraph_mode); full graphs need Model Runner V2 "
                 "(VLLM_USE_V2_MODEL_RUNNER=1), which captures one per K in the table (pull request #45953)"
                 + (f". So on V1 the K = 0 range{'s' if len(zero) > 1 else ''} "
                    + ", ".join(f"{r.lo}-{r.hi}" for r in zero)
                    + (" decode" if len(zero) > 1 else " decodes")
                    + " without drafting but on piecewise graphs, slower than a server without the table: "
                    f"one report measured TPOT {100 * VLLM_ZERO_RANGE_TAX[lo]:.1f} % higher at {lo} sequences and "
                    f"{100 * VLLM_ZERO_RANGE_TAX[hi]:.1f} % at {hi} (vllm-project/vllm#49548); the model prices "
                    "K = 0 as plain decoding" if zero else ""))
    lines.append("with --data-parallel-size > 1 vLLM turns the table off and drafts num_speculative_tokens at every "
                 "batch size")
    return lines


def trtllm_limits(decoding_type: str) -> list:
    """What TensorRT-LLM's configuration and pull requests say of a
    ``draft_len_schedule`` with ``decoding_type``."""
    lines = []
    if decoding_type in ("MTP", "Eagle3"):
        lines.append("on the one-model path (MTP, EAGLE-3 one-model) draft_len_schedule came with pull request "
                     f"NVIDIA/TensorRT-LLM#10860, whose rules the source read for {TRTLLM_RELEASE} has; #16888 "
                     "('Keep drafting alive when dynamic draft length hits its floor', open when read) would change "
                     "what a draft length of 0 (above the last key) does there: check your release")
    if decoding_type == "MTP":
        lines.append("TensorRT-LLM's speculative-decoding page says MTP is supported by DeepSeek models only; "
                     "check that your release serves this model's MTP layers")
    return lines


#: The algorithms SGLang 0.5.23's adaptive mode takes (``adaptive_unsupported_reason``, with topk 1).
SGLANG_ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3")
#: Where TensorRT-LLM's decode CUDA graphs stop when neither ``batch_sizes`` nor ``max_batch_size`` is given
#: (``BaseCudaGraphConfig``: "a default max_batch_size of 128 is used"; TRTLLM_SOURCE).
TRTLLM_DEFAULT_GRAPH_MAX_BATCH = 128


def sglang_limits(algorithm: str) -> list:
    """What SGLang's documentation and source say of varying the depth with
    the batch on one server with ``algorithm``."""
    if algorithm in SGLANG_ADAPTIVE_ALGORITHMS:
        return ["adaptive mode (--speculative-adaptive) needs --speculative-eagle-topk 1 and is off with "
                "attention data parallelism"]
    return [f"SGLang's adaptive mode takes EAGLE and EAGLE3 only: with {algorithm} a server runs one fixed depth "
            "(static)"]


# --- the whole flag set, for a named release ------------------------------------------------
#: The SGLang release the flags below were read in: its wheel on PyPI (sglang==0.5.23), whose parser
#: builds every flag from the field structs of sglang/srt/arg_groups/fields/ (tests/data/engines holds
#: the extract the tests parse our flags with). In it:
#: * speculation with --max-running-requests unset runs at most 48 requests
#:   (sglang/srt/arg_groups/speculative_hook.py, ``_handle_eagle_family``: "Max running requests is reset
#:   to 48 for speculative decoding"), and the decode CUDA graphs stop at that request pool, so a schedule
#:   priced past 48 needs the flag;
#: * the decode graphs' largest batch is ``--cuda-graph-max-bs-decode`` (there is no ``--cuda-graph-max-bs``
#:   in this release's parser);
#: * the batch-size-keyed ``--speculative-adaptive-config`` is read by ``_load_adaptive_config``
#:   (sglang/srt/speculative/adaptive_spec_params.py): integer-string batch keys, each with
#:   ``candidate_steps``; ``adaptive_unsupported_reason`` takes EAGLE and EAGLE3 with topk 1 and turns
#:   adaptive mode off under attention data parallelism; ``--speculative-num-steps`` must be one of the
#:   candidate steps (``_init_adaptive_speculative_params``).
SGLANG_RELEASE = "0.5.23"
#: What SGLang runs at most with speculation on and --max-running-requests unset (SGLang 0.5.23).
SGLANG_SPEC_RUNNING_CAP = 48


def sglang_serving_args(max_running: int, tp: int = 1, ep: int = 1, dp_attention: bool = False) -> str:
    """The flags that let an SGLang server run the batch a schedule is
    priced to: ``--max-running-requests`` and ``--cuda-graph-max-bs-decode``
    at ``max_running`` (SGLang caps a speculating server at 48 requests
    without the first, and its decode graphs at the request pool), and the
    layout (``--tp-size``; ``--ep-size``; ``--attn-dp-size`` for
    data-parallel attention, SGLang 0.5.23's spelling of
    ``--enable-dp-attention --dp-size``)."""
    max_running = int(max_running)
    parts = [f"--tp-size {int(tp)}"] if tp > 1 else []
    if ep > 1:
        parts.append(f"--ep-size {int(ep)}")
    if dp_attention:
        parts.append(f"--attn-dp-size {int(tp)}")
    parts += [f"--max-running-requests {max_running}", f"--cuda-graph-max-bs-decode {max_running}"]
    return " ".join(parts)


def sglang_static_reason(algorithm: str, dp_attention: bool) -> str | None:
    """Why SGLang 0.5.23 would ignore a per-batch schedule here (None: it reads one)."""
    if dp_attention:
        return (f"attention data parallelism: SGLang {SGLANG_RELEASE} turns adaptive mode off under it "
                "(adaptive_unsupported_reason: 'adaptive tier decisions are not synchronized across DP ranks'), "
                "so only the static depth runs")
    if algorithm not in SGLANG_ADAPTIVE_ALGORITHMS:
        return (f"SGLang {SGLANG_RELEASE}'s adaptive mode takes EAGLE and EAGLE3 only: with {algorithm} a server "
                "runs one fixed depth")
    return None


# --- the limits, one row per engine ---------------------------------------------------------
@dataclass(frozen=True)
class EngineLimits:
    """What one engine takes as a draft length per batch and what limits it,
    as speclib's emitters and the constants above hold it: ``engine`` as
    ``--engine`` spells it, ``fields`` the keys or flags speclib writes for
    the table, the running batch and the CUDA graphs (each one the named
    release's parser or schema has), the rest one phrase per aspect
    (:data:`LIMIT_ASPECTS`)."""
    engine: str
    name: str
    release: str
    fields: tuple
    table: str
    draft_length: str
    running_batch: str
    cuda_graphs: str
    data_parallel: str
    methods: str


#: The aspects of :class:`EngineLimits` a table prints, with their headings.
LIMIT_ASPECTS = (("release", "release read"), ("table", "draft length per batch"),
                 ("draft_length", "rule on the draft length"), ("running_batch", "running batch"),
                 ("cuda_graphs", "CUDA graphs"), ("data_parallel", "DP attention, expert parallelism"),
                 ("methods", "methods the table takes"))


def engine_limits() -> tuple:
    """One :class:`EngineLimits` per engine (vLLM, TensorRT-LLM, SGLang),
    built from the releases, caps and rules this module emits by."""
    lo, hi = sorted(VLLM_ZERO_RANGE_TAX)
    vllm = EngineLimits(
        "vllm", "vLLM", f"{VLLM_TABLE_RELEASE} on (list form)",
        ("num_speculative_tokens_per_batch_size", "num_speculative_tokens", "max_num_seqs"),
        "num_speculative_tokens_per_batch_size: [start_bs, end_bs, K] ranges from batch 1",
        "K clipped to num_speculative_tokens (> 0); a gap takes the previous K, batches past the table the last K",
        "max_num_seqs, set to the batch the table is priced to",
        f"Model Runner V1: any table makes full graphs piecewise (TPOT +{100 * VLLM_ZERO_RANGE_TAX[lo]:.1f} % at "
        f"{lo} sequences, +{100 * VLLM_ZERO_RANGE_TAX[hi]:.1f} % at {hi}, K = 0 only); V2: one full graph per K",
        "table off with data parallelism > 1: num_speculative_tokens at every batch",
        "documented as tested with " + ", ".join(VLLM_TESTED_METHODS) + "; not with mtp")
    trtllm = EngineLimits(
        "trtllm", "TensorRT-LLM", f"{TRTLLM_RELEASE} (API reference; validators at commit {TRTLLM_COMMIT[:10]})",
        ("draft_len_schedule", "max_draft_len", "max_batch_size", "cuda_graph_config"),
        "draft_len_schedule: {upper batch of a range: K}; 0 above the last key",
        "the smallest key maps to max_draft_len (the first range drafts longest); max_concurrency not with a "
        "schedule",
        "max_batch_size, set to the batch the table is priced to",
        f"decode graphs to {TRTLLM_DEFAULT_GRAPH_MAX_BATCH} sequences by default, a batch off the list eagerly: "
        "cuda_graph_config to the priced batch, padding on",
        "none documented for the schedule (not verified)",
        "MTP and EAGLE-3 one-model since pull request #10860; a draft length of 0 there is changing (#16888)")
    sglang = EngineLimits(
        "sglang", "SGLang", SGLANG_RELEASE,
        ("--speculative-adaptive-config", "--speculative-num-steps", "--max-running-requests",
         "--cuda-graph-max-bs-decode"),
        "--speculative-adaptive-config slots keyed by batch size, one candidate each; else one static depth",
        "a batch is padded to its CUDA-graph size, then takes the slot with the largest key at or below it; "
        "steps of 0 turn drafting off",
        f"at most {SGLANG_SPEC_RUNNING_CAP} requests with speculation unless --max-running-requests is set",
        "decode graphs stop at the request pool: --cuda-graph-max-bs-decode (no --cuda-graph-max-bs)",
        "adaptive mode off under attention data parallelism: the static depth only",
        "adaptive: " + ", ".join(SGLANG_ADAPTIVE_ALGORITHMS) + " with top-k 1; others a static depth")
    return vllm, trtllm, sglang
