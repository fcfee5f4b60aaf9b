"""``speclib frontier``: throughput per GPU against speed per user, with and
without speculation, and what a million output tokens cost
(:mod:`speclib.core.frontier`, :mod:`speclib.tools.frontier`)."""
from __future__ import annotations

import argparse
import dataclasses

from ...core import calibrated as _cal
from .. import progress as _progress
from . import options, output
from .options import UsageError

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
  speclib frontier --model deepseek-r1 --hardware h200 --tp 8 --engine sglang --step-time calibrated \\
                   --workload 1k1k --alpha 0.6 --gamma 2 --price-per-gpu-hour 2.5 --min-tokens-per-user 50
  speclib frontier --model deepseek-r1 --hardware b200 --tp 8 --step-time calibrated --alpha 0.6 \\
                   --workload 8k1k --format csv --output frontier.csv --plot frontier.png
  speclib frontier --model qwen3.6-35b-a3b --drafter qwen3.6-mtp --roofline aggregate --workload 1024,512 \\
                   --concurrency 1:512:log12 --format json
"""


def add_parser(sub):
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
    front.add_argument("--alpha", type=options.typed("--alpha", float), metavar="A", help="per-token acceptance, 0..1 "
                       "(required unless --drafter brings a measured survival curve)")
    front.add_argument("--acceptance", metavar="FILE", help=options.ACCEPTANCE_HELP)
    front.add_argument("--draft-cost", type=options.typed("--draft-cost", float), metavar="C",
                       help="the paper's drafter cost per drafted token, x a decode step, for a model without MTP "
                       "layers and no --drafter (default 0.1)")
    front.add_argument("--gamma", type=options.typed("--gamma", int), metavar="K", help="the draft length (default: the "
                       "best at each concurrency, 1..--gamma-max)")
    front.add_argument("--concurrency", metavar="GRID", help="concurrencies (users), e.g. 1,4,16,64 or "
                       "1:1024:log20 (default: 20 from 1 to 1,024)")
    front.add_argument("--price-per-gpu-hour", type=options.typed("--price-per-gpu-hour", float), metavar="P",
                       help="price of one GPU for an hour: adds the price of a million output tokens")
    front.add_argument("--min-tokens-per-user", type=options.typed("--min-tokens-per-user", float), metavar="R",
                       help="an interactivity target: the cheapest configuration of each arm that serves every "
                       "user at least R tokens per second")
    front.add_argument("--format", choices=("table", "csv", "json"), default="table",
                       help="output format (default table)")
    front.add_argument("--output", metavar="FILE", help="write to FILE (replaced only when everything succeeded)")
    front.add_argument("--plot", metavar="FILE", help="also draw the frontiers to FILE, a .png or .svg "
                       "(needs speclib[book])")
    options.add_model_options(front, several=False)
    front.set_defaults(gamma_max=8, handler=run)
    for action in front._actions:
        if action.dest == "gamma_max":
            action.help = "longest draft length searched where --gamma is not given, 1..64 (default 8)"


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


def run(args, out) -> int:
    from ...core import frontier as _front
    from .. import frontier as _render

    model, chip, drafter = options.one_model(args)
    if args.plot is not None and _render.plot_kind(args.plot) is None:
        raise UsageError(f"--plot: FILE must end in .png or .svg; got {args.plot!r}")
    price = options.positive("--price-per-gpu-hour", args.price_per_gpu_hour)
    target = options.positive("--min-tokens-per-user", args.min_tokens_per_user)
    workload = _workload(args.workload)
    concurrencies = None if args.concurrency is None else options.parse_grid("--concurrency", args.concurrency, counts=True)
    alpha = args.acceptance_curve if args.acceptance_curve is not None else args.alpha
    deployment = options.deployment(args, model, chip, drafter)
    draws = len(_cal.calibration_of(deployment.step_time).draws) if _cal.calibration_of(deployment.step_time) else 0
    points = len(_front.DEFAULT_CONCURRENCIES) if concurrencies is None else len(concurrencies)
    message = (f"speclib frontier: pricing {points} concurrencies with and without speculation"
               + (", with cross-conformal intervals by model family" if draws else "") + " ...")
    try:
        _progress.delay()  # a bad SPECLIB_PROGRESS_DELAY is refused before any work
        with _progress.Progress(message):
            f = _front.frontier(deployment, workload, gamma=args.gamma, alpha=alpha, concurrencies=concurrencies,
                                gamma_max=args.gamma_max)
            f = dataclasses.replace(f, served_as=options.served_model(args, model))
            cheapest = None if target is None else f.cheapest(target, price)
            if args.format == "csv":
                text = _render.csv_text(f, price)
            elif args.format == "json":
                text = _render.json_text(f, price, cheapest, target)
            else:
                text = _render.table(f, price, cheapest, target)
            picture = None if args.plot is None else _render.plot_bytes(f, args.plot, price, target)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    output.extrapolation_notes("frontier", f.extrapolates, alpha=args.alpha if args.acceptance_curve is None else None,
                               gamma_star=int(f.speculative.gamma.max()),
                               searched=None if args.gamma is not None else args.gamma_max)
    if picture is not None:
        output.write_bytes("--plot", args.plot, picture)
    return output.write_output(args, text, out)
