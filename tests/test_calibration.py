"""The calibrated step time: the fit, its held-out errors, the shipped
constants, and how it prices a speculative step (verify and drafter)."""
import dataclasses
import json

import numpy as np
import pytest

from speclib.core.deployment import Deployment

import speclib
from speclib import presets
from speclib.evidence import validation

LLAMA = presets.model("Llama-3.3-70B")
from speclib.core import calibrated as cal
from speclib.core import speculation as spec
from speclib.core import step as _step


def test_shipped_calibration_is_fitted_on_every_decoding_run_and_the_speculative_runs():
    from speclib.evidence import spec_runs
    from speclib.calibration import step_features, step_fit

    shipped = cal.shipped_calibration()
    fit = step_fit.fit(step_features.SHIPPED_FORM).calibration()
    assert shipped.roofline_factor == pytest.approx(fit.roofline_factor, rel=1e-9)
    assert shipped.per_sequence_s == pytest.approx(fit.per_sequence_s, rel=1e-9)
    assert shipped.per_position_s == pytest.approx(fit.per_position_s, rel=1e-9)
    assert shipped.extra_flops_by_vendor == pytest.approx(fit.extra_flops_by_vendor, rel=1e-9)
    # the shipped form charges each extra verified position a time per attention layer, one for every chip
    # (pooled), and not the extra positions' FLOPs
    assert shipped.per_position_s > 0 and not shipped.per_position_by_vendor and not shipped.extra_flops_by_vendor
    for chip, engines in fit.fixed_s.items():
        assert shipped.fixed_s[chip] == pytest.approx(engines, rel=1e-9)
    # both model classes' decoding, all three workloads, and every speculative run
    assert set(shipped.fitted_on) == {"1k1k", "1k8k", "8k1k"} and "DeepSeek and Llama" in shipped.model
    assert len(step_fit.fit().runs) == len(spec_runs.spec_runs()) >= 26


def test_constants_are_physical():
    c = cal.shipped_calibration()
    assert all(1.0 <= mu < 2.0 for mu in c.roofline_factor.values())  # kernels at 50-100% of the datasheet
    assert all(0 <= a < 1.5e-2 for by in c.fixed_s.values() for a in by.values())  # up to a few ms per step
    # the host's time per request is not told apart from the extra positions' work on these runs: the fit
    # may set it to zero, never below, and never past a few hundred microseconds
    assert 0 <= c.per_sequence_s < 2e-4
    # the extra positions' FLOPs run no faster than the chip's peak, and not below a tenth of it
    assert all(1.0 <= chi < 10.0 for chi in c.extra_flops_by_vendor.values())
    assert c.prefill_factor >= 1.0  # the prefill no faster than its roofline
    assert all(2e-5 < t < 2e-4 for t in c.moe_layer_s.values())  # tens of microseconds per MoE layer
    assert all(0 <= nu < 4 for nu in c.attention_factor_by_vendor.values())
    # TensorRT-LLM's fixed time is below vLLM's on both chips where both ran.
    assert all(c.fixed_s[chip]["TRT"] < c.fixed_s[chip]["vLLM"] for chip in ("B200", "H200"))


def test_queueing_runs_are_left_out():
    from speclib.evidence import decode_runs

    runs = validation.decoding_runs()
    assert len(runs) == 449 and len(validation.compare()) == 454
    assert np.all(runs.little_batch >= validation.QUEUEING_FRACTION * runs.column("concurrency"))
    kept = decode_runs.decode_runs("r1")
    every = decode_runs.all_runs("r1")
    assert len(every) == 909 and len(kept) == 872
    assert all(r.little_batch >= 0.85 * r.concurrency for r in kept)
    # the broken date (a time to first token of minutes) is among those left out
    assert any(r.ttft_s > 100 for r in every) and not any(r.ttft_s > 100 for r in kept)


def test_the_decode_runs_held_out_by_workload_stay_close():
    from speclib.calibration import held_out, step_fit

    runs, y = step_fit.decode_rows()
    e = np.abs(held_out.stored_decode_by_workload() / y - 1)
    for family, limit in (("Llama", 0.12), ("DeepSeek", 0.20)):
        mine = np.array([r.family == family for r in runs])
        assert np.median(e[mine]) < limit, family


def test_each_piece_of_the_shipped_step_earns_its_place():
    """Leaving out attention's factor, the time per MoE layer or the
    collectives worsens one of the held-out measures: the decode runs held out
    by chip (median, worst median signed by concurrency, or one model class's
    median), or the speed-ups held out by model family."""
    from speclib.calibration import held_out

    rows = {label: values for label, *values in held_out.stored_decode_ablation()}
    shipped = rows.pop("the shipped form")
    for label in ("without attention's own factor", "without the time per MoE layer", "the collectives not charged"):
        worse = [rows[label][i] > shipped[i] for i in range(5)]
        assert any(worse), label


def _hand_split(chip, B, S, tp):
    """One GPU's share of Llama-3.3-70B's plain step on tp GPUs, fp8 weights and cache, from published
    totals (memory-bound at these batches): the decoder's weights (1 B each) and the bf16 head, the cache
    of every sequence over its S + 1 tokens, split over tp GPUs; and its attention part alone."""
    hw = presets.hardware(chip)
    head = LLAMA.vocab_size * LLAMA.hidden_size
    weights = (LLAMA.total_params() - 2 * head) * 1.0 + head * 2.0
    kv = B * (S + 1) * 2 * 8 * 128 * 1.0 * 80
    return (weights + kv) / tp / hw.memory_bandwidth, kv / tp / hw.memory_bandwidth


#: NCCL's small all-reduce on B200s at 2 GPUs (AIConfigurator, NCCL 2.29.2): 10.25 us; NVLink 5, 900 GB/s each way.
B200_ALLREDUCE_2 = (10.25e-6, 900e9)


def test_calibrated_tpot_is_the_roofline_scaled_plus_the_collectives_and_overheads():
    c = cal.shipped_calibration()
    B, S = np.array([4.0, 32, 128]), 1536.0
    roof, attention = _hand_split("B200", B, S, 2)
    latency, link = B200_ALLREDUCE_2
    collectives = 2 * 80 * (latency + 2 * (2 - 1) / 2 * B * 8192 * 2 / link)
    trt = Deployment("llama-3-70b", "B200", tp=2, engine="TRT", weights="fp8", kv_cache="fp8", step_time="calibrated")
    got = speclib.tpot(B, S, deployment=trt)
    nu = c.attention_factor(presets.B200)
    expected = (c.roofline_factor["B200"] * roof + nu * attention + collectives + c.fixed_s["B200"]["TRT"]
                + c.per_sequence_s * B)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    # the prefill of arriving requests: 1,024-token prompts, compute-bound for a dense model
    with_prefill = speclib.tpot(B, S, deployment=trt, workload="1k1k")
    arch = presets.LLAMA_3_70B.step_architecture()
    causal = arch.attention_layers * arch.flops_per_pair * 1024 * 1023 / 2  # token i attends over the i before it
    flops = 1024 * 2 * presets.LLAMA_3_70B.active_params() + causal
    prefill = B / 1024 * flops / (2 * presets.B200.peak_flops("fp8"))
    np.testing.assert_allclose(with_prefill - got, c.prefill_factor * prefill, rtol=1e-9)


def test_calibrated_prediction_matches_the_fit_on_every_run():
    from speclib.calibration import step_features, step_fit, step_predictions

    runs, _ = step_fit.decode_rows()
    predicted = step_predictions.predict_decode(step_fit.fit(step_features.SHIPPED_FORM))
    for i in range(0, len(runs), 41):
        r = runs[i]
        direct = speclib.tpot(r.concurrency, r.context, workload=(r.input_len, r.output_len),
                              deployment=r.deployment("calibrated"))
        assert direct == pytest.approx(predicted[i], rel=1e-9), r


def test_roofline_stays_a_lower_bound_of_the_calibrated_prediction():
    for chip in ("B200", "H100", "MI355X"):
        B = np.array([1.0, 16, 128, 1024])
        for model in ("llama-3-70b", "deepseek-r1"):
            # the step's bound at every batch, whatever memory holds: every sequence priced at once
            roof = speclib.tpot(B, 4096, deployment=Deployment(model, chip, tp=4, reserve=None))
            assert np.all(speclib.tpot(B, 4096, deployment=Deployment(model, chip, tp=4, step_time="calibrated",
                                                                      reserve=None)) > roof)


def test_calibrated_tpot_prices_the_deployments_own_calibration():
    own = cal.Calibration(roofline_factor={"B200": 2.0}, fixed_s={"B200": {"vLLM": 0.004}}, per_sequence_s=1e-5,
                          model="llama-3-70b", source="a test's")
    B = np.array([1.0, 8, 64])
    roof, _ = _hand_split("B200", B, 2048, 2)
    latency, link = B200_ALLREDUCE_2
    collectives = 2 * 80 * (latency + 2 * (2 - 1) / 2 * B * 8192 * 2 / link)
    dep = Deployment("llama-3-70b", "B200", tp=2, engine="vLLM", weights="fp8", kv_cache="fp8", step_time=own)
    np.testing.assert_allclose(speclib.tpot(B, 2048, deployment=dep), 2.0 * roof + collectives + 0.004 + 1e-5 * B,
                               rtol=1e-9)
    with pytest.raises(ValueError, match=r"^deployment must be a speclib.Deployment"):
        speclib.tpot(B, 2048, deployment={"model": "llama-3-70b"})
    with pytest.raises(ValueError, match=r"^workload must be one of"):
        speclib.tpot(B, 2048, deployment=dep, workload="2k2k")


# --- pricing with it ------------------------------------------------------------------------
def test_calibrated_pricing_prices_verify_and_drafter_with_the_calibrated_step():
    from speclib.core import layout

    c = cal.shipped_calibration()
    mu, a, d = c.roofline_factor["B200"], c.fixed_s["B200"]["vLLM"], c.per_sequence_s
    if c.fixed_layers_ref:  # the fixed time of a model of L layers: a x L / L_ref, L_ref the decode runs' model's
        a = a * presets.model("qwen3.6").n_layers / presets.LLAMA_3_70B.n_layers
    a = a + c.moe_layer(presets.B200) * 40  # Qwen3.6-35B-A3B: 40 MoE layers
    nu, e, a_d = c.attention_factor(presets.B200), c.per_position(presets.B200), c.per_draft_pass_s
    chi = c.extra_flops(presets.B200)
    priced = spec.Deployment("qwen3.6", "B200", drafter="qwen3.6-mtp", step_time="calibrated", tp=2).pricing()
    roof = _step.step_model("qwen3.6", "B200", rollback=_step.DEFAULT_ROLLBACK)  # the deployment's default
    split = layout.ParallelStep(roof, layout.Layout(2))  # Qwen3.6's 2 KV heads: one per GPU, all split evenly
    B, S, g = np.array(32.0), np.array(512.0), np.array(3.0)

    def kernels(T):
        return mu * roof.time(B, T, S) / 2 + nu * roof.component_times(B, T, S)["attention"] / 2

    assert priced.plain(B, S) == pytest.approx(kernels(1.0) + split.communication(B, 1.0) + a + d * B)
    raw_draft = spec.resolve_drafter("qwen3.6-mtp", None, presets.B200).time(g, B)
    extra = (roof.flop_time(B, g + 1, S) - roof.flop_time(B, np.array(1.0), S)) / 2  # this GPU's share
    if c.fixed_layers_ref:  # e per extra position in each full-attention layer, for a model of L_ref layers
        e = e * presets.model("qwen3.6").step_architecture().attention_layers / presets.LLAMA_3_70B.n_layers
    # each MTP pass runs one MoE decoder layer: it pays that layer's share of the fixed time, a MoE layer's
    # time and the layer's all-reduce and expert collectives, as the target's layers do
    layer = c.fixed_s["B200"]["vLLM"] / presets.LLAMA_3_70B.n_layers if c.fixed_layers_ref else 0.0
    per_pass = layer + c.moe_layer(presets.B200) + split.communication(B, 1.0, layers=1, moe_layers=1.0)
    expected = (kernels(g + 1) + split.communication(B, g + 1) + a + d * B + e * B * g + mu * raw_draft / 2
                + a_d * g + chi * extra + g * per_pass)
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


def test_tensor_parallel_roofline_leaves_ratios_alone_when_the_collectives_are_free(monkeypatch):
    from speclib.core import layout

    B = np.array([1.0, 64, 4096])
    # the step alone (reserve=None: no memory check, so both run all 4,096 sequences; one GPU holds 626)
    on_one = spec.Deployment("qwen3.6", drafter="qwen3.6-mtp", reserve=None)
    on_two = on_one.replace(tp=2)  # Qwen3.6's 2 KV heads: one per GPU, every byte and FLOP split evenly
    with monkeypatch.context() as m:
        m.setattr(layout.ParallelStep, "communication", lambda self, B, T, F=None, **_: 0.0 * B * T)
        one = spec.speedup(None, 3, B, 512, deployment=on_one)
        two = spec.speedup(None, 3, B, 512, deployment=on_two)
        assert np.allclose(one, two, rtol=1e-12)
        t1 = spec.throughput(B, 3, 512, deployment=on_one)
        t2 = spec.throughput(B, 3, 512, deployment=on_two)
        assert np.allclose(t2, 2 * t1)
    # the all-reduces a step waits on: their latency is paid once a step, however many positions it verifies,
    # which makes a wider verify relatively cheaper while it dominates (1 and 64 sequences); their bytes grow
    # with the tokens, and where the collectives grow faster with the verify's width than the step's own work
    # (4,096 sequences, where the linear layers' state traffic no longer swamps them) the speedup falls instead
    ps = on_two.parallel_step()
    comm = [np.array([float(ps.communication(b, t)) for b in B]) for t in (1.0, 4.0)]
    work = [np.array([float(ps.time(b, t, 512.0)) for b in B]) - c for t, c in zip((1.0, 4.0), comm)]
    cheaper = comm[1] / comm[0] <= work[1] / work[0]
    assert list(cheaper) == [True, True, False]
    with_collectives = spec.speedup(None, 3, B, 512, deployment=on_two)
    assert np.all(np.where(cheaper, with_collectives >= one, with_collectives < one))


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
    (dict(step_time="fitted"), r"^step_time must be one of 'roofline', 'calibrated', 'measured'"),
    (dict(step_time="calibrated", hardware="MI300X", engine="TRT"), r"engine 'trtllm' was not measured on MI300X"),
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
    with pytest.raises(ValueError, match="tp=, routing=, weights=, kv_cache= and activations= price the whole model's step"):
        spec.Deployment(cost_model=cm, tp=2)


def test_a_calibrated_ledger_is_layers_times_the_layer_in_seconds_plus_overheads():
    from speclib.core import parallel

    cm = parallel.expert_parallel_cost_model("deepseek-v3", "H200", G=8)
    c = cal.shipped_calibration()
    mu, a, d = c.roofline_factor["H200"], c.fixed_s["H200"]["vLLM"], c.per_sequence_s
    if c.fixed_layers_ref:  # DeepSeek-V3's 61 layers against the decode runs' model's 80
        a = a * 61 / presets.LLAMA_3_70B.n_layers
    a = a + c.moe_layer(presets.H200) * 61  # the ledger's MoE layer stands for all 61
    priced = spec.Deployment(cost_model=cm, step_time="calibrated", c_draft=0.05).pricing()
    B, S = np.array(16.0), np.array(8192.0)
    seconds = mu * 61 / presets.H200.memory_bandwidth
    assert priced.cost_model.decode(B, S) == pytest.approx(seconds * cm.decode(B, S) + a + d * 16)
    e, chi = c.per_position(presets.H200), c.extra_flops(presets.H200)
    if c.fixed_layers_ref:  # e per extra position in each of the 61 attention layers, for a model of 80
        e = e * 61 / presets.LLAMA_3_70B.n_layers
    # the ledger counts bytes: the two extra positions' FLOPs are the whole model's, split over the 8 GPUs
    roof = _step.step_model("deepseek-v3", "H200")
    extra = (roof.flop_time(B, np.array(3.0), S) - roof.flop_time(B, np.array(1.0), S)) / 8
    assert priced.cost_model.verify(B, 3.0, S) == pytest.approx(seconds * cm.verify(B, 3.0, S) + a + d * 16
                                                                 + e * 16 * 2 + chi * extra)


def test_calibration_file_is_valid_json_with_its_provenance():
    from importlib import resources

    data = json.loads(resources.files("speclib").joinpath(*cal.CALIBRATION_FILE).read_text())
    assert data["model"] == "DeepSeek and Llama decoding, and measured speculative runs"
    assert "write-calibration" in data["about"]


# --- chips, engines and models the fit has not seen; intervals ----------------------------------


def _chip(vendor):
    return dataclasses.replace(presets.hardware("GB300"), name=f"a {vendor} chip", aliases=(), vendor=vendor,
                               generation="")


def test_a_chip_the_fit_did_not_see_takes_its_generations_median_and_says_so():
    c = cal.shipped_calibration()
    gb300 = presets.hardware("GB300")
    assert c._chip(gb300) is None
    blackwell = [chip for chip in c.roofline_factor if presets.hardware(chip).generation == "Blackwell"]
    assert sorted(blackwell) == ["B200", "B300"]
    mu, a, d = c.constants(gb300, "SGLang")
    assert mu == pytest.approx(float(np.median([c.roofline_factor[k] for k in blackwell])))
    assert a == pytest.approx(float(np.median([c.fixed_s[k]["SGLang"] for k in blackwell])))
    assert d == c.per_sequence_s
    notes = c.notes(presets.model("llama-3-70b"), gb300, "vLLM", 64)
    assert any("GB300 is not in the fit: it takes the Blackwell chips' (B200, B300) median" in n for n in notes)
    # a chip of no fitted generation takes its vendor's median
    nvidia = [chip for chip in c.roofline_factor if presets.hardware(chip).vendor == "NVIDIA"]
    mu, a, _ = c.constants(_chip("NVIDIA"), "vLLM")
    assert mu == pytest.approx(float(np.median([c.roofline_factor[k] for k in nvidia])))
    assert a == pytest.approx(float(np.median([c.fixed_s[k]["vLLM"] for k in nvidia if "vLLM" in c.fixed_s[k]])))
    with pytest.raises(ValueError, match=r"^hardware 'a Intel chip' has no calibrated step time: its vendor "
                                         r"'Intel' has no fitted constants") as info:
        spec.Deployment("llama-3-70b", _chip("Intel"), step_time="calibrated")
    assert "\n" not in str(info.value)


def test_sglang_has_a_fixed_time_of_its_own():
    c = cal.shipped_calibration()
    assert c.engine_for("SGLang") == "SGLang" and not c.shared_engines
    assert c.constants(presets.H200, "SGLang") != c.constants(presets.H200, "vLLM")
    assert not any("no fixed time of its own" in n for n in c.notes(engine="SGLang"))
    sg = spec.Deployment("deepseek-v3", "H200", tp=8, engine="SGLang", step_time="calibrated")
    vl = spec.Deployment("deepseek-v3", "H200", tp=8, engine="vLLM", step_time="calibrated")
    assert spec.speedup(0.7, 2, 16, 2048, 0.05, deployment=sg) != spec.speedup(0.7, 2, 16, 2048, 0.05, deployment=vl)


def test_a_speedups_interval_is_the_stored_cross_conformal_one_not_the_draws():
    # the interval reads the stored hold-out's half-width, so neither the fit's draws nor its residual spread
    # moves it (tests/test_conformal.py recomputes the half-widths by brute force from the stored scores)
    c = cal.shipped_calibration()
    B = np.array([1.0, 16, 64])
    dep = spec.Deployment("qwen3-235b-a22b", "H200", tp=8, step_time=c)
    got = spec.speedup(0.75, 3, B, 2048, 0.05, deployment=dep, interval=True)
    other = spec.speedup(0.75, 3, B, 2048, 0.05, interval=True, deployment=dep.replace(
        step_time=dataclasses.replace(c, residual_sd=0.5, draws=c.draws[:3])))
    np.testing.assert_allclose(got.value, spec.speedup(0.75, 3, B, 2048, 0.05, deployment=dep))
    np.testing.assert_allclose((other.lo, other.hi), (got.lo, got.hi))
    # the speed-up is proportional to the committed tokens, 1 + a + a^2 + a^3: at acceptance -+0.05, widened by
    # one factor for every batch
    n = lambda a: 1 + a + a ** 2 + a ** 3  # noqa: E731
    widen_lo = got.value * n(0.70) / n(0.75) / got.lo
    widen_hi = got.hi / (got.value * n(0.80) / n(0.75))
    np.testing.assert_allclose(widen_lo, widen_lo[0])
    np.testing.assert_allclose(widen_hi, widen_lo[0])
    assert widen_lo[0] > 1.0
    # no draft is plain decoding, exactly
    gamma, at = spec.optimal_gamma(0.75, 4096, 1024, 0.05, deployment=spec.Deployment(
        "llama-3-70b", "H200", tp=8, step_time="calibrated"), interval=True)
    assert gamma == 0 and (at.value, at.lo, at.hi) == (1.0, 1.0, 1.0)
    assert str(spec.speedup(0.75, 3, 16, 2048, 0.05, deployment=dep, interval=True)).endswith("]")


def test_an_interval_needs_a_calibrated_step():
    with pytest.raises(ValueError, match=r"^interval=True needs a calibrated step with bootstrap draws") as info:
        spec.speedup(0.75, 3, 16, 2048, 0.05, interval=True)
    assert "\n" not in str(info.value)
