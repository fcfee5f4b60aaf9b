"""The measured kernel tables (speclib/data/silicon/) and the step priced from them.

Expected values come from the source, not from the reader: tests/data/silicon_rows.json holds rows read
straight from aiconfigurator-core 0.12.0's Parquet files with pyarrow filters (its provenance says how); an
interpolated point is checked against the log-log formula evaluated by hand on the stored points; a part
without a table against the roofline of speclib.core.layout.ParallelStep.
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest

import speclib
from speclib.core.deployment import Deployment
from speclib.core.parallel import expert_parallel_cost_model
from speclib.silicon import tables as T

FIXTURE = json.loads((Path(__file__).parent / "data" / "silicon_rows.json").read_text())
FILES = {"h100_sxm/gemm/trtllm": "h100-sxm-trt.json", "h100_sxm/moe/trtllm": "h100-sxm-trt.json",
         "h100_sxm/attention/trtllm": "h100-sxm-trt.json", "b200_sxm/mla/sglang": "b200-sglang.json",
         "h200_sxm/comm/vllm": "h200-vllm.json"}


def _fixture(family):
    for t in FIXTURE["tables"]:
        if f"/{family}/" in t["path"]:
            parts = t["path"].split("/")
            return T.load(FILES["/".join(parts[3:6])]), t["rows"]
    raise AssertionError(family)


def _fastest(rows, key):
    out = {}
    for r in rows:
        out[key(r)] = min(out.get(key(r), math.inf), r["latency"] * 1e-3)
    return out


def test_every_file_names_its_source_and_licence():
    names = T.table_files()
    assert len(names) == 12
    for name in names:
        t = T.load(name)
        assert t.chip in T.SYSTEMS and t.engine in T.FRAMEWORKS
        assert t.database["package"] == "aiconfigurator-core" and t.database["version"] == "0.12.0"
        assert "Apache-2.0" in t.data["notice"] and "NVIDIA" in t.data["notice"]
        assert t.engine_version and set(t.data["collection"]) == set(t.tables)
        for table in t.tables.values():
            assert table["path"].startswith(f"aiconfigurator_core/systems/data/{t.data['system']}/")


def test_gemm_rows_as_the_source_has_them():
    t, rows = _fixture("gemm")
    for r in rows:
        curve = t.gemm(r["gemm_dtype"], r["n"], r["k"])
        assert float(curve(r["m"])) == pytest.approx(r["latency"] * 1e-3, rel=1e-3)


def test_moe_rows_as_the_source_has_them():
    t, rows = _fixture("moe")
    for r in rows:
        curve, dtype = t.moe((r["moe_dtype"],), r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                             r["moe_tp_size"], r["moe_ep_size"], r["distribution"])
        assert dtype == r["moe_dtype"]
        assert float(curve(r["num_tokens"])) == pytest.approx(r["latency"] * 1e-3, rel=1e-3)


def test_attention_rows_as_the_source_has_them():
    t, rows = _fixture("attention")
    for r in rows:
        grid = t.gqa(r["num_heads"], r["num_key_value_heads"], r["head_dim"], r["kv_cache_dtype"])
        # the cached context is the one prompt token plus the decode steps before this one
        assert float(grid(r["batch_size"], r["isl"] + r["step"])) == pytest.approx(r["latency"] * 1e-3, rel=1e-3)
    t, rows = _fixture("mla")
    for r in rows:
        grid = t.mla(r["num_heads"], r["kv_cache_dtype"])
        assert float(grid(r["batch_size"], r["isl"] + r["step"])) == pytest.approx(r["latency"] * 1e-3, rel=1e-3)


def test_allreduce_keeps_the_fastest_kernel():
    t, rows = _fixture("comm")
    best = _fastest(rows, lambda r: r["message_size"])
    assert len(best) < len(rows)  # the fixture holds two kernels per size (CUDA graph and eager)
    curve = t.allreduce(8)
    for size, seconds in best.items():
        assert float(curve(size)) == pytest.approx(seconds, rel=1e-3)


def test_curve_reads_log_log_between_points_flat_below_linear_beyond():
    c = T.Curve([1, 4, 16], [2e-6, 8e-6, 8e-6])
    assert float(c(4)) == pytest.approx(8e-6)
    assert float(c(2)) == pytest.approx(math.sqrt(2e-6 * 8e-6))  # the geometric mean at the geometric midpoint
    assert float(c(0.5)) == pytest.approx(2e-6)
    assert float(c(32)) == pytest.approx(16e-6)
    assert bool(c.measured(16)) and not bool(c.measured(17))


def test_grid_reads_bilinear_in_logs():
    g = T.Grid([1, 4], [16, 64], [[1.0, 4.0], [2.0, 16.0]])
    assert float(g(4, 64)) == pytest.approx(16.0)
    assert float(g(2, 32)) == pytest.approx((1.0 * 4.0 * 2.0 * 16.0) ** 0.25)
    assert float(g(8, 64)) == pytest.approx(32.0)  # linear in batch past the last


def test_interpolation_between_stored_points_of_a_real_table():
    t = T.load("h100-sxm-trt.json")
    g = t.tables["gemm"]
    shape = next(s for s in g["shapes"] if s["dtype"] == "bfloat16" and s["n"] == 4096 and s["k"] == 4096)
    m = g["m"]
    i = m.index(64)
    lo, hi = shape["latency_ms"][i] * 1e-3, shape["latency_ms"][i + 1] * 1e-3
    x = math.sqrt(m[i] * m[i + 1])
    assert float(t.gemm("bfloat16", 4096, 4096)(x)) == pytest.approx(math.sqrt(lo * hi), rel=1e-9)


def test_a_chip_without_tables_is_priced_by_the_roofline_and_says_so():
    d = Deployment("llama-3-70b", "MI300X", tp=8, step_time="measured")
    step = d.measured_step()
    assert all(s.startswith("roofline") for s in step.sources().values())
    assert "MI300X" in step.sources()["dense"]
    B, S = np.array([1.0, 64.0]), 2048.0
    assert np.allclose(step.time(B, 1.0, S), d.parallel_step().time(B, 1.0, S), rtol=1e-12)


def test_an_op_the_tables_lack_is_priced_by_the_roofline():
    d = Deployment("deepseek-v4-flash", "B200", tp=4, engine="TRT", step_time="measured")
    step = d.measured_step()
    src = step.sources()
    assert src["attention"].startswith("roofline") and src["communication"].startswith("measured allreduce")
    roof = d.parallel_step().component_times(8.0, 3.0, 4096.0)
    assert float(step.component_times(8.0, 3.0, 4096.0)["attention"]) == pytest.approx(float(roof["attention"]))


def test_a_measured_step_reads_every_part_from_the_tables():
    d = Deployment("llama-3-70b", "H100", tp=4, engine="TRT", step_time="measured")
    step = d.measured_step()
    assert step.measured(), step.sources()
    t = T.load("h100-sxm-trt.json")
    # the attention part at T = 1 is the table's kernel times the layers
    grid = t.gqa(16, 2, 128, "bfloat16")
    assert float(step.component_times(32.0, 1.0, 4096.0)["attention"]) == pytest.approx(80 * float(grid(32, 4096)))
    # the step is no faster than the roofline's lower bound
    for B in (1.0, 16.0, 256.0):
        assert float(step.time(B, 1.0, 2048.0)) >= float(d.parallel_step().time(B, 1.0, 2048.0))


def test_a_deployment_prices_a_speedup_through_the_measured_step():
    d = Deployment("deepseek-v3", "H200", tp=8, engine="SGLang", step_time="measured", drafter="deepseek-v3-mtp")
    s = speclib.speedup(0.7, 2, 32, 2048, deployment=d)
    assert 0.5 < float(s) < 3.0
    assert d.pricing().drafter.measured


def test_measured_step_time_is_refused_where_it_cannot_price():
    with pytest.raises(ValueError, match="step_time"):
        Deployment("llama-3.1-8b", "H100", step_time="silicon")
    with pytest.raises(ValueError, match="measured"):
        Deployment(cost_model=expert_parallel_cost_model(G=8), step_time="measured")


def test_fp8_weights_run_the_checkpoints_own_scaling():
    from speclib.presets import model

    assert T.gemm_dtypes("fp8", model("llama-3-70b"))[0] == "fp8"  # per-tensor
    assert T.gemm_dtypes("fp8", model("deepseek-v3"))[0] == "fp8_block"
    d = Deployment("llama-3-70b", "H200", tp=4, engine="TRT", weights="fp8", step_time="measured")
    assert d.measured_step().measured(), d.measured_step().sources()


def test_a_measured_step_says_where_it_reads_past_its_tables():
    """Inside every table nothing is said; one point past the last measured context (or tokens), the line names
    the part, how far its table goes and what was asked; the roofline, which holds at any size, says nothing."""
    d = Deployment("llama-3-70b", "H100", tp=4, engine="TRT", step_time="measured")
    grid = T.load("h100-sxm-trt.json").gqa(16, 2, 128, "bfloat16")
    last_b, last_s = float(grid.b[-1]), float(grid.s[-1])
    assert d.extrapolates(32.0, 1.0, 4096.0) == ()
    assert d.extrapolates(last_b, 1.0, last_s) == ()
    (line,) = d.extrapolates(32.0, 1.0, 2 * last_s)
    assert line.startswith("the attention table") and f"context of {last_s:,.0f}" in line
    assert f"{2 * last_s:,.0f}" in line
    assert any(n.startswith("the attention table") for n in d.extrapolates(2 * last_b, 1.0, 4096.0))
    # tokens past the GEMM tables: B x T is what a verify runs, so T counts, not B alone
    gemm_top = max(float(c.x[-1]) for part in ("dense", "ffn") for _, share, c, _, _ in d.measured_step()._gemms[part])
    assert not any("GEMM" in n for n in d.extrapolates(gemm_top / 8, 1.0, 4096.0))
    assert any("GEMM" in n for n in d.extrapolates(gemm_top / 8, 16.0, 4096.0))
    assert Deployment("llama-3-70b", "H100", tp=4).extrapolates(1e6, 8.0, 1e6) == ()


def test_the_command_line_says_on_stderr_where_the_measured_step_reads_past_its_tables(capsys):
    from speclib.tools import cli
    argv = ["gamma", "--model", "llama-3.1-8b", "--hardware", "h100", "--engine", "sglang", "--step-time", "measured",
            "--alpha", "0.7", "--batch", "1", "--seq", "200000"]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "speclib gamma: extrapolates: the attention table" in err and "200,000" in err
    assert cli.main(argv + ["--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert len(record["extrapolates"]) == 1 and record["extrapolates"][0].startswith("the attention table")
    assert cli.main([*argv[:-1], "4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["extrapolates"] == []
