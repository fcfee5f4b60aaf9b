"""How long a speed-up priced from the measured kernel tables takes (target:
<= 5 ms in the library), and the measured step against the project's
measured decode runs beside the calibrated step on the same points.

Run from the repository root:  python benchmarks/bench_measured_step.py
(``--accuracy`` adds the decode runs' comparison; ``--held-out`` the
measured step plus the engine's host work fitted on the other runs, held out
by chip, by model family and by engine, beside its baselines:
:mod:`speclib.calibration.measured_host`; the nested choice between it and
the calibrated step, by model family and by chip:
:mod:`speclib.calibration.step_choice`; then the speculative runs with
one per-extra-position term e_pos fitted, nested, on the speculative runs
outside the held-out family or chip; then the same nested choice for the
speculative speed-ups, read from its stored file; ``--no-sensitivity`` skips e_pos
scaled once a step instead of per attention layer).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import speclib
from speclib.core.deployment import Deployment

TARGET_MS = 5.0
CASES = (("llama-3.1-8b", "H100", "SGLang", 1, None), ("llama-3-70b", "H200", "TRT", 4, None),
         ("deepseek-v3", "H200", "SGLang", 8, "deepseek-v3-mtp"), ("qwen3-30b-a3b", "B200", "vLLM", 1, None))


def timing() -> None:
    print(f"{'deployment':44s} {'first (ms)':>10s} {'again (ms)':>10s} {'batch grid (ms)':>15s}")
    worst = 0.0
    for model, chip, engine, tp, drafter in CASES:
        t0 = time.perf_counter()
        d = Deployment(model, chip, engine=engine, tp=tp, step_time="measured", drafter=drafter)
        speclib.speedup(0.7, 3, 32, 2048, deployment=d)
        first = (time.perf_counter() - t0) * 1e3
        n = 50
        t0 = time.perf_counter()
        for _ in range(n):
            speclib.speedup(0.7, 3, 32, 2048, deployment=d)
        again = (time.perf_counter() - t0) * 1e3 / n
        B = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], dtype=float)
        t0 = time.perf_counter()
        for _ in range(10):
            speclib.speedup(0.7, 3, B, 2048, deployment=d)
        grid = (time.perf_counter() - t0) * 1e3 / 10
        worst = max(worst, again)
        print(f"{model + ' on ' + str(tp) + ' x ' + chip + ', ' + engine:44s} {first:10.1f} {again:10.2f} {grid:15.2f}")
    print(f"\na speed-up priced from measured tables: {worst:.2f} ms at the slowest deployment "
          f"(target <= {TARGET_MS:g} ms: {'met' if worst <= TARGET_MS else 'missed'}); 'first' includes reading the "
          "table file and building the deployment")


def accuracy() -> None:
    """Median |error| of TPOT on the project's measured decode runs whose chip
    has tables, the measured step beside the calibrated step on the same
    points (the calibrated step was fitted on these runs: in-sample)."""
    from speclib.core.decode import tpot
    from speclib.evidence import decode_runs as dr

    from speclib.calibration.measured_host import table_runs

    runs = list(table_runs())
    measured, sources = [], []
    for r in runs:
        d = r.deployment("measured")
        measured.append(float(tpot(r.concurrency, r.context, workload=(r.input_len, r.output_len), deployment=d)))
        sources.append(d.measured_step().measured())
    measured = np.array(measured)
    calibrated = dr.calibrated_tpot(runs)
    truth = np.array([r.tpot_s for r in runs])
    err_m = np.abs(measured / truth - 1.0)
    err_c = np.abs(calibrated / truth - 1.0)
    signed = np.median(measured / truth - 1.0)
    print(f"\nTPOT on the measured decode runs of chips with tables ({len(runs)} runs):")
    print(f"{'subset':34s} {'runs':>5s} {'measured step':>14s} {'calibrated':>11s}")
    groups = {"all": np.ones(len(runs), bool), "every part from a table": np.array(sources)}
    for fam in sorted({r.family for r in runs}):
        groups[fam] = np.array([r.family == fam for r in runs])
    for chip in sorted({r.chip for r in runs}):
        groups[chip] = np.array([r.chip == chip for r in runs])
    for name, mask in groups.items():
        if mask.any():
            print(f"{name:34s} {int(mask.sum()):5d} {np.median(err_m[mask]):13.1%} {np.median(err_c[mask]):10.1%}")
    print(f"median signed error of the measured step: {signed:+.1%} (negative: faster than measured; the engine's "
          "host work is in no table). The calibrated step is in-sample on these runs.")


def _pct(x) -> str:
    return "    -" if not np.isfinite(x) else f"{x:5.1%}"


def speculative(decode_by_model=None) -> None:
    """The speculative runs' speed-ups held out by model family and by chip,
    priced by the measured step plus host work, beside the calibrated step's
    stored hold-out and the null baselines on the same points."""
    from speclib.calibration import held_out as ho
    from speclib.calibration import measured_host as mh

    global spec
    for by in ("model", "chip"):
        t0 = time.perf_counter()
        held, tables = mh.spec_held_out(by)
        took = time.perf_counter() - t0
        rows = mh.spec_summaries(by, held, tables)
        if by == "model":
            spec = rows[0][4]
        print(f"\nspeed-ups held out by {'model family' if by == 'model' else by}, the measured step plus host work "
              f"(priced in {took:.1f} s), beside the calibrated step's stored hold-out on the same runs:")
        print(f"{'runs':28s} {'runs':>5s} {'points':>7s} {'median |err|':>13s} {'per run':>8s} {'calibrated':>11s} "
              f"{'per run':>8s}")
        for name, n, pts, med, run_med, cmed, crun in rows:
            print(f"{name:28s} {n:5d} {pts:7d} {_pct(med):>13s} {_pct(run_med):>8s} {_pct(cmed):>11s} {_pct(crun):>8s}")
        mine = {(r[0], r[3]): r for r in ho.skill_of(held)}
        theirs = {(r[0], r[3]): r for r in ho.stored_skill(by)["skill"]}
        print(f"{'figure':58s} {'n':>4s} {'measured+host':>14s} {'calibrated':>11s} {'baseline':>10s}  baseline")
        for key, r in mine.items():
            if key[0].startswith("decode TPOT"):
                continue  # the decode hold-out is printed above, on its own runs
            c = theirs.get(key)
            print(f"{r[0][:58]:58s} {r[1]:4d} {r[2]:>14s} {c[2] if c else '-':>11s} {r[4]:>10s}  {r[3]}"
                  + ("" if c is None or c[1] == r[1] else f" (calibrated on {c[1]})"))


spec = float("nan")


def per_position(scales=("layers", "step"), ids=None) -> None:
    """The measured step plus host work plus one fitted per-extra-position
    term e_pos (:func:`speclib.calibration.measured_host.spec_held_out_per_position`),
    fitted nested on the speculative runs outside the held-out family (or
    chip), beside the measured step plus host work, the calibrated step's
    stored hold-out and the null baselines on the same points; then e_pos
    per fold beside its independent estimates. The first of ``scales`` is
    the term's form (per attention layer); the others are printed as a
    sensitivity, not chosen between. ``ids``: only these speculative runs,
    held out and trained on (a quick check; default every one)."""
    from speclib.calibration import held_out as ho
    from speclib.calibration import measured_host as mh

    est = mh.per_position_estimates()
    ref = est["layers_ref"]
    fitted = {}
    for by in ("model", "chip"):
        base, base_tables = mh.spec_held_out(by, ids=ids)
        t0 = time.perf_counter()
        held, tables, pos = mh.spec_held_out_per_position(by, ids=ids, scale=scales[0])
        took = time.perf_counter() - t0
        fitted[by] = pos
        name = "model family" if by == "model" else by
        print(f"\nspeed-ups held out by {name}, the measured step plus host work plus e_pos (e B (T - 1), at "
              f"{ref:.0f} attention layers, scaled by the target's), e_pos fitted on the speculative runs outside the "
              f"{name} with that fold's host constants (priced in {took:.1f} s):")
        mine = {(r[0], r[3]): r for r in ho.skill_of(held)}
        host = {(r[0], r[3]): r for r in ho.skill_of(base)}
        theirs = {(r[0], r[3]): r for r in ho.stored_skill(by)["skill"]}
        print(f"{'figure':58s} {'n':>4s} {'+e_pos':>9s} {'meas+host':>10s} {'calibrated':>11s} {'baseline':>9s}  "
              "baseline")
        for key, r in mine.items():
            if key[0].startswith("decode TPOT"):
                continue
            h, c = host.get(key), theirs.get(key)
            print(f"{r[0][:58]:58s} {r[1]:4d} {r[2]:>9s} {h[2] if h else '-':>10s} {c[2] if c else '-':>11s} "
                  f"{r[4]:>9s}  {r[3]}" + ("" if c is None or c[1] == r[1] else f" (calibrated on {c[1]})"))
        rows = {r[0]: r for r in mh.spec_summaries(by, held, tables)}
        brow = {r[0]: r for r in mh.spec_summaries(by, base, base_tables)}
        print(f"{'runs':28s} {'runs':>5s} {'points':>7s} {'+e_pos':>8s} {'per run':>8s} {'meas+host':>10s} "
              f"{'per run':>8s} {'calibrated':>11s} {'per run':>8s}")
        for key, (_, n, pts, med, run_med, cmed, crun) in rows.items():
            b = brow[key]
            print(f"{key:28s} {n:5d} {pts:7d} {_pct(med):>8s} {_pct(run_med):>8s} {_pct(b[3]):>10s} {_pct(b[4]):>8s} "
                  f"{_pct(cmed):>11s} {_pct(crun):>8s}")
        for scale in scales[1:]:
            other, otables, opos = mh.spec_held_out_per_position(by, ids=ids, scale=scale)
            k = {(r[0], r[3]): r for r in ho.skill_of(other)}
            direction = k[("the gain's direction with batch (sweeps)", "the gain falls with batch")][2]
            best = k[("best draft within \u00b11 ((run, batch) pairs)",
                      "the best constant draft, chosen without the group")][2]
            med = mh.spec_summaries(by, other, otables)[0][3]
            es = [e for e, _, _ in opos.values()]
            print(f"sensitivity, e_pos once a step whatever the depth ({scale}): speed-up median |err| {_pct(med)}, "
                  f"the gain's direction {direction}, best draft within \u00b11 {best}; e_pos "
                  f"{min(es) * 1e6:.1f} to {max(es) * 1e6:.1f} us per extra position per sequence")
    print(f"\ne_pos per fold (fitted without the unit's speculative and decode runs), us per extra position per "
          f"sequence at {ref:.0f} attention layers (and per attention layer):")
    print(f"{'fitted without':22s} {'spec runs':>9s} {'points':>7s} {'e_pos (us)':>11s} {'per layer':>10s}")
    for by, pos in fitted.items():
        for g, (e, n, pts) in pos.items():
            print(f"{by + ' ' + g:22s} {n:9d} {pts:7d} {e * 1e6:11.1f} {e * 1e6 / ref:10.3f}")
    cal = est["calibrated_s"]
    print(f"independent estimates: the calibrated step's e {cal * 1e6:.1f} us at {est['calibrated_layers_ref']:.0f} "
          f"attention layers ({cal * 1e6 / est['calibrated_layers_ref']:.3f} per layer; fitted on every speculative "
          f"run with the calibrated kernels, so not independent of these runs); AIConfigurator's verify MLA block "
          f"beside its decode's (median {est['peer_mla_median_us']:.2f} us per extra position per attention layer) "
          f"plus the sampler: {est['peer_lo_s'] * 1e6:.1f} to {est['peer_hi_s'] * 1e6:.1f} us at {ref:.0f} layers; "
          f"the sampler and rejection test alone {est['sampler_s'][0] * 1e6:.1f} to {est['sampler_s'][1] * 1e6:.0f} us "
          "a row, once a step (vllm40376).")


def nested_choice(runs=None) -> None:
    """The nested choice between the calibrated step and the measured step
    plus host work (:mod:`speclib.calibration.step_choice`), held out by model
    family and by chip: each fold's candidate chosen on the runs outside it
    alone, its median |error| beside both candidates and the null on the
    same runs, and each fold's choice with its inner scores."""
    from speclib.calibration import step_choice as sc

    for by in sc.GROUPINGS:
        t0 = time.perf_counter()
        c = sc.step_choice(by, runs)
        took = time.perf_counter() - t0
        name = "model family" if by == "model" else by
        print(f"\ndecode TPOT held out by {name}, nested choice between the calibrated step and the measured step plus "
              f"host work (each fold's candidate chosen on the runs outside it alone; computed in {took:.1f} s); "
              "median |error| on the same runs:")
        print(f"{'runs':34s} {'n':>5s} {'nested choice':>14s} {'measured+host':>14s} {'calibrated':>11s} {'null':>7s}")
        for label, m in (("where the null has a prediction", c.medians()),
                         ("every run (no null)", c.medians(null=False))):
            print(f"{label:34s} {m['runs']:5d} {_pct(m['nested']):>14s} {_pct(m['measured+host']):>14s} "
                  f"{_pct(m['calibrated']):>11s} {_pct(m['null']):>7s}")
        print(f"{'fold':8s} {'runs':>5s} {'inner unit':>10s} {'inner pts':>9s} {'score m+h':>9s} {'score cal':>9s} "
              f"{'chosen (nested)':>15s} {'nested':>7s} {'m+h':>6s} {'cal':>6s} | {'with null':>9s} {'nested':>7s} "
              f"{'null':>6s}")
        for F, n, unit, _, pts, score, chosen, m, mn in c.rows():
            print(f"{F:8s} {n:5d} {unit:>10s} {pts:9d} {score['measured+host']:9.3f} {score['calibrated']:9.3f} "
                  f"{chosen:>15s} {_pct(m['nested']):>7s} {_pct(m['measured+host']):>6s} {_pct(m['calibrated']):>6s} | "
                  f"{mn['runs']:9d} {_pct(mn['nested']):>7s} {_pct(mn['null']):>6s}")
    print("inner score: the median |error| over the fold's inner held-out runs over the null's on the same runs "
          "(lower is better; a tie goes to the measured step); by model family the inner folds hold out a chip of the "
          "other family, since holding out the only other family leaves no decode run. Per fold: the median |error| on "
          "every run of the fold, then on those the null has a prediction for.")


def nested_spec_choice() -> None:
    """The nested choice between the calibrated step and the measured step
    plus host work plus e_pos for the speculative speed-ups
    (:func:`speclib.calibration.step_choice.stored_spec_choice`, stored:
    minutes to compute), held out by model family and by chip: each fold's
    choice and inner scores, then the nested choice beside both candidates'
    outer hold-outs and the null baselines, on the same points."""
    from speclib.calibration import held_out as ho
    from speclib.calibration import step_choice as sc

    M, C = sc.CANDIDATES
    for by in sc.GROUPINGS:
        t0 = time.perf_counter()
        c = sc.stored_spec_choice(by)
        took = time.perf_counter() - t0
        name = "model family" if by == "model" else by
        print(f"\nspeed-ups held out by {name}, nested choice between the calibrated step and the measured step plus "
              f"host work plus e_pos (each fold's candidate chosen on inner folds outside it alone, by the form "
              f"choice's rule; read from {'/'.join(sc.SPEC_CHOICE_FILE)} in {took:.1f} s):")
        print(f"{'fold':8s} {'runs':>4s} {'inner groups (skipped)':48s} {'runs':>4s} {'pts':>4s} "
              f"{'dec m+h':>8s} {'dec cal':>8s} {'err m+h':>8s} {'err cal':>8s} {'med m+h':>8s} {'med cal':>8s} "
              f"{'chosen (nested)':>15s}")
        for F in sorted(c.chosen):
            n = sum(g == F for g in c.groups.values())
            ig = ",".join(c.inner_groups[F]) + (f" ({','.join(c.skipped[F])})" if c.skipped[F] else "")
            (dm, em, mm), (dc, ec, mc) = c.scores[F][M], c.scores[F][C]
            print(f"{F:8s} {n:4d} {ig:48s} {c.points[F][0]:4d} {c.points[F][1]:4d} {dm:+8.3f} {dc:+8.3f} "
                  f"{em:+8.3f} {ec:+8.3f} {_pct(mm):>8s} {_pct(mc):>8s} {c.chosen[F]:>15s}")
        same = c.same()
        sums = {k: h.summary() for k, h in same.items()}
        print(f"{'on the same runs and points':40s} {'nested':>9s} {'m+h+e_pos':>10s} {'calibrated':>11s}")
        rows = (("runs", lambda s: f"{s['runs']:d}"), ("points", lambda s: f"{s['points']:d}"),
                ("speed-up median |err| (points)", lambda s: _pct(s["median_abs_error"])),
                ("per run, median of medians", lambda s: _pct(s["run_median_abs_error"])),
                ("gain on the right side of 1x", lambda s: _pct(s["sign_right"])),
                ("direction with batch right (sweeps)", lambda s: f"{s['direction_right']}/{s['direction_sweeps']}"),
                ("best draft within one (pairs)", lambda s: f"{s['best_gamma_within_1']}/{s['best_gamma_points']}"))
        for label, f in rows:
            print(f"{label:40s} {f(sums['nested']):>9s} {f(sums[M]):>10s} {f(sums[C]):>11s}")
        skill = {k: {(r[0], r[3]): r for r in ho.skill_of(h)} for k, h in same.items()}
        print(f"{'figure (nested, same points)':58s} {'n':>4s} {'nested':>9s} {'m+h+e_pos':>10s} {'calibrated':>11s} "
              f"{'baseline':>9s}  baseline")
        for key, r in skill["nested"].items():
            if key[0].startswith("decode TPOT"):
                continue  # the decode choice is printed above, on its own runs
            print(f"{r[0][:58]:58s} {r[1]:4d} {r[2]:>9s} {skill[M][key][2]:>10s} {skill[C][key][2]:>11s} "
                  f"{r[4]:>9s}  {r[3]}")
    print("inner scores: dec, the decisions' skill over the null baselines (higher is better), err, the error skill "
          "over the speed-up as measured at the smallest batch, as the calibrated step's form is chosen "
          "(held_out.choose_from; a tie goes to the measured step, the simpler); med, the median over runs of each "
          "run's median |error| (shown, not chosen on). Skipped: no decode run left outside the fold and the inner "
          "group to fit the host work on.")


def held_out(every: int = 1, per_position_scales=("layers", "step"), spec_ids=None) -> None:
    """The measured step plus the host work (a fixed time per step per
    engine, a time per running sequence) fitted without the held-out unit,
    beside the measured step alone, the null baseline and the calibrated
    step's stored hold-out of the same grouping, on the same runs (every
    ``every``-th run of the decode runs on chips with tables)."""
    from speclib.calibration import measured_host as mh

    runs = mh.table_runs()[::every]
    print(f"\nTPOT held out, the measured step plus host work fitted without the unit ({len(runs)} runs on chips "
          "with tables); median |error| per held-out unit:")
    print(f"{'held out':10s} {'unit':10s} {'runs':>5s} {'measured+host':>14s} {'measured alone':>15s} "
          f"{'null (chip, engine)':>20s} {'calibrated':>11s}")
    held = {}
    for by in mh.GROUPINGS:
        held[by] = h = mh.held_out(by, runs)
        for unit, n, host, alone, null, cal in h.rows():
            print(f"{by:10s} {unit:10s} {n:5d} {_pct(host):>14s} {_pct(alone):>15s} {_pct(null):>20s} {_pct(cal):>11s}")
    print("null: the median TPOT of the same chip and engine outside the unit (a chip held out: of the same engine); "
          "calibrated: the shipped form's stored hold-out of the same grouping (none is stored by engine).")
    print("\nthe host constants, each fold's (fitted without the unit) and on every run, beside the published estimate:")
    print(f"{'fitted without':16s} {'runs':>5s} " + " ".join(f"{'a ' + e + ' (ms)':>14s}" for e in ("SGLang", "TRT", "vLLM"))
          + f" {'d (us/seq)':>11s}")
    folds = [(f"{by} {g}", f) for by, h in held.items() for g, f in h.fits.items()] + [("(every run)", mh.fit(runs))]
    for name, f in folds:
        cells = " ".join(f"{f.fixed_s[e] * 1e3:14.3f}" if e in f.fixed_s else f"{'(median)':>14s}"
                         for e in ("SGLang", "TRT", "vLLM"))
        print(f"{name:16s} {f.runs:5d} {cells} {f.per_sequence_s * 1e6:11.2f}")
    est = mh.independent_estimate()
    print(f"independent estimate ({est['source']}): {est['fixed_s'] * 1e3:.2f} ms a step + "
          f"{est['per_sequence_s'] * 1e6:.0f} us a request; {est['what']}. None is published here for TensorRT-LLM "
          "or vLLM.")
    nested_choice(runs)
    speculative(held["model"])
    if per_position_scales:
        per_position(per_position_scales, spec_ids)
    if spec_ids is None:
        nested_spec_choice()
    print("\ntargets (reported, never tuned to):")
    for what, target, value, met in mh.targets(held["model"], spec):
        print(f"  {what}: {value} (target {target}): " + ("not scored" if met is None else "met" if met else "missed"))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--accuracy", action="store_true")
    p.add_argument("--held-out", action="store_true", help="the measured step plus host work, held out")
    p.add_argument("--every", type=int, default=1, help="with --held-out: every n-th run only (a quick check)")
    p.add_argument("--no-timing", action="store_true", help="skip the timing table")
    p.add_argument("--no-sensitivity", action="store_true",
                   help="with --held-out: skip e_pos scaled once a step (the per-layer form only)")
    p.add_argument("--spec-ids", default=None,
                   help="with --held-out: the e_pos block on these speculative runs only, comma-separated (a quick check)")
    a = p.parse_args()
    if not a.no_timing:
        timing()
    if a.accuracy:
        accuracy()
    if a.held_out:
        held_out(a.every, ("layers",) if a.no_sensitivity else ("layers", "step"),
                 None if a.spec_ids is None else tuple(a.spec_ids.split(",")))
