"""The peer's stored predictions (data/peer/aiconfigurator.json, read by
speclib.evidence.peer): the file's shape, every run it names is one of ours
with the same measured numbers (so the file cannot drift from the data it
was priced on), every run the peer could not price is accounted for, and
the module's summaries equal the same summaries computed here by brute
force over the file's rows read as plain JSON."""
import ast
import json
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
