"""The engine step fitted on measured runs: how long one fit takes, and the
held-out figures the engines issue sets as targets (printed, not asserted).

    python benchmarks/bench_step_fit.py
"""
import time

from speclib.evidence import step_fit


def main() -> None:
    step_fit._problem()  # features of every run, computed once
    t0 = time.perf_counter()
    step_fit.fit()
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    step_fit.leave_one_run_out()
    loo = time.perf_counter() - t0
    print(f"one fit on the shipped data: {one * 1e3:.0f} ms (target <= 2 s); leave-one-run-out over "
          f"{len(step_fit.spec_runs())} runs and every decode sweep: {loo:.2f} s")
    print()
    print(step_fit.report())


if __name__ == "__main__":
    main()
