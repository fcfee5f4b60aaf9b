"""``speclib acceptance``: the survival curve a serving engine reports
(vLLM's /metrics scrape or log, SGLang's log; :mod:`speclib.evidence.engine_metrics`),
which ``--acceptance`` reads."""
from __future__ import annotations

import argparse
import json

from . import options, output
from .options import UsageError

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


def add_parser(sub):
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
    acc.add_argument("--gamma", type=options.typed("--max-k", int), metavar="K", help="the draft length the engine ran "
                     "(needed for an SGLang log: speculative_num_steps)")
    acc.add_argument("--json", action="store_true", help="print the JSON that --output writes")
    acc.add_argument("--output", metavar="FILE", help="write the curve as JSON (written only when it was read)")
    acc.set_defaults(handler=run)


def run(args, out) -> int:
    from speclib.evidence import engine_metrics

    try:
        read = engine_metrics.read_engine_metrics(args.file, args.before, gamma=args.gamma, format=args.format)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    record = read.to_json()
    text = json.dumps(record, indent=1) + "\n"
    if args.json:
        out.write(text)
    else:
        out.write(_acceptance_text(read) + "\n")
    if args.output is not None:
        output.write_output(argparse.Namespace(output=args.output), text, out)
    return 0


def _acceptance_text(read) -> str:
    """What ``speclib acceptance`` prints."""
    from speclib.evidence.engine_metrics import FORMAT_NAMES

    span = (f"the counts between two scrapes ({read.sources[0]} -> {read.sources[1]})" if len(read.sources) == 2
            else f"{read.sources[0]}")
    lines = [f"{FORMAT_NAMES[read.format]}: {span}" + (f", model {read.model}" if read.model else "")]
    counted = [f"{output.grouped(v)} {what}" for v, what in ((read.drafts, "drafts"), (read.draft_tokens, "draft tokens"),
                                                      (read.accepted_tokens, "accepted")) if v is not None]
    if counted:
        lines.append("  " + ", ".join(counted))
    lines += ["  " + note for note in read.notes]
    lines.append("")
    values = read.survival.values
    conditional = read.survival.conditional_acceptance
    if read.measured:
        bounds = read.interval()
        rows = [(str(d), str(d - 1), f"{s:.4f}", output.rate(c)) for d, (s, c) in enumerate(zip(values, conditional), 1)]
        if bounds is not None:
            rows = [row + (f"{lo:.4f}-{hi:.4f}",) for row, lo, hi in zip(rows, bounds[0].values, bounds[1].values)]
        headers = ("draft position d", "vLLM position", "survives s(d)", "given d-1") + (("95% interval",)
                                                                                         if bounds else ())
        table = output.format_table(headers, rows)
        lines += ["  per-position acceptance: the survival curve (vLLM numbers positions from 0)"]
        if bounds is not None:
            lines.append("  (interval: Wilson, each draft an independent trial; drafts of one request are not, so "
                         "the true one is wider)")
        lines.append("")
    else:
        rows = [(str(d), f"{s:.4f}", output.rate(c)) for d, (s, c) in enumerate(zip(values, conditional), 1)]
        table = output.format_table(("draft position d", "survives s(d)", "given d-1"), rows)
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
