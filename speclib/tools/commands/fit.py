"""``speclib fit``: the calibrated step fitted to a deployment's own
benchmark results (:mod:`speclib.calibration.own_fit`), written as a calibration
that ``--calibration`` reads."""
from __future__ import annotations

import argparse
import json
import os

from . import options, output
from .options import UsageError

FIT_EPILOG = """examples:
  speclib fit base-c1.json base-c8.json base-c32.json mtp-c1.json mtp-c8.json mtp-c32.json \\
      --model deepseek-v3 --hardware h200 --tp 8 --output my-h200.json
  speclib fit base-*.json spec-*.json --model-config config.json --hardware-config my-gpu.yaml --output mine.json
  speclib schedule --model deepseek-v3 --hardware h200 --tp 8 --calibration my-h200.json --alpha 0.7 --max-batch 64
"""


def add_parser(sub):
    fitp = sub.add_parser(
        "fit", help="fit the calibrated step to your own benchmark results",
        description="Fit a deployment's step time (fixed per step, per sequence, per extra verified position, per "
        "drafter pass) to benchmark result files: vllm bench serve --save-result JSON, SGLang bench_serving "
        "JSON lines or InferenceMAX JSON; runs without speculation and with it (their accept length measured). "
        "Prints each run's fitted TPOT and error and writes a calibration that --calibration reads. The shipped "
        "calibration is the prior: the chip's factors, and the speculative terms where no run speculated, stay at "
        "its values. Fitted on three concurrencies spread over a sweep (its smallest, one between, its largest), "
        "the fit predicts the speed-up between them better than the nearest run or a line through them on the "
        "engine sweeps measured; fitted "
        "on the smallest only, each arm's TPOT past them far better than the last run carried forward, but the "
        "speed-up no better (benchmarks/bench_few_shot.py): benchmark across the range you serve.",
        epilog=FIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fitp.add_argument("files", nargs="+", metavar="FILE", help="benchmark result files")
    fitp.add_argument("--model", help="model preset name (see 'speclib presets'); or --model-config")
    fitp.add_argument("--model-config", metavar="PATH", help="a Hugging Face style config.json to build the model "
                      "from, instead of --model")
    fitp.add_argument("--hardware", help="hardware preset name; or --hardware-config")
    fitp.add_argument("--hardware-config", metavar="PATH", help="a chip that is not a preset (JSON or YAML), "
                      "instead of --hardware")
    fitp.add_argument("--tp", type=options.typed("--tp", int), default=1, metavar="N", help="GPUs the model is split over")
    fitp.add_argument("--engine", type=options.engine_value, default=options.DEFAULT_ENGINE,
                      metavar="{vllm,sglang,trtllm}", help="the serving engine the runs were measured on, any case: "
                      "the fitted fixed time is stored under it (default vllm)")
    fitp.add_argument("--format", choices=("vllm", "sglang", "inferencemax"), help="the files' format (default: "
                      "detected)")
    fitp.add_argument("--gamma", type=options.typed("--max-k", int), metavar="K", help="the draft length of files that "
                      "do not state it")
    options.add_precision_options(fitp, drafter=False)
    fitp.add_argument("--output", metavar="FILE", required=True, help="the calibration JSON to write (written only "
                      "when the fit succeeded)")
    fitp.set_defaults(handler=run)


def run(args, out) -> int:
    from speclib.evidence import bench_results
    from speclib.calibration import own_fit

    if args.model is None and args.model_config is None:
        raise UsageError("--model: required (a model preset name), or --model-config PATH")
    if args.hardware is None and args.hardware_config is None:
        raise UsageError("--hardware: required (a hardware preset name), or --hardware-config PATH")
    models, chips = options.models(args), options.hardware(args)
    if len(models) != 1 or len(chips) != 1:
        raise UsageError("--model/--hardware: fit takes one model and one chip")
    model, chip = models[0], chips[0]
    try:
        model = model.quantised(args.weights, args.kv_cache, chip.vendor, activations=args.activations)
    except ValueError as exc:
        raise UsageError(options.speclib_error(exc)) from None
    records = []
    try:
        for path in args.files:
            records.extend(bench_results.read_results(path, format=args.format, gamma=args.gamma, tp=args.tp))
        fitted = own_fit.fit_measurements(records, model, chip, tp=args.tp,
                                           engine=options.CALIBRATION_ENGINE[args.engine],
                                           label=os.path.basename(args.output))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cal, engine = fitted.calibration, options.CALIBRATION_ENGINE[args.engine]
    from ...core.deployment import precision_words

    asked = [name for name in ("weights", "activations", "kv_cache") if getattr(args, name) is not None]
    out.write(f"fitted on {len(records)} runs of {cal.model} ({precision_words(model, asked=asked)}): a = {cal.fixed_s[next(iter(cal.fixed_s))][engine] * 1e3:.3g} ms "
              f"per step, d = {cal.per_sequence_s * 1e6:.3g} us per sequence, e = {cal.per_position_s * 1e6:.3g} us "
              f"per extra position, a_d = {cal.per_draft_pass_s * 1e3:.3g} ms per drafter pass "
              f"(mu = {next(iter(cal.roofline_factor.values())):.3g}, held)\n")
    names = [os.path.basename(r.source)[:40] for r, *_ in fitted.residuals]
    wide = max(len("file"), *map(len, names))  # as wide as the longest name, so the table stays narrow
    out.write(f"{'file':<{wide}} {'batch':>6} {'gamma':>5} {'TPOT ms':>9} {'fitted':>9} {'error':>7}\n")
    for name, (r, fitted_ms, err) in zip(names, fitted.residuals):
        out.write(f"{name:<{wide}} {r.concurrency:>6} {r.gamma or 0:>5} {r.tpot_ms:>9.3f} "
                  f"{fitted_ms:>9.3f} {err * 100:>6.1f}%\n")
    data = {"about": "A calibration fitted by `speclib fit` (speclib.calibration.own_fit.fit_measurements); read it "
                     "with --calibration or speclib.calibration.own_fit.read_calibration.", **cal.to_json()}
    output.write_atomically(args.output, json.dumps(data, indent=1) + "\n")
    return 0
