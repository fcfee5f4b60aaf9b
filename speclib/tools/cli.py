"""The ``speclib`` command: read off the draft length for a deployment.

The subcommands, each with examples in its ``--help``:

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

Each subcommand is a module of :mod:`speclib.tools.commands` (what they share:
:mod:`~speclib.tools.commands.options`, :mod:`~speclib.tools.commands.output`);
this module builds the parser from them and runs a command line. Every number
comes from :func:`speclib.optimal_gamma`, :func:`speclib.marginal_cost` and
:func:`speclib.core.cost.cost_shares`; the commands only parse, check and print.
Bad input exits with status 2 and one line on stderr naming the option and what
it accepts.
"""
from __future__ import annotations

import argparse
import os
import sys

from .._extras import MissingExtra
from .commands import acceptance, fit, frontier, gamma, options, presets, profile, schedule, sweep
from .commands.options import UsageError

TOP_EPILOG = """\
start from your own runs: benchmark three concurrencies spread over the range you serve (the
smallest, one between, the largest) with and without speculation, fit the step to them (the shipped
calibration is the fit's prior) and price with --calibration. Measured on the engine sweeps in
speclib's data (the two with five or more concurrencies), such a fit predicts the speed-up between its
runs better than the nearest run or a line through them; fitted on the smallest runs only, it predicts
TPOT past them but the speed-up no better than the last run carried forward (benchmarks/bench_few_shot.py).
  speclib fit base-c4.json base-c16.json base-c64.json mtp-c4.json mtp-c16.json mtp-c64.json \\
      --model deepseek-v3 --hardware h200 --tp 8 --output mine.json
  speclib schedule --model deepseek-v3 --hardware h200 --tp 8 --calibration mine.json --alpha 0.7 --max-batch 64

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

#: The subcommands (a module of speclib.tools.commands each), as ``speclib --help`` lists them.
SUBCOMMANDS = (gamma, sweep, presets, schedule, profile, fit, acceptance, frontier)


def build_parser() -> argparse.ArgumentParser:
    parser = options.Parser(
        prog="speclib",
        description="Read off the best speculative-decoding draft length for a deployment "
        "(the cost model of Finn 2026, 'The economics of speculative decoding').",
        epilog=TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"speclib {__version__}")
    names = [command.__name__.rpartition(".")[2] for command in SUBCOMMANDS]
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(names) + "}", parser_class=options.Parser,
                                required=True)
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    return parser


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
        return options.report(str(exc))
    try:
        options.apply_calibration(args)
        options.apply_acceptance(args)
        return args.handler(args, sys.stdout)
    except UsageError as exc:
        return options.report(f"speclib {args.command}: error: {exc}")
    except MissingExtra as exc:  # a part that needs the book's packages, run from the lean install
        return options.report(f"speclib {args.command}: error: {exc}")
    except BrokenPipeError:
        # Piped into a reader that stopped early (e.g. `head`): not an error.
        # Point stdout at devnull so the interpreter's final flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
