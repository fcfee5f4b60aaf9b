"""A running batch is what memory holds: a deployment priced whole in seconds
with a memory check reads a batch as a closed loop's concurrency, decodes
the sequences memory holds (at each draft length, its slots counted) and
queues the rest (speclib.Deployment.running).

Expected numbers come from elsewhere: Llama-3-70B's bytes counted by hand from
its published configuration, each step timed by the pricing objects at the
batch memory holds, each arm's throughput computed point by point and their
ratio taken, and the unbounded pricing built without the bound.
"""
from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest

import speclib
from speclib.core.pricing import StepPricing
from speclib.tools import cli

CONTEXT = 8704.0  # an 8k1k benchmark's mean decode context: 8,192 + (1,024 - 1) / 2, rounded up
LLAMA_FP8 = dict(weights="fp8", kv_cache="fp8")


def _llama(**kw):
    return speclib.Deployment("llama-3-70b", "H200", **LLAMA_FP8, **kw)


def _qwen(**kw):
    """A hybrid model with its MTP drafter: each draft position keeps a snapshot of
    the linear layers' state, so a longer draft holds many fewer sequences."""
    return speclib.Deployment("qwen3.6-35b-a3b", "H200", drafter="qwen3.6-mtp", **kw)


# --- the example -------------------------------------------------------------------------
def test_llama_70b_fp8_on_one_h200_holds_38_sequences_of_8704_tokens():
    # Llama-3-70B's config.json: 80 layers, hidden 8192, MLP 28672, 64 query and 8 KV heads of 128, a
    # vocabulary of 128256, the embedding and the output head untied. FP8 decoder weights (one byte), the
    # embedding and the head in bf16, an FP8 KV cache; 10 % of the H200's 141 GB kept free.
    h, f, layers, kv, d, vocab = 8192, 28672, 80, 8, 128, 128256
    decoder = layers * (2 * h * h + 2 * h * kv * d + 3 * h * f)
    weights = decoder * 1 + 2 * vocab * h * 2
    per_sequence = CONTEXT * layers * 2 * kv * d * 1
    by_hand = math.floor((0.9 * 141e9 - weights) / per_sequence)
    assert by_hand == 38
    assert _llama().max_batch(CONTEXT) == by_hand


def test_tpot_above_what_memory_holds_is_the_step_of_what_it_holds():
    dep = _llama()
    held = dep.max_batch(CONTEXT)
    step = dep.pricing(whole_step=True).plain(np.float64(held), np.float64(CONTEXT))  # the step, timed directly
    assert speclib.tpot(128, CONTEXT, deployment=dep) == step
    np.testing.assert_array_equal(speclib.tpot([held, 64, 128, 1000], CONTEXT, deployment=dep), step)
    assert speclib.tpot(held - 1, CONTEXT, deployment=dep) < step  # below it a batch still costs its own step
    with_prefill = speclib.tpot([held, 128], CONTEXT, workload="8k1k", deployment=dep)
    assert with_prefill[0] == with_prefill[1] > step
    # without a memory check every sequence runs: 128 cost more than 38 (as before)
    assert speclib.tpot(128, CONTEXT, deployment=dep.replace(reserve=None)) > 2 * step


def test_running_and_queued_split_the_concurrency():
    dep = _qwen()
    held = dep.max_batch(4096, np.arange(4))
    running, queued = dep.running(400, 4096, np.arange(4))
    np.testing.assert_array_equal(running, [min(400, m) for m in held])
    np.testing.assert_array_equal(running + queued, 400)
    assert held[0] > held[1] > held[2] > held[3]  # the snapshots per draft position
    everyone, nobody = dep.replace(reserve=None).running(400, 4096, 3)
    assert (float(everyone), float(nobody)) == (400.0, 0.0)


def test_throughput_is_flat_above_what_memory_holds():
    dep = _llama(step_time="calibrated")
    for gamma in (0, 3):
        held = dep.max_batch(CONTEXT, gamma)
        x = speclib.throughput([held - 1, held, 64, 128, 1000], gamma, CONTEXT, acceptance=0.8, deployment=dep)
        assert x[0] < x[1]
        np.testing.assert_array_equal(x[1:], x[1])
        priced = dep.pricing(whole_step=True)
        n = speclib.expected_committed(0.8, gamma)
        assert x[1] == pytest.approx(held * n / priced.step(np.asarray(float(gamma)), float(held), CONTEXT),
                                     rel=1e-14)


# --- the speed-up at a concurrency, by brute force ------------------------------------------------
def _brute_force_speedup(dep, gamma, C, S, curve):
    """Each arm's committed tokens per second at its own running batch, point by point, and their ratio."""
    priced = dep.pricing()
    out = []
    for c in C:
        plain_runs = min(c, dep.max_batch(S))
        spec_runs = min(c, dep.max_batch(S, gamma))
        n = speclib.expected_committed_from_survival(curve, float(gamma))
        x_plain = plain_runs / float(priced.plain(np.float64(plain_runs), np.float64(S)))
        x_spec = spec_runs * n / float(priced.step(np.float64(gamma), np.float64(spec_runs), np.float64(S)))
        out.append(x_spec / x_plain)
    return np.array(out)


def test_speedup_at_a_concurrency_is_the_ratio_of_the_arms_throughputs():
    dep = _qwen()
    curve = dep.pricing().measured_acceptance()
    C = np.array([1.0, 64, 200, 300, 400, 444, 445, 1000, 5000])
    for gamma in (1, 3, 6):
        got = speclib.speedup(None, gamma, C, 4096, deployment=dep)
        np.testing.assert_allclose(got, _brute_force_speedup(dep, gamma, C, 4096.0, curve), rtol=1e-12)
        x = speclib.throughput(C, gamma, 4096, deployment=dep) / speclib.throughput(C, 0, 4096, deployment=dep)
        np.testing.assert_allclose(got, x, rtol=1e-12)
    # gamma* is the argmax of the brute-force speed-ups over every draft length
    g, s = speclib.optimal_gamma(None, C, 4096, deployment=dep)
    table = np.array([_brute_force_speedup(dep, k, C, 4096.0, curve) for k in range(1, len(curve) + 1)])
    best = np.where(table.max(axis=0) > 1.0, 1 + np.argmax(table, axis=0), 0)
    np.testing.assert_array_equal(g, best)
    np.testing.assert_allclose(s, np.maximum(table.max(axis=0), 1.0), rtol=1e-12)


def test_an_array_of_drafter_costs_prices_each_point_as_one_at_a_time():
    dep = speclib.Deployment("qwen3.6-35b-a3b", "H200", step_time="calibrated")
    C, c = np.array([8.0, 300.0, 5000.0]), np.array([0.05, 0.2, 0.1])
    together = speclib.speedup(0.8, 4, C, 4096, c, deployment=dep)
    alone = [speclib.speedup(0.8, 4, b, 4096, k, deployment=dep) for b, k in zip(C, c)]
    np.testing.assert_allclose(together, alone, rtol=1e-13)
    assert dep.max_batch(4096, 4) < 300  # the last two points are past what memory holds with the draft


def test_past_what_memory_holds_a_long_draft_pays_less_than_without_the_bound():
    dep = _qwen()
    bounded = speclib.speedup(None, 6, 400, 4096, deployment=dep)
    unbounded = speclib.speedup(None, 6, 400, 4096, deployment=dep.replace(reserve=None))
    assert bounded < unbounded  # its snapshots leave room for 171 of the 400; plain decoding runs all 400


# --- below both limits and without a memory check: nothing changes ------------------------------
def test_without_a_memory_check_the_numbers_are_the_unbounded_pricing_bit_for_bit():
    dep = _qwen(reserve=None)
    priced = dep.pricing()
    assert priced.holds is None
    unbounded = StepPricing(priced.step_model, priced.drafter)
    curve = priced.measured_acceptance()
    B = np.array([1.0, 64, 444, 1000, 30000])
    for gamma in (0.0, 1.0, 3.0):
        n = speclib.expected_committed_from_survival(curve, gamma)
        g = np.asarray(gamma)
        np.testing.assert_array_equal(speclib.speedup(None, gamma, B, 4096, deployment=dep),
                                      unbounded.speedup(n, g, B, np.full(B.shape, 4096.0)))
        np.testing.assert_array_equal(speclib.throughput(B, gamma, 4096, deployment=dep),
                                      B * n / unbounded.step(g, B, np.full(B.shape, 4096.0)))
    np.testing.assert_array_equal(speclib.tpot(B, 4096, deployment=dep), unbounded.plain(B, np.full(B.shape, 4096.0)))


def test_below_both_limits_the_bound_changes_nothing_bit_for_bit():
    dep = _qwen()
    B = np.array([1.0, 2, 17, 64, 141.5])  # below what memory holds at every draft length up to 8
    for gamma in range(0, 9):
        assert np.all(B <= dep.max_batch(4096, gamma))
        np.testing.assert_array_equal(speclib.speedup(None, gamma, B, 4096, deployment=dep),
                                      speclib.speedup(None, gamma, B, 4096, deployment=dep.replace(reserve=None)))
        np.testing.assert_array_equal(speclib.throughput(B, gamma, 4096, deployment=dep),
                                      speclib.throughput(B, gamma, 4096, deployment=dep.replace(reserve=None)))


def test_the_papers_ledger_prices_the_batch_as_given():
    # the paper's Figure 3 runs to 30,000 sequences of 4,096 tokens: far past what one B200 holds
    assert speclib.Deployment().max_batch(4096) < 30000
    assert not speclib.Deployment().whole_step
    ledger = speclib.optimal_gamma(0.75, [1000.0, 30000.0], 4096, 0.1)
    unbounded = speclib.optimal_gamma(0.75, [1000.0, 30000.0], 4096, 0.1,
                                      deployment=speclib.Deployment(reserve=None))
    np.testing.assert_array_equal(ledger[0], unbounded[0])
    np.testing.assert_array_equal(ledger[1], unbounded[1])


# --- draft lengths and contexts memory cannot hold ----------------------------------------------
#: One H200 holds one sequence of Qwen3.6 at this context, without a draft or with up to 10 drafted
#: tokens (a calibrated step with the paper's constant drafter); a longer draft's slots and snapshots
#: leave room for none.
EDGE = 2_793_285.25


def test_optimal_gamma_never_picks_a_draft_whose_slots_do_not_fit():
    dep = speclib.Deployment("qwen3.6-35b-a3b", "H200", c_draft=0.1, step_time="calibrated")
    held = dep.max_batch(EDGE, np.arange(17))
    assert held[0] == 1 and held[10] == 1 and np.all(held[11:] == 0)
    unbounded, _ = speclib.optimal_gamma(0.97, [1.0, 2.0], EDGE, deployment=dep.replace(reserve=None))
    assert np.all(unbounded > 10)  # without the bound a draft memory cannot hold would be chosen
    g, s = speclib.optimal_gamma(0.97, [1.0, 2.0], EDGE, deployment=dep)
    assert np.all(held[g] >= 1) and np.all(g >= 1) and np.all(s > 1)
    np.testing.assert_array_equal(speclib.speedup(0.97, 12, [1.0, 2.0], EDGE, deployment=dep), 0.0)
    np.testing.assert_array_equal(speclib.throughput([1.0, 2.0], 12, EDGE, acceptance=0.97, deployment=dep), 0.0)
    with pytest.raises(ValueError, match=r"^gamma: a draft of 12 tokens does not fit on one H200"):
        speclib.speedup(0.97, 12, 1, EDGE, deployment=dep)
    with pytest.raises(ValueError, match=r"^gamma: a draft of 12 tokens does not fit"):
        speclib.throughput(1, 12, EDGE, acceptance=0.97, deployment=dep)


def test_a_context_memory_cannot_hold_is_nan_in_arrays_and_an_error_at_one_point():
    dep = speclib.Deployment("qwen3.6-35b-a3b", "H200", c_draft=0.1, step_time="calibrated")
    S = 2 * EDGE
    assert dep.max_batch(S) == 0
    assert np.all(np.isnan(speclib.tpot([1.0, 8.0], S, deployment=dep)))
    assert np.all(np.isnan(speclib.speedup(0.8, 3, [1.0, 8.0], S, deployment=dep)))
    assert np.all(np.isnan(speclib.throughput([1.0, 8.0], 0, S, acceptance=0.8, deployment=dep)))
    g, s = speclib.optimal_gamma(0.8, [1.0, 8.0], S, deployment=dep)
    assert np.all(g == 0) and np.all(np.isnan(s))
    for call in (lambda: speclib.tpot(1, S, deployment=dep), lambda: speclib.speedup(0.8, 3, 1, S, deployment=dep),
                 lambda: speclib.optimal_gamma(0.8, 1, S, deployment=dep),
                 lambda: speclib.throughput(1, 0, S, acceptance=0.8, deployment=dep)):
        with pytest.raises(ValueError, match=r"^context: one H200 holds not one sequence of 5,586,570 tokens"):
            call()
    # without a memory check it is priced as before
    assert math.isfinite(speclib.tpot(1, S, deployment=dep.replace(reserve=None)))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_a_bad_concurrency_names_its_parameter(bad):
    dep = _llama(step_time="calibrated")
    for call, name in ((lambda: speclib.tpot(bad, CONTEXT, deployment=dep), "batch"),
                       (lambda: speclib.speedup(0.8, 3, bad, CONTEXT, deployment=dep), "B"),
                       (lambda: speclib.optimal_gamma(0.8, bad, CONTEXT, deployment=dep), "B"),
                       (lambda: speclib.throughput(bad, 3, CONTEXT, acceptance=0.8, deployment=dep), "B"),
                       (lambda: dep.running(bad, CONTEXT), "batch")):
        with pytest.raises(ValueError, match=rf"^{name} must be a number in \(0, inf\)"):
            call()


# --- one bound, everywhere -------------------------------------------------------------------------
def test_the_frontier_and_the_schedule_bound_by_the_same_count():
    dep = _llama(step_time="calibrated")
    f = speclib.core.frontier.frontier(dep, "8k1k", gamma=3, alpha=0.8, concurrencies=[1, 16, 38, 64, 128])
    np.testing.assert_array_equal(f.plain.running, dep.running(f.plain.concurrency, f.context)[0])
    sched = speclib.schedule(seq=4096, alpha=0.8, max_batch=512, gamma_max=8, deployment=_qwen(c_draft=None))
    B = sched.batches[None, :]
    queued = _qwen().running(B, 4096, sched.gammas[:, None])[1]
    feasible = sched.feasible()
    np.testing.assert_array_equal(feasible[1:], queued[1:] == 0)  # a draft is set only where nobody waits


def test_a_tree_prices_the_running_batch_as_a_chain_does():
    dep = _qwen()
    C = np.array([1.0, 64, 400, 444, 1000])  # one H200 holds 444 without a draft, 247 drafting 3
    curve = dep.pricing().measured_acceptance()
    n = speclib.expected_committed_from_survival(curve, 3.0)
    same = speclib.core.speculation.tree_speedup(n, C, 4096, depth=3, width=4, deployment=dep)
    np.testing.assert_allclose(same, speclib.speedup(None, 3, C, 4096, deployment=dep), rtol=1e-13)
    assert same[-1] == same[-2]  # both arms past what memory holds: the same running batches


# --- the command -----------------------------------------------------------------------------------
def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


GAMMA = ("gamma", "--model", "llama-3-70b", "--hardware", "h200", "--tp", "2", "--step-time", "calibrated",
         "--seq", "8704", "--alpha", "0.8", "--draft-cost", "0.05")


def test_gamma_says_on_stderr_when_the_concurrency_is_above_what_memory_holds():
    code, out, err = _run(*GAMMA, "--batch", "128")
    dep = speclib.Deployment("llama-3-70b", "H200", tp=2, step_time="calibrated", c_draft=0.05)
    g, s = speclib.optimal_gamma(0.8, 128, CONTEXT, deployment=dep)
    m0, mg = dep.max_batch(CONTEXT), dep.max_batch(CONTEXT, g)
    assert code == 0 and g > 0 and m0 < 128
    assert err == (f"speclib gamma: concurrency 128 is above what memory holds at 8,704 tokens ({m0} sequences "
                   f"with \u03b3 = 0, {mg} with \u03b3 = {g}): priced as that many running, the rest queued\n")
    assert f"speedup     {s:.4f}x" in out and f"running     {mg} sequences at gamma* = {g}, {m0} plain" in out
    code, out, err = _run(*GAMMA, "--batch", str(m0))
    assert code == 0 and err == "" and "running" not in out


def test_the_commands_refuse_a_bad_concurrency_in_one_line():
    for bad in ("0", "-3", "nan"):
        code, out, err = _run(*GAMMA, "--batch", bad)
        assert code == 2 and out == "" and err.count("\n") == 1 and "--batch" in err


def test_schedule_and_profile_say_where_memory_stops_them():
    code, _, err = _run("schedule", "--model", "llama-3-70b", "--hardware", "h200", "--tp", "2", "--seq", "8704",
                        "--alpha", "0.8", "--max-batch", "512", "--format", "table")
    dep = speclib.Deployment("llama-3-70b", "H200", tp=2)
    m0 = dep.max_batch(CONTEXT)
    assert code == 0 and err.startswith(f"speclib schedule: batch 512 is above what memory holds at 8,704 tokens "
                                        f"({m0} sequences with \u03b3 = 0, ")
    assert err.endswith(f"the schedule stops at {m0}; no draft length is set above the batch its slots hold\n")
    code, _, err = _run("profile", "--model", "llama-3-70b", "--hardware", "h200", "--tp", "2", "--seq", "8704",
                        "--max-batch", "64", "--gamma-max", "4")
    assert code == 0 and err == (f"speclib profile: batch 64 is above what memory holds at 8,704 tokens ({m0} "
                                 f"sequences with \u03b3 = 0, {dep.max_batch(CONTEXT, 4)} with \u03b3 = 4): the rows "
                                 "above it price steps of batches memory does not hold (a schedule of this "
                                 "deployment stops there)\n")
    code, _, err = _run("profile", "--model", "llama-3-70b", "--hardware", "h200", "--tp", "2", "--seq", "8704",
                        "--max-batch", str(m0), "--gamma-max", "4")
    assert code == 0 and err == ""
