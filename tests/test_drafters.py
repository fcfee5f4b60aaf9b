"""Drafters priced by their own rooflines (speclib.core.drafters) and the
speedup, gamma* and throughput that use them.

Independent routes: the sequel's printed numbers (141 us per MTP pass and
245 us per DFlash block at B = 1, the B ~ 24 gamma crossover), the
definitions (MTP linear in gamma, DFlash flat), the paper's ledger where the
two pricings must agree, and a brute-force argmax over scalar calls.
"""
import dataclasses

import numpy as np
import pytest

import speclib
from speclib import presets
from speclib.core import drafters, speculation, step

QWEN = "Qwen3.6-35B-A3B"
MTP, DFLASH = "qwen3.6-mtp", "qwen3.6-dflash"


def test_presets_by_name():
    assert presets.drafter(MTP).kind == "mtp" and presets.drafter(DFLASH).kind == "dflash"
    assert presets.drafter(DFLASH).block == 16 and presets.drafter(MTP).block is None
    with pytest.raises(ValueError, match=r"^unknown drafter 'eagle-9'; known: Qwen3.6-MTP, Qwen3.6-DFlash"):
        presets.drafter("eagle-9")


def test_mtp_pass_and_dflash_block_at_batch_one():
    """docs/sequel.md: ~141 us per MTP pass, ~245 us per DFlash block at B = 1."""
    assert drafters.draft_time(1, 1, MTP, "B200") * 1e6 == pytest.approx(141, abs=0.5)
    assert drafters.draft_time(1, 1, DFLASH, "B200") * 1e6 == pytest.approx(245, abs=1)


def test_mtp_is_linear_in_gamma_and_dflash_flat():
    B = np.geomspace(1, 4096, 30)
    one_mtp = drafters.draft_time(1, B, MTP)
    one_dflash = drafters.draft_time(1, B, DFLASH)
    for g in range(0, 17):
        np.testing.assert_allclose(drafters.draft_time(g, B, MTP), g * one_mtp, rtol=1e-14)
        expected = np.zeros_like(B) if g == 0 else one_dflash
        np.testing.assert_array_equal(drafters.draft_time(g, B, DFLASH), expected)


def test_dflash_turns_compute_bound_past_about_18_sequences():
    d = presets.drafter(DFLASH)
    hw = presets.B200
    # one pass: 2 P B D FLOPs against 2 P bytes
    ridge_batch = hw.ridge("bf16") / d.block
    assert 17 < ridge_batch < 18.5
    t = drafters.draft_time(1, np.array([1.0, 17.0, 19.0, 38.0]), DFLASH)
    assert t[0] == t[1]  # memory-bound: flat in B
    assert t[3] == pytest.approx(2 * t[2] * 38 / 19 / 2, rel=1e-12)  # compute-bound: linear in B


@pytest.mark.parametrize("gamma, sequel", [(2, 40), (4, 94), (8, 193), (16, 385)])
def test_crossover_batches_are_the_sequels(gamma, sequel):
    """DFlash is cheaper below B ~ 24 gamma: B < 40 at gamma = 2, < 94 at 4,
    < 193 at 8, < 385 at 16 (docs/sequel.md), each pass priced as the sequel's
    simulator prices it (one roofline over the pass)."""
    B_x = drafters.crossover_batch(gamma, hardware="B200", roofline="aggregate")
    assert sequel - 1 <= B_x <= sequel + 1
    below, above = np.floor(B_x), np.ceil(B_x) + 1
    time = lambda d, B: float(drafters.draft_time(gamma, B, d, roofline="aggregate"))  # noqa: E731
    assert time(DFLASH, below) <= time(MTP, below) and time(DFLASH, above) > time(MTP, above)


def test_pricing_each_part_of_a_pass_separately_moves_the_crossover_up():
    """Per component, an MTP pass pays its dense compute and its experts'
    bytes in full rather than overlapped once its dense part turns
    compute-bound (past ~281 sequences on a B200), so at gamma = 16, where
    the crossover lies beyond that, DFlash stays cheaper longer; below it the
    two rules agree."""
    for gamma in (2, 4, 8):
        assert drafters.crossover_batch(gamma) == pytest.approx(drafters.crossover_batch(gamma, roofline="aggregate"))
    assert drafters.crossover_batch(16) > 1.2 * drafters.crossover_batch(16, roofline="aggregate")


def test_at_gamma_one_mtp_is_always_cheaper():
    assert drafters.crossover_batch(1, hardware="B200") == 0.0


def test_gamma_above_the_block_is_refused():
    with pytest.raises(ValueError, match=r"^gamma must be in \[0, 16\] \(Qwen3.6-DFlash drafts one block of 16 "):
        drafters.draft_time(17, 1, DFLASH)
    with pytest.raises(ValueError, match=r"^gamma must be in \[0, 16\]"):
        speclib.speedup(0.8, 17, 8, 512, deployment=speclib.Deployment(QWEN, drafter=DFLASH))


# --- the paper's ledger is unchanged when no drafter is given -------------------------
def test_a_drafter_without_a_measured_curve_stops_at_the_longest_draft_it_was_measured_at():
    """DeepSeek's MTP modules accept i.i.d. in the model; their depth is the longest draft any measured run of a
    DeepSeek MTP module in the data makes, and no draft length the library gives goes past it."""
    from speclib.evidence import spec_runs
    from speclib.presets import resolve

    measured = max(g for r in spec_runs.spec_runs() if r.drafter.startswith("mtp")
                   and resolve(r.model, None)[0].name.startswith("DeepSeek") for _, g, _ in r.points)
    for name in ("deepseek-v3-mtp", "deepseek-v4-flash-mtp"):
        preset = presets.drafter(name)
        assert preset.depth == preset.max_gamma == measured and preset.depth_source
    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=8, drafter="deepseek-v4-flash-mtp", step_time="calibrated")
    B = np.array([1.0, 2, 4, 8, 16])
    g, _ = speclib.optimal_gamma(0.9, B, 4096, deployment=dep)
    free = dataclasses.replace(presets.drafter("deepseek-v4-flash-mtp"), depth=None, depth_source="")
    g_free, _ = speclib.optimal_gamma(0.9, B, 4096, deployment=dep.replace(drafter=free))
    assert g.max() == measured < g_free.max()  # an acceptance of 0.9 would draft longer; the depth stops it
    assert np.array_equal(g, np.minimum(g_free, measured))
    with pytest.raises(ValueError, match=rf"^gamma must be in \[0, {measured}\] \(DeepSeek-V4-Flash-MTP is run to at "
                                         rf"most {measured} drafted tokens\); got 5$"):
        speclib.speedup(0.9, 5, 8, 4096, deployment=dep)
    with pytest.raises(ValueError, match="depth_source must say where"):
        dataclasses.replace(presets.drafter("deepseek-v3-mtp"), depth_source="")


def test_no_drafter_means_the_papers_ledger_exactly():
    B = np.geomspace(1, 30000, 60)
    ledger = speclib.Deployment(c_draft=0.1).pricing()
    assert isinstance(ledger, speculation.LedgerPricing)
    cm = speclib.core.cost.cost_model()
    for g in (0, 1, 4, 9):
        n = speclib.expected_committed(0.75, g)
        expected = n * cm.decode(B, 4096.0) / (cm.verify(B, g + 1.0, 4096.0) + 0.1 * g * cm.decode(B, 4096.0))
        np.testing.assert_allclose(speclib.speedup(0.75, g, B, 4096), expected, rtol=1e-14)


def test_a_constant_drafter_on_the_whole_step_costs_c_plain_steps():
    B, S = np.geomspace(1, 4096, 20), 512.0
    sm = step.step_model(QWEN, "B200", rollback=step.DEFAULT_ROLLBACK)  # the deployment's default
    for g in (1, 3, 8):
        t = speclib.core.speculation.throughput(B, g, S, model=QWEN, c_draft=0.2, acceptance=0.7)
        assert t == pytest.approx(speclib.throughput(B, g, S, acceptance=0.7,
                                                     deployment=speclib.Deployment(QWEN, c_draft=0.2)), rel=0)
        n = speclib.expected_committed(0.7, g)
        R = np.minimum(B, speclib.Deployment(QWEN).max_batch(S, g))  # what memory holds runs, the rest queued
        plain = sm.time(R, 1.0, S)
        np.testing.assert_allclose(t, R * n / (sm.time(R, g + 1.0, S) + 0.2 * g * plain), rtol=1e-13)


def test_either_c_draft_or_a_drafter():
    with pytest.raises(ValueError, match=r"^give either c_draft .* or drafter"):
        speclib.optimal_gamma(0.8, 8, 512, 0.1, deployment=speclib.Deployment(QWEN, drafter=MTP))
    with pytest.raises(ValueError, match=r"^give either c_draft .* or drafter"):
        speclib.Deployment(QWEN, drafter=MTP, c_draft=0.1)


# --- gamma*: the priced policy ----------------------------------------------------------
@pytest.mark.parametrize("drafter", [MTP, DFLASH])
def test_optimal_gamma_is_the_brute_force_argmax(drafter):
    B = np.array([1.0, 8.0, 64.0, 512.0, 2048.0])
    deployment = speclib.Deployment(QWEN, drafter=drafter, roofline="aggregate")
    g_star, s_star = speclib.optimal_gamma(None, B, 512, deployment=deployment)
    curve = speclib.Deployment(QWEN, drafter=drafter).pricing().measured_acceptance()
    for i, b in enumerate(B):
        values = [speclib.speedup(curve, g, b, 512, deployment=deployment)
                  for g in range(len(curve) + 1)]
        assert g_star[i] == int(np.argmax(values))
        assert s_star[i] == pytest.approx(max(values), rel=1e-14)


def test_highest_speedup_is_highest_throughput():
    B = np.geomspace(1, 2048, 25)
    deployment = speclib.Deployment(QWEN, drafter=MTP, roofline="aggregate")
    g_star, _ = speclib.optimal_gamma(None, B, 512, deployment=deployment)
    table = np.array([speclib.core.speculation.throughput(B, g, 512, deployment=deployment) for g in range(9)])
    np.testing.assert_array_equal(g_star, np.argmax(table, axis=0))


def test_the_dflash_curve_is_padded_to_its_block_with_a_zero():
    """The sequel counts the unmeasured 16th position as never surviving."""
    curve = speclib.Deployment(QWEN, drafter=DFLASH).pricing().measured_acceptance()
    measured = speclib.core.acceptance.load_survival_curves()["dflash"]
    assert len(measured) == 15 and len(curve) == 16 and curve.values[-1] == 0.0
    np.testing.assert_array_equal(curve.values[:15], measured.values)


def test_alpha_is_needed_without_a_drafter_preset():
    with pytest.raises(ValueError, match=r"^alpha must be given"):
        speclib.optimal_gamma(None, 8, 512)


def test_a_rising_survival_curve_is_refused():
    with pytest.raises(ValueError, match=r"^survival must be non-increasing"):
        speclib.core.speculation.throughput(8, 2, 512, deployment=speclib.Deployment(QWEN, drafter=MTP),
                                            acceptance=speclib.SurvivalCurve([0.5, 0.6]))


@pytest.mark.parametrize("kwargs, message", [
    (dict(B=0), r"^B must be a number in \(0, inf\)"),
    (dict(S=-5), r"^S must be a number in \(0, inf\)"),
    (dict(gamma=-1), r"^gamma must be an integer in \[0, 8\]"),
    (dict(roofline="max"), r"^roofline must be one of"),
    (dict(drafter="medusa"), r"^unknown drafter 'medusa'"),
])
def test_throughput_rejects_bad_input(kwargs, message):
    args = {**dict(B=8, gamma=2, S=512, model=QWEN, drafter=MTP), **kwargs}
    with pytest.raises(ValueError, match=message):
        B, gamma, S = args.pop("B"), args.pop("gamma"), args.pop("S")
        speclib.core.speculation.throughput(B, gamma, S, deployment=speclib.Deployment(**args))
