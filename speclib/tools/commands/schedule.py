"""``speclib schedule``: gamma* for every batch size 1..N as the table a
serving engine reads (vLLM, TensorRT-LLM, SGLang), from the model or from
measured step costs (:mod:`speclib.tools.schedule`, :mod:`speclib.tools.engines`)."""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from . import options, output
from .options import UsageError

SCHEDULE_EPILOG = """\
engines (--engine, any case; --format config writes its form, --format table the neutral table):
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
  --format table (the default without --engine): the ranges, gamma*, the expected speedup
          and what each engine's limits cost, priced by --engine (default vllm).

methods (--method, one the model has; --draft-model PATH where the engine needs one):
  mtp          the model's own MTP layers (DeepSeek-V3/R1, V4, GLM-4.x, Qwen3.6: their
               config.json has num_nextn_predict_layers or mtp_num_hidden_layers); no path
  eagle3       an EAGLE-3 head; eagle: an EAGLE-1/2 head (not in TensorRT-LLM's PyTorch backend)
  draft_model  a small draft model (SGLang STANDALONE, TensorRT-LLM Draft_Target)
  dflash       a DFlash block drafter
  ngram        n-gram lookup, no weights (not written for SGLang)
  The drafter's path goes in vLLM's "model", SGLang's --speculative-draft-model-path and
  TensorRT-LLM's speculative_model. Each engine's limits are printed with its form (vLLM's
  on standard error, JSON having no comments).

kept = the mean over batch sizes 1..N of throughput at the table's K / throughput at
gamma*(B). Under a calibrated step (--step-time calibrated) adjacent ranges whose
speed-ups lie inside each other's 80 % interval are merged by default, each merged range
at the draft length that keeps the most over it. --max-ranges N (N >= 1) caps the
ranges and --max-k the draft length; the ranges are chosen to keep the most. --step-costs FILE.csv (columns batch_size,num_draft_tokens,step_seconds: the
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


def add_parser(sub):
    sched = sub.add_parser(
        "schedule", help="gamma* per batch size as the table vLLM, TensorRT-LLM or SGLang reads",
        description="The best draft length for every batch size 1..N, merged into ranges, in the form a serving "
        "engine reads, with what each engine's limits cost against the per-batch optimum.",
        epilog=SCHEDULE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sched.add_argument("--max-batch", type=options.typed("--max-batch", int), required=True, metavar="N",
                       help="largest batch size the table covers (from 1)")
    sched.add_argument("--format", choices=FORMATS, help="what to write: config (the --engine's own form, "
                       "below; the default where --engine is given) or table (the neutral table, priced by "
                       "--engine; the default without it)")
    sched.add_argument("--seq", metavar="S[,S...]", help="context length(s) in tokens (default 4096); the first is "
                       "the reference of the batch-only tables, several add vLLM's proposed context axis")
    sched.add_argument("--alpha", type=options.typed("--alpha", float), metavar="A", help="per-token acceptance, 0..1")
    sched.add_argument("--acceptance", metavar="FILE", help=options.ACCEPTANCE_HELP)
    sched.add_argument("--draft-cost", type=options.typed("--draft-cost", float), metavar="C",
                       help="the paper's drafter cost per drafted token, x a decode step (default 0.1)")
    sched.add_argument("--step-costs", metavar="FILE.csv", help="measured step costs (batch_size,num_draft_tokens,"
                       "step_seconds) instead of the modelled step")
    sched.add_argument("--max-ranges", type=options.typed("--max-ranges", int), metavar="R",
                       help="at most R batch ranges, R >= 1 (TensorRT-LLM: keys; SGLang: servers), chosen to keep the most; "
                       "without it, the ranges the interval can tell apart")
    sched.add_argument("--max-k", type=options.typed("--max-k", int), metavar="K",
                       help="the engine's largest draft length (default: none below --gamma-max; the engines' docs "
                       "state no maximum)")
    sched.add_argument("--method", metavar="NAME", help="the speculative method, one the model has: mtp (the "
                       "model's own MTP layers), eagle3, eagle, draft_model, dflash or ngram, or an engine's own "
                       "spelling (default: the --drafter's kind, else mtp where the model has MTP layers)")
    sched.add_argument("--draft-model", metavar="PATH", help="the drafter's checkpoint (a path or a Hugging Face "
                       "name), required by eagle3, eagle, draft_model and dflash: vLLM's model, SGLang's "
                       "--speculative-draft-model-path, TensorRT-LLM's speculative_model")
    options.add_model_options(sched, several=False, engine_help=(
        "the serving engine, any case: the form --format config writes, and whose fixed time per step prices "
        "--step-time calibrated (default vllm; a chip without its own for an engine takes its vendor's, which "
        "one line on standard error says)"))
    sched.add_argument("--output", metavar="FILE", help="write to FILE (replaced only when everything succeeded)")
    sched.set_defaults(handler=run)


#: What ``speclib schedule`` writes (--format).
FORMATS = ("config", "table")


def output_form(args) -> str:
    """What the schedule is written as: the --engine's config, or the neutral
    table (the default without --engine, and with --format table)."""
    if args.format is None:
        return "table" if args.engine is None else "config"
    return args.format


def run(args, out) -> int:
    from .. import schedule as _schedule

    model, chip, drafter = options.one_model(args)
    form = output_form(args)
    engine = options.engine(args)
    written = engine if form == "config" else "table"
    if form == "table" and (args.method is not None or args.draft_model is not None):
        raise UsageError(f"{'--method' if args.method is not None else '--draft-model'}: the table names no "
                         "method; give --format config (with --engine vllm, sglang or trtllm) for a configuration")
    if args.step_costs is not None and args.seq is not None and "," in args.seq:
        raise UsageError("--seq: measured step costs (--step-costs) are at one context length; give one --seq")
    if args.step_costs is not None and args.draft_cost is not None:
        raise UsageError("--draft-cost: measured step costs (--step-costs) already include drafting")
    seq = options.seq_list(args)
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
    deployment = options.deployment(args, model, chip, drafter)
    try:
        limits = _schedule.check_limits(args.max_ranges, args.max_k)
        sched = _schedule.schedule(
            seq=seq, alpha=acceptance if acceptance is not None else alpha, max_batch=args.max_batch,
            gamma_max=args.gamma_max, deployment=deployment, step_costs=step_costs,
        ).limited(*limits)
        sched = dataclasses.replace(sched, model=options.model_label(args, model))
        text = _schedule.render(sched, written, method=args.method, draft_model=args.draft_model)
        notes = _schedule.engine_notes(sched, written, args.method, args.draft_model)
    except _schedule.StepCostsError as exc:
        raise UsageError(f"--step-costs: {exc}") from None
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    output.note(_schedule_queue_line(deployment, args.max_batch, sched), "schedule")
    if written == "vllm":  # JSON has no comments: what the header would say goes to standard error
        sys.stderr.write(f"speclib schedule: {_schedule.header_line(sched)}\n")
        for warning in sched.warnings:
            sys.stderr.write(f"speclib schedule: warning: {warning}\n")
        for note in notes:
            sys.stderr.write(f"speclib schedule: note: {note}\n")
    output.extrapolation_notes("schedule", sched.notes, alpha=alpha if acceptance is None else None,
                               gamma_star=int(np.max(sched.gamma_star)), searched=int(sched.gammas[-1]))
    return output.write_output(args, text, out)


def _schedule_queue_line(deployment, asked, sched) -> str:
    """The line ``speclib schedule`` prints on standard error where the
    batches asked for go past what memory holds at the reference context
    (:func:`~speclib.tools.commands.output.queue_line`): where the schedule
    stops, and that no draft length is set above the batch its slots hold."""
    deepest = int(np.max(sched.gamma_star)) if sched.memory_limits is not None else 0
    stops = f"the schedule stops at {sched.max_batch:,}; " if sched.max_batch < asked else ""
    return output.queue_line(deployment, asked, sched.contexts[0], (deepest,),
                             f"{stops}no draft length is set above the batch its slots hold", what="batch")
