"""The calibrated step time: the fit, its held-out errors, the shipped
constants, and how it prices a speculative step (verify and drafter)."""
import dataclasses
import json

import numpy as np
import pytest

from speclib.core.deployment import Deployment

from speclib import presets
from speclib.evidence import validation
from speclib.core import calibrated as cal
from speclib.core import speculation as spec
from speclib.core import step as _step


@pytest.fixture(scope="module")
def held():
    return validation.held_out()


def test_shipped_calibration_is_fitted_on_every_decoding_run_and_the_speculative_runs():
    from speclib.evidence import step_fit

    shipped = cal.shipped_calibration()
    fit = step_fit.fit(step_fit.SHIPPED_FORM).calibration()
    assert shipped.roofline_factor == pytest.approx(fit.roofline_factor, rel=1e-9)
    assert shipped.per_sequence_s == pytest.approx(fit.per_sequence_s, rel=1e-9)
    assert shipped.per_position_s == pytest.approx(fit.per_position_s, rel=1e-9) and shipped.per_position_s > 0
    for chip, engines in fit.fixed_s.items():
        assert shipped.fixed_s[chip] == pytest.approx(engines, rel=1e-9)
    assert set(shipped.fitted_on) == {"1k1k", "1k8k"} and len(step_fit.fit().runs) == len(step_fit.spec_runs()) >= 26


def test_constants_are_physical():
    c = cal.shipped_calibration()
    assert all(1.0 <= mu < 2.0 for mu in c.roofline_factor.values())  # kernels at 50-100% of the datasheet
    assert all(2e-3 < a < 1e-2 for by in c.fixed_s.values() for a in by.values())  # a few ms per step
    assert 0 < c.per_sequence_s < 2e-4
    # TensorRT-LLM's fixed time is below vLLM's on both chips where both ran.
    assert all(c.fixed_s[chip]["TRT"] < c.fixed_s[chip]["vLLM"] for chip in ("B200", "H200"))


def test_queueing_runs_are_left_out():
    runs = validation.decoding_runs()
    assert len(runs) == 446 and len(validation.compare()) == 454
    assert np.all(runs.little_batch >= validation.QUEUEING_FRACTION * runs.column("concurrency"))


@pytest.mark.parametrize("test_workload", ["1k1k", "1k8k"])
def test_held_out_median_error_within_20_percent_both_ways(held, test_workload):
    n, median, worst = held.overall(test_workload)
    assert n > 200 and median < 0.10 and worst < 0.40


def test_held_out_median_within_20_percent_for_every_chip_and_tp(held):
    rows = held.summary(("chip", "tp"))
    assert len(rows) == 23
    assert all(median < 0.20 for *_, n, median, worst in rows)


def test_each_term_earns_its_place(held):
    """Dropping a kept term worsens the held-out median; the all-reduce term
    does not improve it by more than half a point."""
    full = max(held.overall(w)[1] for w in validation.WORKLOADS)
    for dropped in validation.DEFAULT_TERMS:
        terms = tuple(t for t in validation.DEFAULT_TERMS if t != dropped)
        worse = max(validation.held_out(terms).overall(w)[1] for w in validation.WORKLOADS)
        assert worse > full, dropped
    extra = validation.held_out(validation.DEFAULT_TERMS + ("allreduce",))
    assert max(extra.overall(w)[1] for w in validation.WORKLOADS) > full - 0.005


def test_calibrated_tpot_is_roofline_times_factor_plus_overheads():
    c = cal.shipped_calibration()
    B, S = np.array([4.0, 32, 128]), 1536.0
    roof = validation.predicted_tpot("llama-3-70b", "B200", B, S, 2, "fp8")
    trt = Deployment("llama-3-70b", "B200", tp=2, engine="TRT")
    got = validation.calibrated_tpot(B, S, trt)
    assert np.allclose(got, c.roofline_factor["B200"] * roof + c.fixed_s["B200"]["TRT"] + c.per_sequence_s * B)
    with_prefill = validation.calibrated_tpot(B, S, trt, workload="1k1k")
    arch = presets.LLAMA_3_70B.step_architecture()
    causal = arch.attention_layers * arch.flops_per_pair * 1024 * 1023 / 2  # token i attends over the i before it
    flops = 1024 * 2 * presets.LLAMA_3_70B.active_params() + causal
    prefill = B / 1024 * flops / (2 * presets.B200.peak_flops("fp8"))
    assert np.allclose(with_prefill - got, c.prefill_factor * prefill)


def test_calibrated_prediction_matches_the_fit_on_every_run():
    from speclib.evidence import step_fit

    runs = validation.decoding_runs()
    predicted = step_fit.predict_decode(step_fit.fit(step_fit.SHIPPED_FORM))
    for i in range(0, len(runs), 37):
        r = runs.records[i]
        hw = presets.hardware(r.chip)
        context = validation.mean_decode_context(r.input_len, r.output_len)
        direct = validation.calibrated_tpot(r.concurrency, context, Deployment("llama-3-70b", hw, tp=r.tp,
                                                                                engine=r.framework),
                                            precision=r.precision, workload=r.workload)
        assert direct == pytest.approx(predicted[i], rel=1e-9)


def test_roofline_stays_a_lower_bound_of_the_calibrated_prediction():
    for chip in ("B200", "H100", "MI355X"):
        B = np.array([1.0, 16, 128, 1024])
        roof = validation.predicted_tpot("llama-3-70b", chip, B, 4096, 4)
        assert np.all(validation.calibrated_tpot(B, 4096, Deployment("llama-3-70b", chip, tp=4)) > roof)


def test_calibrated_tpot_prices_the_deployments_own_calibration():
    own = cal.Calibration(roofline_factor={"B200": 2.0}, fixed_s={"B200": {"vLLM": 0.004}}, per_sequence_s=1e-5,
                          model="llama-3-70b", source="a test's")
    B = np.array([1.0, 8, 64])
    roof = validation.predicted_tpot("llama-3-70b", "B200", B, 2048, 2)
    got = validation.calibrated_tpot(B, 2048, Deployment("llama-3-70b", "B200", tp=2, engine="vLLM", step_time=own))
    np.testing.assert_allclose(got, 2.0 * roof + 0.004 + 1e-5 * B, rtol=1e-12)
    with pytest.raises(ValueError, match=r"^deployment must be a speclib.Deployment"):
        validation.calibrated_tpot(B, 2048, {"model": "llama-3-70b"})


# --- pricing with it ------------------------------------------------------------------------
def test_calibrated_pricing_prices_verify_and_drafter_with_the_calibrated_step():
    c = cal.shipped_calibration()
    mu, a, d = c.roofline_factor["B200"], c.fixed_s["B200"]["vLLM"], c.per_sequence_s
    if c.fixed_layers_ref:  # the fixed time of a model of L layers: a x L / L_ref, L_ref the decode runs' model's
        assert c.fixed_layers_ref == presets.LLAMA_3_70B.n_layers
        a = a * presets.model("qwen3.6").n_layers / presets.LLAMA_3_70B.n_layers
    e, a_d = c.per_position(presets.B200), c.per_draft_pass_s
    priced = spec.Deployment("qwen3.6", "B200", drafter="qwen3.6-mtp", step_time="calibrated", tp=2).pricing()
    roof = _step.step_model("qwen3.6", "B200", rollback=_step.DEFAULT_ROLLBACK)  # the deployment's default
    B, S, g = np.array(32.0), np.array(512.0), np.array(3.0)
    assert priced.plain(B, S) == pytest.approx(mu * roof.time(B, 1.0, S) / 2 + a + d * B)
    raw_draft = spec.resolve_drafter("qwen3.6-mtp", None, presets.B200).time(g, B)
    expected = mu * roof.time(B, g + 1, S) / 2 + a + d * B + e * B * g + mu * raw_draft / 2 + a_d * g
    assert priced.step(g, B, S) == pytest.approx(expected)


def test_calibrated_constant_drafter_is_its_fraction_of_the_calibrated_plain_step():
    priced = spec.Deployment(c_draft=0.1, step_time="calibrated").pricing()
    B, S = np.array(8.0), np.array(4096.0)
    assert priced.drafter.time(np.array(2.0), B, S, priced.step_model) == pytest.approx(0.2 * priced.plain(B, S))


def test_gamma_zero_is_exactly_one_and_roofline_default_is_unchanged():
    B = np.array([1.0, 64, 4096])
    assert np.all(spec.speedup(0.8, 0, B, 4096, deployment=spec.Deployment(step_time="calibrated")) == 1.0)
    assert isinstance(spec.Deployment().pricing(), spec.LedgerPricing)
    g0, s0 = spec.optimal_gamma(0.75, B, 4096, 0.1)
    g1, s1 = spec.optimal_gamma(0.75, B, 4096, 0.1, deployment=spec.Deployment(step_time="roofline", tp=1))
    assert np.array_equal(g0, g1) and np.array_equal(s0, s1)


def test_tensor_parallel_roofline_leaves_ratios_alone():
    B = np.array([1.0, 64, 4096])
    on_one = spec.Deployment("qwen3.6", drafter="qwen3.6-mtp")
    on_eight = on_one.replace(tp=8)
    one = spec.speedup(None, 3, B, 512, deployment=on_one)
    eight = spec.speedup(None, 3, B, 512, deployment=on_eight)
    assert np.allclose(one, eight, rtol=1e-12)
    t1 = spec.throughput(B, 3, 512, deployment=on_one)
    t8 = spec.throughput(B, 3, 512, deployment=on_eight)
    assert np.allclose(t8, 8 * t1)


def test_fixed_costs_shrink_the_small_batch_gutter():
    """A fixed time per step makes a wider verify relatively cheaper: at small
    batch the calibrated speedup beats the roofline's."""
    B = np.array([1.0, 2, 4, 8])
    _, roof = spec.optimal_gamma(0.75, B, 4096, 0.1)
    g, calibrated = spec.optimal_gamma(0.75, B, 4096, 0.1, deployment=spec.Deployment(step_time="calibrated"))
    assert np.all(calibrated > roof) and np.all(g > 0)


def test_step_time_flows_through_throughput():
    deployment = spec.Deployment("qwen3.6", drafter="qwen3.6-mtp", step_time="calibrated")
    t = spec.throughput(64, 3, 512, deployment=deployment)
    priced = deployment.pricing()
    curve = priced.measured_acceptance()
    assert t == pytest.approx(64 * (1 + curve.values[:3].sum()) / priced.step(np.array(3.0), np.array(64.0),
                                                                             np.array(512.0)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(step_time="measured"), r"^step_time must be one of 'roofline', 'calibrated'"),
    (dict(step_time="calibrated", hardware="MI300X", engine="TRT"), r"engine 'TRT' was not measured on MI300X"),
    (dict(step_time="calibrated", engine="tgi"), r"^engine must be one of 'vLLM', 'TRT', 'SGLang'"),
    (dict(tp=0), r"^tp must be an integer in \[1, 1024\]"),
    (dict(tp=2.5), r"^tp must be an integer"),
])
def test_bad_step_time_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        spec.Deployment(**kwargs)


def test_cost_model_refuses_whole_step_options():
    from speclib.core import parallel

    cm = parallel.expert_parallel_cost_model(G=8)
    with pytest.raises(ValueError, match="tp= and routing= price the whole model's step"):
        spec.Deployment(cost_model=cm, tp=2)


def test_a_calibrated_ledger_is_layers_times_the_layer_in_seconds_plus_overheads():
    from speclib.core import parallel

    cm = parallel.expert_parallel_cost_model("deepseek-v3", "H200", G=8)
    c = cal.shipped_calibration()
    mu, a, d = c.roofline_factor["H200"], c.fixed_s["H200"]["vLLM"], c.per_sequence_s
    if c.fixed_layers_ref:  # DeepSeek-V3's 61 layers against the decode runs' model's 80
        a = a * 61 / presets.LLAMA_3_70B.n_layers
    priced = spec.Deployment(cost_model=cm, step_time="calibrated", c_draft=0.05).pricing()
    B, S = np.array(16.0), np.array(8192.0)
    seconds = mu * 61 / presets.H200.memory_bandwidth
    assert priced.cost_model.decode(B, S) == pytest.approx(seconds * cm.decode(B, S) + a + d * 16)
    e = c.per_position(presets.H200)
    assert priced.cost_model.verify(B, 3.0, S) == pytest.approx(seconds * cm.verify(B, 3.0, S) + a + d * 16
                                                                 + e * 16 * 2)


def test_calibration_file_is_valid_json_with_its_provenance():
    from importlib import resources

    data = json.loads(resources.files("speclib").joinpath(*cal.CALIBRATION_FILE).read_text())
    assert data["model"].startswith("Llama-3.3-70B") and "write-calibration" in data["about"]


# --- chips, engines and models the fit has not seen; intervals ----------------------------------


def _chip(vendor):
    return dataclasses.replace(presets.hardware("GB300"), name=f"a {vendor} chip", aliases=(), vendor=vendor)


def test_a_chip_the_fit_did_not_see_takes_its_vendors_median_and_says_so():
    c = cal.shipped_calibration()
    gb300 = presets.hardware("GB300")
    assert c._chip(gb300) is None
    nvidia = [chip for chip in c.roofline_factor if presets.hardware(chip).vendor == "NVIDIA"]
    mu, a, d = c.constants(gb300, "vLLM")
    assert mu == pytest.approx(float(np.median([c.roofline_factor[k] for k in nvidia])))
    assert a == pytest.approx(float(np.median([c.fixed_s[k]["vLLM"] for k in nvidia])))
    assert d == c.per_sequence_s
    notes = c.notes(presets.model("llama-3-70b"), gb300, "vLLM", 64)
    assert any("GB300 is not in the fit" in n for n in notes)
    with pytest.raises(ValueError, match=r"^hardware 'a Intel chip' has no calibrated step time: its vendor "
                                         r"'Intel' has no fitted constants") as info:
        spec.Deployment("llama-3-70b", _chip("Intel"), step_time="calibrated")
    assert "\n" not in str(info.value)


def test_sglang_shares_vllms_fixed_time_and_says_so():
    c = cal.shipped_calibration()
    assert c.engine_for("SGLang") == "vLLM"
    assert c.constants(presets.H200, "SGLang") == c.constants(presets.H200, "vLLM")
    assert any("SGLang has no fixed time of its own" in n for n in c.notes(engine="SGLang"))
    sg = spec.Deployment("deepseek-v3", "H200", tp=8, engine="SGLang", step_time="calibrated")
    vl = spec.Deployment("deepseek-v3", "H200", tp=8, engine="vLLM", step_time="calibrated")
    assert spec.speedup(0.7, 2, 16, 2048, 0.05, deployment=sg) == spec.speedup(0.7, 2, 16, 2048, 0.05, deployment=vl)


def test_a_speedups_interval_is_the_quantiles_over_the_draws():
    c = cal.shipped_calibration()
    no_spread = dataclasses.replace(c, residual_sd=0.0)
    dep = spec.Deployment("qwen3-235b-a22b", "H200", tp=8, step_time=no_spread)
    B = np.array([1.0, 16, 64])
    got = spec.speedup(0.75, 3, B, 2048, 0.05, deployment=dep, interval=True)
    np.testing.assert_allclose(got.value, spec.speedup(0.75, 3, B, 2048, 0.05, deployment=dep))
    # each draw rebuilt from the file's own record, priced without the interval machinery
    base = c.to_json()
    per_draw = np.array([spec.speedup(0.75, 3, B, 2048, 0.05, deployment=dep.replace(
        step_time=cal.Calibration.from_json({**base, **draw, "draws": []}))) for draw in c.draws])
    np.testing.assert_allclose(got.lo, np.quantile(per_draw, 0.1, axis=0), rtol=1e-3)
    np.testing.assert_allclose(got.hi, np.quantile(per_draw, 0.9, axis=0), rtol=1e-3)
    # no draft is plain decoding, exactly
    gamma, at = spec.optimal_gamma(0.75, 4096, 1024, 0.05, deployment=spec.Deployment(
        "llama-3-70b", "H200", tp=8, step_time="calibrated"), interval=True)
    assert gamma == 0 and (at.value, at.lo, at.hi) == (1.0, 1.0, 1.0)
    assert str(spec.speedup(0.75, 3, 16, 2048, 0.05, deployment=dep, interval=True)).endswith("]")


def test_an_interval_needs_a_calibrated_step():
    with pytest.raises(ValueError, match=r"^interval=True needs a calibrated step with bootstrap draws") as info:
        spec.speedup(0.75, 3, 16, 2048, 0.05, interval=True)
    assert "\n" not in str(info.value)
