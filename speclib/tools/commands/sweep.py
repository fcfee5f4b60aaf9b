"""``speclib sweep``: gamma* and the speedup over a grid of batch sizes,
context lengths, acceptance rates and drafter costs (CSV or a table)."""
from __future__ import annotations

import argparse
import csv

import numpy as np

from ... import presets
from ...core.deployment import Deployment
from ...core.speculation import optimal_gamma
from . import options, output
from .options import UsageError

#: Largest (gamma_max + 1) x grid points one sweep evaluates at once (memory:
#: a few float arrays of this many elements).
MAX_SWEEP_CELLS = 10_000_000

SWEEP_COLUMNS = ("model", "hardware", "batch", "seq", "alpha", "draft_cost", "gamma_star", "speedup")
#: Appended after every other column: whether the batch fits in HBM at that
#: context (weights plus caches, --tp GPUs, --reserve kept free) and the
#: largest batch that does (empty when the model lacks the totals).
CAPACITY_COLUMNS = ("fits", "max_batch")
#: The last column: how DeepSeek-V4's attention was priced and held (--attention).
ATTENTION_COLUMNS = ("attention",)
#: After it: the precision each row was priced in, as served (--weights, --activations, --kv-cache, else the
#: checkpoint's): the weights ("fp8", or "fp8, experts fp4"; "activations fp8" added where they are asked) and
#: the KV cache.
PRECISION_COLUMNS = ("weights", "kv_cache")
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
                    raise UsageError(options.speclib_error(exc)) from None
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


def precision_cells(rows, deployment) -> list:
    """(weights, kv_cache) for each sweep row: the precision its deployment
    (``deployment`` with the row's model and chip) serves (:data:`PRECISION_COLUMNS`)."""
    words = {}
    cells = []
    for m, h, *_rest in rows:
        if (m, h) not in words:
            model, chip = presets.resolve(m if not isinstance(m, str) else _model_by_name(m),
                                          h if not isinstance(h, str) else _chip_by_name(h))
            served = deployment.replace(model=model, hardware=chip, drafter=None, drafter_weights=None,
                                        c_draft=None).model
            weights = served.proj_precision + ("" if served.ffn.precision == served.proj_precision
                                               else f", experts {served.ffn.precision}")
            weights += f", activations {served.activations}" if served.activations else ""
            kv = {b: name for name, b in presets.KV_BYTES.items()}.get(float(served.attention.kv_bytes),
                                                                      f"{served.attention.kv_bytes:g} B")
            words[(m, h)] = (weights, kv)
        cells.append(words[(m, h)])
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


def run(args, out) -> int:
    batch = options.parse_grid("--batch", args.batch, counts=True)
    seq = options.parse_grid("--seq", args.seq, counts=True)
    drafters = options.drafters(args)
    if args.alpha is None:
        if drafters == [None]:
            raise UsageError("--alpha: required (acceptances in [0, 1]) unless --drafter names drafters with "
                             "measured survival curves")
        alpha = [None]
    else:
        alpha = options.parse_grid("--alpha", args.alpha)
    draft_cost = options.parse_grid("--draft-cost", "0.1" if args.draft_cost is None else args.draft_cost)
    models, chips = options.models(args), options.hardware(args)
    _SWEEP_MODELS.clear()
    _SWEEP_MODELS.update({m.name: m for m in models})
    _SWEEP_CHIPS.clear()
    _SWEEP_CHIPS.update({h.name: h for h in chips})
    rows = sweep_records(models, chips, batch, seq, alpha, draft_cost, drafters=drafters, gamma_max=args.gamma_max,
                         deployment=options.deployment(args, models[0], chips[0], drafters[0]))
    try:
        memory = capacity_cells(rows, options.deployment(args, models[0], chips[0], drafters[0]))
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    priced = drafters != [None] or args.roofline != "per-component" or args.step_time != "roofline"
    clock = args.step_time != "roofline" or args.tp != 1
    bounded = running_cells(rows, options.deployment(args, models[0], chips[0], drafters[0]))
    queues = any(b is not None for b in bounded)
    columns = (SWEEP_COLUMNS + (("drafter", "roofline") if priced else ()) + (("step_time", "tp") if clock else ())
               + CAPACITY_COLUMNS + ATTENTION_COLUMNS + PRECISION_COLUMNS + (RUNNING_COLUMNS if queues else ()))
    served = precision_cells(rows, options.deployment(args, models[0], chips[0], drafters[0]))
    # one line on stderr for each acceptance of the grid at the edge, with the longest draft it gave
    for a in sorted({float(a) for a in alpha if a is not None and float(a) >= output.EDGE_ALPHA}):
        longest = max(int(r[6]) for r in rows if r[4] is not None and float(r[4]) == a)
        output.extrapolation_notes("sweep", alpha=a, gamma_star=longest, searched=args.gamma_max)

    def cells(a, c, exact):
        alpha_text = "measured" if a is None else (output.exact(a) if exact else f"{a:g}")
        cost_text = "" if c is None else (output.exact(c) if exact else f"{c:g}")
        return alpha_text, cost_text

    text_rows = []
    for (m, h, b, s, a, c, g, sp, d), (fits, limit), held, precision in zip(rows, memory, bounded, served):
        exact = args.format == "csv"
        alpha_text, cost_text = cells(a, c, exact)
        row = (m, h, output.exact(b), output.exact(s), alpha_text, cost_text, str(g), repr(sp) if exact else f"{sp:.4f}")
        row += (d or "constant", args.roofline) if priced else ()
        row += (str(args.step_time), str(args.tp)) if clock else ()
        row += ("" if fits is None else str(fits).lower(), "" if limit is None else str(limit))
        row += (args.attention,) + precision
        row += (("" if held is None else output.exact(held)),) if queues else ()
        text_rows.append(row)

    def write(stream):
        if args.format == "csv":
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(text_rows)
        else:
            align = "llrrrrrr" + "ll" * priced + "lr" * clock + "lr" + "r" + "rr" + "r" * queues
            stream.write(output.format_table(columns, text_rows, align=align) + "\n")

    if args.output is None:
        write(out)
        return 0
    try:
        with open(args.output, "w", newline="", encoding="utf-8") as stream:
            write(stream)
    except OSError as exc:
        raise UsageError(f"--output: cannot write {args.output!r} ({exc.strerror or exc})") from None
    return 0


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
or paper: how DeepSeek-V4's attention was priced, --attention), weights, kv_cache (the precision
served: --weights, --activations, --kv-cache, else the checkpoint's), and where a row is priced as the
whole step, running (its batch read as a concurrency: the sequences gamma_star runs, no more than
max_batch, the rest queued). CSV numbers are written so that they read back exactly.
"""


def add_parser(sub):
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
    options.add_model_options(sweep, several=True)
    sweep.add_argument("--format", choices=("csv", "table"), default="csv", help="output format (default csv)")
    sweep.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")
    sweep.set_defaults(handler=run)
