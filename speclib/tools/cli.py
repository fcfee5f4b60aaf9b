"""The ``speclib`` command: read off the draft length for a deployment.

Three subcommands, each with examples in its ``--help``:

* ``speclib gamma``: the best draft length gamma*, its speedup and what a
  speculated token costs, component by component, at one operating point
  (with ``--drafter``, a drafter priced by its own roofline: the whole step
  in seconds and the throughput);
* ``speclib sweep``: gamma* and the speedup over a grid of batch sizes,
  context lengths, acceptance rates and drafter costs (CSV or a table);
* ``speclib presets``: the model and hardware presets with their key numbers;
* ``speclib schedule``: gamma* for every batch size 1..N as the table a serving
  engine reads (vLLM, TensorRT-LLM, SGLang), from the model or from measured
  step costs (:mod:`speclib.tools.schedule`, :mod:`speclib.tools.engines`);
* ``speclib profile``: the model's own step costs in the measured-cost CSV format;
* ``speclib fit``: the calibrated step fitted to a deployment's own benchmark results;
* ``speclib acceptance``: the survival curve a serving engine reports (vLLM's
  /metrics scrape or log, SGLang's log; :mod:`speclib.evidence.engine_metrics`),
  which ``--acceptance`` reads;
* ``speclib frontier``: throughput per GPU against speed per user, with and
  without speculation, and what a million output tokens cost
  (:mod:`speclib.core.frontier`, :mod:`speclib.tools.frontier`).

A model that is not a preset comes from its Hugging Face ``config.json``
(``--model-config``), a chip that is not a preset from a small JSON or YAML file
of its numbers (``--hardware-config``, :func:`speclib.presets.from_hardware_config`).

Every number comes from :func:`speclib.optimal_gamma`,
:func:`speclib.marginal_cost` and :func:`speclib.core.cost.cost_shares`; this module
only parses, checks and prints. Bad input exits with status 2 and one line on
stderr naming the option and what it accepts.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
import tempfile

import numpy as np

from .. import presets
from .._extras import MissingExtra
from ..core import calibrated as _cal
from ..core import capacity as _capacity
from ..core import cost as _cost
from ..core import speculation as _spec
from ..core.acceptance import Acceptance
from ..core.cost import COMPONENTS, cost_shares, marginal_cost
from ..core.deployment import Deployment
from ..core.speculation import optimal_gamma
from ..core.step import ROOFLINES
from . import progress as _progress

EXIT_USAGE = 2

#: speclib's parameter names -> the options that set them, for error messages.
OPTION_FOR_PARAMETER = {
    "B": "--batch",
    "S": "--seq",
    "alpha": "--alpha",
    "c_draft": "--draft-cost",
    "gamma_max": "--gamma-max",
    "roofline": "--roofline",
    "max_batch": "--max-batch",
    "max_ranges": "--max-ranges",
    "max_k": "--max-k",
    "query_bytes": "--query-bytes",
    "seq": "--seq",
    "survival": "--acceptance",
    "batches": "--batch",
    "step_time": "--step-time",
    "tp": "--tp",
    "engine": "--engine",
    "reserve": "--reserve",
    "context": "--seq",
    "batch": "--batch",
    "method": "--method",
    "draft_model": "--draft-model",
    "workload": "--workload",
    "concurrencies": "--concurrency",
    "gamma": "--gamma",
    "price_per_gpu_hour": "--price-per-gpu-hour",
    "min_tokens_per_user": "--min-tokens-per-user",
    "weights": "--weights",
    "kv_cache": "--kv-cache",
}

#: The ranges speclib accepts, as its error messages state them (a test holds
#: the two in step); used when a value is not a number at all.
OPTION_RANGES = {
    "--batch": "a number in (0, inf)",
    "--seq": "a number in (0, inf)",
    "--alpha": "a number in [0, 1]",
    "--draft-cost": "a number in [0, inf)",
    "--gamma-max": "an integer in [0, 4096]",
    "--max-batch": "an integer in [1, 1000000]",
    "--max-ranges": "an integer in [1, 64]",
    "--max-k": "an integer in [0, 4096]",
    "--tp": "an integer in [1, 1024]",
    "--reserve": "a number in [0, 1)",
    "--gamma": "an integer in [1, 4096]",
    "--price-per-gpu-hour": "a number in (0, inf)",
    "--min-tokens-per-user": "a number in (0, inf)",
}

#: Largest (gamma_max + 1) x grid points one sweep evaluates at once (memory:
#: a few float arrays of this many elements).
MAX_SWEEP_CELLS = 10_000_000

_RANGE = re.compile(r"^\s*([^:]+):([^:]+):(log|lin)?(\d+)\s*$", re.IGNORECASE)


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors raised as one line instead of usage + message."""

    def error(self, message):  # noqa: D401 - argparse's hook
        raise UsageError(f"{self.prog}: error: {' '.join(message.split())}")


# --- parsing values -------------------------------------------------------------
def _number(option: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{option} must be {OPTION_RANGES[option]}; got {text.strip()!r}") from None


def _typed(option: str, convert):
    """An argparse ``type`` whose error names the accepted range."""

    def parse(text: str):
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {OPTION_RANGES[option]}; got {text!r}") from None

    parse.__name__ = option  # argparse names the type in some messages
    return parse


def parse_grid(option: str, text: str, *, counts: bool = False) -> np.ndarray:
    """Values of a sweep axis: comma-separated numbers and ranges.

    A range is ``START:STOP:N`` or ``START:STOP:linN`` (N evenly spaced points,
    both ends included) or ``START:STOP:logN`` (N log-spaced points). With
    ``counts`` (batch sizes, context lengths) the points of a range are rounded
    to whole numbers and repeats dropped; numbers written out are kept as given.
    """
    values = []
    for item in text.split(","):
        if not item.strip():
            raise UsageError(f"{option}: empty item in {text!r} (give numbers or START:STOP:N ranges)")
        if ":" not in item:
            values.append(_number(option, item))
            continue
        match = _RANGE.match(item)
        if not match:
            raise UsageError(f"{option}: range {item.strip()!r} must be START:STOP:N, START:STOP:linN or START:STOP:logN")
        start, stop = _number(option, match[1]), _number(option, match[2])
        n = int(match[4])
        if not 1 <= n <= 100_000:
            raise UsageError(f"{option}: range {item.strip()!r} must have N in [1, 100000] points; got {n}")
        if (match[3] or "lin").lower() == "log":
            if not (start > 0 and stop > 0):
                raise UsageError(f"{option}: log range {item.strip()!r} needs START > 0 and STOP > 0")
            points = np.geomspace(start, stop, n)
        else:
            points = np.linspace(start, stop, n)
        if counts:
            points = np.unique(np.round(points)) if start <= stop else np.unique(np.round(points))[::-1]
        values.extend(points.tolist())
    return np.asarray(values, dtype=float)


def _split_names(text: str) -> list:
    return [name.strip() for name in text.split(",") if name.strip()]


def _speclib_error(exc: ValueError) -> str:
    """speclib's message with its parameter name swapped for the CLI option."""
    message = str(exc)
    head, _, rest = message.partition(" ")
    name, colon = (head[:-1], ":") if head.endswith(":") else (head, "")
    if name in OPTION_FOR_PARAMETER:
        return f"{OPTION_FOR_PARAMETER[name]}{colon} {rest}"
    return message


def _model_config(path):
    """The model of --model-config's Hugging Face config.json."""
    try:
        return presets.from_hf_config(path)
    except ValueError as exc:
        raise UsageError(f"--model-config: {exc}") from None


def _hardware_config(path):
    """The chip of --hardware-config's JSON or YAML file."""
    try:
        return presets.from_hardware_config(path)
    except ValueError as exc:
        raise UsageError(f"--hardware-config: {exc}") from None


def _models(args) -> list:
    if args.model_config is not None:
        if args.model is not None:
            raise UsageError("--model-config: give either --model or --model-config, not both")
        return [_model_config(args.model_config)]
    try:
        return [presets.model(name) for name in _split_names(args.model or presets.DEFAULT_MODEL.name)]
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None


def _drafters(args) -> list:
    """The --drafter presets (None: the paper's constant --draft-cost)."""
    if args.drafter is None:
        return [None]
    if args.draft_cost is not None:
        raise UsageError("--drafter: give either --draft-cost (the paper's constant drafter cost) or --drafter (a "
                         "drafter priced by its own roofline), not both")
    try:
        return [presets.drafter(name) for name in _split_names(args.drafter)]
    except ValueError as exc:
        raise UsageError(f"--drafter: {exc}") from None


def _hardware(args) -> list:
    config = getattr(args, "hardware_config", None)
    if config is not None:
        if args.hardware is not None:
            raise UsageError("--hardware-config: give either --hardware or --hardware-config, not both")
        return [_hardware_config(config)]
    try:
        return [presets.hardware(name) for name in _split_names(args.hardware or presets.DEFAULT_HARDWARE.name)]
    except ValueError as exc:
        raise UsageError(f"--hardware: {exc}") from None


def _deployment(args, model=None, chip=None, drafter=None) -> Deployment:
    """The one :class:`~speclib.Deployment` the options describe: --model,
    --hardware and --drafter (or the given ``model``, ``chip`` and
    ``drafter``), --tp, --engine (schedule's output engine picks the
    calibration's, :data:`CALIBRATION_ENGINE`), --step-time (or the
    --calibration read into it), --roofline, --draft-cost (sweep's is a grid,
    priced per row), --query-bytes and --reserve."""
    if model is None:
        model, chip, drafter = _one_model(args)
    engine = CALIBRATION_ENGINE[args.engine] if args.command == "schedule" else args.engine
    c_draft = None if args.command == "sweep" else args.draft_cost
    try:
        return Deployment(model, chip, tp=args.tp, engine=engine, step_time=args.step_time, roofline=args.roofline,
                          drafter=drafter, c_draft=c_draft, query_bytes=args.query_bytes, reserve=args.reserve,
                          ep=args.ep, dp_attention=args.dp_attention, attention=args.attention)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None


# --- formatting ---------------------------------------------------------------
#: What a conditional rate prints as where no draft reached the position before it (0 / 0).
NO_RATE = "undefined"


def _rate(value) -> str:
    """A conditional acceptance rate to four places, or :data:`NO_RATE` where
    it is undefined (no draft survived to the position before)."""
    return f"{value:.4f}" if math.isfinite(value) else NO_RATE

def format_table(headers, rows, align=None) -> str:
    """Columns padded to a common width. ``align`` has one letter per column,
    ``l`` or ``r``; by default the first column is left-aligned and the rest
    (numbers) right-aligned."""
    align = align or "l" + "r" * (len(headers) - 1)
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _exact(x) -> str:
    """A number as text that reads back to the same float (whole numbers without '.0')."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _grouped(x, digits=0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


# --- subcommands ----------------------------------------------------------------
def run_gamma(args, out) -> int:
    models, chips, drafters = _models(args), _hardware(args), _drafters(args)
    if len(models) != 1:
        raise UsageError("--model: gamma takes one model (use 'speclib sweep' for several)")
    if len(chips) != 1:
        raise UsageError("--hardware: gamma takes one chip (use 'speclib sweep' for several)")
    if len(drafters) != 1:
        raise UsageError("--drafter: gamma takes one drafter (use 'speclib sweep' for several)")
    model, chip, drafter = models[0], chips[0], drafters[0]
    try:
        _spec.check_batch(args.batch), _spec.check_context(args.seq)
        deployment = _deployment(args, model, chip, drafter)
        priced = deployment.pricing()
        if isinstance(priced, _spec.StepPricing):
            return _gamma_whole_step(args, out, model, chip, priced, deployment)
        c_draft = float(priced.drafter.c)
        curve = args.acceptance_curve
        alpha = curve if curve is not None else _required_alpha(args)
        searched = args.gamma_max if curve is None else min(args.gamma_max, len(curve))
        gamma_star, speedup = optimal_gamma(alpha, args.batch, args.seq, gamma_max=searched,
                                            deployment=deployment)
        costs = marginal_cost(args.batch, args.seq, c_draft, model, chip, query_bytes=args.query_bytes,
                              attention=deployment.attention)
        shares = cost_shares(args.batch, args.seq, model, chip, query_bytes=args.query_bytes,
                             attention=deployment.attention)
        memory = _memory_check(args, deployment, gamma_star)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None

    if args.json:
        record = {
            "model": model.name,
            "hardware": chip.name,
            "batch": args.batch,
            "seq": args.seq,
            "alpha": args.alpha,
            "acceptance": "i.i.d." if curve is None else [float(x) for x in curve.values],
            "draft_cost": c_draft,
            "gamma_max": searched,
            "query_bytes": args.query_bytes,
            "attention": deployment.attention,
            "gamma_star": gamma_star,
            "speedup": speedup,
            "marginal_cost": costs,
            "cost_shares": shares,
            "memory": _memory_record(memory),
        }
        out.write(json.dumps(record, indent=2) + "\n")
        return 0

    verdict = "speculate" if gamma_star > 0 else "do not speculate: plain decoding is best"
    rows = [(name, f"{costs[name]:.3f}", f"{shares[name]:.3f}") for name in COMPONENTS]
    rows.append(("drafter", f"{costs['drafter']:.3f}", "-"))
    rows.append(("total", f"{costs['total']:.3f}", "1.000"))
    lines = [
        f"{model.name} on {chip.name}, {_cost.ATTENTION_WORDS[deployment.attention]}",
        f"  batch {_exact(args.batch)}, context {_exact(args.seq)} tokens, "
        f"{f'acceptance {args.alpha:g}' if curve is None else _acceptance_label(args, priced)}, "
        f"drafter {c_draft:g} x a step",
        "",
        f"  gamma*   {gamma_star}   ({verdict}; searched 0..{searched})",
        f"  speedup  {speedup:.4f}x over plain decoding",
        "",
        "  marginal cost of one speculated token, x a token already in the batch",
        "  (r: slope of each component's roofline; total = sum of r x share, + drafter)",
        "",
        "\n".join("  " + line for line in format_table(("component", "slope r", "share of step"), rows).splitlines()),
    ]
    if args.query_bytes:
        lines.append("\n  (attention's cost includes the query bytes)")
    lines += _memory_lines(memory, gamma_star)
    out.write("\n".join(lines) + "\n")
    return 0


def _memory_check(args, deployment, gamma):
    """The capacity check of the operating point while drafting ``gamma``
    tokens (None when the model lacks the totals it needs or the chip has no
    capacity)."""
    model, chip = deployment.model, deployment.hardware
    if chip.hbm_capacity is None or model.n_layers is None or model.vocab_size is None:
        return None
    return _capacity.check(args.batch, args.seq, deployment=deployment.replace(reserve=args.reserve),
                           gamma=gamma)


def _memory_lines(memory, gamma=0, *, queued=False) -> list:
    """One line when the batch cannot fit at the draft length found: the
    per-layer answer stands (the per-layer argument does not need it to);
    the whole step in seconds (``queued``) priced what memory holds."""
    if memory is None or memory.fits:
        return []
    drafting = f" while drafting {gamma}" if gamma else ""
    priced = ("the answer above prices the sequences memory holds, the rest queued" if queued else
              "the answer above prices the step regardless")
    return ["", "  " + memory.message() + f"{drafting} ({priced})"]


def queue_line(deployment, batch, context, gammas=(), consequence="", *, what="concurrency") -> str:
    """The line the command prints on standard error where ``batch`` (one
    number) is above what ``deployment`` holds at ``context`` without a draft
    or with one of the draft lengths ``gammas``
    (:meth:`speclib.Deployment.max_batch`, the count
    :meth:`speclib.Deployment.running` bounds every priced batch with), saying
    what that does (``consequence``); "" where it holds them all or has no
    memory check."""
    if not deployment.memory_checked:
        return ""
    ks = [0] + sorted({int(g) for g in gammas} - {0})
    held = [int(deployment.max_batch(float(context), k)) for k in ks]
    if float(batch) <= min(held):
        return ""
    counts = ", ".join(f"{m:,} sequences with \u03b3 = {k}" if i == 0 else f"{m:,} with \u03b3 = {k}"
                       for i, (k, m) in enumerate(zip(ks, held)))
    return (f"{what} {_exact(batch)} is above what memory holds at {float(context):,.0f} tokens ({counts}): "
            f"{consequence}")


def _note(line: str, command: str = "gamma"):
    """``line`` on standard error, after the command's name (nothing for "")."""
    if line:
        sys.stderr.write(f"speclib {command}: {line}\n")


def _memory_record(memory):
    if memory is None:
        return None
    return {"fits": memory.fits, "tp": memory.tp, "reserve": memory.reserve,
            "needed_GB_per_GPU": memory.per_gpu_bytes / 1e9, "usable_GB_per_GPU": memory.usable_bytes / 1e9,
            "max_batch": memory.max_batch, "min_tp": memory.min_tp}


def _required_alpha(args):
    if args.alpha is None:
        raise UsageError("--alpha: required (an acceptance in [0, 1]) unless --drafter names a drafter with a "
                         "measured survival curve")
    return args.alpha


def _acceptance_label(args, priced) -> str:
    if args.alpha is not None:
        return f"acceptance {args.alpha:g} (i.i.d.)"
    curve = getattr(args, "acceptance_curve", None)
    if curve is not None:
        return f"acceptance: the survival curve of {args.acceptance} ({len(curve)} positions)"
    return f"acceptance: {priced.drafter.name}'s measured survival curve"


def _gamma_whole_step(args, out, model, chip, priced, deployment) -> int:
    """gamma with the whole model's step in seconds: a drafter priced by its
    roofline, the aggregate rule, a hybrid model or a calibrated step (its
    80 % interval and what it extrapolates printed with it)."""
    B, S = _spec.check_batch(args.batch), _spec.check_context(args.seq)  # checked by run_gamma already
    try:
        curve = args.acceptance_curve
        acceptance = Acceptance.of(curve if curve is not None else args.alpha, priced)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    try:
        _spec.refuse_unheld(deployment, priced, B, S)  # not one sequence fits: nothing to price
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    gamma_star, speedup = _spec.best_gamma(priced, acceptance, B, S, args.gamma_max)
    try:
        memory = _memory_check(args, deployment, gamma_star)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    queue = queue_line(deployment, args.batch, args.seq, (gamma_star,), "priced as that many running, the rest queued")
    calibration = _cal.calibration_of(deployment.step_time)
    interval, notes = None, ()
    if calibration is not None:
        notes = calibration.notes(model, chip, deployment.engine, B)
        if calibration.draws:
            interval = _spec.speedup(curve if curve is not None else args.alpha, gamma_star, B, S,
                                     deployment=deployment, interval=True)
    g = np.asarray(float(gamma_star))
    run_0, run_g = priced.held(B, S), priced.held(B, S, g)  # each arm's running batch: no more than memory holds
    plain_s = float(priced.plain(run_0, S))
    verify = {name: float(t) for name, t in priced.step_model.component_times(run_g, g + 1.0, S).items()}
    verify_s = float(priced.step_model.time(run_g, g + 1.0, S))
    draft_s = float(priced.drafter.time(g, run_g, S, priced.step_model))
    tokens = float(priced.throughput(B, g, S, acceptance))
    plain_tokens = float(priced.throughput(B, np.asarray(0.0), S, acceptance))
    searched = min(x for x in (args.gamma_max, priced.max_gamma, acceptance.max_gamma) if x is not None)
    if args.json:
        record = {
            "model": model.name, "hardware": chip.name, "batch": args.batch, "seq": args.seq,
            "alpha": args.alpha, "acceptance": ("i.i.d." if args.alpha is not None else "measured" if curve is None
                                                else [float(x) for x in curve.values]),
            "drafter": priced.drafter.name, "roofline": args.roofline, "step_time": str(args.step_time), "tp": args.tp,
            "attention": deployment.attention,
            "gamma_max": searched,
            "gamma_star": gamma_star, "speedup": speedup,
            **({"speedup_interval_80": [float(interval.lo), float(interval.hi)]} if interval is not None else {}),
            **({"extrapolates": list(notes)} if calibration is not None else {}),
            "step_seconds": {"plain": plain_s, "verify": verify_s, "verify_components": verify, "draft": draft_s},
            "throughput": {"speculative": tokens, "plain": plain_tokens},
            "running": {"speculative": float(run_g), "plain": float(run_0)},
            "memory": _memory_record(memory),
        }
        _note(queue)
        out.write(json.dumps(record, indent=2) + "\n")
        return 0
    verdict = "speculate" if gamma_star > 0 else "do not speculate: plain decoding is best"
    rows = [(f"verify {name}", f"{t * 1e6:,.1f}") for name, t in verify.items()]
    rows += [("verify (whole step)", f"{verify_s * 1e6:,.1f}"), (f"draft ({priced.drafter.name})", f"{draft_s * 1e6:,.1f}"),
             ("plain decode step" + (f" ({_exact(run_0)} sequences)" if queue else ""), f"{plain_s * 1e6:,.1f}")]
    clock = (f"{args.roofline} roofline" if args.step_time == "roofline" else
             f"calibrated step time, {args.engine}: the {args.roofline} roofline x {priced.step_model.factor:.3g} "
             f"+ {priced.step_model.fixed * 1e3:.2f} ms + {priced.step_model.per_sequence * 1e6:.1f} us per sequence"
             + (f" + {priced.step_model.per_position * 1e6:.1f} us per extra position + "
                f"{priced.step_model.per_draft_pass * 1e3:.2f} ms per drafter pass; {args.step_time}"
                if priced.step_model.per_position or priced.step_model.per_draft_pass else ""))
    where = chip.name if args.tp == 1 else f"{args.tp} x {chip.name} (tensor parallel)"
    lines = [
        f"{model.name} on {where}, the whole model's step ({clock}), "
        f"{_cost.ATTENTION_WORDS[deployment.attention]}",
        f"  batch {_exact(args.batch)}, context {_exact(args.seq)} tokens, {_acceptance_label(args, priced)}",
        "",
        f"  gamma*      {gamma_star}   ({verdict}; searched 0..{searched})",
        f"  speedup     {speedup:.4f}x over plain decoding" + (
            f"; 80 % interval {float(interval.lo):.2f}\u2013{float(interval.hi):.2f}x (the fit's bootstrap over "
            "model families"
            + ("; it holds 1x: gamma = 0 is as likely as not)" if gamma_star and interval.straddles() else ")")
            if interval is not None else ""),
        f"  throughput  {tokens:,.0f} committed tokens/s ({plain_tokens:,.0f} plain)",
        *([f"  running     {_exact(run_g)} sequences at gamma* = {gamma_star}, {_exact(run_0)} plain: what memory "
           "holds; the rest queued"] if queue else []),
        "",
        f"  one step at gamma* = {gamma_star}" + (f", {_exact(run_g)} sequences" if queue else "") + ", microseconds",
        "",
        "\n".join("  " + line for line in format_table(("part", "time (us)"), rows).splitlines()),
    ]
    lines += _memory_lines(memory, gamma_star, queued=True)
    lines += [f"  note: extrapolates: {note}" for note in notes]
    _note(queue)
    out.write("\n".join(lines) + "\n")
    return 0


SWEEP_COLUMNS = ("model", "hardware", "batch", "seq", "alpha", "draft_cost", "gamma_star", "speedup")
#: Appended after every other column: whether the batch fits in HBM at that
#: context (weights plus caches, --tp GPUs, --reserve kept free) and the
#: largest batch that does (empty when the model lacks the totals).
CAPACITY_COLUMNS = ("fits", "max_batch")
#: The last column: how DeepSeek-V4's attention was priced and held (--attention).
ATTENTION_COLUMNS = ("attention",)
#: Appended last where a row is priced whole with a memory check, which
#: reads its batch as a concurrency: the sequences running at gamma_star (no
#: more than max_batch; the rest queued).
RUNNING_COLUMNS = ("running",)


def sweep_records(models, chips, batch, seq, alpha, draft_cost, *, drafters=(None,), gamma_max=64,
                  deployment=None):
    """Rows of (model, hardware, batch, seq, alpha, draft_cost, gamma*,
    speedup, drafter): one :func:`optimal_gamma` call over the whole broadcast
    grid per model, chip and drafter, each priced as ``deployment`` (a
    :class:`~speclib.Deployment` without a ``c_draft``; default: the default
    one) with that model, chip and drafter. With a drafter preset the draft
    cost is None, and an alpha of None means its measured survival curve."""
    deployment = Deployment() if deployment is None else deployment
    per_drafter = len(batch) * len(seq) * len(alpha) * len(draft_cost)
    cells = (gamma_max + 1) * per_drafter * len(drafters)
    if cells > MAX_SWEEP_CELLS:
        raise UsageError(
            f"--batch/--seq/--alpha/--draft-cost: the grid times (gamma_max + 1) is {cells:,} cells; "
            f"at most {MAX_SWEEP_CELLS:,} (use fewer points or a smaller --gamma-max)"
        )
    rows = []
    for model in models:
        for chip in chips:
            for drafter in drafters:
                costs = draft_cost if drafter is None else [np.nan]
                grid = np.meshgrid(batch, seq, np.arange(len(alpha)), costs, indexing="ij")
                B, S, which, C = (axis.ravel() for axis in grid)
                A = np.asarray(alpha, dtype=object)[which.astype(int)]
                measured = alpha[0] is None
                try:
                    gamma_star, speedup = optimal_gamma(
                        None if measured else A.astype(float), B, S, None if drafter is not None else C,
                        gamma_max=gamma_max, deployment=deployment.replace(model=model, hardware=chip, drafter=drafter),
                    )
                except ValueError as exc:
                    raise UsageError(_speclib_error(exc)) from None
                gamma_star, speedup = np.atleast_1d(gamma_star), np.atleast_1d(speedup)
                name = None if drafter is None else drafter.name
                rows.extend(
                    (model.name, chip.name, b, s, a, None if drafter is not None else c, int(g), float(sp), name)
                    for b, s, a, c, g, sp in zip(B, S, A, C, gamma_star, speedup)
                )
    return rows


def capacity_cells(rows, deployment) -> list:
    """(fits, max_batch) for each sweep row: its batch against what its
    deployment (``deployment`` with the row's model, chip and drafter) holds
    at its context while drafting the row's gamma*; (None, None) when the
    model lacks the totals or the chip its capacity."""
    limits = {}
    cells = []
    for m, h, b, s, _a, _c, g, _sp, d in rows:
        key = (m, h, s, g, d)
        if key not in limits:
            model, chip = presets.resolve(m if not isinstance(m, str) else _model_by_name(m),
                                          h if not isinstance(h, str) else _chip_by_name(h))
            try:
                dep = deployment.replace(model=model, hardware=chip, drafter=d, c_draft=None)
                limits[key] = dep.max_batch(s, g)
            except ValueError:
                limits[key] = None
        limit = limits[key]
        cells.append((None, None) if limit is None else (bool(np.ceil(b) <= limit), int(limit)))
    return cells


def running_cells(rows, deployment) -> list:
    """The sequences each sweep row's gamma* runs where its deployment
    (``deployment`` with the row's model, chip and drafter) is priced whole
    with a memory check, which reads its batch as a concurrency: no more than
    memory holds while drafting gamma*, the rest queued
    (:meth:`speclib.Deployment.running`); None where the row is priced as
    given (the paper's ledger, or no memory check)."""
    cells = [None] * len(rows)
    groups = {}
    for i, (m, h, *_rest, d) in enumerate(rows):
        groups.setdefault((m, h, d), []).append(i)
    for (m, h, d), at in groups.items():
        model, chip = presets.resolve(m if not isinstance(m, str) else _model_by_name(m),
                                      h if not isinstance(h, str) else _chip_by_name(h))
        try:
            dep = deployment.replace(model=model, hardware=chip, drafter=d, c_draft=None)
            if not (dep.whole_step and dep.memory_checked):
                continue
            B, S, g = (np.array([rows[i][k] for i in at], dtype=float) for k in (2, 3, 6))
            held, _ = dep.running(B, S, g)
        except ValueError:  # a model without the totals a memory count needs
            continue
        for i, r in zip(at, held.tolist()):
            cells[i] = r
    return cells


_SWEEP_MODELS: dict = {}
_SWEEP_CHIPS: dict = {}


def _model_by_name(name):
    return _SWEEP_MODELS.get(name) or presets.model(name)


def _chip_by_name(name):
    return _SWEEP_CHIPS.get(name) or presets.hardware(name)


def run_sweep(args, out) -> int:
    batch = parse_grid("--batch", args.batch, counts=True)
    seq = parse_grid("--seq", args.seq, counts=True)
    drafters = _drafters(args)
    if args.alpha is None:
        if drafters == [None]:
            raise UsageError("--alpha: required (acceptances in [0, 1]) unless --drafter names drafters with "
                             "measured survival curves")
        alpha = [None]
    else:
        alpha = parse_grid("--alpha", args.alpha)
    draft_cost = parse_grid("--draft-cost", "0.1" if args.draft_cost is None else args.draft_cost)
    models, chips = _models(args), _hardware(args)
    _SWEEP_MODELS.clear()
    _SWEEP_MODELS.update({m.name: m for m in models})
    _SWEEP_CHIPS.clear()
    _SWEEP_CHIPS.update({h.name: h for h in chips})
    rows = sweep_records(models, chips, batch, seq, alpha, draft_cost, drafters=drafters, gamma_max=args.gamma_max,
                         deployment=_deployment(args, models[0], chips[0]))
    try:
        memory = capacity_cells(rows, _deployment(args, models[0], chips[0]))
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    priced = drafters != [None] or args.roofline != "per-component" or args.step_time != "roofline"
    clock = args.step_time != "roofline" or args.tp != 1
    bounded = running_cells(rows, _deployment(args, models[0], chips[0]))
    queues = any(b is not None for b in bounded)
    columns = (SWEEP_COLUMNS + (("drafter", "roofline") if priced else ()) + (("step_time", "tp") if clock else ())
               + CAPACITY_COLUMNS + ATTENTION_COLUMNS + (RUNNING_COLUMNS if queues else ()))

    def cells(a, c, exact):
        alpha_text = "measured" if a is None else (_exact(a) if exact else f"{a:g}")
        cost_text = "" if c is None else (_exact(c) if exact else f"{c:g}")
        return alpha_text, cost_text

    text_rows = []
    for (m, h, b, s, a, c, g, sp, d), (fits, limit), held in zip(rows, memory, bounded):
        exact = args.format == "csv"
        alpha_text, cost_text = cells(a, c, exact)
        row = (m, h, _exact(b), _exact(s), alpha_text, cost_text, str(g), repr(sp) if exact else f"{sp:.4f}")
        row += (d or "constant", args.roofline) if priced else ()
        row += (str(args.step_time), str(args.tp)) if clock else ()
        row += ("" if fits is None else str(fits).lower(), "" if limit is None else str(limit))
        row += (args.attention,)
        row += (("" if held is None else _exact(held)),) if queues else ()
        text_rows.append(row)

    def write(stream):
        if args.format == "csv":
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(text_rows)
        else:
            align = "llrrrrrr" + "ll" * priced + "lr" * clock + "lr" + "r" + "r" * queues
            stream.write(format_table(columns, text_rows, align=align) + "\n")

    if args.output is None:
        write(out)
        return 0
    try:
        with open(args.output, "w", newline="", encoding="utf-8") as stream:
            write(stream)
    except OSError as exc:
        raise UsageError(f"--output: cannot write {args.output!r} ({exc.strerror or exc})") from None
    return 0


def run_presets(args, out) -> int:
    show_models = args.kind in ("all", "models")
    show_hardware = args.kind in ("all", "hardware")
    models = list(presets.all_models())
    if args.model_config is not None:
        models.append(_model_config(args.model_config))
    model_info = [presets.describe_model(m) for m in models]
    chips = list(presets.all_hardware())
    if args.hardware_config is not None:
        chips.append(_hardware_config(args.hardware_config))
    hardware_info = [presets.describe_hardware(h) for h in chips]
    if args.json:
        record = {}
        if show_models:
            record["models"] = model_info
        if show_hardware:
            record["hardware"] = hardware_info
        out.write(json.dumps(record, indent=2) + "\n")
        return 0

    blocks = []
    if show_models:
        rows = [
            (
                d["name"], d["attention"], d["ffn"], _grouped(d["W_attn"]), _grouped(d["W_E"]),
                _grouped(d["E/k"], 1), _grouped(d["m_c"]), _grouped(d["m_q"]), _grouped(d["f"]), d["weights"],
            )
            for d in model_info
        ]
        headers = ("model", "attention", "ffn", "W_attn", "W_E", "E/k", "m_c (B)", "m_q (B)", "f (FLOP)", "weights (bytes/param, GEMM precision)")
        blocks.append(
            "Models (one layer: W_attn attention-projection and W_E per-expert parameters; m_c bytes per\n"
            "context token, m_q bytes per query token, f FLOPs per query-context pair)\n\n"
            + format_table(headers, rows, align="lllrrrrrrl")
        )
    if show_hardware:
        rows = [
            (
                d["name"], f"{d['bandwidth_TBps']:g}", f"{d['bf16_PFLOPS']:.3f}", f"{d['fp8_PFLOPS']:.3f}",
                f"{d['fp4_PFLOPS']:.3f}", f"{d['ridge_bf16']:.1f}", f"{d['ridge_fp8']:.1f}", f"{d['ridge_fp4']:.1f}", d["fp4"],
            )
            for d in hardware_info
        ]
        headers = ("hardware", "HBM TB/s", "bf16 PF/s", "fp8 PF/s", "fp4 PF/s", "ridge bf16", "ridge fp8", "ridge fp4", "fp4 (MXFP4) GEMMs")
        blocks.append(
            "Hardware (dense peaks; ridge = peak / bandwidth in FLOP per byte)\n\n"
            + format_table(headers, rows, align="lrrrrrrrl")
        )
    if args.sources:
        lines = ["Sources"]
        if show_models:
            lines += [f"  {d['name']}: {d['source']}" for d in model_info]
        if show_hardware:
            lines += [f"  {d['name']}: {d['source']}" for d in hardware_info]
        blocks.append("\n".join(lines))
    out.write("\n\n".join(blocks) + "\n")
    return 0


# --- schedule and profile ---------------------------------------------------------
def _write_output(args, text: str, out) -> int:
    """Everything is computed before this: stdout, or FILE replaced atomically."""
    if args.output is None:
        out.write(text)
        return 0
    directory = os.path.dirname(os.path.abspath(args.output))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".speclib-", dir=directory)
        try:
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(tmp, args.output)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise UsageError(f"--output: cannot write {args.output!r} ({exc.strerror or exc})") from None
    return 0


def _one_model(args):
    models = _models(args)
    if len(models) != 1:
        raise UsageError(f"--model: {args.command} takes one model")
    chips = _hardware(args)
    if len(chips) != 1:
        raise UsageError(f"--hardware: {args.command} takes one chip")
    drafters = _drafters(args)
    if len(drafters) != 1:
        raise UsageError(f"--drafter: {args.command} takes one drafter")
    return models[0], chips[0], drafters[0]


def _seq_list(args, *, default="4096"):
    text = default if args.seq is None else args.seq
    values = parse_grid("--seq", text, counts=True)
    if any(not (v > 0) for v in values):
        raise UsageError(f"--seq must be {OPTION_RANGES['--seq']}; got {text!r}")
    return [float(v) for v in values]


#: The engine whose per-step costs calibrate a schedule's step time
#: (--step-time calibrated), by the engine it is written for: TensorRT-LLM's
#: were measured; SGLang has no fixed time of its own in the fit and takes
#: vLLM's (the calibration's shared_engines), which the schedule's notes say.
CALIBRATION_ENGINE = {"vllm": "vLLM", "trtllm": "TRT", "sglang": "SGLang", "table": "vLLM"}


def run_schedule(args, out) -> int:
    from . import schedule as _schedule

    model, chip, drafter = _one_model(args)
    if args.engine == "table" and (args.method is not None or args.draft_model is not None):
        raise UsageError(f"{'--method' if args.method is not None else '--draft-model'}: the table names no "
                         "method; give --engine vllm, sglang or trtllm for a configuration")
    if args.step_costs is not None and args.seq is not None and "," in args.seq:
        raise UsageError("--seq: measured step costs (--step-costs) are at one context length; give one --seq")
    if args.step_costs is not None and args.draft_cost is not None:
        raise UsageError("--draft-cost: measured step costs (--step-costs) already include drafting")
    seq = _seq_list(args)
    acceptance = args.acceptance_curve
    step_costs = None
    if args.step_costs is not None:
        try:
            step_costs = _schedule.StepCosts.read(args.step_costs)
        except _schedule.StepCostsError as exc:
            raise UsageError(f"--step-costs: {exc}") from None
    alpha = args.alpha
    if alpha is None and acceptance is None and drafter is None:
        raise UsageError("--alpha: required (an acceptance in [0, 1]) unless --acceptance gives a survival curve "
                         "or --drafter names a drafter with a measured one")
    deployment = _deployment(args, model, chip, drafter)
    try:
        limits = _schedule.check_limits(args.max_ranges, args.max_k)
        sched = _schedule.schedule(
            seq=seq, alpha=acceptance if acceptance is not None else alpha, max_batch=args.max_batch,
            gamma_max=args.gamma_max, deployment=deployment, step_costs=step_costs,
        ).limited(*limits)
        text = _schedule.render(sched, args.engine, method=args.method, draft_model=args.draft_model)
        notes = _schedule.engine_notes(sched, args.engine, args.method, args.draft_model)
    except _schedule.StepCostsError as exc:
        raise UsageError(f"--step-costs: {exc}") from None
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    _note(_schedule_queue_line(deployment, args.max_batch, sched), "schedule")
    if args.engine == "vllm":  # JSON has no comments: what the header would say goes to standard error
        sys.stderr.write(f"speclib schedule: {_schedule.header_line(sched)}\n")
        for warning in sched.warnings:
            sys.stderr.write(f"speclib schedule: warning: {warning}\n")
        for note in notes:
            sys.stderr.write(f"speclib schedule: note: {note}\n")
    return _write_output(args, text, out)


def _schedule_queue_line(deployment, asked, sched) -> str:
    """The line ``speclib schedule`` prints on standard error where the
    batches asked for go past what memory holds at the reference context
    (:func:`queue_line`): where the schedule stops, and that no draft length
    is set above the batch its slots hold."""
    deepest = int(np.max(sched.gamma_star)) if sched.memory_limits is not None else 0
    stops = f"the schedule stops at {sched.max_batch:,}; " if sched.max_batch < asked else ""
    return queue_line(deployment, asked, sched.contexts[0], (deepest,),
                      f"{stops}no draft length is set above the batch its slots hold", what="batch")


def run_profile(args, out) -> int:
    import io

    from . import schedule as _schedule

    model, chip, drafter = _one_model(args)
    seq = _seq_list(args)
    if len(seq) != 1:
        raise UsageError("--seq: profile measures at one context length; give one --seq")
    if (args.batch is None) == (args.max_batch is None):
        raise UsageError("--max-batch: give either --max-batch N (every batch 1..N) or --batch GRID")
    batches = None if args.batch is None else parse_grid("--batch", args.batch, counts=True)
    deployment = _deployment(args, model, chip, drafter)
    # a measured curve: no draft is longer than the positions it measured
    top = args.gamma_max if args.acceptance_curve is None else min(args.gamma_max, len(args.acceptance_curve))
    try:
        costs = _schedule.profile(seq=seq[0], batches=batches, max_batch=args.max_batch or 1,
                                  gamma_max=top, deployment=deployment)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    _note(queue_line(deployment, float(np.max(costs.batches)), seq[0], (int(np.max(costs.gammas)),),
                     "the rows above it price steps of batches memory does not hold (a schedule of this deployment "
                     "stops there)", what="batch"), "profile")
    buffer = io.StringIO()
    costs.write(buffer)
    return _write_output(args, buffer.getvalue(), out)


# --- frontier ---------------------------------------------------------------------
def _workload(text: str):
    """--workload: a name (1k1k, 1k8k, 8k1k) or INPUT,OUTPUT mean lengths."""
    if "," not in text:
        return text.strip()
    parts = text.split(",")
    try:
        pair = tuple(float(x) for x in parts)
    except ValueError:
        pair = ()
    if len(pair) != 2:
        raise UsageError(f"--workload must be a workload's name (1k1k, 1k8k, 8k1k) or INPUT,OUTPUT token lengths; "
                         f"got {text!r}")
    return pair


def _positive(option: str, value):
    if value is not None and not value > 0:
        raise UsageError(f"{option} must be {OPTION_RANGES[option]}; got {value:g}")
    return value


def run_frontier(args, out) -> int:
    from ..core import frontier as _front
    from . import frontier as _render

    model, chip, drafter = _one_model(args)
    if args.plot is not None and _render.plot_kind(args.plot) is None:
        raise UsageError(f"--plot: FILE must end in .png or .svg; got {args.plot!r}")
    price = _positive("--price-per-gpu-hour", args.price_per_gpu_hour)
    target = _positive("--min-tokens-per-user", args.min_tokens_per_user)
    workload = _workload(args.workload)
    concurrencies = None if args.concurrency is None else parse_grid("--concurrency", args.concurrency, counts=True)
    alpha = args.acceptance_curve if args.acceptance_curve is not None else args.alpha
    deployment = _deployment(args, model, chip, drafter)
    try:
        deployment = deployment.replace(weights=args.weights, kv_cache=args.kv_cache)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    draws = len(_cal.calibration_of(deployment.step_time).draws) if _cal.calibration_of(deployment.step_time) else 0
    points = len(_front.DEFAULT_CONCURRENCIES) if concurrencies is None else len(concurrencies)
    message = (f"speclib frontier: pricing {points} concurrencies with and without speculation"
               + (f", over the calibration's {draws} draws for the intervals" if draws else "") + " ...")
    try:
        _progress.delay()  # a bad SPECLIB_PROGRESS_DELAY is refused before any work
        with _progress.Progress(message):
            f = _front.frontier(deployment, workload, gamma=args.gamma, alpha=alpha, concurrencies=concurrencies,
                                gamma_max=args.gamma_max)
            cheapest = None if target is None else f.cheapest(target, price)
            if args.format == "csv":
                text = _render.csv_text(f, price)
            elif args.format == "json":
                text = _render.json_text(f, price, cheapest, target)
            else:
                text = _render.table(f, price, cheapest, target)
            picture = None if args.plot is None else _render.plot_bytes(f, args.plot, price, target)
    except ValueError as exc:
        raise UsageError(_speclib_error(exc)) from None
    if picture is not None:
        _write_bytes("--plot", args.plot, picture)
    return _write_output(args, text, out)


def _write_bytes(option: str, path: str, data: bytes) -> None:
    """``data`` to ``path``, replaced atomically (nothing written on a failure)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".speclib-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path!r} ({exc.strerror or exc})") from None


FRONTIER_EPILOG = """\
A closed loop of C users (a benchmark's concurrency): at each C the deployment decodes
what memory holds (the rest wait their turn), every step carries the prefill of the
requests that arrive meanwhile, and a speculative step commits its accepted tokens.
Each row: tokens per second a user sees (1 / TPOT) and output tokens per second per
GPU, without speculation and with it (gamma: the draft length, the best at each
concurrency unless --gamma fixes it; the drafter: --drafter, else the model's MTP
layers where it has them, else --draft-cost). A calibrated step gives each its 80 %
interval. --price-per-gpu-hour adds the price of a million output tokens;
--min-tokens-per-user the cheapest configuration of each arm that serves every user
at least that fast, and what speculation saves (a share that does not depend on the
price). The last line says where speculation's frontier crosses plain decoding's.

examples:
  speclib frontier --model deepseek-r1 --hardware h200 --tp 8 --engine SGLang --step-time calibrated \\
                   --workload 1k1k --alpha 0.6 --gamma 2 --price-per-gpu-hour 2.5 --min-tokens-per-user 50
  speclib frontier --model deepseek-r1 --hardware b200 --tp 8 --step-time calibrated --alpha 0.6 \\
                   --workload 8k1k --format csv --output frontier.csv --plot frontier.png
  speclib frontier --model qwen3.6-35b-a3b --drafter qwen3.6-mtp --roofline aggregate --workload 1024,512 \\
                   --concurrency 1:512:log12 --format json
"""


# --- the parser -------------------------------------------------------------------
TOP_EPILOG = """\
examples:
  speclib gamma --model deepseek-v4-flash --hardware b200 --batch 64 --seq 4096 --alpha 0.75
  speclib sweep --batch 1:30000:log20 --seq 1024,4096,32768 --alpha 0.6,0.75,0.9 --format table
  speclib presets --hardware-only
  speclib gamma --model-config path/to/config.json --hardware h200 --batch 32 --seq 8192 --alpha 0.7
  speclib schedule --model deepseek-v4-flash --alpha 0.75 --draft-cost 0.1 --max-batch 4096 --engine vllm
  speclib profile --model llama-3-70b --seq 4096 --max-batch 512 --output steps.csv
  speclib acceptance after.prom --before before.prom --output curve.json
  speclib schedule --model-config config.json --hardware-config my-gpu.yaml --acceptance curve.json --max-batch 256
  speclib frontier --model deepseek-r1 --hardware h200 --tp 8 --step-time calibrated --alpha 0.6 --price-per-gpu-hour 2.5

Each subcommand has its own --help. Bad input exits with status 2.
"""

GAMMA_EPILOG = """\
examples:
  speclib gamma --model deepseek-v4-flash --hardware b200 --batch 64 --seq 4096 --alpha 0.75 --draft-cost 0.1
  speclib gamma --model qwen3.6-35b-a3b --drafter qwen3.6-mtp --roofline aggregate --batch 64 --seq 512
  speclib gamma --model llama-3-70b --hardware h100 --batch 8 --seq 2048 --alpha 0.8 --json
  speclib gamma --model-config my-model/config.json --hardware mi355x --batch 256 --seq 16384 --alpha 0.7
  speclib gamma --model deepseek-v3 --hardware h200 --tp 8 --step-time calibrated --batch 16 --seq 8192 --alpha 0.8

gamma* = 0 means plain decoding beats every draft length. The marginal-cost
table prices one speculated token against one already in the batch: each
component's roofline slope r (0 = free, 1 = full price) and its share of a
plain decode step; the total is the share-weighted slopes plus the drafter.
A batch whose weights and caches cannot fit in --tp GPUs gets one more line:
what it needs and the smallest tensor-parallel size that fits (the answer
still stands: the per-layer argument does not need the memory). Priced as the
whole step in seconds (--drafter, --roofline aggregate, --step-time calibrated,
a hybrid model), --batch is a concurrency: each draft length runs the
sequences memory holds with its slots and the rest wait in the queue, which
one line on standard error says.
"""

SWEEP_EPILOG = """\
grid syntax (--batch, --seq, --alpha, --draft-cost):
  a comma-separated list of numbers and ranges:
    START:STOP:N  or  START:STOP:linN   N evenly spaced points, both ends included
    START:STOP:logN                     N log-spaced points (START, STOP > 0)
  batch and sequence ranges are rounded to whole numbers (repeats dropped).
  --model and --hardware take comma-separated lists too.

examples:
  speclib sweep --batch 1,8,64,512 --seq 1024,4096,32768 --alpha 0.6,0.75,0.9
  speclib sweep --batch 1:30000:log20 --seq 4096 --alpha 0.75 --format table
  speclib sweep --model deepseek-v4-flash,llama-3-70b --hardware b200,mi355x \\
                --batch 1:4096:log13 --seq 8192 --alpha 0.8 --output sweep.csv

output columns: model, hardware, batch, seq, alpha, draft_cost, gamma_star, speedup,
then drafter, roofline (whole-step pricing), step_time, tp (--step-time calibrated or --tp),
then fits, max_batch (whether the deployment holds the batch at that context while
drafting gamma_star tokens, and the largest batch it holds so: the --tp/--ep/--dp-attention
layout, the draft's cache slots, rollback states and the drafter counted), attention (served
or paper: how DeepSeek-V4's attention was priced, --attention), and where a row is priced as the
whole step, running (its batch read as a concurrency: the sequences gamma_star runs, no more than
max_batch, the rest queued). CSV numbers are written so that they read back exactly.
"""

PRESETS_EPILOG = """\
examples:
  speclib presets
  speclib presets --models-only --sources
  speclib presets --json
  speclib presets --model-config path/to/config.json   (adds that model to the list)
"""


SCHEDULE_EPILOG = """\
engines (--engine):
  vllm    speculative_config JSON: num_speculative_tokens (the largest K) and
          num_speculative_tokens_per_batch_size [[start_bs, end_bs, K], ...] covering 1..N
          (vLLM keeps the last range's K above N). With several --seq: an object with
          that config under "speculative_config" and, under "proposed_context_axis", the
          proposed [bs_lo, bs_hi, ctx_lo, ctx_hi, K] form (vLLM RFC #48627, not released).
  trtllm  YAML for the LLM API (--config FILE): speculative_config with decoding_type,
          max_draft_len and draft_len_schedule {upper batch: K}; max_concurrency (above
          which TensorRT-LLM drafts 0) is stated in a comment, since TensorRT-LLM
          rejects it together with draft_len_schedule.
  sglang  YAML for one server: by_batch_size, the adaptive config keyed by batch size
          that pins each range's K (SGLang's current source; EAGLE and EAGLE3, topk 1),
          static (one depth for every batch) and adaptive_tiers (the documented flat
          candidate_steps, at most 3 tiers, switched on the accepted length).
  table   the ranges, gamma*, the expected speedup and what each engine's limits cost.

methods (--method, one the model has; --draft-model PATH where the engine needs one):
  mtp          the model's own MTP layers (DeepSeek-V3/R1, V4, GLM-4.x, Qwen3.6: their
               config.json has num_nextn_predict_layers or mtp_num_hidden_layers); no path
  eagle3       an EAGLE-3 head; eagle: an EAGLE-1/2 head (not in TensorRT-LLM's PyTorch backend)
  draft_model  a small draft model (SGLang STANDALONE, TensorRT-LLM DraftTarget)
  dflash       a DFlash block drafter
  ngram        n-gram lookup, no weights (not written for SGLang)
  The drafter's path goes in vLLM's "model", SGLang's --speculative-draft-model-path and
  TensorRT-LLM's speculative_model. Each engine's limits are printed with its form (vLLM's
  on standard error, JSON having no comments).

kept = the mean over batch sizes 1..N of throughput at the table's K / throughput at
gamma*(B). --max-ranges and --max-k limit the tables; the ranges are chosen to keep
the most. --step-costs FILE.csv (columns batch_size,num_draft_tokens,step_seconds: the
whole speculative step, verify and draft, in seconds) replaces the modelled step. The
batches stop at what memory holds without a draft, and no draft length is set above the
batch its slots hold; a --max-batch past that gets one line on standard error.

examples:
  speclib schedule --model deepseek-v4-flash --hardware b200 --seq 4096 --alpha 0.75 --draft-cost 0.1 --max-batch 4096
  speclib schedule --model qwen3.6-35b-a3b --drafter qwen3.6-mtp --roofline aggregate --seq 512 \\
                   --max-batch 2048 --engine trtllm
  speclib schedule --model llama-3-70b --alpha 0.8 --max-batch 512 --engine vllm --max-ranges 3 \\
                   --method eagle3 --draft-model yuhuili/EAGLE3-LLaMA3.3-Instruct-70B
  speclib schedule --model deepseek-v4-flash --alpha 0.75 --seq 1024,8192,65536 --max-batch 4096 --engine vllm
  speclib schedule --alpha 0.75 --step-costs steps.csv --max-batch 512 --engine sglang
"""

PROFILE_EPILOG = """\
Writes batch_size,num_draft_tokens,step_seconds: the seconds of one speculative step
(verify num_draft_tokens + 1 positions per sequence and draft them; 0 = a plain
decode step) as the roofline prices it, for every batch 1..N (or --batch GRID) and
draft length 0..--gamma-max (default 16). The paper's one-layer ledger is scaled to
seconds by the model's layers over the chip's bandwidth. A schedule from this file
(--step-costs) equals the schedule from the model. A batch past what memory holds gets
one line on standard error (its rows price a step memory does not hold).

examples:
  speclib profile --model deepseek-v4-flash --hardware b200 --seq 4096 --max-batch 4096 --output steps.csv
  speclib profile --model qwen3.6-35b-a3b --drafter qwen3.6-dflash --roofline aggregate --seq 512 --batch 1:4096:log40
"""


def _add_model_options(parser, *, several: bool, calibration_engine: bool = True):
    noun = "name(s), comma-separated" if several else "name"
    parser.add_argument("--model", help=f"model preset {noun} (default {presets.DEFAULT_MODEL.name}; see 'speclib presets')")
    parser.add_argument("--model-config", metavar="PATH", help="a Hugging Face style config.json to build the model from, instead of --model")
    parser.add_argument("--hardware", help=f"hardware preset {noun} (default {presets.DEFAULT_HARDWARE.name})")
    parser.add_argument("--hardware-config", metavar="PATH", help="a chip that is not a preset: a JSON or YAML file "
                        "of its numbers (vendor, memory_bandwidth_TBps, hbm_capacity_GB, bf16_TFLOPS, fp8_TFLOPS, "
                        "fp4_TFLOPS), instead of --hardware")
    parser.add_argument("--gamma-max", type=_typed("--gamma-max", int), default=64, metavar="N", help="longest draft length searched, 0..4096 (default 64)")
    parser.add_argument(
        "--drafter", metavar="NAME" + (",..." if several else ""),
        help=f"a drafter priced by its own roofline instead of --draft-cost: {', '.join(presets.drafter_names())} "
        "(prices the whole model's step in seconds)",
    )
    parser.add_argument(
        "--roofline", choices=ROOFLINES, default="per-component",
        help="how a step's components compose: per-component (the paper, default) or aggregate (one roofline per "
        "precision stream, as the sequel's simulator charges; prices the whole model's step)",
    )
    parser.add_argument(
        "--query-bytes", action="store_true",
        help="count the query bytes in attention's cost (the paper's ledger leaves them out; default off)",
    )
    parser.add_argument(
        "--step-time", choices=_cal.STEP_TIMES, default="roofline",
        help="how every step (verify and drafter) is timed: roofline (the lower bound, default) or calibrated (the "
        "roofline with a chip factor, a fixed time per step, a time per sequence and per extra verified position, "
        "fitted on measured decoding and speculative runs on B200, H100, H200, MI300X, MI325X, MI355X; prices "
        "the whole model's step)",
    )
    parser.add_argument("--tp", type=_typed("--tp", int), default=1, metavar="N",
                        help="GPUs the model is split over (tensor parallel, 1..1024, default 1): sets the memory "
                        "check, and the calibrated step's share per GPU")
    parser.add_argument("--ep", type=_typed("--ep", int), default=1, metavar="N",
                        help="GPUs of the --tp group the routed experts are split over, whole (expert parallelism; "
                        "divides --tp and the experts; default 1)")
    parser.add_argument("--dp-attention", action="store_true",
                        help="split attention by sequence over the --tp GPUs (data-parallel attention: each GPU "
                        "holds its own sequences' caches and the attention weights whole)")
    parser.add_argument("--attention", choices=_cost.ATTENTIONS, default=_cost.DEFAULT_ATTENTION,
                        help="how DeepSeek-V4's attention is priced and held: served (compressed, as its config "
                        "serves it; the default of every command and of speclib.Deployment) or paper (every layer "
                        "MLA over the whole context, as the paper prices it, reproducing its figures); other models "
                        "are the same either way. The output's header says which")
    parser.add_argument("--calibration", metavar="FILE",
                        help="price every step with this calibration (as 'speclib fit' writes it) instead of "
                        "--step-time: implies a calibrated step")
    if calibration_engine:  # schedule's --engine names its output engine, and that engine calibrates too
        parser.add_argument("--engine", choices=_cal.ENGINES, default=_cal.DEFAULT_ENGINE,
                            help="the serving engine whose fixed per-step time --step-time calibrated uses (default "
                            "vLLM; TRT measured on B200 and H200 only)")
    parser.add_argument("--reserve", type=_typed("--reserve", float), default=_capacity.DEFAULT_RESERVE,
                        metavar="F", help="fraction of each GPU's HBM kept free in the memory check (default 0.1, "
                        "vLLM's default)")


ACCEPTANCE_HELP = ("a survival curve instead of --alpha: what 'speclib acceptance --output' writes, a JSON list, a "
                   "JSON object's 'survival' (or FILE#KEY), numbers separated by commas, or vLLM's /metrics scrape "
                   "or log itself")

ACCEPTANCE_EPILOG = """\
formats (told apart by their content, or --format):
  vllm-prometheus  a scrape of vLLM's /metrics: position j's accepted count
                   (vllm:spec_decode_num_accepted_tokens_per_pos_total{position="j"}, j from 0)
                   over the drafts (vllm:spec_decode_num_drafts_total) is the probability that
                   draft position j + 1 survives. With --before, an earlier scrape of the same
                   server: the counts between the two (one run's own).
  vllm-log         vLLM's "SpecDecoding metrics:" log lines (per-position acceptance rate,
                   mean acceptance length), combined over the lines weighted by their drafts.
  sglang-log       SGLang's "Decode batch" log lines (accept len, the bonus token included),
                   combined weighted by #running-req; SGLang gives no per-position rate, so
                   --gamma (the server's speculative_num_steps) is needed and the curve is the
                   i.i.d. one that mean length implies, labelled as such.

examples:
  curl -s localhost:8000/metrics > before.prom; <run the benchmark>; curl -s localhost:8000/metrics > after.prom
  speclib acceptance after.prom --before before.prom --output curve.json
  speclib acceptance vllm.log
  speclib acceptance sglang.log --gamma 3
  speclib schedule --model-config config.json --acceptance curve.json --max-batch 256 --engine vllm
"""


def run_acceptance(args, out) -> int:
    from ..evidence import engine_metrics

    try:
        read = engine_metrics.read_engine_metrics(args.file, args.before, gamma=args.gamma, format=args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    record = read.to_json()
    text = json.dumps(record, indent=1) + "\n"
    if args.json:
        out.write(text)
    else:
        out.write(_acceptance_text(read) + "\n")
    if args.output is not None:
        _write_output(argparse.Namespace(output=args.output), text, out)
    return 0


def _acceptance_text(read) -> str:
    """What ``speclib acceptance`` prints."""
    from ..evidence.engine_metrics import FORMAT_NAMES

    span = (f"the counts between two scrapes ({read.sources[0]} -> {read.sources[1]})" if len(read.sources) == 2
            else f"{read.sources[0]}")
    lines = [f"{FORMAT_NAMES[read.format]}: {span}" + (f", model {read.model}" if read.model else "")]
    counted = [f"{_grouped(v)} {what}" for v, what in ((read.drafts, "drafts"), (read.draft_tokens, "draft tokens"),
                                                      (read.accepted_tokens, "accepted")) if v is not None]
    if counted:
        lines.append("  " + ", ".join(counted))
    lines += ["  " + note for note in read.notes]
    lines.append("")
    values = read.survival.values
    conditional = read.survival.conditional_acceptance
    if read.measured:
        bounds = read.interval()
        rows = [(str(d), str(d - 1), f"{s:.4f}", _rate(c)) for d, (s, c) in enumerate(zip(values, conditional), 1)]
        if bounds is not None:
            rows = [row + (f"{lo:.4f}-{hi:.4f}",) for row, lo, hi in zip(rows, bounds[0].values, bounds[1].values)]
        headers = ("draft position d", "vLLM position", "survives s(d)", "given d-1") + (("95% interval",)
                                                                                         if bounds else ())
        table = format_table(headers, rows)
        lines += ["  per-position acceptance: the survival curve (vLLM numbers positions from 0)"]
        if bounds is not None:
            lines.append("  (interval: Wilson, each draft an independent trial; drafts of one request are not, so "
                         "the true one is wider)")
        lines.append("")
    else:
        rows = [(str(d), f"{s:.4f}", _rate(c)) for d, (s, c) in enumerate(zip(values, conditional), 1)]
        table = format_table(("draft position d", "survives s(d)", "given d-1"), rows)
        lines += [f"  IMPLIED, not measured: the engine gives the mean length only, so this is the i.i.d. curve "
                  f"alpha**d with alpha = {read.alpha:.4f}, the alpha whose expected length at {read.gamma} drafted "
                  "tokens matches it", ""]
    lines += ["  " + line for line in table.splitlines()]
    lines += ["", f"  mean acceptance length  {read.accept_length:.4f} tokens per verify step (the bonus token "
              f"included: 1 + {read.accept_length - 1:.4f} accepted drafts)"]
    if read.measured:
        lines.append(f"  the i.i.d. alpha with that mean length at {read.gamma} drafts: {read.alpha:.4f} (for "
                     "comparison; the curve above is what the model prices)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="speclib",
        description="Read off the best speculative-decoding draft length for a deployment "
        "(the cost model of Finn 2026, 'The economics of speculative decoding').",
        epilog=TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"speclib {__version__}")
    sub = parser.add_subparsers(dest="command",
                                metavar="{gamma,sweep,presets,schedule,profile,fit,acceptance,frontier}",
                                parser_class=_Parser, required=True)

    gamma = sub.add_parser(
        "gamma", help="gamma*, the speedup and the marginal cost at one operating point",
        description="The best draft length gamma*, its speedup over plain decoding, and the marginal "
        "cost of a speculated token by component, at one batch size, context length and acceptance rate.",
        epilog=GAMMA_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gamma.add_argument("--batch", type=_typed("--batch", float), required=True, metavar="B", help="sequences decoded together (> 0)")
    gamma.add_argument("--seq", type=_typed("--seq", float), required=True, metavar="S", help="average context length in tokens (> 0)")
    gamma.add_argument("--alpha", type=_typed("--alpha", float), metavar="A", help="per-token acceptance probability, 0..1 (required unless --drafter brings a measured survival curve)")
    gamma.add_argument("--draft-cost", type=_typed("--draft-cost", float), metavar="C", help="the paper's drafter cost per drafted token, x a decode step (>= 0, default 0.1)")
    gamma.add_argument("--acceptance", metavar="FILE", help=ACCEPTANCE_HELP)
    _add_model_options(gamma, several=False)
    gamma.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    gamma.set_defaults(handler=run_gamma)

    sweep = sub.add_parser(
        "sweep", help="gamma* and the speedup over grids of batch, length, acceptance, drafter cost",
        description="gamma* and the speedup over the full grid of the given batch sizes, context lengths, "
        "acceptance rates and drafter costs, for each model and chip; CSV (default) or an aligned table.",
        epilog=SWEEP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("--batch", required=True, metavar="GRID", help="batch sizes (> 0), e.g. 1,8,64 or 1:30000:log20")
    sweep.add_argument("--seq", required=True, metavar="GRID", help="context lengths (> 0), e.g. 1024,4096")
    sweep.add_argument("--alpha", metavar="GRID", help="acceptance probabilities in [0, 1], e.g. 0.6:0.9:lin4 (default with --drafter: its measured survival curve)")
    sweep.add_argument("--draft-cost", metavar="GRID", help="the paper's drafter costs (>= 0), default 0.1")
    _add_model_options(sweep, several=True)
    sweep.add_argument("--format", choices=("csv", "table"), default="csv", help="output format (default csv)")
    sweep.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")
    sweep.set_defaults(handler=run_sweep)

    listing = sub.add_parser(
        "presets", help="list the model and hardware presets with their key numbers",
        description="The model presets (attention and FFN kind, W_attn, W_E, E/k, m_c, m_q, f, weight formats) "
        "and hardware presets (bandwidth, dense peaks, ridges, how fp4 runs).",
        epilog=PRESETS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    only = listing.add_mutually_exclusive_group()
    only.add_argument("--models-only", dest="kind", action="store_const", const="models", help="list models only")
    only.add_argument("--hardware-only", dest="kind", action="store_const", const="hardware", help="list hardware only")
    listing.set_defaults(kind="all")
    listing.add_argument("--sources", action="store_true", help="also print where each preset's numbers come from")
    listing.add_argument("--model-config", metavar="PATH", help="also list the model built from this config.json")
    listing.add_argument("--hardware-config", metavar="PATH", help="also list the chip this hardware config "
                         "(JSON or YAML) describes")
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    listing.set_defaults(handler=run_presets)

    sched = sub.add_parser(
        "schedule", help="gamma* per batch size as the table vLLM, TensorRT-LLM or SGLang reads",
        description="The best draft length for every batch size 1..N, merged into ranges, in the form a serving "
        "engine reads, with what each engine's limits cost against the per-batch optimum.",
        epilog=SCHEDULE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sched.add_argument("--max-batch", type=_typed("--max-batch", int), required=True, metavar="N",
                       help="largest batch size the table covers (from 1)")
    sched.add_argument("--engine", choices=("vllm", "trtllm", "sglang", "table"), default="table",
                       help="output form (default table)")
    sched.add_argument("--seq", metavar="S[,S...]", help="context length(s) in tokens (default 4096); the first is "
                       "the reference of the batch-only tables, several add vLLM's proposed context axis")
    sched.add_argument("--alpha", type=_typed("--alpha", float), metavar="A", help="per-token acceptance, 0..1")
    sched.add_argument("--acceptance", metavar="FILE", help=ACCEPTANCE_HELP)
    sched.add_argument("--draft-cost", type=_typed("--draft-cost", float), metavar="C",
                       help="the paper's drafter cost per drafted token, x a decode step (default 0.1)")
    sched.add_argument("--step-costs", metavar="FILE.csv", help="measured step costs (batch_size,num_draft_tokens,"
                       "step_seconds) instead of the modelled step")
    sched.add_argument("--max-ranges", type=_typed("--max-ranges", int), metavar="R",
                       help="at most R batch ranges (TensorRT-LLM: keys; SGLang: servers), chosen to keep the most")
    sched.add_argument("--max-k", type=_typed("--max-k", int), metavar="K",
                       help="the engine's largest draft length (default: none below --gamma-max; the engines' docs "
                       "state no maximum)")
    sched.add_argument("--method", metavar="NAME", help="the speculative method, one the model has: mtp (the "
                       "model's own MTP layers), eagle3, eagle, draft_model, dflash or ngram, or an engine's own "
                       "spelling (default: the --drafter's kind, else mtp where the model has MTP layers)")
    sched.add_argument("--draft-model", metavar="PATH", help="the drafter's checkpoint (a path or a Hugging Face "
                       "name), required by eagle3, eagle, draft_model and dflash: vLLM's model, SGLang's "
                       "--speculative-draft-model-path, TensorRT-LLM's speculative_model")
    _add_model_options(sched, several=False, calibration_engine=False)
    sched.add_argument("--output", metavar="FILE", help="write to FILE (replaced only when everything succeeded)")
    sched.set_defaults(handler=run_schedule)

    prof = sub.add_parser(
        "profile", help="the model's step costs in the measured-cost CSV format",
        description="Seconds of a speculative step (verify and draft) per batch size and draft length, as the "
        "roofline prices it, in the CSV format --step-costs reads.",
        epilog=PROFILE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prof.add_argument("--max-batch", type=_typed("--max-batch", int), metavar="N", help="every batch size 1..N")
    prof.add_argument("--batch", metavar="GRID", help="these batch sizes instead (e.g. 1:4096:log40)")
    prof.add_argument("--seq", metavar="S", help="context length in tokens (default 4096)")
    prof.add_argument("--draft-cost", type=_typed("--draft-cost", float), metavar="C",
                      help="the paper's drafter cost per drafted token, x a decode step (default 0.1)")
    prof.add_argument("--acceptance", metavar="FILE", help="a survival curve (as for schedule): no draft longer "
                      "than its positions is profiled")
    _add_model_options(prof, several=False)
    prof.set_defaults(gamma_max=16)
    for action in prof._actions:
        if action.dest == "gamma_max":
            action.help = "longest draft length profiled, 0..4096 (default 16; capped at a DFlash drafter's block)"
    prof.add_argument("--output", metavar="FILE", help="write to FILE (replaced only when everything succeeded)")
    prof.set_defaults(handler=run_profile)

    fitp = sub.add_parser(
        "fit", help="fit the calibrated step to your own benchmark results",
        description="Fit a deployment's step time (fixed per step, per sequence, per extra verified position, per "
        "drafter pass) to benchmark result files: vllm bench serve --save-result JSON, SGLang bench_serving "
        "JSON lines or InferenceMAX JSON; runs without speculation and with it (their accept length measured). "
        "Prints each run's fitted TPOT and error and writes a calibration that --calibration reads.",
        epilog=FIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fitp.add_argument("files", nargs="+", metavar="FILE", help="benchmark result files")
    fitp.add_argument("--model", help="model preset name (see 'speclib presets'); or --model-config")
    fitp.add_argument("--model-config", metavar="PATH", help="a Hugging Face style config.json to build the model "
                      "from, instead of --model")
    fitp.add_argument("--hardware", help="hardware preset name; or --hardware-config")
    fitp.add_argument("--hardware-config", metavar="PATH", help="a chip that is not a preset (JSON or YAML), "
                      "instead of --hardware")
    fitp.add_argument("--tp", type=_typed("--tp", int), default=1, metavar="N", help="GPUs the model is split over")
    fitp.add_argument("--engine", choices=_cal.ENGINES, default=_cal.DEFAULT_ENGINE,
                      help="the engine name the fitted fixed time is stored under (default vLLM)")
    fitp.add_argument("--format", choices=("vllm", "sglang", "inferencemax"), help="the files' format (default: "
                      "detected)")
    fitp.add_argument("--gamma", type=_typed("--max-k", int), metavar="K", help="the draft length of files that "
                      "do not state it")
    fitp.add_argument("--output", metavar="FILE", required=True, help="the calibration JSON to write (written only "
                      "when the fit succeeded)")
    fitp.set_defaults(handler=run_fit)

    acc = sub.add_parser(
        "acceptance", help="per-position acceptance (the survival curve) from vLLM's metrics or log, or SGLang's log",
        description="The survival curve and the mean acceptance length a serving engine reports: vLLM's Prometheus "
        "metrics (one scrape, or two around a run), vLLM's 'SpecDecoding metrics' log lines, or SGLang's "
        "'Decode batch' log lines. --output writes the curve as JSON for --acceptance.",
        epilog=ACCEPTANCE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    acc.add_argument("file", metavar="FILE", help="a /metrics scrape (after the run), a vLLM log or an SGLang log")
    acc.add_argument("--before", metavar="FILE", help="an earlier /metrics scrape of the same server: read the "
                     "counts between the two")
    acc.add_argument("--format", choices=("vllm-prometheus", "vllm-log", "sglang-log"),
                     help="the file's format (default: told by its content)")
    acc.add_argument("--gamma", type=_typed("--max-k", int), metavar="K", help="the draft length the engine ran "
                     "(needed for an SGLang log: speculative_num_steps)")
    acc.add_argument("--json", action="store_true", help="print the JSON that --output writes")
    acc.add_argument("--output", metavar="FILE", help="write the curve as JSON (written only when it was read)")
    acc.set_defaults(handler=run_acceptance)

    front = sub.add_parser(
        "frontier", help="throughput per GPU against speed per user, with and without speculation, and the price "
        "of a token",
        description="A deployment's frontier as operators choose on it: output tokens per second per GPU against "
        "tokens per second per user, at each concurrency, with and without speculation; the price of a million "
        "output tokens at a GPU-hour price, and the cheapest configuration at an interactivity target.",
        epilog=FRONTIER_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    front.add_argument("--workload", default="1k1k", metavar="NAME|I,O", help="a serving workload: 1k1k (default), "
                       "1k8k or 8k1k, or INPUT,OUTPUT mean token lengths per request")
    front.add_argument("--alpha", type=_typed("--alpha", float), metavar="A", help="per-token acceptance, 0..1 "
                       "(required unless --drafter brings a measured survival curve)")
    front.add_argument("--acceptance", metavar="FILE", help=ACCEPTANCE_HELP)
    front.add_argument("--draft-cost", type=_typed("--draft-cost", float), metavar="C",
                       help="the paper's drafter cost per drafted token, x a decode step, for a model without MTP "
                       "layers and no --drafter (default 0.1)")
    front.add_argument("--gamma", type=_typed("--gamma", int), metavar="K", help="the draft length (default: the "
                       "best at each concurrency, 1..--gamma-max)")
    front.add_argument("--concurrency", metavar="GRID", help="concurrencies (users), e.g. 1,4,16,64 or "
                       "1:1024:log20 (default: 20 from 1 to 1,024)")
    front.add_argument("--weights", choices=presets.PRECISIONS, help="the decoder weights' precision as served "
                       "(default: the preset's)")
    front.add_argument("--kv-cache", choices=tuple(presets.KV_BYTES), help="the KV cache's precision (default: "
                       "the preset's)")
    front.add_argument("--price-per-gpu-hour", type=_typed("--price-per-gpu-hour", float), metavar="P",
                       help="price of one GPU for an hour: adds the price of a million output tokens")
    front.add_argument("--min-tokens-per-user", type=_typed("--min-tokens-per-user", float), metavar="R",
                       help="an interactivity target: the cheapest configuration of each arm that serves every "
                       "user at least R tokens per second")
    front.add_argument("--format", choices=("table", "csv", "json"), default="table",
                       help="output format (default table)")
    front.add_argument("--output", metavar="FILE", help="write to FILE (replaced only when everything succeeded)")
    front.add_argument("--plot", metavar="FILE", help="also draw the frontiers to FILE, a .png or .svg "
                       "(needs speclib[book])")
    _add_model_options(front, several=False)
    front.set_defaults(gamma_max=8, handler=run_frontier)
    for action in front._actions:
        if action.dest == "gamma_max":
            action.help = "longest draft length searched where --gamma is not given, 1..64 (default 8)"
    return parser


FIT_EPILOG = """examples:
  speclib fit base-c1.json base-c8.json base-c32.json mtp-c1.json mtp-c8.json mtp-c32.json \\
      --model deepseek-v3 --hardware h200 --tp 8 --output my-h200.json
  speclib fit base-*.json spec-*.json --model-config config.json --hardware-config my-gpu.yaml --output mine.json
  speclib schedule --model deepseek-v3 --hardware h200 --tp 8 --calibration my-h200.json --alpha 0.7 --max-batch 64
"""


def run_fit(args, out) -> int:
    from ..evidence import bench_results, own_fit

    if args.model is None and args.model_config is None:
        raise UsageError("--model: required (a model preset name), or --model-config PATH")
    if args.hardware is None and args.hardware_config is None:
        raise UsageError("--hardware: required (a hardware preset name), or --hardware-config PATH")
    models, chips = _models(args), _hardware(args)
    if len(models) != 1 or len(chips) != 1:
        raise UsageError("--model/--hardware: fit takes one model and one chip")
    model, chip = models[0], chips[0]
    records = []
    try:
        for path in args.files:
            records.extend(bench_results.read_results(path, format=args.format, gamma=args.gamma, tp=args.tp))
        fitted = own_fit.fit_measurements(records, model, chip, tp=args.tp, engine=args.engine,
                                           label=os.path.basename(args.output))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cal = fitted.calibration
    out.write(f"fitted on {len(records)} runs of {cal.model}: a = {cal.fixed_s[next(iter(cal.fixed_s))][args.engine] * 1e3:.3g} ms "
              f"per step, d = {cal.per_sequence_s * 1e6:.3g} us per sequence, e = {cal.per_position_s * 1e6:.3g} us "
              f"per extra position, a_d = {cal.per_draft_pass_s * 1e3:.3g} ms per drafter pass "
              f"(mu = {next(iter(cal.roofline_factor.values())):.3g}, held)\n")
    names = [os.path.basename(r.source)[:40] for r, *_ in fitted.residuals]
    wide = max(len("file"), *map(len, names))  # as wide as the longest name, so the table stays narrow
    out.write(f"{'file':<{wide}} {'batch':>6} {'gamma':>5} {'TPOT ms':>9} {'fitted':>9} {'error':>7}\n")
    for name, (r, fitted_ms, err) in zip(names, fitted.residuals):
        out.write(f"{name:<{wide}} {r.concurrency:>6} {r.gamma or 0:>5} {r.tpot_ms:>9.3f} "
                  f"{fitted_ms:>9.3f} {err * 100:>6.1f}%\n")
    data = {"about": "A calibration fitted by `speclib fit` (speclib.evidence.own_fit.fit_measurements); read it "
                     "with --calibration or speclib.evidence.own_fit.read_calibration.", **cal.to_json()}
    _write_atomically(args.output, json.dumps(data, indent=1) + "\n")
    return 0


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _apply_calibration(args) -> None:
    """--calibration FILE: the step is priced with that calibration."""
    path = getattr(args, "calibration", None)
    if path:
        from ..evidence import own_fit

        try:
            args.step_time = own_fit.read_calibration(path)
        except ValueError as exc:
            raise UsageError(f"--calibration {exc}") from None


def read_acceptance_file(path):
    """The survival curve ``--acceptance`` names: a curve file (a JSON list,
    a JSON object's ``survival`` or ``FILE#KEY``, numbers separated by commas;
    what ``speclib acceptance --output`` writes) or an engine's own file (a
    vLLM /metrics scrape or log line, read by
    :func:`speclib.evidence.engine_metrics.read_engine_metrics`)."""
    from ..evidence import engine_metrics
    from . import schedule as _schedule

    text_path = str(path).partition("#")[0]
    try:
        with open(text_path, encoding="utf-8") as stream:
            text = stream.read()
        json.loads(text)
    except (OSError, UnicodeDecodeError):
        text = ""  # the curve reader says what is wrong with the file
    except ValueError:  # not JSON: an engine's file, or numbers separated by commas
        if engine_metrics.sniff(text):
            return engine_metrics.read_engine_metrics(text_path).survival
    return _schedule.read_acceptance(path)


def _apply_acceptance(args) -> None:
    """--acceptance FILE: the survival curve, read once (``args.acceptance_curve``)."""
    path = getattr(args, "acceptance", None)
    args.acceptance_curve = None
    if path is None or args.command == "acceptance":
        return
    if getattr(args, "alpha", None) is not None:
        raise UsageError("--acceptance: give either --alpha (i.i.d. acceptance) or --acceptance (a survival curve), "
                         "not both")
    try:
        args.acceptance_curve = read_acceptance_file(path)
    except ValueError as exc:
        raise UsageError(f"--acceptance: {exc}") from None


def _report(message: str) -> int:
    print(" ".join(message.split()), file=sys.stderr)
    return EXIT_USAGE


def run_line(line: str) -> tuple:
    """Run one ``speclib ...`` command line as a shell would (words split as
    the shell splits them, a word with ``*`` or ``?`` expanded to the sorted
    files it matches) and return (exit status, everything it printed, standard
    output and error together): how the book shows a command and its output."""
    import contextlib
    import glob
    import io
    import shlex

    words = shlex.split(line)
    if not words or words[0] != "speclib":
        raise ValueError(f"line must be a speclib command (starting with 'speclib'); got {line!r}")
    argv = []
    for word in words[1:]:
        matches = sorted(glob.glob(word)) if any(c in word for c in "*?") else []
        argv.extend(matches or [word])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            status = main(argv)
        except SystemExit as exc:  # --help and --version exit through argparse
            status = exc.code or 0
    return status, printed.getvalue()


def main(argv=None) -> int:
    """Entry point of ``speclib`` and ``python -m speclib``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return _report(str(exc))
    try:
        _apply_calibration(args)
        _apply_acceptance(args)
        return args.handler(args, sys.stdout)
    except UsageError as exc:
        return _report(f"speclib {args.command}: error: {exc}")
    except MissingExtra as exc:  # a part that needs the book's packages, run from the lean install
        return _report(f"speclib {args.command}: error: {exc}")
    except BrokenPipeError:
        # Piped into a reader that stopped early (e.g. `head`): not an error.
        # Point stdout at devnull so the interpreter's final flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
