"""The figures and tables of the chapters on the sequel: what they draw is
speclib's model (checked here by other routes: the public API called
directly, the sympy derivations, identities such as Little's law and the
sequel's printed numbers), and bad input is refused with the parameter named."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import speclib  # noqa: E402
from speclib import presets  # noqa: E402
from speclib.evidence import derivations  # noqa: E402
from speclib.core import attention, drafters, speculation, step  # noqa: E402
from speclib.evidence import simulator as sequel  # noqa: E402
from speclib.presentation.figures import draft_length_per_concurrency as dlpc  # noqa: E402
from speclib.presentation.figures import drafter_cost, hybrid_attention, pricing_rule  # noqa: E402
from speclib.presentation.static import artist  # noqa: E402

RTOL = 1e-12


@pytest.fixture(scope="module")
def compared():
    return sequel.compare()


# --- what drafting costs ----------------------------------------------------------------------


@pytest.mark.parametrize("gamma, roofline, hardware", [(4, "aggregate", "B200"), (9, "per-component", "H100-SXM"),
                                                       (1, "aggregate", "MI300X")])
def test_drafter_cost_lines_are_the_drafters_own_rooflines(gamma, roofline, hardware):
    d = drafter_cost.drafter_cost.data(gamma=gamma, roofline=roofline, hardware=hardware)
    B, mtp, dflash, target = d["B"], d["mtp"], d["dflash"], d["target"]
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
    # the figure interpolates between its 200 batches; the bisection is exact
    assert d["crossover"] == pytest.approx(crossing, rel=2e-3) or (crossing == 0 and d["crossover"] == 0)
    shown = np.isfinite(d["cross_x"])
    assert shown == (1 < crossing < 4096)
    if gamma == 1:
        assert crossing == 0  # the sequel: at gamma = 1 MTP is always cheaper


def test_drafter_cost_at_batch_one_is_the_sequels_microseconds():
    d = drafter_cost.drafter_cost.data(gamma=4)
    assert d["B"][0] == 1
    # the sequel: MTP ~ gamma x 141 us, DFlash ~ 245 us at B = 1 on a B200
    assert d["mtp"][0] == pytest.approx(4 * 141, rel=0.01)
    assert d["dflash"][0] == pytest.approx(245, rel=0.01)


def test_the_drafters_cost_the_same_at_the_marked_batch():
    d = drafter_cost.drafter_cost.data(gamma=8)
    mtp, dflash = (drafters.draft_time(8, d["crossover"], name, roofline="aggregate")
                   for name in sequel.DRAFTERS.values())
    assert mtp == pytest.approx(dflash, rel=1e-3)


def test_crossover_map_changes_sign_at_the_exact_boundary():
    d = drafter_cost.drafter_crossover.data()
    ratio, B = d["log2_ratio"], d["B"]
    for g, b in zip(d["exact_g"], d["exact_x"]):
        row = ratio[int(g) - 1]
        assert np.all(row[B < b * 0.999] > 0) and np.all(row[B > b * 1.001] < 0), g
    assert np.all(ratio[0] < 0)  # gamma = 1: MTP cheaper everywhere


def test_crossover_closed_form_is_the_derivations_and_about_24_gamma():
    per_token = derivations.drafter_crossover().final.value
    g = np.arange(1, 17)
    np.testing.assert_allclose(drafters.closed_form_crossover(g), per_token * g, rtol=1e-12)
    assert per_token == pytest.approx(24, rel=0.01)  # the sequel: B ~ 24 gamma
    # the sequel: the exact boundary under the simulator's rule, B < 40, 94, 193, 385 at gamma = 2, 4, 8, 16
    np.testing.assert_allclose(drafters.crossover_batches([2, 4, 8, 16], roofline="aggregate"), [40, 94, 193, 385],
                               rtol=0.02)


def test_crossover_constants_are_the_formulas_arguments_in_order():
    from speclib.formulas import numpy_functions

    assert tuple(drafters.crossover_constants()) == numpy_functions.ARGUMENTS["drafter_crossover_batch"][1:]


# --- hybrid attention ----------------------------------------------------------------------


@pytest.mark.parametrize("S, query_bytes, hardware", [(8192, True, "B200"), (512, False, "H200")])
def test_hybrid_intensity_lines(S, query_bytes, hardware):
    d = hybrid_attention.hybrid_intensity.data(S=S, query_bytes=query_bytes, hardware=hardware)
    T = d["T"]
    np.testing.assert_allclose(d["mla"], speclib.attention_intensity(T, S, "DeepSeek-V4-Flash",
                                                                     query_bytes=query_bytes), rtol=RTOL)
    np.testing.assert_allclose(d["gqa"], speclib.attention_intensity(T, S, "Qwen3.6-35B-A3B", query_bytes=query_bytes),
                               rtol=RTOL)
    arch = presets.model("Qwen3.6-35B-A3B").step_architecture()
    # phi T over what a step moves of the state: read and written back, 2 sigma
    np.testing.assert_allclose(d["gdn"], T * arch.linear_flops / (2 * arch.state_bytes), rtol=1e-12)
    assert d["ridge"] == presets.hardware(hardware).ridge("bf16")


def test_gqa_stays_memory_bound_to_about_35_and_gdn_near_2T():
    d = hybrid_attention.hybrid_intensity.data(S=131_072, width_max=64)
    # the sequel: GQA ~ 8T, memory-bound up to T ~ 35 on a B200; GatedDeltaNet ~ 4T
    assert 30 <= d["gqa_cross_x"] <= 37
    assert np.isnan(d["gdn_cross_x"])
    assert d["mla_cross_x"] <= 2
    # the sequel's ~4T divides by the state read alone; over the read and the write-back a step moves, half that
    # (a little under 2: the convolution's bytes)
    assert attention.linear_intensity(1.0) == pytest.approx(2, rel=0.07)


def test_kv_state_bytes_cross_where_the_derivation_says():
    d = hybrid_attention.kv_state_bytes.data()
    assert d["crossing"] == pytest.approx(derivations.kv_state_crossing().final.value, rel=1e-12)
    assert d["crossing"] == 1632  # the sequel: about 1,600 tokens
    S = d["S"]
    np.testing.assert_allclose(d["state"], 33_423_360 / 1e6, rtol=1e-12)  # 30 layers x 1,114,112 B
    np.testing.assert_allclose(d["kv"], 10 * 2048 * S / 1e6, rtol=1e-12)  # 10 layers x 2,048 B per token


def test_kv_state_total_is_what_a_decode_step_reads_one_token_earlier():
    # a decode step (T = 1) attends over its cache plus itself: StepModel's bytes at S - 1, less the write-back
    # of each state (what it reads is what a sequence keeps; it moves each state twice)
    arch = attention.hybrid_architecture(full_attention_layers=20, kv_format="fp8")
    S = np.array([100.0, 4096.0, 65536.0])
    read = step.StepModel(arch, presets.hardware("B200"), state_write=False).components(1.0, 1.0, S - 1)
    np.testing.assert_allclose(attention.kv_state_bytes(S, arch)["total"], read["attention"][1], rtol=1e-12)
    moved = step.StepModel(arch, presets.hardware("B200")).components(1.0, 1.0, S - 1)["attention"][1]
    np.testing.assert_allclose(moved - read["attention"][1], arch.linear_layers * arch.state_bytes, rtol=1e-12)


def test_kv_state_controls():
    d = hybrid_attention.kv_state_bytes.data(full_attention_layers=40, kv_format="fp8")
    assert d["crossing"] == 0 and np.isnan(d["cross_x"]) and d["m_c"] == 1024
    assert np.all(np.isnan(d["state"]))


# --- the draft length per concurrency ----------------------------------------------------------


@pytest.mark.parametrize("roofline", ["aggregate", "per-component"])
def test_concurrency_gamma_lines_are_the_priced_policy(roofline):
    d = dlpc.concurrency_gamma.data(roofline=roofline)
    compared = sequel.compare(roofline=roofline)
    B = d["B"]
    for key in sequel.DRAFTER_KEYS:
        g = d[f"gamma_{key}"]
        want, _ = speculation.optimal_gamma(None, B, sequel.context(), deployment=speculation.Deployment(
            sequel.simulated_model(), "B200", drafter=sequel.DRAFTERS[key], roofline=roofline, rollback="none",
            state_write=sequel.STATE_WRITE))
        np.testing.assert_array_equal(g, want)
        # at the simulated concurrencies, the policy sequel.compare reports
        at = np.searchsorted(B, sequel.load_grid().concurrency)
        np.testing.assert_array_equal(g[at], compared[key].policy_gamma)
        np.testing.assert_array_equal(d[f"best_{key}"], sequel.load_grid().drafters[key].best_gamma)


def test_geometric_acceptance_uses_the_first_positions_survival():
    for key in sequel.DRAFTER_KEYS:
        measured = sequel.acceptance_curve(key, "measured")
        geometric = sequel.acceptance_curve(key, "geometric")
        assert len(geometric) == len(measured)
        np.testing.assert_allclose(geometric.values, measured.values[0] ** np.arange(1, len(measured) + 1))


def test_concurrency_throughput_is_the_compared_prediction(compared):
    grid = sequel.load_grid()
    for key in sequel.DRAFTER_KEYS:
        np.testing.assert_allclose(sequel.fixed_throughput(key, grid.concurrency, grid.drafters[key].gammas),
                                   compared[key].predicted, rtol=RTOL)
    d = dlpc.concurrency_throughput.data(relative=False)
    B = d["B"]
    for key in sequel.DRAFTER_KEYS:
        rows = grid.drafters[key]
        for i, g in enumerate(rows.gammas):
            deployment = speculation.Deployment(sequel.simulated_model(), "B200", drafter=sequel.DRAFTERS[key],
                                                roofline="aggregate", rollback="none", reserve=None,
                                                state_write=sequel.STATE_WRITE)
            np.testing.assert_allclose(d[f"{key}_y"][i], speculation.throughput(
                B, g, sequel.context(), deployment=deployment), rtol=RTOL)
        np.testing.assert_array_equal(d[f"{key}_sim_y"], rows.goodput)
        np.testing.assert_array_equal(d[f"{key}_adaptive_y"], rows.adaptive_goodput)
        # the policy is never below any fixed gamma
        assert np.all(d[f"{key}_policy_y"] >= d[f"{key}_y"].max(axis=0) * (1 - 1e-12))


def test_concurrency_throughput_relative_divides_by_plain_decoding():
    d = dlpc.concurrency_throughput.data(relative=True)
    for key in sequel.DRAFTER_KEYS:
        np.testing.assert_allclose(d[f"{key}_y"][0], 1.0, rtol=1e-15)
        np.testing.assert_allclose(d[f"{key}_sim_y"][0], 1.0, rtol=1e-15)
    assert d["y_scale"] == "linear"
    assert dlpc.concurrency_throughput(relative=True).axes[0].get_yscale() == "linear"


@pytest.mark.parametrize("acceptance", ["measured", "geometric"])
def test_throughput_tpot_is_littles_law(acceptance):
    d = dlpc.throughput_tpot.data(acceptance=acceptance)
    grid = sequel.load_grid()
    for key in sequel.DRAFTER_KEYS:
        # closed loop: throughput x time per token = the sequences in flight
        np.testing.assert_allclose(d[f"{key}_y"] * d[f"{key}_x"] / 1e3, np.broadcast_to(d["B"], d[f"{key}_y"].shape),
                                   rtol=1e-12)
        np.testing.assert_allclose(d[f"{key}_sim_x"] * grid.drafters[key].goodput / 1e3,
                                   np.broadcast_to(grid.concurrency, grid.drafters[key].goodput.shape), rtol=1e-12)
    np.testing.assert_allclose(d["contours"] * d["tau"][None, :] / 1e3, np.broadcast_to(
        np.asarray(grid.concurrency)[:, None], d["contours"].shape), rtol=1e-12)


# --- the pricing rule ---------------------------------------------------------------------------


def test_pricing_ratio_is_never_below_one_and_one_when_all_is_memory_bound():
    d = pricing_rule.pricing_ratio.data(model="Qwen3.6-35B-A3B")
    ratio = d["ratio"]
    assert np.all(ratio >= 1 - 1e-12)  # derivations.pricing_rule: the aggregate never costs more
    np.testing.assert_allclose(ratio[:, 0], 1.0, rtol=1e-12)  # B = 1: every component memory-bound
    assert ratio.max() > 1.2
    B = d["B"]
    per = step.step_time(B, 1, 4096, "Qwen3.6-35B-A3B", "B200", roofline="per-component")
    agg = step.step_time(B, 1, 4096, "Qwen3.6-35B-A3B", "B200", roofline="aggregate")
    np.testing.assert_allclose(ratio[0], per / agg, rtol=RTOL)


def test_pricing_ratio_is_nearer_one_for_a_model_with_more_precision_streams():
    # DeepSeek-V4-Flash: fp8 projections, fp4 experts, bf16 attention with the bf16 head and routers: only
    # those share a stream; Qwen3.6-35B-A3B runs everything in bf16, one stream
    v4 = pricing_rule.pricing_ratio.data(model="DeepSeek-V4-Flash", S=65536)["ratio"]
    qwen = pricing_rule.pricing_ratio.data(model="Qwen3.6-35B-A3B", S=65536)["ratio"]
    assert np.all(v4 >= 1 - 1e-12) and np.all(qwen >= 1 - 1e-12)
    assert 1 < v4.max() < qwen.max()


@pytest.mark.parametrize("key", ["mtp", "dflash"])
def test_pricing_gamma_is_each_rules_policy_and_the_simulators_loss(key):
    d = pricing_rule.pricing_gamma.data(drafter=key)
    grid = sequel.load_grid()
    shortfall = sequel.rule_shortfall(key)
    for rule in step.ROOFLINES:
        compared = sequel.compare(roofline=rule)[key]
        g, loss = shortfall[rule]
        np.testing.assert_array_equal(g, compared.policy_gamma)
        np.testing.assert_allclose(loss, compared.policy_shortfall, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(d[f"loss_{rule}"], 100 * loss, rtol=1e-12)
    np.testing.assert_array_equal(shortfall["aggregate"][1], 0.0)  # the sequel: matches the best fixed gamma
    assert shortfall["per-component"][1].max() > 0.01
    np.testing.assert_array_equal(d["best"], grid.drafters[key].best_gamma)
    assert artist(pricing_rule.pricing_gamma(drafter=key), "simulated_best") is not None


def test_policy_moves_brute_force_and_the_sequels_count():
    """gamma* by brute force (speclib.throughput at every fixed gamma of the
    grid, the largest taken) with the whole step per component, and the
    sequel's printed count (docs/sequel.md: 4 of 12 per drafter) for the verify
    pass alone."""
    grid = sequel.load_grid()
    moves = pricing_rule.policy_moves()
    tipped = set()
    for key in sequel.DRAFTER_KEYS:
        rows = grid.drafters[key]
        curve = sequel.acceptance_curve(key)
        deployment = sequel.deployment(key, roofline="per-component")
        moved = []
        for c, best in zip(grid.concurrency, rows.best_gamma):
            X = [float(speclib.throughput(c, int(g), sequel.context(), acceptance=curve, deployment=deployment))
                 for g in rows.gammas]
            if rows.gammas[int(np.argmax(X))] != best:
                moved.append(int(c))
        assert moves[key]["both"] == len(moved)
        assert moves[key]["verify_only"] == 4
        assert 0.01 < moves[key]["worst_loss"] < 0.1
        if len(moved) != 4:
            tipped.add(key)
    assert tipped == {"mtp"} and list(moves["tipped"]) == [1024.0]


@pytest.mark.parametrize("key", ["mtp", "dflash"])
def test_rollback_effects_are_the_public_apis_policy(key):
    """gamma* and its speedup with each rollback, through speclib.optimal_gamma
    and speclib.throughput on a Deployment of the simulated model, the plain
    step rolled back the same way and writing back each state it reads (as
    an engine's step does, where the simulator's does not); a replay never draws a longer draft than
    no rollback, a snapshot never a longer one than a replay."""
    C = np.array([1.0, 16.0, 128.0, 512.0])
    effects = hybrid_attention.rollback_effects(key, C)
    curve = sequel.acceptance_curve(key)
    gamma_max = sequel.load_grid().drafters[key].gamma_max
    for rollback, (g, speedup) in effects.items():
        d = speclib.Deployment(sequel.simulated_model(), "B200", drafter=sequel.DRAFTERS[key], roofline="aggregate",
                               rollback=rollback, reserve=None)  # as the simulator: every sequence at once
        for j, c in enumerate(C):
            X = [float(speclib.throughput(c, k, sequel.context(), acceptance=curve, deployment=d))
                 for k in range(gamma_max + 1)]
            assert g[j] == int(np.argmax(X))
            assert speedup[j] == pytest.approx(max(X) / X[0], rel=1e-9)
    assert np.all(effects["recompute"][0] <= effects["none"][0])
    assert np.all(effects["snapshot"][0] <= effects["recompute"][0])
    table = hybrid_attention.rollback_policy(key, C)
    assert "one roofline" in table.caption and len(table.rows) == 4


def test_replay_cost_is_the_largest_relative_loss():
    worst = max(float(np.max(1 - e["recompute"][1] / e["none"][1]))
                for e in (hybrid_attention.rollback_effects(k) for k in sequel.DRAFTER_KEYS))
    assert hybrid_attention.replay_cost() == worst and 0 < worst < 0.1


@pytest.mark.parametrize("rollback", ["none", "snapshot"])
def test_longest_draft_band_edges_by_brute_force(rollback):
    """The band's edges and speed-ups by looping over every draft length with
    speclib.throughput on a Deployment of the simulated model."""
    band = dlpc.longest_draft_band("dflash", rollback=rollback)
    curve = sequel.acceptance_curve("dflash")
    d = speclib.Deployment(sequel.simulated_model(), "B200", drafter=sequel.DRAFTERS["dflash"], roofline="aggregate",
                           rollback=rollback, reserve=None,  # as the simulator: every sequence at once,
                           state_write=sequel.STATE_WRITE)  # each state read and not written back

    def best(B):
        X = [float(speclib.throughput(B, k, sequel.context(), acceptance=curve, deployment=d)) for k in range(17)]
        return int(np.argmax(X)), max(X) / X[0]

    assert best(band["lo"])[0] == best(band["hi"])[0] == band["gamma"] == 15
    assert best(band["lo"] - 1)[0] < 15 and best(band["hi"] + 1)[0] < 15
    assert best(band["lo"])[1] == pytest.approx(band["speedup_lo"], rel=1e-9)
    assert best(band["peak_at"])[1] == pytest.approx(band["peak"], rel=1e-9)
    assert all(best(B)[1] <= band["peak"] * (1 + 1e-12) for B in (band["peak_at"] - 1, band["peak_at"] + 1, 64, 512))
    if band["above_lo"] is not None:
        assert best(band["above_lo"])[1] >= 3 > best(band["above_lo"] - 1)[1]
        assert best(band["above_hi"])[1] >= 3 > best(band["above_hi"] + 1)[1]


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("call, match", [
    (lambda: drafter_cost.drafter_cost(gamma=0), "gamma must be in \\[1, 16\\]"),
    (lambda: drafter_cost.drafter_cost(gamma=17), "gamma must be in \\[1, 16\\]"),
    (lambda: drafter_cost.drafter_cost(roofline="sum"), "roofline must be one of"),
    (lambda: dlpc.concurrency_gamma(acceptance="iid"), "acceptance must be one of"),
    (lambda: pricing_rule.pricing_gamma(drafter="eagle"), "drafter must be one of"),
    (lambda: hybrid_attention.kv_state_bytes(kv_format="fp4"), "kv_format must be one of"),
    (lambda: hybrid_attention.kv_state_bytes(full_attention_layers=41), "full_attention_layers must be one of"),
    (lambda: attention.linear_intensity(4, "DeepSeek-V4-Flash"), "model must be a hybrid"),
    (lambda: attention.linear_intensity(0), "T must be"),
    (lambda: attention.hybrid_architecture("Llama-3-70B"), "model must be a hybrid"),
    (lambda: drafters.closed_form_crossover(0), "gamma must be"),
    (lambda: drafters.crossover_batches([2.5]), "gammas must be an integer"),
    (lambda: pricing_rule.pricing_ratio(S=100), "S must be in"),
    (lambda: hybrid_attention.hybrid_intensity(S=0), "S must be in"),
    (lambda: drafter_cost.drafter_cost(colour="red"), "unknown parameter"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- the tables ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["mtp", "dflash"])
def test_sequel_comparison_table(key, compared):
    table = dlpc.sequel_comparison(key)
    c = compared[key]
    s = c.summary()
    assert s["median_error"] == c.median_error and s["max_error"] == c.max_error
    assert s["best_gamma_agrees"] == int(c.best_gamma_agrees.sum()) and s["concurrencies"] == 12
    assert s["policy_shortfall"] == float(c.policy_shortfall.max())
    text = repr(table)
    assert text == repr(dlpc.sequel_comparison(key))  # deterministic for nbval
    rows = table.rows
    assert len(rows) == 12 and rows[0][0] == "1" and rows[-1][0] == "2,048"
    # the best gamma column: the grid's, the closed form's, the policy's
    assert [r[1] for r in rows] == [f"{a} / {b} / {p}" for a, b, p in
                                    zip(c.grid.best_gamma, c.predicted_best_gamma, c.policy_gamma)]
    # the errors: at the simulator's best gamma, and the largest over every gamma
    best = np.argmax(c.grid.goodput, axis=0)
    np.testing.assert_array_equal(c.error_at_best_gamma, c.relative_error[best, np.arange(12)])
    assert max(c.worst_error) == c.max_error and all(c.worst_error >= np.abs(c.error_at_best_gamma))
    assert [r[4] for r in rows] == [f"{w:.2%}" for w in c.worst_error]
    assert "<table" in table._repr_html_()


def test_modelling_choices_table():
    table = dlpc.modelling_choices()
    base, per_component = sequel.compare(), sequel.compare(roofline="per-component")
    assert per_component["mtp"].max_error > 5 * base["mtp"].max_error  # the rule matters most
    shown = table.rows
    assert len(shown) == 2 * len(dlpc.MODELLING_CHOICES)
    assert "(roofline per-component)" in shown[2][0] and shown[3][0] == ""
    assert "(output_gate)" in shown[4][0] and "True" not in shown[4][0]  # a flag by its name, no Python literal
    assert repr(table) == repr(dlpc.modelling_choices())


def test_tables_refuse_bad_input():
    with pytest.raises(ValueError, match="drafter must be one of"):
        dlpc.sequel_comparison("eagle")
    with pytest.raises(ValueError, match="choices must be pairs"):
        dlpc.modelling_choices([("roofline", "a string is not keywords")])
