"""``speclib profile``: the model's own step costs in the measured-cost CSV
format that ``speclib schedule --step-costs`` reads."""
from __future__ import annotations

import argparse

import numpy as np

from . import options, output
from .options import UsageError

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


def add_parser(sub):
    prof = sub.add_parser(
        "profile", help="the model's step costs in the measured-cost CSV format",
        description="Seconds of a speculative step (verify and draft) per batch size and draft length, as the "
        "roofline prices it, in the CSV format --step-costs reads.",
        epilog=PROFILE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prof.add_argument("--max-batch", type=options.typed("--max-batch", int), metavar="N", help="every batch size 1..N")
    prof.add_argument("--batch", metavar="GRID", help="these batch sizes instead (e.g. 1:4096:log40)")
    prof.add_argument("--seq", metavar="S", help="context length in tokens (default 4096)")
    prof.add_argument("--draft-cost", type=options.typed("--draft-cost", float), metavar="C",
                      help="the paper's drafter cost per drafted token, x a decode step (default 0.1)")
    prof.add_argument("--acceptance", metavar="FILE", help="a survival curve (as for schedule): no draft longer "
                      "than its positions is profiled")
    options.add_model_options(prof, several=False)
    prof.set_defaults(gamma_max=16)
    for action in prof._actions:
        if action.dest == "gamma_max":
            action.help = "longest draft length profiled, 0..4096 (default 16; capped at a DFlash drafter's block)"
    prof.add_argument("--output", metavar="FILE", help="write to FILE (replaced only when everything succeeded)")
    prof.set_defaults(handler=run)


def run(args, out) -> int:
    import io

    from .. import schedule as _schedule

    model, chip, drafter = options.one_model(args)
    seq = options.seq_list(args)
    if len(seq) != 1:
        raise UsageError("--seq: profile measures at one context length; give one --seq")
    if (args.batch is None) == (args.max_batch is None):
        raise UsageError("--max-batch: give either --max-batch N (every batch 1..N) or --batch GRID")
    if args.max_batch is not None and not 1 <= args.max_batch <= 1_000_000:
        raise UsageError(f"--max-batch must be {options.OPTION_RANGES['--max-batch']}; got {args.max_batch}")
    batches = None if args.batch is None else options.parse_grid("--batch", args.batch, counts=True)
    deployment = options.deployment(args, model, chip, drafter)
    # a measured curve: no draft is longer than the positions it measured
    top = args.gamma_max if args.acceptance_curve is None else min(args.gamma_max, len(args.acceptance_curve))
    try:
        costs = _schedule.profile(seq=seq[0], batches=batches, max_batch=args.max_batch or 1,
                                  gamma_max=top, deployment=deployment)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    held = output.queue_line(deployment, float(np.max(costs.batches)), seq[0], (int(np.max(costs.gammas)),),
                             "the rows above it price steps of batches memory does not hold (a schedule of this "
                             "deployment stops there)", what="batch")
    output.note(held, "profile")
    buffer = io.StringIO()
    costs.write(buffer)
    return output.write_output(args, buffer.getvalue(), out)
