"""Acceptance as a serving engine reports it: its metrics or its log read into
a survival curve that the model prices with.

Three formats, each read from the engine's own source:

* ``vllm-prometheus``: vLLM's ``/metrics`` scrape (the Prometheus text
  format). vLLM counts, per served model and engine index (labels
  ``model_name`` and ``engine``), four counters
  (``vllm/v1/spec_decode/metrics.py``, class ``SpecDecodingProm``, and the
  labels from ``vllm/v1/metrics/loggers.py``, ``PrometheusStatLogger``, in
  vllm-project/vllm @ ee4ceaae5953d367d8edd2132fd86d6c42506e1e and
  005a810bc40faa25b8870fbc8559c3462581eee3): ``vllm:spec_decode_num_drafts``
  (verify steps that carried a draft), ``vllm:spec_decode_num_draft_tokens``,
  ``vllm:spec_decode_num_accepted_tokens`` and
  ``vllm:spec_decode_num_accepted_tokens_per_pos`` with a third label
  ``position`` = ``"0"`` .. ``"k-1"``. A draft adds one to position j's
  counter when its first j + 1 tokens were all accepted (``observe_draft``),
  so position j's count over the drafts is the probability that draft
  position d = j + 1 survives verification: the survival curve s(d) itself,
  not a conditional rate. prometheus_client writes each counter under its
  name plus ``_total`` (and a ``_created`` timestamp as a separate gauge);
  those ``_total`` samples are what is read. Two scrapes, before and after a
  run, give the run's own counts (their difference); one scrape gives the
  counts since the server started.
* ``vllm-log``: vLLM's periodic ``SpecDecoding metrics:`` log line
  (``SpecDecodingLogging.log``, same file): ``Mean acceptance length``
  (1 + accepted / drafts), ``Accepted throughput``, ``Drafted throughput``,
  ``Accepted: N tokens``, ``Drafted: N tokens``, ``Per-position acceptance
  rate`` (position j's accepted count over the drafts of the interval, three
  decimals each) and ``Avg Draft acceptance rate``; each line covers the
  interval since the one before. The fields are read by name, because their
  order changed between versions: vllm-project/vllm PR #16665 (April 2025)
  printed ``Draft acceptance rate: X%, Mean acceptance length, Accepted,
  Drafted, Per-position acceptance rate``; PR #24127 (September 2025) added
  the two throughputs, and as tested in that PR printed ``Draft acceptance
  rate`` first and nothing after the rates (a line posted there is shipped in
  ``speclib/data/samples/public/``); the version read above moved it to the
  end as ``Avg Draft acceptance rate``. A line without per-position rates
  (PR #15902's ``Draft acceptance rate, Accepted, Drafted`` of early 2025, or
  the V0 engine's ``Speculative metrics:``) is refused. Lines are combined
  weighted by their drafts, taken as ``Drafted`` over the number of positions
  (exact when every draft has the same length, as with a fixed
  ``num_speculative_tokens``; where a line's printed mean length disagrees
  with that count beyond its rounding, the result carries a note).
* ``sglang-log``: SGLang's scheduler ``Decode batch`` log line
  (``log_decode_stats`` in ``python/sglang/srt/managers/scheduler_metrics_mixin.py``,
  sgl-project/sglang @ 78ac30c2056f2c25089c1d3203c3d5c13dc3d946):
  ``accept len: X`` is the accepted tokens over the verify steps of the
  interval, the bonus token included (``update_spec_metrics`` adds the batch
  size to the accepted count). Lines are combined weighted by
  ``#running-req`` (each interval has the same number of steps, and a step
  counts one verify per running request). SGLang logs no per-position rate,
  so the draft length it ran (``speculative_num_steps``) must be given.

Where only a mean length is known (SGLang, or a vLLM scrape without the
per-position counter), the curve is the i.i.d. one it implies: alpha**d with
the alpha whose N(alpha, gamma) equals the mean length
(:func:`speclib.evidence.engines.alpha_from_accept_length`), labelled as
implied, not measured.

Bad input (an empty file, a scrape with no speculative counters, counters
that decrease between two scrapes, a position accepted more often than there
were drafts, a log line not in the engine's format) raises a one-line
``ValueError`` naming the file and what is wrong. Nothing is written.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import numpy as np

from .._checks import read_text
from ..core.acceptance import SurvivalCurve, geometric_survival
from speclib.evidence import engines as _eng

#: The formats read, as ``format=`` and ``speclib acceptance --format`` name them.
FORMATS = ("vllm-prometheus", "vllm-log", "sglang-log")
FORMAT_NAMES = {"vllm-prometheus": "vLLM Prometheus metrics", "vllm-log": "vLLM log",
                "sglang-log": "SGLang log"}

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"
COUNTERS = (DRAFTS, DRAFT_TOKENS, ACCEPTED, PER_POSITION)

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"
# The fields of vLLM's 'SpecDecoding metrics:' line, read by name: their order and the fields
# around them changed between versions (see the module notes), these three did not.
_VLLM_ACCEPTED = re.compile(r"\bAccepted: (?P<accepted>\d+) tokens\b")
_VLLM_DRAFTED = re.compile(r"\bDrafted: (?P<drafted>\d+) tokens\b")
_VLLM_RATES = re.compile(r"\bPer-position acceptance rate: (?P<rates>(?:{n})(?:, (?:{n}))*)".format(n=_NUMBER))
_VLLM_MEAN = re.compile(r"\bMean acceptance length: (?P<mean>{n})".format(n=_NUMBER))
_SGLANG_LINE = re.compile(r"Decode batch\b.*?#running-req: (?P<running>\d+),.*?accept len: (?P<length>{n})"
                          .format(n=_NUMBER))


#: Standard errors of the interval :meth:`EngineAcceptance.interval` gives (95 %, two-sided).
INTERVAL_Z = 1.959963984540054


def wilson_interval(successes, trials, z: float = INTERVAL_Z):
    """The Wilson score interval of a binomial proportion: the p with
    |successes / trials - p| = z sqrt(p (1 - p) / trials), lower and upper
    (broadcasts over ``successes``)."""
    k = np.asarray(successes, dtype=float)
    n = float(trials)
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


@dataclass(frozen=True)
class EngineAcceptance:
    """Acceptance read from an engine's metrics or log.

    ``survival``: s(d) for draft positions d = 1..gamma (measured per
    position, or implied by the mean length when ``measured`` is False);
    ``accept_length``: tokens committed per verify step, the bonus token
    included (1 + the mean accepted draft tokens); ``alpha``: the i.i.d.
    acceptance whose N(alpha, gamma) equals ``accept_length``; ``drafts``,
    ``draft_tokens``, ``accepted_tokens``: the counts where the source gives
    them (None otherwise); ``model``: the served model's name where stated."""

    format: str
    sources: tuple
    survival: SurvivalCurve
    accept_length: float
    alpha: float
    measured: bool
    drafts: float = None
    draft_tokens: float = None
    accepted_tokens: float = None
    model: str = ""
    lines: int = 0
    notes: tuple = field(default_factory=tuple)
    #: accepted counts per position (position d first), where the source gives them
    position_counts: tuple = ()

    @property
    def gamma(self) -> int:
        """The draft length the engine ran (the curve's positions)."""
        return len(self.survival)

    def interval(self, z: float = INTERVAL_Z):
        """(lower, upper): each position's Wilson score interval at ``z``
        standard errors (1.96: 95 %), as survival curves, from its accepted
        count out of the drafts; None where the source gives no counts (a
        mean length alone). Each draft is counted as an independent trial;
        the drafts of one request are not, so the true uncertainty is wider."""
        if not self.position_counts or not self.drafts:
            return None
        lo, hi = wilson_interval(np.asarray(self.position_counts, dtype=float), float(self.drafts), z)
        return (SurvivalCurve(lo, name="lower", source=self.survival.source),
                SurvivalCurve(hi, name="upper", source=self.survival.source))

    def to_json(self) -> dict:
        """What ``speclib acceptance --output`` writes (``--acceptance`` reads its ``survival``;
        ``FILE#survival_lower`` and ``FILE#survival_upper`` the interval's ends)."""
        bounds = self.interval()
        interval = {} if bounds is None else {
            "survival_lower": [float(x) for x in bounds[0].values],
            "survival_upper": [float(x) for x in bounds[1].values],
            "interval": ("95 % Wilson score interval of each position's count out of the drafts, the drafts taken "
                         "as independent trials (those of one request are not: the true uncertainty is wider)"),
        }
        return {
            "about": ("Per-position acceptance read by `speclib acceptance` "
                      "(speclib.evidence.engine_metrics.read_engine_metrics): survival[d-1] is the probability "
                      "that draft position d survives verification" +
                      ("." if self.measured else "; implied by the mean acceptance length alone (the i.i.d. "
                       "curve alpha**d with the alpha that matches it), not measured per position.")),
            "format": self.format, "sources": list(self.sources), "model": self.model,
            "measured_per_position": self.measured, "survival": [float(x) for x in self.survival.values],
            "accept_length": self.accept_length, "iid_alpha": self.alpha, "gamma": self.gamma,
            "drafts": self.drafts, "draft_tokens": self.draft_tokens, "accepted_tokens": self.accepted_tokens,
            "log_lines": self.lines or None, "notes": list(self.notes), **interval,
        }


def sniff(text: str):
    """The format ``text`` is in, by the marks each engine writes, or None."""
    if "SpecDecoding metrics:" in text:
        return "vllm-log"
    if "Decode batch" in text and ("#running-req:" in text or "accept len:" in text):
        return "sglang-log"
    if "vllm:" in text or re.search(r"^# (TYPE|HELP) ", text, re.M):
        return "vllm-prometheus"
    return None


def _read(path) -> str:
    return read_text(path, "", "a Prometheus scrape or a log is UTF-8 text",
                     "empty file (expected a vLLM /metrics scrape, a vLLM log or an SGLang log)")


def read_engine_metrics(path, before=None, *, gamma=None, format=None) -> EngineAcceptance:
    """The acceptance in an engine file: a vLLM Prometheus scrape (with
    ``before``, an earlier scrape of the same server: the counts between
    the two), a vLLM log or an SGLang log. ``format``: one of
    :data:`FORMATS` (default: told by the file's content). ``gamma``: the
    draft length the engine ran, needed where the file gives only a mean
    length (an SGLang log); where the file has per-position counts it must
    agree with them."""
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    if gamma is not None and (isinstance(gamma, bool) or int(gamma) != gamma or not 1 <= gamma <= 4096):
        raise ValueError(f"gamma must be an integer in [1, 4096]; got {gamma!r}")
    text = _read(path)
    kind = format or sniff(text)
    if kind is None:
        raise ValueError(f"{path}: neither a Prometheus scrape of vLLM's /metrics nor a vLLM or SGLang log (no "
                         "'vllm:' metric, 'SpecDecoding metrics:' line or 'Decode batch' line)")
    if before is not None and kind != "vllm-prometheus":
        raise ValueError(f"{before}: a second file is an earlier scrape of vLLM's /metrics; a {FORMAT_NAMES[kind]} "
                         "already counts per interval")
    if kind == "vllm-prometheus":
        after = _prometheus_counts(text, path)
        if before is not None:
            earlier = _prometheus_counts(_read(before), before)
            if earlier[0] != after[0]:
                raise ValueError(f"{before}: model_name {earlier[0]!r} is not the later scrape's {after[0]!r}")
            counts = _difference(earlier[1], after[1], before, path)
            sources = (str(before), str(path))
        else:
            counts, sources = after[1], (str(path),)
        return _from_counts(counts, sources, after[0], gamma)
    if kind == "vllm-log":
        return _vllm_log(text, path, gamma)
    return _sglang_log(text, path, gamma)


# --- vLLM's Prometheus metrics --------------------------------------------------------
def _prometheus_counts(text, path):
    """(model_name, {counter: value, (PER_POSITION, j): value}) of one scrape,
    summed over engine indexes."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    except Exception as exc:  # the parser raises ValueError, and others on some malformed lines
        message = " ".join(str(exc).split())[:160]
        raise ValueError(f"{path}: not in the Prometheus text format ({message})") from None
    wanted = {f"{name}_total": name for name in COUNTERS}
    counts, models = {}, set()
    for s in samples:
        name = wanted.get(s.name)
        if name is None:
            continue
        if not (math.isfinite(s.value) and s.value >= 0):
            raise ValueError(f"{path}: {s.name} must be a count >= 0; got {s.value!r}")
        models.add(s.labels.get("model_name", ""))
        key = name
        if name == PER_POSITION:
            text_pos = s.labels.get("position")
            if text_pos is None or not text_pos.isdigit():
                raise ValueError(f"{path}: {s.name} needs a position label 0, 1, ...; got {text_pos!r}")
            key = (name, int(text_pos))
        counts[key] = counts.get(key, 0.0) + float(s.value)
    if DRAFTS not in counts:
        raise ValueError(f"{path}: no speculative-decoding counters ({DRAFTS}_total is missing): is speculative "
                         "decoding on, and is this a scrape of vLLM's /metrics?")
    if len(models) > 1:
        raise ValueError(f"{path}: model_name: counters of several models ({', '.join(sorted(models))}); give one "
                         "server's scrape")
    return next(iter(models)), counts


def _difference(before: dict, after: dict, before_path, after_path) -> dict:
    out = {}
    for key in sorted(set(before) | set(after), key=str):
        b, a = before.get(key, 0.0), after.get(key)
        label = f"{key}_total" if isinstance(key, str) else f'{key[0]}_total{{position="{key[1]}"}}'
        if a is None:
            raise ValueError(f"{after_path}: {label} is in the earlier scrape ({before_path}) but not in this one")
        if a < b:
            raise ValueError(f"{after_path}: {label} decreased between the scrapes ({b:g} in {before_path}, {a:g} "
                             "here): counters only grow, so the server restarted in between; scrape again around "
                             "one run")
        out[key] = a - b
    return out


def _from_counts(counts, sources, model, gamma) -> EngineAcceptance:
    where = sources[-1] if len(sources) == 1 else f"{sources[0]} -> {sources[1]}"
    drafts = counts[DRAFTS]
    if not drafts > 0:
        span = "between the scrapes" if len(sources) == 2 else "in the scrape"
        raise ValueError(f"{where}: {DRAFTS}_total counts no drafts {span}: nothing was speculated")
    positions = sorted(j for key in counts if isinstance(key, tuple) for j in [key[1]])
    accepted = counts.get(ACCEPTED)
    draft_tokens = counts.get(DRAFT_TOKENS)
    notes = []
    if positions:
        missing = sorted(set(range(positions[-1] + 1)) - set(positions))
        if missing:
            raise ValueError(f'{where}: {PER_POSITION}_total has no position="{missing[0]}" (positions run 0 .. '
                             f"{positions[-1]}, one per draft token)")
        per = np.array([counts[(PER_POSITION, j)] for j in positions])
        over = np.flatnonzero(per > drafts)
        if over.size:
            j = int(over[0])
            raise ValueError(f'{where}: {PER_POSITION}_total{{position="{j}"}} is {per[j]:g}, more than the '
                             f"{drafts:g} drafts: a position cannot be accepted more often than there were drafts")
        rises = np.flatnonzero(np.diff(per) > 0)
        if rises.size:
            j = int(rises[0])
            raise ValueError(f'{where}: {PER_POSITION}_total{{position="{j + 1}"}} ({per[j + 1]:g}) exceeds '
                             f'position="{j}" ({per[j]:g}): vLLM counts a position only when every earlier one '
                             "was accepted")
        if gamma is not None and gamma != len(per):
            raise ValueError(f"gamma: the metrics count {len(per)} draft positions; got {gamma}")
        survival = SurvivalCurve(per / drafts, name="vLLM metrics", source=where)
        if accepted is None:
            accepted = float(per.sum())
        length = 1.0 + accepted / drafts
        if not math.isclose(accepted, per.sum(), rel_tol=1e-6, abs_tol=0.5):
            notes.append(f"{ACCEPTED}_total ({accepted:g}) differs from the per-position sum ({per.sum():g}); "
                         "the mean length is from the total")
        return EngineAcceptance("vllm-prometheus", tuple(sources), survival, length,
                                _iid_alpha(min(length, 1.0 + len(per)), len(per)), True, drafts=drafts,
                                draft_tokens=draft_tokens, accepted_tokens=accepted, model=model, notes=tuple(notes),
                                position_counts=tuple(float(x) for x in per))
    # No per-position counter: the mean length alone.
    if accepted is None:
        raise ValueError(f"{where}: neither {PER_POSITION}_total nor {ACCEPTED}_total: no acceptance to read")
    if gamma is None and draft_tokens is not None and float(draft_tokens / drafts).is_integer():
        gamma = int(draft_tokens / drafts)
    if gamma is None:
        raise ValueError(f"{where}: gamma: the scrape has no per-position counts; give the draft length the server "
                         "ran (num_speculative_tokens)")
    length = 1.0 + accepted / drafts
    return _implied("vllm-prometheus", sources, length, gamma, where, drafts=drafts, draft_tokens=draft_tokens,
                    accepted_tokens=accepted, model=model)


def _iid_alpha(length, gamma) -> float:
    return float(_eng.alpha_from_accept_length(float(length), int(gamma)))


def _implied(kind, sources, length, gamma, where, **counts) -> EngineAcceptance:
    if not 1.0 <= length <= gamma + 1:
        raise ValueError(f"{where}: the mean acceptance length {length:.4g} must lie in [1, {gamma + 1}] for {gamma} "
                         "drafted tokens (is the draft length right?)")
    alpha = _iid_alpha(length, gamma)
    curve = geometric_survival(alpha, gamma, name=f"implied i.i.d. (alpha = {alpha:.4g})")
    return EngineAcceptance(kind, tuple(sources), curve, length, alpha, False, **counts)


# --- logs -----------------------------------------------------------------------------
def _vllm_log(text, path, gamma) -> EngineAcceptance:
    rows, mismatched = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if "SpecDecoding metrics:" not in line:
            continue
        found = {name: rx.search(line) for name, rx in
                 (("Accepted: N tokens", _VLLM_ACCEPTED), ("Drafted: N tokens", _VLLM_DRAFTED),
                  ("Per-position acceptance rate", _VLLM_RATES))}
        missing = [name for name, m in found.items() if m is None]
        if missing:
            older = (" (vLLM printed the per-position rates from PR #16665, April 2025, on; an older line gives "
                     "no per-position acceptance)" if missing == ["Per-position acceptance rate"] else "")
            raise ValueError(f"{path}: line {number}: a 'SpecDecoding metrics:' line without "
                             f"{', '.join(missing)}: not in vLLM's format{older}")
        rates = np.array([float(x) for x in found["Per-position acceptance rate"]["rates"].split(",")])
        drafted, accepted = int(found["Drafted: N tokens"]["drafted"]), int(found["Accepted: N tokens"]["accepted"])
        if drafted == 0 or not np.all(np.isfinite(rates)):
            continue  # an interval without drafts: nothing to weigh
        if np.any(rates < 0) or np.any(rates > 1):
            raise ValueError(f"{path}: line {number}: a per-position acceptance rate outside [0, 1]")
        mean = _VLLM_MEAN.search(line)
        if mean is not None and not math.isclose(float(mean["mean"]), 1 + accepted * len(rates) / drafted,
                                                  abs_tol=0.0051):
            mismatched.append(number)
        rows.append((number, rates, drafted, accepted))
    if not rows:
        raise ValueError(f"{path}: no 'SpecDecoding metrics:' line with drafts (speculative decoding off, or the log "
                         "level above INFO?)")
    k = len(rows[0][1])
    for number, rates, *_ in rows:
        if len(rates) != k:
            raise ValueError(f"{path}: line {number}: {len(rates)} per-position rates where line {rows[0][0]} has {k}: "
                             "give one server's log at one num_speculative_tokens")
    if gamma is not None and gamma != k:
        raise ValueError(f"gamma: the log has {k} draft positions; got {gamma}")
    drafts = np.array([d for *_, d, _ in rows], dtype=float) / k
    rates = np.array([r for _, r, *_ in rows])
    accepted = float(sum(a for *_, a in rows))
    survival = SurvivalCurve(drafts @ rates / drafts.sum(), name="vLLM log", source=str(path))
    length = 1.0 + accepted / float(drafts.sum())
    notes = (f"{len(rows)} logged intervals, weighted by their drafts (Drafted / {k} positions)",)
    if mismatched:
        notes += (f"line(s) {', '.join(map(str, mismatched))}: the printed mean acceptance length differs from "
                  f"1 + Accepted / (Drafted / {k}) by more than its rounding: not every draft had {k} tokens, so "
                  "the drafts (and the weights) are estimates",)
    return EngineAcceptance("vllm-log", (str(path),), survival, length, _iid_alpha(min(length, k + 1.0), k), True,
                            drafts=float(drafts.sum()), draft_tokens=float(sum(d for *_, d, _ in rows)),
                            accepted_tokens=accepted, lines=len(rows), notes=notes,
                            position_counts=tuple(float(x) for x in drafts @ rates))


def _sglang_log(text, path, gamma) -> EngineAcceptance:
    lengths, weights = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if "Decode batch" not in line or "accept len:" not in line:
            continue
        match = _SGLANG_LINE.search(line)
        if match is None:
            raise ValueError(f"{path}: line {number}: a 'Decode batch' line not in SGLang's format (#running-req: N, "
                             "..., accept len: X)")
        length, running = float(match["length"]), int(match["running"])
        if running == 0:
            continue
        if not (math.isfinite(length) and length >= 1):
            raise ValueError(f"{path}: line {number}: accept len must be >= 1 (tokens per verify, the bonus token "
                             f"included); got {match['length']}")
        lengths.append(length)
        weights.append(running)
    if not lengths:
        raise ValueError(f"{path}: no 'Decode batch' line with 'accept len:' (speculative decoding off?)")
    if gamma is None:
        raise ValueError(f"{path}: gamma: SGLang logs the mean accept length only; give the draft length the server "
                         "ran (speculative_num_steps), as 'speclib acceptance FILE --gamma K'")
    w = np.asarray(weights, dtype=float)
    length = float(np.asarray(lengths) @ w / w.sum())
    result = _implied("sglang-log", (str(path),), length, int(gamma), path)
    note = f"{len(lengths)} logged intervals, weighted by #running-req"
    return dataclasses.replace(result, lines=len(lengths), notes=(note,))
