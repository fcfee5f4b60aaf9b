"""What the engine chapters compute for their prose and tables: where
speculation stops paying (against a brute-force scan), the interval of the
best speculating draft, and the facts the chapters glue (against the data
read independently)."""
import numpy as np
import pytest

import speclib
from speclib.core import speculation as spec
from speclib.calibration import held_out
from speclib.evidence import spec_runs, validation
from speclib.presentation.figures import engine_step_time, engines_vs_model, reconciliation

CALIBRATED = speclib.Deployment("deepseek-v4-flash", "B200", tp=8, step_time="calibrated")


def _scan(dep, alpha, S, c, top):
    """gamma* and the best speculating draft's interval at every batch: every draft length's speed-up at every
    batch 1..top (one call per draft length over the batches), then the argmax batch by batch."""
    B = np.arange(1, top + 1, dtype=float)
    speeds = np.array([np.asarray(spec.speedup(alpha, g, B, S, c, deployment=dep), dtype=float) for g in range(17)])
    g1 = 1 + np.argmax(speeds[1:], axis=0)  # the best draft of at least one token
    iv = spec.speedup(alpha, g1.astype(float), B, S, c, deployment=dep, interval=True)
    return np.argmax(speeds, axis=0), np.asarray(iv.lo, dtype=float), np.asarray(iv.hi, dtype=float)


def test_where_speculation_stops_is_a_brute_force_scans():
    top = 320
    got = spec.stops_paying(0.75, 2048, 0.05, deployment=CALIBRATED, max_batch=top, gamma_max=16)
    gamma, lo, hi = _scan(CALIBRATED, 0.75, 2048, 0.05, top)
    last_speculating = np.flatnonzero(gamma > 0)[-1] + 1
    assert got["at"] == (last_speculating + 1 if last_speculating < top else None)
    above = np.flatnonzero(lo >= 1.0)  # batches (less one) whose interval still lies at or above 1x
    may_from = 1 if not above.size else above[-1] + 2
    assert got["may_from"] == (may_from if may_from <= top else None)
    assert got["surely_from"] is None and (hi >= 1.0).any()
    assert got["max_batch"] == top


def test_stops_paying_looks_only_at_batches_that_fit():
    small = speclib.Deployment("llama-3.1-8b", "H100", step_time="calibrated")
    got = spec.stops_paying(0.75, 2048, 0.05, deployment=small, max_batch=4096)
    assert got["max_batch"] == speclib.max_batch("llama-3.1-8b", "H100", 2048)
    roofline = spec.stops_paying(0.75, 2048, 0.05, deployment=small.replace(step_time="roofline"), max_batch=64)
    assert roofline["may_from"] is None and roofline["surely_from"] is None  # no interval without draws


def test_the_schedules_interval_is_the_best_speculating_drafts():
    from speclib.tools.schedule import schedule

    sched = schedule(seq=2048, alpha=0.75, c_draft=0.05, max_batch=64, deployment=CALIBRATED.replace(reserve=None))
    _, lo, hi = _scan(CALIBRATED, 0.75, 2048, 0.05, 64)
    np.testing.assert_allclose(sched.interval[0], lo, rtol=1e-9)
    np.testing.assert_allclose(sched.interval[1], hi, rtol=1e-9)
    assert list(sched.uncertain) == list((lo < 1) & (hi > 1))


def test_the_decode_chapters_facts_are_the_datas():
    facts = engine_step_time.decode_facts()
    records = validation.load_measurements()
    assert facts["runs"] == len(validation.compare()) and facts["runs"] <= len(records)
    assert facts["decoding_runs"] + facts["queueing_runs"] == facts["runs"]
    # the queueing run beats the roofline at its nominal batch, not at the batch Little's law gives
    assert facts["below_tpot_ms"] < facts["below_pred_ms"] and facts["below_pred_little_ms"] < facts["below_tpot_ms"]
    # and memory holds fewer than were in flight: priced at what it holds, the run no longer beats the roofline
    assert facts["below_held"] < facts["below_concurrency"] and facts["below_pred_held_ms"] < facts["below_tpot_ms"]
    c = validation.compare()
    one = [m.tpot_ms / (p * 1e3) for m, p in zip(c.records, c.predicted_little_s)
           if m.tp == 1 and m.precision == "fp8" and c.little_batch[c.records.index(m)] > 0]
    assert facts["tp1_ratio_lo"] >= min(one) - 1e-12 and facts["tp1_ratio_hi"] <= max(one) + 1e-12


def test_the_engine_chapters_tables_hold_every_run_once():
    runs = spec_runs.spec_runs()
    table = engines_vs_model.runs_table()
    assert len(table.rows) == len(runs)
    assert all(row[-1] for row in table.rows), "every run names its source's bibliography key"
    held = held_out.stored_held_out("model").run("vllm-dspark-dsv4-flash-mi350x-k7")
    rows = engines_vs_model.dspark_table().rows
    assert [r[0] for r in rows] == list(held.batch)
    assert rows[-1][2].startswith(f"{held.predicted[-1]:.2f}")


def test_the_reconciliation_prices_the_sequels_setting_three_ways():
    rows = reconciliation.sequel_rows("dflash", batches=(64,))
    simulator, snapshot, calibrated = (int(r[1].split(":")[0]) for r in rows)
    # a rollback snapshot per verified position makes long drafts dearer; the engines' own costs more so
    assert simulator >= snapshot >= calibrated
    assert "[" in rows[2][1] and "[" not in rows[0][1]


# --- part IV's step taken apart, its targets, its honesty table --------------------------------

import json  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

from speclib.core import overlap  # noqa: E402
from speclib.calibration import step_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _bib_keys() -> set:
    return set(re.findall(r"@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(encoding="utf-8")))


def test_the_parts_of_a_step_add_up_to_the_public_tpot_and_the_collectives_are_two_a_layer():
    dep = engine_step_time.r1_example()
    rows = {r[0]: r[1:] for r in engine_step_time.step_parts(dep, (4, 64), "8k1k")}
    S = 8192 + (1024 - 1) / 2  # the mean context over a request's decode steps
    for i, B in enumerate((4, 64)):
        total = 1e3 * float(speclib.tpot(B, S, workload="8k1k", deployment=dep))
        assert rows["time per output token"][i] == pytest.approx(total, rel=1e-9)
        assert sum(v[i] for k, v in rows.items() if k != "time per output token") == pytest.approx(total, rel=1e-9)
    # 61 layers x 2 all-reduces, each the NVLink 4 latency at 8 GPUs (15.98 us, nccl-tests) plus a ring's bytes
    # (2 x 7/8 of 4 positions x 7,168 bf16 elements over half of 900 GB/s)
    by_hand = 122 * (15.98e-6 + 2 * 7 / 8 * 4 * 7168 * 2 / 450e9)
    assert rows["communication"][0] == pytest.approx(1e3 * by_hand, rel=1e-6)
    assert rows["prefill of arriving requests"][1] > rows["prefill of arriving requests"][0] > 0


def test_the_physics_facts_are_the_configs_and_the_measured_latencies():
    f = engine_step_time.physics_facts()
    data = json.loads((ROOT / "speclib" / "presets" / "interconnects.json").read_text(encoding="utf-8"))
    latency = {i["name"]: i["allreduce_latency_us"] for i in data["interconnects"]}
    assert f["allreduce_us_nvlink4"] == pytest.approx(latency["NVLink4"]["8"])
    assert f["allreduce_us_nvlink5"] == pytest.approx(latency["NVLink5"]["8"])
    assert f["allreduce_us_rccl"] == pytest.approx(latency["InfinityFabric-MI300"]["8"])
    # DeepSeek-V3/R1: 61 layers, 58 of them MoE, 256 routed experts, top 8; an MLA latent read whole on each GPU
    assert (f["r1_layers"], f["r1_moe_layers"], f["r1_experts"], f["r1_top_k"], f["r1_allreduces"]) == (
        61, 58, 256, 8, 122)
    assert f["cache_share_mla"] == 1.0
    # Llama 3 70B has 8 KV heads (one a GPU at TP 8), Qwen3-235B-A22B 4 (each held by two GPUs of eight)
    assert (f["kv_heads_llama"], f["cache_share_llama"]) == (8, 1 / 8)
    assert (f["kv_heads_qwen"], f["cache_share_qwen"]) == (4, 1 / 4)
    # the most loaded of eight GPUs serves more than the mean, less so as the batch grows
    assert f["ep_most_loaded_4"] > f["ep_most_loaded_64"] > 1.0
    # NVFP4: 4 bits a value and an 8-bit scale per 16; fp8: one byte; the head (129,280 x 7,168) in bf16
    assert (f["fp8_expert_bytes"], f["fp4_expert_bytes"]) == (1.0, 4.5 / 8)
    assert f["head_gb"] == pytest.approx(2 * 129280 * 7168 / 1e9, rel=0.15)
    # attention's share of a prompt's FLOPs, summed token by token
    a = engine_step_time.r1_example().model.step_architecture()
    for prompt, key in ((1024, "1k"), (8192, "8k")):
        I = int(0.9 * prompt)
        attention = a.attention_layers * a.prefill_flops_per_pair * np.arange(I, dtype=float).sum()
        share = attention / (2 * a.active_params * I + attention)
        assert f[f"prefill_attention_share_{key}"] == pytest.approx(share, rel=1e-3)
    assert f["prefill_attention_share_8k"] > f["prefill_attention_share_1k"]


def test_the_ablation_and_decode_facts_read_their_rows():
    rows = [("the shipped form", 0.10, 0.20, 0.05, 0.15, 0.06), ("without attention's own factor", 0.12, 0.18, 0.05,
                                                                   0.16, 0.07),
            ("without the time per MoE layer", 0.09, 0.25, 0.04, 0.20, 0.11), ("without either", 0.1, 0.2, 0.05, 0.15,
                                                                                0.06),
            ("the fixed time scaled by layers", 0.1, 0.2, 0.05, 0.15, 0.06),
            ("the collectives not charged", 0.08, 0.35, 0.04, 0.14, 0.07)]
    f = engine_step_time.ablation_facts(rows)
    assert f["abl_no_moe_decode"] == 0.09 and f["abl_no_moe_decode_moves"] == "falls"
    assert f["abl_no_moe_speedup_moves"] == "rises" and f["abl_no_collectives_decode_worst_moves"] == "rises"
    r1 = engine_step_time.r1_facts([("H200", "SGLang", "8k1k", 3, 20.0, 18.0, -0.10, -0.12),
                                    ("B200", "SGLang", "8k1k", 3, 10.0, 10.5, 0.05, 0.02),
                                    ("MI355X", "SGLang", "1k1k", 3, 14.0, 14.5, 0.04, 0.80)])
    assert (r1["r1_configs"], r1["r1_long_configs"], r1["r1_long_too_fast"]) == (3, 2, 1)
    assert (r1["r1_worst_chip"], r1["r1_worst_chip_error"]) == ("MI355X", 0.80)
    mtp = engine_step_time.mtp_facts([("a", 4, 2, 1.5, 1.5, 1.3, 1.7, False), ("a", 16, 2, 1.4, 1.5, 1.3, 1.7, True),
                                      ("b", 4, 2, 1.2, 1.2, 1.1, 1.3, True), ("b", 8, 2, 1.0, 1.2, 1.1, 1.3, True)])
    assert (mtp["mtp_pairs"], mtp["mtp_points"], mtp["mtp_scored"], mtp["mtp_inside"], mtp["mtp_below"]) == (
        2, 4, 3, 2, 1)


def test_the_targets_split_into_decode_and_speculation_and_the_missed_are_named():
    every = step_report.targets()
    decode, spec_ = step_report.targets(kind="decode"), step_report.targets(kind="speculative")
    assert sorted(decode + spec_) == sorted(every) and not set(decode) & set(spec_)
    assert all(re.search("decode|tpot", what, re.I) or what.startswith("the same") for what, *_ in decode)
    assert not any(re.search("decode|tpot", what, re.I) for what, *_ in spec_)
    with pytest.raises(ValueError, match="kind"):
        step_report.targets(kind="prefill")
    for kind, rows in (("decode", decode), ("speculative", spec_)):
        f = engine_step_time.target_facts(kind)
        missed = [r for r in rows if r[3] == "no"]
        met = [r for r in rows if r[3] == "yes"]
        assert (f[f"{kind}_targets"], f[f"{kind}_missed"], f[f"{kind}_met"], f[f"{kind}_in_sample"]) == (
            len(rows), len(missed), len(met), len(rows) - len(missed) - len(met))
        # a figure from the constants or the form fitted on the runs it is scored on is never counted as met
        assert all(met in ("yes", "no", "in-sample") for *_, met in rows)
        assert all(met == "in-sample" for what, _, _, met in rows if "in-sample" in what)
        assert "the same" not in f[f"{kind}_missed_list"]
        assert all(value in f[f"{kind}_missed_list"] for _, _, value, _ in missed)
    assert engines_vs_model.targets_table().rows == tuple(spec_)
    assert engine_step_time.targets_table().rows == tuple(decode)
    both = engine_step_time.targets_table(None)  # the chapter's one table of both kinds
    assert both.rows == tuple(every) and "plain decoding" in both.caption and "speculation" in both.caption


def test_the_overlap_table_and_what_a_speculative_path_without_overlap_costs():
    table = engine_step_time.overlap_table()
    assert [r[0] for r in table.rows] == ["SGLang", "vLLM", "TensorRT-LLM"]
    assert {r[-1] for r in table.rows} <= _bib_keys()
    f = engine_step_time.overlap_facts()
    dep = speclib.Deployment("llama-3-70b", "H200", tp=4, drafter="llama-3.3-70b-eagle3", step_time="calibrated")
    B, S = f["overlap_batch"], f["overlap_context"]
    # a speed-up is N x plain / step; without overlap the step carries the host time a plain step hides
    N = float(speclib.expected_committed(f["overlap_alpha"], f["overlap_gamma"]))
    plain = float(speclib.tpot(B, S, deployment=dep))
    assert 1 / f["no_overlap_speedup"] - 1 / f["overlap_speedup"] == pytest.approx(
        float(overlap.host_time(B)) / (N * plain), rel=1e-9)
    assert f["overlap_host_ms"] == pytest.approx(0.9 + 0.029 * B)
    assert 0 < f["overlap_gain_lost"] < 1


def test_the_deepseek_evidence_counts_its_gpus_and_layouts():
    runs = spec_runs.spec_runs()
    f = engines_vs_model.deepseek_evidence(runs)
    ds = [r for r in runs if r.family == "DeepSeek" and r.quantity == "speedup"]
    assert f["ds_runs"] == len(ds) and f["ds_eight_or_more"] == sum(r.gpus >= 8 for r in ds)
    assert f["ds_expert_parallel"] == len([r for r in ds if r.expert_parallel or r.ep > 1]) > 0
    small = [v for r in ds for b, _, v in r.points if b <= 16]
    assert (f["ds_small_points"], f["ds_small_losses"]) == (len(small), sum(v < 1 for v in small))


def test_a_draft_tree_is_a_chain_verified_at_its_width():
    f = engines_vs_model.tree_facts()
    dep = speclib.Deployment("llama-3-70b", "H200", tp=4, engine="SGLang", drafter="llama-3.3-70b-eagle3",
                             step_time="calibrated")
    # the chain is speculative decoding of depth tokens at the acceptance that commits the same accept length
    alpha = float(next(a for a in np.linspace(0.5, 0.99, 4901)
                       if speclib.expected_committed(a, f["tree_depth"]) >= f["tree_accept"] - 1e-12))
    for B in (8, 256):
        chain = float(speclib.speedup(alpha, f["tree_depth"], B, f["tree_context"], deployment=dep))
        assert f[f"chain_{B}"] == pytest.approx(chain, rel=2e-3)
        # the same tokens from more verified positions cost more; a speed-up scales with the tokens committed
        assert f[f"tree_{B}"] < f[f"chain_{B}"]
        assert f[f"tree_needs_{B}"] * f[f"tree_{B}"] / f["tree_accept"] == pytest.approx(f[f"chain_{B}"])


def test_the_estimates_and_family_tables_name_their_sources_and_read_the_held_out_points():
    table = engines_vs_model.estimates_table()
    assert not any("{cite}" in cell for row in table.rows for cell in row)
    assert set(engines_vs_model.estimate_keys()) <= _bib_keys()
    held = held_out.stored_held_out("model")
    rows = {r[0]: r for r in engines_vs_model.family_table().rows}
    for fam in {p.run.family for p in held.runs}:
        mine = [p for p in held.runs if p.run.family == fam]
        e = np.concatenate([(p.predicted / p.measured - 1)[p.scored] for p in mine])
        inside = np.concatenate([((p.lo <= p.measured) & (p.measured <= p.hi))[p.scored] for p in mine])
        fitted = sum(1 for p in mine if not p.run.acceptance_reported and (len(p.run.batches) >= 2
                                                                           or p.run.quantity == "throughput"))
        assert rows[fam][1:4] == (len(mine), e.size, f"{100 * np.median(np.abs(e)):.0f} %")
        assert rows[fam][4] == f"{100 * np.median(e):+.0f} %" and rows[fam][5] == f"{100 * inside.mean():.0f} %"
        assert rows[fam][6] == fitted


def test_the_shares_of_a_step_are_its_parts_over_its_total():
    rows = (("dense", 1.0, 2.0), ("ffn", 1.0, 4.0), ("attention", 0.0, 2.0), ("communication", 2.0, 1.0),
            ("fixed per step", 5.0, 5.0), ("prefill of arriving requests", 1.0, 6.0),
            ("time per output token", 10.0, 20.0))
    f = engine_step_time.parts_facts(rows, batches=(4, 256))
    assert (f["kernel_share_first"], f["fixed_share_first"], f["comm_share_first"]) == (0.2, 0.5, 0.2)
    assert (f["kernel_share_last"], f["attention_share_last"], f["prefill_share_last"]) == (0.4, 0.1, 0.3)
    assert (f["tpot_ms_first"], f["parts_last_batch"]) == (10.0, 256)


def test_the_family_and_sign_facts_read_the_held_out_points():
    rows = [("A", 3, 10, 0.05, -0.20, 0.50, 2, "f"), ("DeepSeek", 2, 5, 0.10, 0.10, 0.80, 1, "f"),
            ("C", 1, 1, 0.02, 0.01, 1.00, 0, "f")]
    held = held_out.stored_held_out("model")
    f = engines_vs_model.family_facts(rows, held)
    assert (f["bias_lo_family"], f["bias_lo"], f["bias_hi_family"], f["coverage_lo_family"]) == (
        "A", -0.20, "DeepSeek", "A")
    assert (f["coverage_hi_family"], f["coverage_hi_points"], f["coverage_in_band"]) == ("C", "1 point", 1)
    assert f["bias_lo_points"] == "10 points"
    assert (f["fitted_runs"], f["all_runs"], f["ds_family_coverage"]) == (3, 6, 0.80)
    # the points that set an acceptance: each such run's smallest batch, counted from the runs themselves
    fitted = [p for p in held.runs if not p.run.acceptance_reported and (len(p.run.batches) >= 2
                                                                        or p.run.quantity == "throughput")]
    assert f["fitted_points"] == sum(int((p.batch == min(p.run.batches)).sum()) for p in fitted)
    assert all(not p.scored[p.batch == min(p.run.batches)].any() for p in fitted)
    s = engines_vs_model.sign_facts(held)
    right = held.summary()["sign_right"]
    assert s["sign_wrong"] == round((1 - right) * s["sign_points"]) and s["sign_wrong_near_one"] <= s["sign_wrong"]


def test_the_estimates_ranges_are_the_numbers_their_text_quotes():
    text = {term: estimate for term, _, _, estimate, _ in step_report.estimate_rows()}
    ranges = step_report.estimate_ranges()
    for term in ("moe_fixed", "per_sequence"):
        for v in ranges[term]:
            assert f"{v * 1e6:g} \u00b5s" in text[term] or f"{v * 1e6:g} to" in text[term], (term, v)
    # a verify's extra positions: the peer's MLA block per layer (clipped at 0) over L_ref layers, the sampler once
    peer = step_report.peer_verify_estimate()
    rows = [r["us"] for r in __import__("speclib.evidence.peer", fromlist=["x"]).verify_extra_per_layer()]
    assert (peer["mla_min_us"], peer["mla_max_us"]) == (min(rows), max(rows))
    assert f"{min(rows):.2f} to {max(rows):.2f} \u00b5s" in text["per_position"]
    lo, hi = ranges["per_position"]
    assert lo == pytest.approx(max(min(rows), 0.0) * 1e-6 * 80 + 0.7e-6)
    assert hi == pytest.approx(max(rows) * 1e-6 * 80 + 16e-6)
    f = engines_vs_model.estimate_facts()
    placed = [t for t in ranges if f"est_{t}_us" in f]
    assert {"moe_fixed", "per_sequence"} <= set(placed)  # a term the shipped form leaves out has none
    for term in placed:
        lo, hi = ranges[term]
        v = f[f"est_{term}_us"] * 1e-6
        assert f[f"est_{term}_where"] == ("inside" if lo <= v <= hi else "below" if v < lo else "above"), term


def test_the_gutter_facts_read_the_gamma_curves():
    d = {"B": np.array([1, 4, 8, 400, 800]), "gamma_roofline": np.array([1, 0, 0, 2, 1]),
         "gamma_calibrated": np.array([3, 2, 2, 0, 0]), "no_fit": np.array([False, False, False, False, True])}
    f = engine_step_time.step_time_gamma_facts(d)
    assert (f["gutter_lo"], f["gutter_hi"], f["gutter_calibrated_lo"], f["calibrated_stops_from"]) == (4, 8, 2, 400)
    fig3 = {"B": d["B"], "paper0": d["gamma_roofline"], "calibrated0": d["gamma_calibrated"],
            "paper1": np.array([2, 2, 2, 2, 2]), "calibrated1": np.array([2, 2, 2, 2, 0]),
            "paper2": np.array([2, 2, 2, 2, 2]), "calibrated2": np.array([2, 2, 2, 0, 0])}
    assert engines_vs_model.figure3_facts(fig3) == {"figure3_gutter_closes": True, "figure3_stops_earlier": True}
    fig3["calibrated0"] = np.array([3, 0, 2, 0, 0])
    assert not engines_vs_model.figure3_facts(fig3)["figure3_gutter_closes"]


def test_the_dspark_facts_are_what_its_table_prints():
    f = engines_vs_model.dspark_facts()
    rows = engines_vs_model.dspark_table().rows
    scored = [r for r in rows if "[" in r[2]]
    measured = [float(r[1].rstrip("\u00d7")) for r in scored]
    bounds = [tuple(float(x) for x in re.search(r"\[(.*)\]", r[2]).group(1).split("\u2013")) for r in scored]
    roofline = [float(r[3].rstrip("\u00d7")) for r in rows]
    assert f["dspark_scored"] == len(scored)
    # the table rounds to two decimals: count the points clear of their bounds by more than the rounding
    assert f["dspark_above"] >= sum(m > hi + 0.01 for m, (lo, hi) in zip(measured, bounds))
    assert f["dspark_inside"] >= sum(lo + 0.01 < m < hi - 0.01 for m, (lo, hi) in zip(measured, bounds))
    if any(b > a + 0.01 for a, b in zip(roofline, roofline[1:])):
        assert f["dspark_roofline_rises"]
    assert f["dspark_roofline_peak"] == pytest.approx(max(roofline), abs=0.006)
