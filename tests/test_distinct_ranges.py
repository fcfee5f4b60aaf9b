"""Schedules whose ranges the interval can tell apart: adjacent ranges whose
speed-ups lie inside each other's interval merge, the fewest runs possible,
checked against brute force over every way of cutting the ranges into runs."""
import itertools
import random

from speclib.tools.schedule import indistinct_groups


def brute_force(ranges):
    """Every cut of the ranges into adjacent runs; the fewest runs in which
    every pair of ranges has each speed-up inside the other's interval."""
    n = len(ranges)
    best = None
    for mask in itertools.product((0, 1), repeat=n - 1):
        runs, start = [], 0
        for i, cut in enumerate(mask, start=1):
            if cut:
                runs.append((start, i - 1))
                start = i
        runs.append((start, n - 1))
        good = all(ranges[j][1] <= ranges[k][0] <= ranges[j][2] and ranges[k][1] <= ranges[j][0] <= ranges[k][2]
                   for a, b in runs for j in range(a, b + 1) for k in range(a, b + 1))
        if good and (best is None or len(runs) < len(best)):
            best = runs
    return best


def test_a_jittering_schedule_merges_to_what_the_interval_tells_apart():
    # slots 4, 3, 4, 5, 4, 3, 2 whose speed-ups drift down inside overlapping intervals, then one clearly lower
    speedups = [2.00, 1.98, 1.97, 1.95, 1.93, 1.92, 1.40]
    ranges = [(s, s - 0.1, s + 0.1) for s in speedups]
    groups = indistinct_groups(ranges)
    assert groups == [(0, 5), (6, 6)]
    assert len(groups) == len(brute_force(ranges))


def test_against_brute_force():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 8)
        ranges = []
        for _ in range(n):
            s = rng.uniform(1.0, 2.0)
            ranges.append((s, s - rng.uniform(0.0, 0.4), s + rng.uniform(0.0, 0.4)))
        groups = indistinct_groups(ranges)
        assert len(groups) == len(brute_force(ranges))
        # the groups cover every range once, in order, and each is mutually indistinct
        assert [i for a, b in groups for i in range(a, b + 1)] == list(range(n))
        for a, b in groups:
            for j, k in itertools.combinations(range(a, b + 1), 2):
                assert ranges[j][1] <= ranges[k][0] <= ranges[j][2] and ranges[k][1] <= ranges[j][0] <= ranges[k][2]


def test_ranges_told_apart_stay_apart():
    ranges = [(2.0, 1.95, 2.05), (1.5, 1.45, 1.55), (1.0, 0.95, 1.05)]
    assert indistinct_groups(ranges) == [(0, 0), (1, 1), (2, 2)]


# --- the default of schedule() and of `speclib schedule` ---------------------------------------------
def _calibrated(**kw):
    import speclib
    from speclib.tools.schedule import schedule

    return schedule(seq=4096, alpha=0.75, c_draft=0.1, max_batch=512, **kw,
                    deployment=speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=2, step_time="calibrated"))


def _described(sched, ranges):
    """Each range as (mean speed-up at its K, widest interval low, high), computed here from the raw arrays."""
    import numpy as np

    lo, hi = sched.interval
    out = []
    for r in ranges:
        i = list(sched.gammas).index(r.k)
        s = sched.speedups[0][i, r.lo - 1:r.hi]
        out.append((float(np.mean(s)), float(np.min(lo[r.lo - 1:r.hi])), float(np.max(hi[r.lo - 1:r.hi]))))
    return out


def test_the_default_table_merges_what_the_interval_cannot_tell_apart():
    merged = _calibrated()
    every = merged.every_range()
    import speclib  # the package's entry point has the same default
    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=2, step_time="calibrated")
    assert speclib.schedule(seq=4096, alpha=0.75, c_draft=0.1, max_batch=512,
                            deployment=dep).table().ranges == merged.table().ranges
    per_batch = every.table().ranges
    assert per_batch == every.ranges and len(per_batch) > 2  # off: every change of the optimum stays
    table = merged.table()
    # as many ranges as brute force finds runs of mutually indistinct drafting ranges between the K = 0 ones
    # (turning speculation off stays its own range)
    expected, run = 0, []
    for r in list(per_batch) + [None]:
        if r is None or r.k == 0:
            expected += (len(brute_force(_described(every, run))) if run else 0) + (r is not None)
            run = []
        else:
            run.append(r)
    assert any(r.k == 0 for r in per_batch)
    assert len(table.ranges) == expected < len(per_batch)
    assert [r for r in table.ranges if r.k == 0] == [r for r in per_batch if r.k == 0]
    # each merged range is a union of whole per-batch ranges, and the merge costs little of the optimum
    cuts = {r.lo for r in per_batch}
    assert {r.lo for r in table.ranges} <= cuts
    assert 0.9 < table.kept <= 1.0
    # and the TensorRT-LLM table holds no more ranges than the interval tells apart
    trt = merged.table(first_is_max=True, implicit_zero_tail=True)
    assert len(trt.ranges) <= len(table.ranges)


def test_max_ranges_caps_the_merged_table():
    sched = _calibrated()
    for n in (1, 2):
        assert len(sched.table(max_ranges=n).ranges) <= n


def test_the_command_merges_by_default_and_max_ranges_caps_it():
    import contextlib
    import io
    import json

    from speclib.tools.cli import main

    def run(*extra):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["schedule", "--model", "deepseek-v4-flash", "--hardware", "b200", "--alpha", "0.75",
                           "--max-batch", "512", "--tp", "2", "--step-time", "calibrated", "--engine", "vllm",
                           *extra])
        return status, out.getvalue(), err.getvalue()

    status, out, _ = run()
    assert status == 0
    table = json.loads(out)["speculative_config"]["num_speculative_tokens_per_batch_size"]
    assert [[r.lo, r.hi, r.k] for r in _calibrated().table().ranges] == table
    status, out, _ = run("--max-ranges", "2")
    assert status == 0 and len(json.loads(out)["speculative_config"]["num_speculative_tokens_per_batch_size"]) <= 2
    for bad in ("0", "-1", "65", "two"):
        status, out, err = run("--max-ranges", bad)
        assert status == 2 and out == "" and err.count("\n") == 1 and "--max-ranges" in err, (bad, err)
