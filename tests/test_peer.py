"""The peer's stored predictions (data/peer/aiconfigurator.json, read by
speclib.evidence.peer): the file's shape, every run it names is one of ours
with the same measured numbers (so the file cannot drift from the data it
was priced on), every run the peer could not price is accounted for, and
the module's summaries equal the same summaries computed here by brute
force over the file's rows read as plain JSON."""
import ast
import json
import math
import re
import statistics
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import speclib
from speclib.evidence import decode_runs as dec
from speclib.evidence import peer
from speclib.evidence import spec_runs as spec

ROOT = Path(__file__).resolve().parents[1]
RAW = json.loads(resources.files("speclib").joinpath("data", "peer", "aiconfigurator.json").read_text("utf-8"))
DECODE = [dict(zip(RAW["decode"]["fields"], r)) for r in RAW["decode"]["rows"]]
MTP = [dict(zip(RAW["mtp"]["fields"], r)) for r in RAW["mtp"]["rows"]]
PAIRS = {r.id: r for r in spec.spec_runs() if r.id.startswith("inferencex-r1-mtp")}
OPS = [dict(zip(RAW["ops"]["fields"], r)) for r in RAW["ops"]["rows"]]
STEPS = {(r[0], r[1], r[2]): dict(zip(RAW["ops"]["steps"]["fields"], r)) for r in RAW["ops"]["steps"]["rows"]}


def our_key(r) -> tuple:
    return (r.url, r.date, r.chip, r.engine, r.weights, r.tp, r.ep, r.dp_attention, r.workload, r.concurrency)


def row_key(r) -> tuple:
    return (r["run"], r["date"], r["chip"], r["engine"], r["weights"], r["tp"], r["ep"], r["dp_attention"],
            r["workload"], r["concurrency"])


OURS = {our_key(r): r for r in dec.decode_runs("r1")}


# --- the file's shape ---------------------------------------------------------------------


def test_header_names_the_peer_its_version_and_the_run():
    p = RAW["peer"]
    assert p["name"] == "AIConfigurator" and p["url"] == "https://github.com/ai-dynamo/aiconfigurator"
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", p["version"]) and p["core_version"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", RAW["run"]["date"])
    assert "cli_estimate" in RAW["run"]["api"] and "--nextn-accepted" in RAW["run"]["cli"]
    m = RAW["mapping"]
    assert set(m["systems"]) <= {"H200", "B200", "B300", "H100", "GB200", "GB300"}
    assert set(m["backends"]) == {"SGLang", "TRT"} and set(m["models"]) == {"fp8", "fp4"}
    assert len(RAW["assumptions"]) >= 5 and all(isinstance(a, str) and a for a in RAW["assumptions"])
    for model, systems in RAW["coverage"]["models"].items():
        assert model in m["models"].values() and systems


def test_rows_match_their_fields():
    assert tuple(RAW["decode"]["fields"]) == peer.DECODE_FIELDS
    assert tuple(RAW["mtp"]["fields"]) == peer.MTP_FIELDS
    for table in (RAW["decode"], RAW["mtp"], RAW["decode"]["not_priced"], RAW["mtp"]["not_priced"]):
        assert table["rows"] and all(len(r) == len(table["fields"]) for r in table["rows"])
    for r in DECODE:
        assert r["peer_tpot_ms"] > 0 and r["measured_tpot_ms"] > 0 and isinstance(r["kv_warning"], bool)
        assert r["chip"] in RAW["mapping"]["systems"] and r["engine"] in RAW["mapping"]["backends"]


def test_each_mtp_configuration_fitted_once_at_its_smallest_concurrency():
    by_id = {}
    for r in MTP:
        by_id.setdefault(r["id"], []).append(r)
    for run_id, rows in by_id.items():
        fitted = [r for r in rows if r["fitted"]]
        assert len(fitted) == 1 and fitted[0]["concurrency"] == min(r["concurrency"] for r in rows), run_id
        assert len({r["accepted"] for r in rows}) == 1 and 0 <= rows[0]["accepted"] <= rows[0]["gamma"]
        if not fitted[0]["at_bound"]:  # the grid's last step is 0.001 accepted tokens: the speed-up lands close
            assert fitted[0]["peer_speedup"] == pytest.approx(fitted[0]["measured_speedup"], rel=2e-3)
        for r in rows:  # the speed-up is the two TPOTs' ratio
            assert r["peer_speedup"] == pytest.approx(r["peer_tpot_ms"] / r["peer_tpot_mtp_ms"], rel=1e-3)


def test_the_file_is_in_its_written_form():
    text = resources.files("speclib").joinpath("data", "peer", "aiconfigurator.json").read_text("utf-8")
    assert peer.dumps(RAW) == text
    assert json.loads(peer.dumps(RAW)) == RAW


# --- against our data: the same runs, the same measured numbers ----------------------------


def test_every_decode_row_is_one_of_our_runs_with_its_measured_tpot():
    keys = [row_key(r) for r in DECODE]
    assert len(set(keys)) == len(keys)
    for r in DECODE:
        ours = OURS[row_key(r)]
        assert r["measured_tpot_ms"] == ours.tpot_s * 1e3
        assert (r["isl"], r["osl"]) == (round(ours.input_len), round(ours.output_len))
        assert r["kv_cache"] == ours.kv_cache


def test_every_r1_decode_run_is_priced_or_accounted_for():
    priced = {row_key(r) for r in DECODE}
    left = {}
    for key, r in OURS.items():
        if key not in priced:
            left[(r.chip, r.engine, r.weights, r.layout, r.workload)] = left.get(
                (r.chip, r.engine, r.weights, r.layout, r.workload), 0) + 1
    stated = {}
    for chip, engine, weights, lay, wl, n, why in RAW["decode"]["not_priced"]["rows"]:
        stated[(chip, engine, weights, lay, wl)] = stated.get((chip, engine, weights, lay, wl), 0) + n
        assert why
    assert stated == left
    # AMD chips have no tables; every NVIDIA run of a mapped chip is priced but for the refusals stated
    assert {k[0] for k in left} >= {"MI300X", "MI325X", "MI355X"}


def test_every_mtp_row_is_one_of_our_pairs_with_its_measured_speedup():
    for r in MTP:
        pair = PAIRS[r["id"]]
        points = {int(b): (int(g), v) for b, g, v in pair.points}
        assert points[r["concurrency"]] == (r["gamma"], r["measured_speedup"])
    for run_id in {r["id"] for r in MTP}:
        assert {r["concurrency"] for r in MTP if r["id"] == run_id} == {int(b) for b, _, _ in PAIRS[run_id].points}
    refused = {run_id for run_id, _ in RAW["mtp"]["not_priced"]["rows"]}
    assert refused | {r["id"] for r in MTP} == set(PAIRS) and not refused & {r["id"] for r in MTP}
    assert all(PAIRS[i].chip not in RAW["mapping"]["systems"] for i in refused)


# --- the summaries, brute force -------------------------------------------------------------


def brute_falls(rows, measured="measured_speedup", predicted="peer_speedup"):
    """(error at every concurrency past the smallest, error at each configuration's largest)."""
    every, top = [], []
    for run_id in sorted({r["id"] for r in rows}):
        pts = sorted((r for r in rows if r["id"] == run_id), key=lambda r: r["concurrency"])
        first = pts[0]
        for r in pts[1:]:
            e = (r[predicted] / first[predicted]) / (r[measured] / first[measured]) - 1
            every.append(e)
            if r is pts[-1]:
                top.append(e)
    return every, top


def test_fall_summary_equals_brute_force():
    every, top = brute_falls(MTP)
    s = peer.fall_summary(peer.mtp_points())
    assert s["points"] == len(every) and s["configurations"] == len(top) == len({r["id"] for r in MTP})
    assert s["median_abs_error"] == pytest.approx(statistics.median(abs(e) for e in every), abs=1e-12)
    assert s["median_abs_error_top"] == pytest.approx(statistics.median(abs(e) for e in top), abs=1e-12)
    assert s["median_signed_error"] == pytest.approx(statistics.median(every), abs=1e-12)
    assert s["worst_abs_error_top"] == pytest.approx(max(abs(e) for e in top), abs=1e-12)


def test_falls_are_ratios_to_the_smallest_concurrency():
    # a hand-made pair of configurations: 2.0 -> 1.5 measured, 2.0 -> 1.8 predicted: +20 %
    pts = [("a", 4, 3, 2.0, 2.0), ("a", 64, 3, 1.5, 1.8), ("b", 1, 2, 1.2, 1.1), ("b", 8, 2, 1.2, 1.1)]
    f = peer.falls(pts)
    assert [(x[0], x[2]) for x in f] == [("a", 64), ("b", 8)]
    assert f[0][3] == pytest.approx(0.75) and f[0][4] == pytest.approx(0.9) and f[0][5] == pytest.approx(0.2)
    assert f[1][5] == pytest.approx(0.0)
    assert peer.fall_summary(pts)["median_abs_error_top"] == pytest.approx(0.1)


def test_decode_table_equals_brute_force():
    by_chip = {}
    for r in DECODE:
        by_chip.setdefault(r["chip"], []).append(r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1)
    table = peer.decode_table("chip")
    assert [row[0] for row in table] == sorted(by_chip)
    for chip, n, med, signed in table:
        assert n == len(by_chip[chip])
        assert med == pytest.approx(statistics.median(abs(e) for e in by_chip[chip]), abs=1e-12)
        assert signed == pytest.approx(statistics.median(by_chip[chip]), abs=1e-12)
    by_conc = {}
    for r in DECODE:
        by_conc.setdefault(r["concurrency"], []).append(r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1)
    assert {row[0]: row[1] for row in peer.decode_table("concurrency")} == {c: len(e) for c, e in by_conc.items()}
    s = peer.decode_summary()
    assert s["runs"] == len(DECODE)


def test_ours_on_the_same_runs():
    ours = peer.ours_mtp_points()
    assert {p[0] for p in ours} == {r["id"] for r in MTP}
    measured = {(r["id"], r["concurrency"]): r["measured_speedup"] for r in MTP}
    assert {(p[0], p[1]): p[3] for p in ours} == measured
    for how in peer.OURS:
        pts = peer.ours_decode_points(how)
        assert [p[:7] for p in pts] == [p[:7] for p in peer.decode_points()]
        assert all(p[7] > 0 for p in pts)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="by"):
        peer.decode_table(("chip", "colour"))
    with pytest.raises(ValueError, match="how"):
        peer.ours_decode_points("guessed")
    with pytest.raises(ValueError, match="op"):
        peer.verify_extra_per_layer("generation_colour")
    with pytest.raises(ValueError, match="draft_layers"):
        peer.verify_extra_per_layer(draft_layers="yes")


# --- the per-operation breakdown ------------------------------------------------------------


def test_ops_tables_cover_both_arms_of_every_mtp_point():
    assert tuple(RAW["ops"]["fields"]) == peer.OPS_FIELDS
    assert tuple(RAW["ops"]["steps"]["fields"]) == peer.OPS_STEP_FIELDS
    assert RAW["ops"]["what"] and RAW["ops"]["steps"]["what"] and "SOL" in RAW["ops"]["cli"]
    arms = {(r["id"], r["concurrency"], n): r for r in MTP for n in (0, r["gamma"])}
    assert set(STEPS) == set(arms) and len(RAW["ops"]["steps"]["rows"]) == len(arms)
    keys = [(r["id"], r["concurrency"], r["nextn"], r["step"], r["op"]) for r in OPS]
    assert len(set(keys)) == len(keys)
    names = {}
    for r in OPS:
        assert (r["id"], r["concurrency"], r["nextn"]) in arms
        assert r["step"] in ("mixed", "decode") and r["source"] in ("silicon", "empirical", "mixed")
        assert all(r[k] >= 0 for k in ("ms_per_step", "sol_ms_per_step", "ms_per_iteration", "sol_ms_per_iteration"))
        names.setdefault((r["id"], r["concurrency"], r["nextn"], r["step"]), set()).add(r["op"])
    decode = {k: v for k, v in names.items() if k[3] == "decode"}
    assert len(decode) == len(arms) and all(set(peer.VERIFY_OPS) <= v for v in decode.values())
    for key, m in arms.items():  # the MTP arm is priced at the fitted acceptance, the plain arm at none
        assert STEPS[key]["accepted"] == (m["accepted"] if key[2] else 0.0)
    assert peer.ops() == OPS and [tuple(r.values()) for r in peer.ops_steps()] == [tuple(r) for r in
                                                                                  RAW["ops"]["steps"]["rows"]]


def test_ops_schedule_is_the_peers_rule():
    """Each arm's step counts as the peer's aggregated mode defines them, from
    the pair's lengths and the fitted acceptance (not from the file's own
    columns): 1 + (OSL - 1) / (1 + accepted) decode iterations, one mixed step
    per request's prefill (the context budget is the ISL), the TPOT counting
    all but three of them, the rest decode-only steps; the peer's layers are
    R1's and its MTP scale (layers + nextn) / layers."""
    from speclib import presets

    layers = presets.model("DeepSeek-R1").step_architecture().attention_layers
    for (run_id, c, nextn), st in STEPS.items():
        pair = PAIRS[run_id]
        isl, osl = (round(x) for x in pair.prefill_lengths)
        a = st["accepted"]
        assert st["batch"] * (pair.gpus if pair.dp_attention else 1) == c
        assert st["decode_iterations"] == pytest.approx(1 + (osl - 1) / (1 + a), abs=1e-6)
        assert st["mixed_steps"] == math.ceil(isl * st["batch"] / isl) == st["batch"]
        assert st["decode_steps"] == pytest.approx(st["decode_iterations"] - st["mixed_steps"], abs=1e-6)
        assert st["decode_steps"] > 0 and st["mixed_steps_counted"] == max(1, st["mixed_steps"] - 3)
        assert st["tokens_per_iteration"] == pytest.approx(1 + a, abs=1e-12)
        assert st["layers"] == layers
        assert st["layer_scale"] == pytest.approx((layers + nextn) / layers, abs=1e-9)


def test_ops_sum_to_the_stored_tpots():
    """What was checked: the peer's TPOT is its TPOT-weighted mean step over the
    tokens one iteration commits, with no overhead outside the operations. So
    (1) each kind of step's operations sum to that step's latency; (2) each
    row's share of an iteration is its step latency times the steps of its
    kind the TPOT counts over all it counts; (3) an arm's shares sum to
    TPOT x tokens per iteration, on the measured tables and at speed of light;
    (4) that TPOT is the one the mtp table stores for the arm."""
    by_arm = {}
    for r in OPS:
        by_arm.setdefault((r["id"], r["concurrency"], r["nextn"]), []).append(r)
    mtp = {(r["id"], r["concurrency"]): r for r in MTP}
    for key, rows in by_arm.items():
        st = STEPS[key]
        counted = {"mixed": st["mixed_steps_counted"], "decode": st["decode_steps"]}
        total = sum(counted.values())
        for kind, step_ms in (("mixed", st["mixed_ms"]), ("decode", st["decode_ms"])):
            assert sum(r["ms_per_step"] for r in rows if r["step"] == kind) == pytest.approx(step_ms, abs=2e-5)
        for r in rows:
            w = counted[r["step"]] / total
            assert r["ms_per_iteration"] == pytest.approx(r["ms_per_step"] * w, abs=2e-6)
            assert r["sol_ms_per_iteration"] == pytest.approx(r["sol_ms_per_step"] * w, abs=2e-6)
        iteration = st["tpot_ms"] * st["tokens_per_iteration"]
        assert sum(r["ms_per_iteration"] for r in rows) == pytest.approx(iteration, abs=5e-5)
        assert (st["mixed_ms"] * counted["mixed"] + st["decode_ms"] * counted["decode"]) / total == pytest.approx(
            iteration, rel=1e-6)
        assert sum(r["sol_ms_per_iteration"] for r in rows) == pytest.approx(
            st["sol_tpot_ms"] * st["tokens_per_iteration"], abs=5e-5)
        m = mtp[key[:2]]
        assert st["tpot_ms"] == pytest.approx(m["peer_tpot_mtp_ms"] if key[2] else m["peer_tpot_ms"], abs=6e-5)
        assert st["sol_tpot_ms"] < st["tpot_ms"]


def brute_verify_extra(op, draft_layers):
    """(id, concurrency) -> (us, sol us) per extra verified position per layer, from the rows as plain JSON."""
    out = {}
    for m in MTP:
        g = m["gamma"]
        plain, mtp = ([r for r in OPS if (r["id"], r["concurrency"], r["nextn"], r["step"], r["op"])
                       == (m["id"], m["concurrency"], n, "decode", op)][0] for n in (0, g))
        st = STEPS[(m["id"], m["concurrency"], g)]
        scale = 1.0 if draft_layers else (61 + g) / 61  # R1's 61 layers, g draft layers on top
        out[(m["id"], m["concurrency"])] = tuple(
            (mtp[k] / scale - plain[k]) / (st["batch"] * g) / 61 * 1000 for k in ("ms_per_step", "sol_ms_per_step"))
    return out


@pytest.mark.parametrize("draft_layers", [False, True])
@pytest.mark.parametrize("op", ["generation_mla_block", "generation_moe_overlap"])
def test_verify_extra_per_layer_equals_brute_force(op, draft_layers):
    rows = peer.verify_extra_per_layer(op, draft_layers=draft_layers)
    expected = brute_verify_extra(op, draft_layers)
    assert [(r["id"], r["concurrency"]) for r in rows] == sorted(expected)
    for r in rows:
        us, sol = expected[(r["id"], r["concurrency"])]
        assert r["us"] == pytest.approx(us, rel=1e-6, abs=1e-6)
        assert r["sol_us"] == pytest.approx(sol, rel=1e-6, abs=1e-6)
        assert r["layers"] == 61 and r["extra_positions"] == r["concurrency"] * r["gamma"]
    s = peer.verify_extra_summary(op, draft_layers=draft_layers)
    values = [v[0] for v in expected.values()]
    assert s["points"] == len(values) == len(MTP)
    assert (s["min_us"], s["max_us"]) == pytest.approx((min(values), max(values)), abs=1e-9)
    assert s["median_us"] == pytest.approx(statistics.median(values), abs=1e-9)
    assert s["sol_median_us"] == pytest.approx(statistics.median(v[1] for v in expected.values()), abs=1e-9)


def test_verify_extra_keeping_the_draft_layers_costs_more():
    # the draft layers add gamma layers' work at the verify's positions: never less than without them
    for op in peer.VERIFY_OPS:
        for a, b in zip(peer.verify_extra_per_layer(op), peer.verify_extra_per_layer(op, draft_layers=True)):
            assert b["us"] > a["us"] and b["sol_us"] > a["sol_us"]


def test_the_peers_verified_position_reads_its_whole_cache_at_speed_of_light():
    """The peer's assumption, stated in the file's header, recovered from its
    SOL numbers: one more verified position costs one layer's attention one
    more read of its request's KV cache (R1's latent, 1152 bytes per token per
    layer in bf16, half in fp8) at the mean context ISL + OSL // 2 + 1, at the
    chip's bandwidth (presets): never less, at most 12 % more (a small
    per-position remainder, about 0.011 us, and on B200 a bandwidth some 4 %
    below the preset's). Were the positions of one request to share one read,
    the figure would fall by 1 + gamma."""
    from speclib import presets

    arch = presets.model("DeepSeek-R1").step_architecture()
    for r in peer.verify_extra_per_layer("generation_mla_block"):
        pair = PAIRS[r["id"]]
        isl, osl = (round(x) for x in pair.prefill_lengths)
        per_token = arch.context_bytes * (0.5 if pair.kv_cache == "fp8" else 1.0)
        read_us = (isl + osl // 2 + 1) * per_token / presets.hardware(pair.chip).memory_bandwidth * 1e6
        assert 1.0 < r["sol_us"] / read_us < 1.12, (r["id"], r["concurrency"], r["sol_us"], read_us)


# --- the peer stays outside the package ----------------------------------------------------


def test_nothing_in_the_package_imports_the_peer():
    for path in Path(speclib.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] in ("aiconfigurator", "aiconfigurator_core", "bench_peer")
                           for n in names), path


def test_the_script_prints_the_stored_summary():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_peer.py"), "--summary"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"AIConfigurator {RAW['peer']['version']}" in done.stdout and "fall of the gain" in done.stdout
    assert "extra verified position" in done.stdout
