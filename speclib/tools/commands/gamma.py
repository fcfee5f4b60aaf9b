"""``speclib gamma``: the best draft length gamma*, its speedup and what a
speculated token costs, component by component, at one operating point (with
``--drafter``, a calibrated step or the aggregate roofline: the whole step in
seconds and the throughput)."""
from __future__ import annotations

import argparse
import json
import re

import numpy as np

from ...core import calibrated as _cal
from ...core import capacity as _capacity
from ...core import cost as _cost
from ...core import speculation as _spec
from ...core.acceptance import Acceptance
from ...core.cost import COMPONENTS, cost_shares, marginal_cost
from ...core.speculation import optimal_gamma
from . import options, output
from .options import UsageError

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
With --tp the table is one GPU's of the group: the weights and experts keep
their ratios, but attention's heads are split while an MLA latent is read
whole by every GPU, so its slope can fall to 0.
A batch whose weights and caches cannot fit in --tp GPUs gets one more line:
what it needs and the smallest tensor-parallel size that fits (the answer
still stands: the per-layer argument does not need the memory). Priced as the
whole step in seconds (--drafter, --roofline aggregate, --step-time calibrated,
a hybrid model), --batch is a concurrency: each draft length runs the
sequences memory holds with its slots and the rest wait in the queue, which
one line on standard error says.
"""


def add_parser(sub):
    gamma = sub.add_parser(
        "gamma", help="gamma*, the speedup and the marginal cost at one operating point",
        description="The best draft length gamma*, its speedup over plain decoding, and the marginal "
        "cost of a speculated token by component, at one batch size, context length and acceptance rate.",
        epilog=GAMMA_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gamma.add_argument("--batch", type=options.typed("--batch", float), required=True, metavar="B", help="sequences decoded together (> 0)")
    gamma.add_argument("--seq", type=options.typed("--seq", float), required=True, metavar="S", help="average context length in tokens (> 0)")
    gamma.add_argument("--alpha", type=options.typed("--alpha", float), metavar="A", help="per-token acceptance probability, 0..1 (required unless --drafter brings a measured survival curve)")
    gamma.add_argument("--draft-cost", type=options.typed("--draft-cost", float), metavar="C", help="the paper's drafter cost per drafted token, x a decode step (>= 0, default 0.1)")
    gamma.add_argument("--acceptance", metavar="FILE", help=options.ACCEPTANCE_HELP)
    options.add_model_options(gamma, several=False)
    gamma.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    gamma.set_defaults(handler=run)


def run(args, out) -> int:
    models, chips, drafters = options.models(args), options.hardware(args), options.drafters(args)
    if len(models) != 1:
        raise UsageError("--model: gamma takes one model (use 'speclib sweep' for several)")
    if len(chips) != 1:
        raise UsageError("--hardware: gamma takes one chip (use 'speclib sweep' for several)")
    if len(drafters) != 1:
        raise UsageError("--drafter: gamma takes one drafter (use 'speclib sweep' for several)")
    model, chip, drafter = models[0], chips[0], drafters[0]
    try:
        _spec.check_batch(args.batch), _spec.check_context(args.seq)
        deployment = options.deployment(args, model, chip, drafter)
        priced = deployment.pricing()
        if isinstance(priced, _spec.StepPricing):
            return _gamma_whole_step(args, out, model, chip, priced, deployment)
        c_draft = float(priced.drafter.c)
        curve = args.acceptance_curve
        alpha = curve if curve is not None else _required_alpha(args)
        searched = args.gamma_max if curve is None else min(args.gamma_max, len(curve))
        gamma_star, speedup = optimal_gamma(alpha, args.batch, args.seq, gamma_max=searched,
                                            deployment=deployment)
        # one GPU of the deployment's layout: under --tp its attention reads the whole MLA latent for 1/tp of the heads
        costs = marginal_cost(args.batch, args.seq, c_draft, model, chip, query_bytes=args.query_bytes,
                              attention=deployment.attention, layout=deployment.layout)
        shares = cost_shares(args.batch, args.seq, model, chip, query_bytes=args.query_bytes,
                             attention=deployment.attention, layout=deployment.layout)
        memory = _memory_check(args, deployment, gamma_star)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None

    label = options.model_label(args, model)
    output.extrapolation_notes("gamma", alpha=args.alpha if curve is None else None, gamma_star=gamma_star,
                               searched=searched)
    if args.json:
        record = {
            "model": options.served_model(args, model),
            "architecture": model.name,
            "hardware": chip.name,
            "batch": args.batch,
            "seq": args.seq,
            "alpha": args.alpha,
            "acceptance": "i.i.d." if curve is None else [float(x) for x in curve.values],
            "draft_cost": c_draft,
            "gamma_max": searched,
            "query_bytes": args.query_bytes,
            "attention": deployment.attention,
            "tp": deployment.tp,
            "precision": deployment.precision_words(),
            "gamma_star": gamma_star,
            "speedup": speedup,
            "marginal_cost": costs,
            "cost_shares": shares,
            "components": {name: component_label(name, model) for name in COMPONENTS},
            "memory": _memory_record(memory),
        }
        out.write(json.dumps(record, indent=2) + "\n")
        return 0

    verdict = "speculate" if gamma_star > 0 else "do not speculate: plain decoding is best"
    rows = [(component_label(name, model), f"{costs[name]:.3f}", f"{shares[name]:.3f}") for name in COMPONENTS]
    rows.append(("drafter", f"{costs['drafter']:.3f}", "-"))
    rows.append(("total", f"{costs['total']:.3f}", "1.000"))
    lines = [
        f"{label} on {chip.name}{_split_words(deployment)}, {_cost.ATTENTION_WORDS[deployment.attention]}",
        f"  precision: {deployment.precision_words()}",
        f"  batch {output.exact(args.batch)}, context {output.exact(args.seq)} tokens, "
        f"{f'acceptance {args.alpha:g}' if curve is None else _acceptance_label(args, priced)}, "
        f"drafter {c_draft:g} x a step",
        "",
        f"  gamma*   {gamma_star}   ({verdict}; searched 0..{searched})",
        f"  speedup  {speedup:.4f}x over plain decoding",
        "",
        "  marginal cost of one speculated token, x a token already in the batch",
        "  (r: slope of each component's roofline; total = sum of r x share, + drafter)",
        "",
        "\n".join("  " + line for line in output.format_table(("component", "slope r", "share of step"), rows).splitlines()),
    ]
    if args.query_bytes:
        lines.append("\n  (attention's cost includes the query bytes)")
    lines += _memory_lines(memory, gamma_star)
    out.write("\n".join(lines) + "\n")
    return 0


def _split_words(deployment) -> str:
    """Which GPU the ledger reads: one of the tensor-parallel group (heads split, an MLA latent read whole)."""
    return "" if deployment.tp == 1 else (f", one GPU of {deployment.tp}{deployment.interconnect_words()} "
                                          "(tensor parallel: heads split)")


def component_label(name: str, model) -> str:
    """A component of the ledger or of the step as the tables label it, by
    its kind in ``model``: the FFN is a dense FFN or a mixture of experts
    (the library's key for it is ``moe`` either way), attention is GQA or MLA."""
    ffn = "MoE FFN" if model.ffn.is_moe else "dense FFN"
    attention = f"attention ({model.attention.kind.upper()})"  # every attention preset has its kind
    return {"moe": ffn, "ffn": ffn, "attn_proj": "attention projections", "attention": attention,
            "dense": "weights every token reads"}.get(name, name)


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
    B, S = _spec.check_batch(args.batch), _spec.check_context(args.seq)  # checked by run already
    try:
        curve = args.acceptance_curve
        acceptance = Acceptance.of(curve if curve is not None else args.alpha, priced)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    try:
        _spec.refuse_unheld(deployment, priced, B, S)  # not one sequence fits: nothing to price
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    gamma_star, speedup = _spec.best_gamma(priced, acceptance, B, S, args.gamma_max)
    try:
        memory = _memory_check(args, deployment, gamma_star)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    queue = output.queue_line(deployment, args.batch, args.seq, (gamma_star,), "priced as that many running, the rest queued")
    calibration = _cal.calibration_of(deployment.step_time)
    interval, notes = None, ()
    if calibration is not None:
        if calibration.draws:
            interval = _spec.speedup(curve if curve is not None else args.alpha, gamma_star, B, S,
                                     deployment=deployment, interval=True)
    g = np.asarray(float(gamma_star))
    run_0, run_g = priced.held(B, S), priced.held(B, S, g)  # each arm's running batch: no more than memory holds
    # what the prediction extrapolates, at the batch that runs (a calibrated or a measured step)
    notes = deployment.extrapolates(np.array([float(run_0), float(run_g)]), np.array([1.0, float(g) + 1.0]), S)
    plain_s = float(priced.plain(run_0, S))
    verify = {name: float(t) for name, t in priced.step_model.component_times(run_g, g + 1.0, S).items()}
    verify_s = float(priced.step_model.time(run_g, g + 1.0, S))
    draft_s = float(priced.drafter.time(g, run_g, S, priced.step_model))
    tokens = float(priced.throughput(B, g, S, acceptance))
    plain_tokens = float(priced.throughput(B, np.asarray(0.0), S, acceptance))
    searched = min(x for x in (args.gamma_max, priced.max_gamma, acceptance.max_gamma) if x is not None)
    label = options.model_label(args, model)
    output.extrapolation_notes("gamma", notes, alpha=args.alpha if curve is None else None, gamma_star=gamma_star,
                               searched=searched)
    if args.json:
        record = {
            "model": options.served_model(args, model), "architecture": model.name, "hardware": chip.name, "batch": args.batch, "seq": args.seq,
            "alpha": args.alpha, "acceptance": ("i.i.d." if args.alpha is not None else "measured" if curve is None
                                                else [float(x) for x in curve.values]),
            "drafter": priced.drafter.name, "roofline": args.roofline, "step_time": str(args.step_time), "tp": args.tp,
            "attention": deployment.attention,
            "precision": deployment.precision_words(),
            "gamma_max": searched,
            "gamma_star": gamma_star, "speedup": speedup,
            **({"speedup_interval_80": [float(interval.lo), float(interval.hi)]} if interval is not None else {}),
            **({"extrapolates": list(notes)} if calibration is not None or deployment.step_time == "measured" else {}),
            **({"held_out_skill": output.trust_record()} if calibration is not None and calibration.draws else {}),
            "step_seconds": {"plain": plain_s, "verify": verify_s, "verify_components": verify, "draft": draft_s},
            "throughput": {"speculative": tokens, "plain": plain_tokens},
            "running": {"speculative": float(run_g), "plain": float(run_0)},
            "memory": _memory_record(memory),
        }
        output.note(queue, "gamma")
        out.write(json.dumps(record, indent=2) + "\n")
        return 0
    verdict = "speculate" if gamma_star > 0 else "do not speculate: plain decoding is best"
    rows = [(f"verify {component_label(name, model)}", f"{t * 1e6:,.1f}") for name, t in verify.items()]
    rows += [("verify (whole step)", f"{verify_s * 1e6:,.1f}"), (f"draft ({priced.drafter.name})", f"{draft_s * 1e6:,.1f}"),
             ("plain decode step" + (f" ({output.exact(run_0)} sequences)" if queue else ""), f"{plain_s * 1e6:,.1f}")]
    clock = (f"{args.roofline} roofline" if args.step_time == "roofline" else
             _measured_clock(priced.step_model) if args.step_time == "measured" else
             f"calibrated step time, engine {options.engine(args)}: the {args.roofline} roofline x {priced.step_model.factor:.3g} "
             f"+ {priced.step_model.fixed * 1e3:.2f} ms + {priced.step_model.per_sequence * 1e6:.1f} us per sequence"
             + (f" + {priced.step_model.per_position * 1e6:.1f} us per extra position + "
                f"{priced.step_model.per_draft_pass * 1e3:.2f} ms per drafter pass; {args.step_time}"
                if priced.step_model.per_position or priced.step_model.per_draft_pass else ""))
    where = chip.name if args.tp == 1 else f"{args.tp} x {chip.name} (tensor parallel)"
    lines = [
        f"{label} on {where}, the whole model's step ({clock}), "
        f"{_cost.ATTENTION_WORDS[deployment.attention]}",
        f"  precision: {deployment.precision_words()}",
        f"  batch {output.exact(args.batch)}, context {output.exact(args.seq)} tokens, {_acceptance_label(args, priced)}",
        "",
        f"  gamma*      {gamma_star}   ({verdict}; searched 0..{searched})",
        f"  speedup     {speedup:.4f}x over plain decoding" + (
            f"; interval {float(interval.lo):.2f}\u2013{float(interval.hi):.2f}x ({_cal.interval_name(deployment.model)}"
            + ("; it holds 1x: gamma = 0 is as likely as not)" if gamma_star and interval.straddles() else ")")
            if interval is not None else ""),
        *([f"  trust       {output.trust_line()}"] if calibration is not None and calibration.draws else []),
        f"  throughput  {tokens:,.0f} committed tokens/s ({plain_tokens:,.0f} plain)",
        *([f"  running     {output.exact(run_g)} sequences at gamma* = {gamma_star}, {output.exact(run_0)} plain: what memory "
           "holds; the rest queued"] if queue else []),
        "",
        f"  one step at gamma* = {gamma_star}" + (f", {output.exact(run_g)} sequences" if queue else "") + ", microseconds",
        "",
        "\n".join("  " + line for line in output.format_table(("part", "time (us)"), rows).splitlines()),
    ]
    lines += _memory_lines(memory, gamma_star, queued=True)
    output.note(queue, "gamma")
    out.write("\n".join(lines) + "\n")
    return 0


def _measured_clock(step) -> str:
    """The header's words for a step priced from the measured kernel tables:
    which parts are read from which tables, and which from the roofline and
    why (:meth:`speclib.silicon.step.MeasuredStepModel.sources`)."""
    tables, notes, rooflines = {}, [], []
    for part, source in step.sources().items():
        found = re.match(r"measured (.+?) \((.+?)\)(?:; (.+))?$", source)
        if found is None:
            rooflines.append(f"{part} by the {source}")
            continue
        tables.setdefault(found.group(2), []).append(part)
        if found.group(3):
            notes.append(f"{part}: {found.group(3)}")
    words = "; ".join(f"measured kernel tables ({where}) for {', '.join(parts)}" for where, parts in tables.items())
    return "; ".join([w for w in (words, *rooflines, *notes) if w] + ["no host work per step (no table holds it)"])
