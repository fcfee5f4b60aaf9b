"""The figures and tables of the chapters on the sequel: what they plot is
speclib's model (checked here by other routes: the public API called
directly, the sympy derivations, identities such as Little's law and the
FOLLOWUP numbers), and bad input is refused with the parameter named."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import speclib  # noqa: E402
from speclib import derivations, presets, summaries  # noqa: E402
from speclib.core import drafters, speculation, step  # noqa: E402
from speclib.evidence import sequel  # noqa: E402
from speclib.presentation.figures import png_bytes  # noqa: E402
from speclib.presentation.figures import sequel as fig  # noqa: E402
from speclib.presentation.figures.paper import artist  # noqa: E402

RTOL = 1e-12


def line(figure, gid):
    a = artist(figure, gid)
    assert a is not None, f"no artist with gid {gid!r}"
    x, y = a.get_data()
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


@pytest.fixture(scope="module")
def compared():
    return sequel.compare()


# --- every figure ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(fig.FIGURES))
def test_each_figure_builds_closed_in_pyplot_and_renders_the_same_twice(name):
    make = getattr(fig, name)
    before = set(plt.get_fignums())
    figure = make()
    assert isinstance(figure, Figure) and figure.dpi == 100
    assert set(plt.get_fignums()) == before
    assert png_bytes(figure) == png_bytes(make())


def test_every_figure_is_registered_under_its_own_name():
    for name, (cls, params) in fig.FIGURES.items():
        assert cls.name == name
        assert set(params) <= set(cls.defaults) | {"model", "hardware"}
    assert set(fig.FIGURES) <= set(speclib.widgets.FACTORIES)


# --- what drafting costs ----------------------------------------------------------------------


@pytest.mark.parametrize("gamma, roofline, hardware", [(4, "aggregate", "B200"), (9, "per-component", "H100-SXM"),
                                                       (1, "aggregate", "MI300X")])
def test_drafter_cost_lines_are_the_drafters_own_rooflines(gamma, roofline, hardware):
    plot = fig.DrafterCostPlot(gamma=gamma, roofline=roofline, hardware=hardware)
    B, mtp = line(plot.figure, "draft_mtp")
    _, dflash = line(plot.figure, "draft_dflash")
    _, target = line(plot.figure, "target_step")
    np.testing.assert_allclose(mtp, drafters.draft_time(gamma, B, "qwen3.6-mtp", hardware, roofline=roofline) * 1e6,
                               rtol=RTOL)
    # MTP is gamma passes in series, DFlash one block whatever gamma is
    np.testing.assert_allclose(mtp, gamma * drafters.draft_time(1, B, "mtp", hardware, roofline=roofline) * 1e6,
                               rtol=1e-12)
    np.testing.assert_allclose(dflash, drafters.draft_time(16, B, "dflash", hardware, roofline=roofline) * 1e6,
                               rtol=RTOL)
    np.testing.assert_allclose(target, step.step_time(B, 1, sequel.context(), sequel.simulated_model(), hardware,
                                                      roofline=roofline) * 1e6, rtol=RTOL)
    crossing = drafters.crossover_batch(gamma, hardware=hardware, roofline=roofline)
    assert plot.crossover == crossing
    assert artist(plot.figure, "crossover").get_visible() == (1 < crossing < 4096)
    if gamma == 1:
        assert crossing == 0  # FOLLOWUP: at gamma = 1 MTP is always cheaper


def test_drafter_cost_at_batch_one_is_the_sequels_microseconds():
    plot = fig.DrafterCostPlot(gamma=4)
    assert plot.batches[0] == 1
    # FOLLOWUP: MTP ~ gamma x 141 us, DFlash ~ 245 us at B = 1 on a B200
    assert plot.times["mtp"][0] * 1e6 == pytest.approx(4 * 141, rel=0.01)
    assert plot.times["dflash"][0] * 1e6 == pytest.approx(245, rel=0.01)


def test_the_drafters_cost_the_same_at_the_marked_batch():
    plot = fig.DrafterCostPlot(gamma=8)
    times = fig.drafter_times(8, plot.crossover)
    assert times["mtp"] == pytest.approx(times["dflash"], rel=1e-6)


def test_crossover_map_changes_sign_at_the_exact_boundary():
    plot = fig.DrafterCrossoverPlot()
    ratio, B = plot.log2_ratio, plot.batches
    exact_g, exact = plot.exact
    for g, b in zip(exact_g, exact):
        row = ratio[g - 1]
        assert np.all(row[B < b * 0.999] > 0) and np.all(row[B > b * 1.001] < 0), g
    assert np.all(ratio[0] < 0)  # gamma = 1: MTP cheaper everywhere


def test_crossover_closed_form_is_the_derivations_and_about_24_gamma():
    per_token = derivations.drafter_crossover().final.value
    g = np.arange(1, 17)
    np.testing.assert_allclose(fig.closed_form_crossover(g), per_token * g, rtol=1e-12)
    assert per_token == pytest.approx(24, rel=0.01)  # FOLLOWUP: B ~ 24 gamma
    # FOLLOWUP: the exact boundary under the simulator's rule, B < 40, 94, 193, 385 at gamma = 2, 4, 8, 16
    np.testing.assert_allclose(fig.exact_crossover([2, 4, 8, 16]), [40, 94, 193, 385], rtol=0.02)


def test_crossover_constants_are_the_formulas_arguments_in_order():
    names = speclib.formulas.numpy_functions.ARGUMENTS["drafter_crossover_batch"]
    assert tuple(fig.crossover_constants()) == names[1:]


# --- hybrid attention ----------------------------------------------------------------------


@pytest.mark.parametrize("S, query_bytes, hardware", [(8192, True, "B200"), (512, False, "H200")])
def test_hybrid_intensity_lines(S, query_bytes, hardware):
    plot = fig.HybridIntensityPlot(S=S, query_bytes=query_bytes, hardware=hardware)
    T, mla = line(plot.figure, "mla")
    _, gqa = line(plot.figure, "gqa")
    _, gdn = line(plot.figure, "gdn")
    np.testing.assert_allclose(mla, speclib.attention_intensity(T, S, "DeepSeek-V4-Flash", query_bytes=query_bytes),
                               rtol=RTOL)
    np.testing.assert_allclose(gqa, speclib.attention_intensity(T, S, "Qwen3.6-35B-A3B", query_bytes=query_bytes),
                               rtol=RTOL)
    arch = presets.model("Qwen3.6-35B-A3B").step_architecture()
    np.testing.assert_allclose(gdn, T * arch.linear_flops / arch.state_bytes, rtol=1e-12)  # phi T / sigma
    assert plot.ridge == presets.hardware(hardware).ridge("bf16")


def test_gqa_stays_memory_bound_to_about_35_and_gdn_near_4T():
    plot = fig.HybridIntensityPlot(S=1_048_576)
    # FOLLOWUP: GQA ~ 8T, memory-bound up to T ~ 35 on a B200; GatedDeltaNet ~ 4T
    assert 33 <= plot.crossings["gqa"] <= 37
    assert plot.crossings["gdn"] is None
    assert plot.crossings["mla"] <= 2
    assert fig.linear_intensity(1.0) == pytest.approx(4, rel=0.07)  # a little under 4: the convolution's bytes


def test_kv_state_bytes_cross_where_the_derivation_says():
    plot = fig.KVStatePlot()
    assert plot.crossing == pytest.approx(derivations.kv_state_crossing().final.value, rel=1e-12)
    assert plot.crossing == 1632  # FOLLOWUP: about 1,600 tokens
    S, kv = line(plot.figure, "kv")
    _, state = line(plot.figure, "state")
    np.testing.assert_allclose(state, 33_423_360 / 1e6, rtol=1e-12)  # FOLLOWUP: 30 layers x 1,114,112 B
    np.testing.assert_allclose(kv, 10 * 2048 * S / 1e6, rtol=1e-12)  # 10 layers x 2,048 B per token


def test_kv_state_total_is_what_a_decode_step_reads_one_token_earlier():
    # a decode step (T = 1) attends over its cache plus itself: StepModel's bytes at S - 1
    arch = fig.hybrid_architecture(full_attention_layers=20, kv_format="fp8")
    S = np.array([100.0, 4096.0, 65536.0])
    stepped = step.StepModel(arch, presets.hardware("B200")).components(1.0, 1.0, S - 1)["attention"][1]
    np.testing.assert_allclose(fig.sequence_bytes(S, arch)["total"], stepped, rtol=1e-12)


def test_kv_state_controls():
    plot = fig.KVStatePlot(full_attention_layers=40, kv_format="fp8")
    assert plot.crossing is None and plot.architecture.linear_layers == 0
    assert plot.architecture.context_bytes == 1024
    assert np.all(np.isnan(line(plot.figure, "state")[1]))


# --- the draft length per concurrency ----------------------------------------------------------


@pytest.mark.parametrize("roofline", ["aggregate", "per-component"])
def test_concurrency_gamma_lines_are_the_priced_policy(roofline):
    plot = fig.ConcurrencyGammaPlot(roofline=roofline)
    compared = sequel.compare(roofline=roofline)
    for key in fig.DRAFTER_KEYS:
        B, g = line(plot.figure, f"gamma_{key}")
        want, _ = speculation.optimal_gamma(None, B, sequel.context(), model=sequel.simulated_model(),
                                            hardware="B200", drafter=sequel.DRAFTERS[key], roofline=roofline)
        np.testing.assert_array_equal(g, want)
        # at the simulated concurrencies, the policy sequel.compare reports
        at = np.searchsorted(B, sequel.load_grid().concurrency)
        np.testing.assert_array_equal(g[at], compared[key].policy_gamma)
        C, best = line(plot.figure, f"simulated_{key}")
        np.testing.assert_array_equal(best, sequel.load_grid().drafters[key].best_gamma)


def test_geometric_acceptance_uses_the_first_positions_survival():
    for key in fig.DRAFTER_KEYS:
        measured = fig.acceptance_curve(key, "measured")
        geometric = fig.acceptance_curve(key, "geometric")
        assert len(geometric) == len(measured)
        np.testing.assert_allclose(geometric.values, measured.values[0] ** np.arange(1, len(measured) + 1))


def test_concurrency_throughput_is_the_compared_prediction(compared):
    grid = sequel.load_grid()
    for key in fig.DRAFTER_KEYS:
        np.testing.assert_allclose(fig.fixed_throughput(key, grid.concurrency, grid.drafters[key].gammas),
                                   compared[key].predicted, rtol=RTOL)
    plot = fig.ConcurrencyThroughputPlot(relative=False)
    B = plot.batches
    for key in fig.DRAFTER_KEYS:
        rows = grid.drafters[key]
        for i, g in enumerate(rows.gammas):
            x, y = line(plot.figure, f"{key}_gamma_{g}")
            np.testing.assert_allclose(y, speculation.throughput(B, g, sequel.context(), model=sequel.simulated_model(),
                                                                 hardware="B200", drafter=sequel.DRAFTERS[key],
                                                                 roofline="aggregate"),
                                       rtol=RTOL)
            np.testing.assert_array_equal(line(plot.figure, f"{key}_simulated_{g}")[1], rows.goodput[i])
        np.testing.assert_array_equal(line(plot.figure, f"{key}_adaptive")[1], rows.adaptive_goodput)
        # the policy is never below any fixed gamma
        _, pol = line(plot.figure, f"{key}_policy")
        assert np.all(pol >= plot.throughput[key].max(axis=0) * (1 - 1e-12))


def test_concurrency_throughput_relative_divides_by_plain_decoding():
    plot = fig.ConcurrencyThroughputPlot(relative=True)
    for key in fig.DRAFTER_KEYS:
        np.testing.assert_allclose(line(plot.figure, f"{key}_gamma_0")[1], 1.0, rtol=1e-15)
        np.testing.assert_allclose(line(plot.figure, f"{key}_simulated_0")[1], 1.0, rtol=1e-15)
    assert plot.axes["mtp"].get_yscale() == "linear"


@pytest.mark.parametrize("acceptance", ["measured", "geometric"])
def test_throughput_tpot_is_littles_law(acceptance):
    plot = fig.ThroughputTPOTPlot(acceptance=acceptance)
    grid = sequel.load_grid()
    for key in fig.DRAFTER_KEYS:
        cur = plot.curves[key]
        # closed loop: throughput x time per token = the sequences in flight
        np.testing.assert_allclose(cur["throughput"] * cur["tpot_ms"] / 1e3, np.broadcast_to(plot.batches, cur["throughput"].shape),
                                   rtol=1e-12)
        np.testing.assert_allclose(cur["simulated_tpot_ms"] * grid.drafters[key].goodput / 1e3,
                                   np.broadcast_to(grid.concurrency, grid.drafters[key].goodput.shape), rtol=1e-12)
        for c in grid.concurrency:
            tau, x = line(plot.figure, f"{key}_contour_{c:g}")
            np.testing.assert_allclose(x * tau / 1e3, c, rtol=1e-12)


# --- the pricing rule ---------------------------------------------------------------------------


def test_pricing_ratio_is_never_below_one_and_one_when_all_is_memory_bound():
    plot = fig.PricingRatioPlot(model="Qwen3.6-35B-A3B")
    assert np.all(plot.ratio >= 1 - 1e-12)  # derivations.pricing_rule: the aggregate never costs more
    np.testing.assert_allclose(plot.ratio[:, 0], 1.0, rtol=1e-12)  # B = 1: every component memory-bound
    assert plot.ratio.max() > 1.2
    B, r = line(plot.figure, "ratio_0")
    per = step.step_time(B, 1, 4096, "Qwen3.6-35B-A3B", "B200", roofline="per-component")
    agg = step.step_time(B, 1, 4096, "Qwen3.6-35B-A3B", "B200", roofline="aggregate")
    np.testing.assert_allclose(r, per / agg, rtol=RTOL)


def test_pricing_ratio_is_one_for_a_model_with_a_precision_per_component():
    # DeepSeek-V4-Flash: fp8 weights, fp4 experts, bf16 attention: each stream holds one component
    plot = fig.PricingRatioPlot(model="DeepSeek-V4-Flash", S=65536)
    np.testing.assert_allclose(plot.ratio, 1.0, rtol=1e-12)


@pytest.mark.parametrize("key", ["mtp", "dflash"])
def test_pricing_gamma_is_each_rules_policy_and_the_simulators_loss(key):
    plot = fig.PricingGammaPlot(drafter=key)
    grid = sequel.load_grid()
    for rule in fig.ROOFLINES:
        compared = sequel.compare(roofline=rule)[key]
        g, loss = plot.shortfall[rule]
        np.testing.assert_array_equal(g, compared.policy_gamma)
        np.testing.assert_allclose(loss, compared.policy_shortfall, rtol=1e-12, atol=1e-15)
        C, shown = line(plot.figure, f"loss_{rule}")
        np.testing.assert_allclose(shown, 100 * loss, rtol=1e-12)
    np.testing.assert_array_equal(plot.shortfall["aggregate"][1], 0.0)  # FOLLOWUP: matches the best fixed gamma
    assert plot.shortfall["per-component"][1].max() > 0.01
    np.testing.assert_array_equal(line(plot.figure, "simulated_best")[1], grid.drafters[key].best_gamma)


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("call, match", [
    (lambda: fig.drafter_cost(gamma=0), "gamma must be an integer in \\[1, 16\\]"),
    (lambda: fig.drafter_cost(gamma=17), "gamma must be an integer in \\[1, 16\\]"),
    (lambda: fig.drafter_cost(roofline="sum"), "roofline must be one of"),
    (lambda: fig.drafter_crossover(gamma_max=1), "gamma_max must be an integer in \\[2, 16\\]"),
    (lambda: fig.concurrency_gamma(acceptance="iid"), "acceptance must be one of"),
    (lambda: fig.pricing_gamma(drafter="eagle"), "drafter must be one of"),
    (lambda: fig.kv_state_bytes(kv_format="fp4"), "kv_format must be one of"),
    (lambda: fig.kv_state_bytes(full_attention_layers=41), "full_attention_layers must be an integer in \\[1, 40\\]"),
    (lambda: fig.linear_intensity(4, "DeepSeek-V4-Flash"), "model must be a hybrid"),
    (lambda: fig.linear_intensity(0), "T must be"),
    (lambda: fig.hybrid_architecture("Llama-3-70B"), "model must be a hybrid"),
    (lambda: fig.closed_form_crossover(0), "gamma must be"),
    (lambda: fig.exact_crossover([2.5]), "gammas must be an integer"),
    (lambda: fig.pricing_ratio(widths=(0, 2)), "widths must be"),
    (lambda: fig.pricing_ratio(S=-1), "S must be"),
    (lambda: fig.hybrid_intensity(S=0), "S must be"),
    (lambda: fig.concurrency_throughput(points=1), "points must be"),
    (lambda: fig.drafter_cost(colour="red"), "unknown parameter"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- the tables ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["mtp", "dflash"])
def test_sequel_comparison_table(key, compared):
    table = summaries.sequel_comparison(key)
    s = table.summary()
    c = compared[key]
    assert s["median_error"] == c.median_error and s["max_error"] == c.max_error
    assert s["best_gamma_agrees"] == int(c.best_gamma_agrees.sum()) and s["concurrencies"] == 12
    assert s["policy_shortfall"] == float(c.policy_shortfall.max())
    text = repr(table)
    assert text == repr(summaries.sequel_comparison(key))  # deterministic for nbval
    rows = table.as_table().rows
    assert len(rows) == 12 and rows[0][0] == "1" and rows[-1][0] == "2,048"
    # the best gamma column: the grid's, the closed form's, the policy's
    assert [r[1] for r in rows] == [f"{a} / {b} / {p}" for a, b, p in
                                    zip(c.grid.best_gamma, c.predicted_best_gamma, c.policy_gamma)]
    assert "<table" in table._repr_html_()


def test_modelling_choices_table():
    table = summaries.modelling_choices()
    assert [kw for _, kw, _ in table.rows] == [kw for kw, _ in summaries.MODELLING_CHOICES]
    base, per_component = table.rows[0][2], table.rows[1][2]
    assert per_component["mtp"].max_error > 5 * base["mtp"].max_error  # the rule matters most
    shown = table.as_table().rows
    assert len(shown) == 2 * len(summaries.MODELLING_CHOICES)
    assert "roofline='per-component'" in shown[2][0] and shown[3][0] == ""
    assert repr(table) == repr(summaries.modelling_choices())


def test_tables_refuse_bad_input():
    with pytest.raises(ValueError, match="drafter must be one of"):
        summaries.sequel_comparison("eagle")
    with pytest.raises(ValueError, match="choices must be pairs"):
        summaries.modelling_choices([("roofline", "a string is not keywords")])
