"""``speclib fit`` on a few of a deployment's own runs, held against the rest
of its sweep (speclib.calibration.few_shot): the issue's few-shot targets
(printed, not asserted) beside the two null baselines on the same points.

    python benchmarks/bench_few_shot.py            # the targets, then every sweep's points
    python benchmarks/bench_few_shot.py --brief    # the targets only

Targets, on each sweep of five or more concurrencies fitted on its three
smallest (the plan "spread", fitted on the smallest, the middle and the
largest, is shown beside them: it predicts between its runs): the median |error| on the speed-up and on TPOT <= 5 % and at most
half the carried-forward baseline's; the on/off decision right on >= 95 %
of points. The InferenceX configurations have at most four concurrencies at
which both arms were measured, so they are also shown fitted on their two
smallest (every sweep of three or more).
"""
import argparse

from speclib.calibration import few_shot

NAMES = {"fitted": "speclib fit", "carried": "carried forward", "loglinear": "log-linear"}


def _pct(x):
    return "  n/a" if x != x else f"{100 * x:5.1f}"


def _table(n_fit, min_points, plan="smallest"):
    rows = few_shot.summary(n_fit, min_points=min_points, plan=plan)
    where = "smallest concurrencies" if plan == "smallest" else "concurrencies spread over the sweep"
    print(f"fitted on {n_fit} {where}, sweeps of {max(min_points, n_fit + 1)} or more"
          + (":" if plan == "smallest" else " ('carried forward': the nearest fitted run's):"))
    print(f"  {'family':<36} {'sweeps':>6} {'points':>6}  {'predictor':<16} {'speed-up':>9} {'TPOT':>6} "
          f"{'on/off':>7}")
    for fam, row in rows.items():
        for i, pred in enumerate(few_shot.PREDICTORS):
            r = row[pred]
            head = (f"{fam:<36} {row['sweeps']:>6} {row['points']:>6}" if i == 0 else " " * 50)
            print(f"  {head}  {NAMES[pred]:<16} {_pct(r['speedup'])} % {_pct(r['tpot'])} % {_pct(r['decision'])} %")
        print(f"  {'':<50}  sweeps meeting every target: {row['meets']} of {row['sweeps']}")


def _sweeps(n_fit, plan="smallest"):
    for r in few_shot.results(n_fit, plan):
        if not r.points:
            continue
        acc = f"{r.accept_length:.2f} tokens/verify" + (" (fitted)" if r.accept_fitted else "")
        fitted = [r.sweep.concurrencies[i] for i in few_shot.fitted_ranks(len(r.sweep.concurrencies), n_fit, plan)]
        print(f"\n{r.sweep.id} (fit on {', '.join(map(str, fitted))}; {acc}; "
              f"largest fitted TPOT error {100 * r.fit_residual:.1f} %)")
        print(f"  {'conc':>5} {'speed-up':>9} {'fit':>6} {'carried':>8} {'loglin':>7}   "
              f"{'TPOT ms off/on':>15} {'fit':>13} {'carried':>13} {'loglin':>13}")
        for p in r.points:
            two = lambda t: f"{t[0]:6.2f}/{t[1]:6.2f}"  # noqa: E731
            print(f"  {p.concurrency:>5} {p.speedup:>9.3f} {p.fitted_speedup:>6.3f} {p.carried_speedup:>8.3f} "
                  f"{p.loglinear_speedup:>7.3f}   {two(p.tpot):>15} {two(p.fitted_tpot):>13} "
                  f"{two(p.carried_tpot):>13} {two(p.loglinear_tpot):>13}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--brief", action="store_true", help="the targets' tables only")
    args = parser.parse_args()
    print(f"{len(few_shot.sweeps())} sweeps give both arms' times; "
          f"{len(few_shot.unscored())} engine sweeps give none to fit:")
    for sweep_id, why in few_shot.unscored().items():
        print(f"  {sweep_id}: {why}")
    print()
    _table(few_shot.N_FIT, few_shot.MIN_SCORED)
    print()
    _table(2, 3)
    print()
    _table(few_shot.N_FIT, few_shot.MIN_SCORED, "spread")
    if not args.brief:
        for n_fit, plan in ((few_shot.N_FIT, "smallest"), (2, "smallest"), (few_shot.N_FIT, "spread")):
            print(f"\n--- each sweep, fitted on {n_fit} of its concurrencies ({plan}) ---")
            _sweeps(n_fit, plan)


if __name__ == "__main__":
    main()
