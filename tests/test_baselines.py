"""The null baselines a held-out figure is shown beside (speclib.calibration.baselines), each on small cases whose
right answer is worked out by hand in the test, and on the stored hold-outs the numbers the issue read off them."""
import numpy as np
import pytest

from speclib.calibration import baselines as bl
from speclib.calibration import held_out
from speclib.evidence.spec_runs import SpecRun
from speclib.calibration.step_predictions import RunPrediction


def _run(points, family="A", quantity="speedup", alpha=0.7, run_id=None):
    return SpecRun(id=run_id or f"run-{family}-{len(points)}", label="", url="", engine="vLLM", model="llama-3-8b",
                   chip="H100", gpus=1, expert_parallel=False, context=1000.0, alpha=alpha, accept={},
                   draft_share=0.05, drafter="eagle", verify_tokens=0, quantity=quantity,
                   points=tuple(points), assumed="", family=family)


def _pred(batch, gamma, measured, predicted, scored=None, best=None, family="A", quantity="speedup", run_id=None):
    pts = list(zip(batch, gamma, measured))
    scored = np.ones(len(batch), dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
    return RunPrediction(_run(pts, family, quantity, run_id=run_id), np.array(batch), np.array(gamma),
                         np.array(measured, dtype=float), np.array(predicted, dtype=float), best or {}, scored)


def test_always_a_gain_is_right_where_a_gain_was_measured():
    p = _pred([1, 2, 4], [2, 2, 2], [1.2, 0.9, 1.1], [1.1, 1.05, 0.95])
    step, gain = bl.sign_scores([p])
    assert (step.right, step.n) == (1, 3)  # only the first is on the measured side of 1x
    assert (gain.right, gain.n) == (2, 3)  # two gains were measured
    ratio = _pred([1, 1], [2, 3], [1.1, 0.9], [1.0, 1.0], quantity="throughput")
    assert bl.sign_scores([ratio])[1].n == 0  # ratios between draft lengths have no side of 1x


def test_the_gain_falls_and_stays_flat_against_each_sweeps_measured_slope():
    rows = [("a", 2, (1, 2, 4), -0.1, -0.2, True), ("b", 2, (1, 2, 4), 0.0, 0.1, False),
            ("c", 2, (1, 2, 4), 0.2, -0.1, False)]
    step, falls = bl.direction_scores(rows)
    assert (step.right, falls.right, falls.n) == (1, 1, 3)
    assert bl.persistence_direction(rows)[1].right == 1  # only "b" was measured flat


def test_the_constant_draft_is_chosen_without_the_unit_it_is_scored_on():
    # unit A measured best at 1 and 1, unit B at 5 and 5, unit C at 5
    preds = [_pred([1, 2], [1, 1], [1, 1], [1, 1], best={4: (1, 1), 8: (1, 2)}, family="A"),
             _pred([1, 2], [5, 5], [1, 1], [1, 1], best={4: (5, 5), 8: (5, 4)}, family="B"),
             _pred([1], [5], [1], [1], best={4: (5, 1)}, family="C")]
    step, nested, in_sample, chosen = bl.constant_draft(preds, lambda p: p.run.family)
    assert (step.right, step.n) == (4, 5)  # all but C's 1 against 5
    # by hand: A is scored against the constant B and C choose (4 to 6 hold all three of theirs: 4, the shortest);
    # B against A and C's (1 or 2 holds A's two, 4 to 6 C's one: 1); C against A and B's (1, 2 or 4 to 6 hold
    # two each: 1); none of them is within one of its unit's own
    assert chosen == {"A": 4, "B": 1, "C": 1} and nested.right == 0
    assert in_sample.right == 3  # 4 on every pair: B's two and C's one, which the nested constant cannot see


def test_the_speedup_at_the_smallest_batch_is_scored_past_it_at_the_same_draft():
    p = _pred([1, 1, 4, 8], [2, 3, 2, 2], [2.0, 2.2, 1.5, 1.0], [1.9, 2.0, 1.4, 1.1])
    mask, base = bl.smallest_batch(p)
    np.testing.assert_array_equal(mask, [False, False, True, True])
    np.testing.assert_allclose(base[mask], [2.0, 2.0])
    s = bl.persistence_scores([p])
    assert s["points"] == 2
    assert s["step"].value == pytest.approx(np.median([abs(1.4 / 1.5 - 1), abs(1.1 / 1.0 - 1)]))
    assert s["baseline"].value == pytest.approx(np.median([abs(2.0 / 1.5 - 1), abs(2.0 / 1.0 - 1)]))
    assert (s["step_sign"].right, s["baseline_sign"].right, s["step_sign"].n) == (1, 1, 2)
    # a point that sets the run's acceptance (not scored) is no test of either
    q = _pred([1, 4], [2, 2], [2.0, 1.5], [2.0, 1.4], scored=[True, False])
    assert bl.persistence_scores([q])["points"] == 0


def test_the_best_draft_measured_at_the_smallest_batch_against_the_later_batches():
    # measured best at batch 1: gamma 3 (2.2 > 2.0); at batch 8 measured 1, predicted 2
    p = _pred([1, 1, 8, 8], [2, 3, 1, 3], [2.0, 2.2, 1.3, 1.1], [2.0, 2.1, 1.2, 1.0], best={1: (3, 3), 8: (1, 2)})
    step, base = bl.persistence_best([p])
    assert (step.right, base.right, base.n) == (1, 0, 1)  # |1 - 2| <= 1; |1 - 3| > 1


def test_the_tpot_baseline_is_the_median_of_the_same_chip_and_engine_outside_the_group():
    measured = [1.0, 2.0, 3.0, 10.0]
    out = bl.same_chip_engine_tpot(measured, ["a", "b", "b", "a"], ["X", "X", "X", "Y"], ["E"] * 4)
    # run 0: X/E outside a: 2 and 3; runs 1, 2: X/E outside b: 1; run 3: no Y/E outside a, so E outside a: 2, 3
    np.testing.assert_allclose(out, [2.5, 1.0, 1.0, 2.5])
    step, base = bl.tpot_scores(measured, [1.1, np.nan, 3.0, 9.0], out)
    assert step.n == 3 and step.value == pytest.approx(0.1)
    assert base.value == pytest.approx(np.median([1.5, 2 / 3, 0.75]))


def test_the_stored_hold_outs_skill_rows_are_counted_off_their_points():
    held = held_out.stored_held_out("model")
    rows = {(r[0], r[3]): r for r in held_out.skill_of(held)}
    pts = [(m, q) for p in held.runs if p.run.quantity == "speedup" for m, q, ok in zip(p.measured, p.predicted,
                                                                                         p.scored) if ok]
    sign = rows["gain on the right side of 1\u00d7 (points)", "always a gain"]
    assert sign[1:3] == (len(pts), f"{sum((m > 1) == (q > 1) for m, q in pts)} of {len(pts)}")
    assert sign[4] == f"{sum(m > 1 for m, _ in pts)} of {len(pts)}"
    s = held.summary()
    falls = rows["the gain's direction with batch (sweeps)", "the gain falls with batch"]
    assert falls[2] == f"{s['direction_right']} of {s['direction_sweeps']}"
    # the stored file holds the same rows for the command line
    assert [tuple(r) for r in held_out.stored_skill("model")["skill"]] == held_out.skill_of(held)


def test_a_forms_decision_skill_is_its_share_right_less_each_baselines():
    # A: measured best 1 at two batches; B: measured best 5; the step predicts A's 1 and 2 and B's 5 and 4
    a = _pred([1, 2, 4], [1, 1, 1], [1.2, 0.9, 0.8], [1.1, 1.1, 0.7], best={2: (1, 1), 4: (1, 2)}, family="A",
              run_id="a")
    b = _pred([1, 2, 4], [5, 5, 5], [1.3, 1.2, 1.1], [1.2, 1.3, 1.35], best={2: (5, 5), 4: (5, 4)}, family="B",
              run_id="b")
    counts = bl.decision_counts([a, b], lambda p: p.run.family)
    # by hand: sign: the step right on 1.2, 0.8, 1.3, 1.2, 1.1 (5 of 6), always a gain on 4 of 6; best draft: the
    # step 4 of 4; the constant chosen without A is B's 5 (4 to 6 hold both of B's: 4, the shortest), without B
    # A's 1: neither within one of the other's (0 of 4); direction: A measured 1.2 -> 0.8 and predicted
    # 1.1 -> 0.7 both fall (right), B measured falls, predicted rises: wrong; the gain falls: both right
    np.testing.assert_array_equal(counts.sum(axis=0), [5, 4, 6, 4, 0, 4, 1, 2, 2])
    assert bl.decision_skill(counts) == pytest.approx(np.mean([(5 - 4) / 6, (4 - 0) / 4, (1 - 2) / 2]))
    # no items of a kind: that decision is left out of the mean
    assert bl.decision_skill(np.array([[1, 0, 2, 0, 0, 0, 0, 0, 0]])) == 0.5


def test_error_skill_is_one_less_the_ratio_of_median_errors_on_the_same_points():
    p = _pred([1, 4, 8, 16], [2, 2, 2, 2], [2.0, 1.6, 1.2, 1.0], [1.9, 1.5, 1.3, 1.1])
    e, b = bl.persistence_errors(p)
    np.testing.assert_allclose(e, [1.5 / 1.6 - 1, 1.3 / 1.2 - 1, 0.1])
    np.testing.assert_allclose(b, [2.0 / 1.6 - 1, 2.0 / 1.2 - 1, 1.0])
    step = np.median([abs(1.5 / 1.6 - 1), abs(1.3 / 1.2 - 1), 0.1])
    assert bl.error_skill([(e, b)]) == pytest.approx(1 - step / np.median([0.25, 2 / 3, 1.0]))
    assert np.isnan(bl.error_skill([]))
