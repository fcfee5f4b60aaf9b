"""What the live figures of the chapters on the sequel must compute, by
speclib's own calls: shared by tests/test_web.py (the page's JavaScript run
in Node.js at many settings) and tests/browser (the built page, a few).

``SETTINGS[name]`` lists parameter sets (the figure's ``params``, as its
controls set them); ``check(name, params, data)`` asserts that the arrays
the page computed (``data``) equal speclib's at those parameters.
"""
from __future__ import annotations

import numpy as np

import speclib
from speclib import presets
from speclib.core import drafters, step
from speclib.evidence import sequel
from speclib.formulas import numpy_functions as nf
from speclib.presentation.figures import sequel as fig

RTOL = 1e-9

SETTINGS = {
    "drafter_cost": [{"gamma": 4, "roofline": "aggregate", "hardware": "B200"},
                     {"gamma": 1, "roofline": "per-component", "hardware": "H100-SXM"},
                     {"gamma": 16, "roofline": "per-component", "hardware": "MI355X"},
                     {"gamma": 11, "roofline": "aggregate", "hardware": "GB300"}],
    "drafter_crossover": [{"roofline": "aggregate", "hardware": "B200"},
                          {"roofline": "per-component", "hardware": "H200"}],
    "hybrid_intensity": [{"S": 8192.0, "query_bytes": True, "hardware": "B200"},
                         {"S": 512.0, "query_bytes": False, "hardware": "MI300X"}],
    "kv_state_bytes": [{"full_attention_layers": 10, "kv_format": "bf16"},
                       {"full_attention_layers": 4, "kv_format": "fp8"},
                       {"full_attention_layers": 40, "kv_format": "bf16"}],
    "concurrency_gamma": [{"roofline": "aggregate", "acceptance": "measured"},
                          {"roofline": "per-component", "acceptance": "geometric"}],
    "concurrency_throughput": [{"roofline": "aggregate", "relative": True},
                               {"roofline": "per-component", "relative": False}],
    "throughput_tpot": [{"roofline": "aggregate", "acceptance": "measured"},
                        {"roofline": "per-component", "acceptance": "geometric"}],
    "pricing_ratio": [{"model": "Qwen3.6-35B-A3B", "S": 4096.0, "hardware": "B200"},
                      {"model": "DeepSeek-V4-Flash", "S": 131072.0, "hardware": "H100-SXM"},
                      {"model": "Mixtral-8x7B", "S": 512.0, "hardware": "MI325X"}],
    "pricing_gamma": [{"drafter": "dflash", "acceptance": "measured"},
                      {"drafter": "mtp", "acceptance": "geometric"}],
}


def close(got, want, rtol=RTOL):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=rtol, atol=0)


def _drafter_cost(p, d):
    B = np.array(d["B"])
    assert (B[0], B[-1]) == (1, 4096)
    times = fig.drafter_times(p["gamma"], B, p["hardware"], roofline=p["roofline"])
    close(d["mtp"], times["mtp"])
    close(d["dflash"], times["dflash"])
    close(d["target"], step.step_time(B, 1, sequel.context(), sequel.simulated_model(), p["hardware"],
                                      roofline=p["roofline"]))
    crossing = drafters.crossover_batch(p["gamma"], hardware=p["hardware"], roofline=p["roofline"])
    if np.isfinite(crossing):
        close(d["crossover"], crossing)
    else:
        assert d["crossover"] is None  # JSON has no infinity


def _drafter_crossover(p, d):
    B, gammas = np.array(d["B"]), np.array(d["gammas"])
    times = fig.drafter_times(gammas[:, None], B[None, :], p["hardware"], roofline=p["roofline"])
    close(d["log2_ratio"], np.log2(times["mtp"] / times["dflash"]), rtol=1e-9)
    close(d["closed"], fig.closed_form_crossover(np.array(d["closed_gamma"]), p["hardware"]))
    close(d["exact"], fig.exact_crossover(d["exact_gamma"], p["hardware"], roofline=p["roofline"]))


def _hybrid_intensity(p, d):
    T = np.array(d["T"])
    qb = p["query_bytes"]
    close(d["intensity"]["mla"], speclib.attention_intensity(T, p["S"], fig.MLA_MODEL, query_bytes=qb))
    close(d["intensity"]["gqa"], speclib.attention_intensity(T, p["S"], fig.HYBRID_MODEL, query_bytes=qb))
    close(d["intensity"]["gdn"], fig.linear_intensity(T))
    assert d["ridge"] == presets.hardware(p["hardware"]).ridge("bf16")


def _kv_state_bytes(p, d):
    S = np.array(d["S"])
    arch = fig.hybrid_architecture(full_attention_layers=p["full_attention_layers"], kv_format=p["kv_format"])
    want = fig.sequence_bytes(S, arch)
    for key in ("kv", "state", "total", "all_full"):
        close(d[key], np.broadcast_to(want[key], S.shape))
    crossing = fig.kv_state_crossing(arch)
    assert (d["crossing"] is None) == (crossing is None)
    if crossing is not None:
        close(d["crossing"], crossing)


def _policy_gamma(key, B, roofline, acceptance):
    g, _ = fig.policy(key, B, roofline=roofline, acceptance=acceptance)
    return g


def _concurrency_gamma(p, d):
    B = np.array(d["B"])
    for key in fig.DRAFTER_KEYS:
        np.testing.assert_array_equal(d["gamma_star"][key], _policy_gamma(key, B, p["roofline"], p["acceptance"]))
        np.testing.assert_array_equal(d["simulated_best"][key], sequel.load_grid().drafters[key].best_gamma)


def _per_drafter(d, roofline, acceptance):
    B = np.array(d["B"])
    for key in fig.DRAFTER_KEYS:
        o = d["drafters"][key]
        rows = sequel.load_grid().drafters[key]
        np.testing.assert_array_equal(o["gammas"], rows.gammas)
        close(o["throughput"], fig.fixed_throughput(key, B, rows.gammas, roofline=roofline, acceptance=acceptance))
        g, pol = fig.policy(key, B, roofline=roofline, acceptance=acceptance)
        np.testing.assert_array_equal(o["policy_gamma"], g)
        close(o["policy"], pol)


def _concurrency_throughput(p, d):
    _per_drafter(d, p["roofline"], "measured")


def _throughput_tpot(p, d):
    _per_drafter(d, p["roofline"], p["acceptance"])
    B, C = np.array(d["B"]), sequel.load_grid().concurrency
    for key in fig.DRAFTER_KEYS:
        o, rows = d["drafters"][key], sequel.load_grid().drafters[key]
        close(o["tpot_ms"], fig.tpot_ms(B, np.array(o["throughput"])))
        close(o["policy_tpot_ms"], fig.tpot_ms(B, np.array(o["policy"])))
        close(o["simulated_tpot_ms"], fig.tpot_ms(C, rows.goodput))
        close(o["adaptive_tpot_ms"], fig.tpot_ms(C, rows.adaptive_goodput))
    tau = np.array(d["tau_ms"])
    close(d["contours"], nf.closed_loop_throughput(C[:, None], tau[None, :] / 1e3))


def _pricing_ratio(p, d):
    B, T = np.array(d["B"]), np.array(d["widths"])
    args = (B[None, :], T[:, None], p["S"], p["model"], p["hardware"])
    close(d["ratio"], step.step_time(*args, roofline="per-component") / step.step_time(*args, roofline="aggregate"))


def _pricing_gamma(p, d):
    B = np.array(d["B"])
    shortfall = fig.rule_shortfall(p["drafter"], acceptance=p["acceptance"])
    for rule in fig.ROOFLINES:
        np.testing.assert_array_equal(d["gamma_star"][rule], _policy_gamma(p["drafter"], B, rule, p["acceptance"]))
        np.testing.assert_array_equal(d["grid_gamma"][rule], shortfall[rule][0])
        np.testing.assert_allclose(d["shortfall"][rule], shortfall[rule][1], rtol=RTOL, atol=1e-15)
    np.testing.assert_array_equal(d["simulated_best"], sequel.load_grid().drafters[p["drafter"]].best_gamma)


CHECKS = {
    "drafter_cost": _drafter_cost,
    "drafter_crossover": _drafter_crossover,
    "hybrid_intensity": _hybrid_intensity,
    "kv_state_bytes": _kv_state_bytes,
    "concurrency_gamma": _concurrency_gamma,
    "concurrency_throughput": _concurrency_throughput,
    "throughput_tpot": _throughput_tpot,
    "pricing_ratio": _pricing_ratio,
    "pricing_gamma": _pricing_gamma,
}


def check(name, params, data):
    """Assert the live figure ``name``'s ``data`` at ``params`` is speclib's."""
    CHECKS[name](params, data)


__all__ = ["CHECKS", "RTOL", "SETTINGS", "check"]
