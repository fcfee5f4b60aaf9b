"""The HTML book's live layer without a browser: the JavaScript printed from
speclib's sympy expressions, the constants and controls it is given, and the
Sphinx extension that keeps every page off the network.

The generated JavaScript is run in Node.js (present on the project's machines;
these tests skip without it) and checked against sympy evaluating the same
expression to 30 digits, an independent route from both the JS printer and
numpy's lambdify. The browser tests (tests/browser) check the page end to end.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from speclib import sphinx_ext
from speclib.formulas import catalog
from speclib.presentation.web import codegen, offline
from speclib.presentation.web.live_figures import build_live_figures

NODE = shutil.which("node") or shutil.which("nodejs")
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is needed to run the generated JavaScript")

#: Argument ranges by symbol name, wide enough to reach both roofline branches.
RANGES = {
    "t": (1, 40_000), "B": (1, 40_000), "q": (1, 65), "T": (1, 256), "S": (512, 131_072),
    "W": (1e6, 2e8), "W_E": (1e6, 5e7), "b_w": (0.5, 2), "b": (0.5, 2), "R": (100, 2500),
    "k": (1, 16), "E": (32, 512), "n_s": (0, 2), "m_c": (100, 1000), "m_q": (0, 1e5), "f": (1e4, 3e5),
    "alpha": (0.01, 0.99), "gamma": (0, 64), "N": (1, 65), "C_0": (1e6, 1e10), "C_v": (1e6, 1e11), "c": (0, 0.5),
    # the whole step, the drafters and the sequel's figures
    "F": (1e6, 1e18), "Q": (1e6, 1e12), "P": (1e14, 2e16), "M": (1e12, 1e13), "P_d": (1e8, 1e10),
    "b_d": (0.5, 2), "b_e": (0.5, 2), "w": (1e6, 2e9), "A": (0, 512), "L_a": (0, 100), "L_l": (0, 100),
    "sigma": (1e5, 1e7), "phi": (0, 1e7), "t_pass": (1e-5, 1e-1), "P_MTP": (1e8, 1e9), "w_MTP": (1e6, 1e7),
    "P_DF": (1e8, 2e9), "D": (1, 32), "C_gamma": (1e-4, 1e-1), "n_k": (1, 64), "n_v": (1, 64), "d_k": (64, 256),
    "d_v": (64, 256), "K_conv": (2, 8), "b_s": (1, 4), "n_kv": (1, 16), "d_h": (64, 256), "b_kv": (1, 2),
    "d": (1, 16), "X": (1e2, 1e6), "tau": (1e-4, 1e-1),
    # capacity: layer counts, cache bytes and ratios, HBM and weights
    "L_f": (0, 128), "L_csa": (0, 64), "c_csa": (1, 16), "m_i": (1, 512),
    "L_hca": (0, 64), "c_hca": (8, 256), "L_w": (0, 128), "W_win": (1, 4096), "C": (8e10, 3e11), "r": (0.01, 0.5),
    "n": (1, 64), "m": (1e5, 1e9),
}
INTEGER = {"k", "E", "n_s", "gamma", "q", "D", "L_a", "L_l", "d", "L_f", "L_csa", "L_hca", "L_w", "n"}


def sample_arguments(formula, rng, n):
    rows = []
    for _ in range(n):
        row = []
        for symbol in formula.args:
            lo, hi = RANGES[str(symbol)]
            value = float(rng.integers(lo, hi + 1)) if str(symbol) in INTEGER else float(np.exp(rng.uniform(np.log(max(lo, 1e-3)), np.log(hi))))
            row.append(value)
        rows.append(row)
    return rows


def as_written(formula):
    """The closed form as speclib states it (the printed one may be its
    floating-point-friendly rewrite, with expm1/log1p)."""
    return formula.expr.replace(expm1, lambda x: sp.exp(x) - 1).replace(log1p, lambda x: sp.log(1 + x))


def run_generated_script(expression: str) -> object:
    """Load speclib_model.js into Node and print ``expression`` as JSON."""
    script = codegen.model_javascript() + f"\nprocess.stdout.write(JSON.stringify({expression}));\n"
    done = subprocess.run([NODE, "-"], input=script, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


@needs_node
def test_generated_formulas_equal_sympy_at_sampled_points():
    rng = np.random.default_rng(20260608)
    cases = {f.name: sample_arguments(f, rng, 5) for f in codegen.formulas()}
    got = run_generated_script(
        "Object.fromEntries(Object.entries(" + json.dumps(cases) + ").map(([name, rows]) => "
        "[name, rows.map(r => SpeclibModel.formulas[name](...r))]))"
    )
    for formula in codegen.formulas():
        for args, value in zip(cases[formula.name], got[formula.name]):
            exact = as_written(formula).subs({s: sp.Float(a, 30) for s, a in zip(formula.args, args)}).evalf(30)
            assert value == pytest.approx(float(exact), rel=1e-12, abs=1e-300), (formula.name, args)


@needs_node
def test_generated_script_exposes_constants_and_figures():
    got = run_generated_script("{c: SpeclibModel.constants, f: Object.keys(SpeclibModel.figures).sort()}")
    assert got["c"] == json.loads(json.dumps(codegen.model_constants()))
    assert got["f"] == sorted(build_live_figures())


@needs_node
@pytest.mark.parametrize("model", ["DeepSeek-V4-Flash", "Llama-3-70B", "every expert active"])
def test_bound_constants_reproduce_the_cost_model(model):
    """The generated formulas with the emitted constants, bound as speclib_live.js
    binds them, give speclib's CostModel costs and slopes (a dense FFN and a MoE
    with k = E are priced by the GEMM formula)."""
    from speclib import cost
    from speclib.presentation.figures.paper import moe_what_if

    m = moe_what_if(None, experts=8, top_k=8) if model == "every expert active" else model
    c = codegen.cost_constants(m)
    t = [1.0, 3.0, 40.0, 700.0, 12_000.0]
    S, q = 8192.0, 2.0
    got = run_generated_script(
        f"(() => {{ const F = SpeclibModel.formulas, c = {json.dumps(c)}, t = {json.dumps(t)};"
        "const bind = (f, e) => (...x) => f(...x, ...e.values);"
        "const ffn = c.ffn.formula === 'moe' ? [F.moe_cost, F.moe_slope] : [F.gemm_cost, F.gemm_slope];"
        "const at = (f, e) => t.map(x => bind(f, e)(x));"
        "return {proj: at(F.gemm_cost, c.proj), proj_slope: at(F.gemm_slope, c.proj),"
        " ffn: at(ffn[0], c.ffn), ffn_slope: at(ffn[1], c.ffn),"
        f" attn: t.map(b => bind(F.attn_cost, c.attn_with_query)(b, {q}, {S})),"
        f" attn_slope: t.map(b => bind(F.attn_slope, c.attn)(b, {q}, {S}))}}; }})()"
    )
    cm, cq = cost.cost_model(m), cost.cost_model(m, query_bytes=True)
    tt = np.array(t)
    np.testing.assert_allclose(got["proj"], cm.proj(tt), rtol=1e-12)
    np.testing.assert_allclose(got["proj_slope"], cm.proj_slope(tt), rtol=1e-12)
    np.testing.assert_allclose(got["ffn"], cm.ffn(tt), rtol=1e-12)
    np.testing.assert_allclose(got["ffn_slope"], np.broadcast_to(cm.ffn_slope(tt), tt.shape), rtol=1e-12)
    np.testing.assert_allclose(got["attn"], cq.attention(tt, q, S), rtol=1e-12)
    np.testing.assert_allclose(got["attn_slope"], np.broadcast_to(cm.attention_slope(tt, q, S), tt.shape), rtol=1e-12)


def test_constants_are_the_papers_deepseek_v4_flash_on_b200():
    c = codegen.model_constants()
    proj = dict(zip(c["proj"]["names"], c["proj"]["values"]))
    assert proj["W"] == pytest.approx(107e6, rel=0.01)  # MODEL.md: W_attn ~ 107e6 params
    assert (proj["b_w"], proj["R"]) == (1.0, 562.5)  # fp8 weights, fp8 ridge 4.5P / 8T
    ffn = dict(zip(c["ffn"]["names"], c["ffn"]["values"]))
    assert ffn == {"k": 6, "E": 256, "n_s": 1, "W_E": 3 * 4096 * 2048, "b": 0.53, "R": 1125.0}
    attn = dict(zip(c["attn"]["names"], c["attn"]["values"]))
    # The ledger leaves the query bytes out, as the paper's chart does; its toggle counts them.
    assert attn == {"m_c": 576, "m_q": 0.0, "f": 139_264, "R": 281.25}
    assert dict(zip(c["attn_with_query"]["names"], c["attn_with_query"]["values"]))["m_q"] == 73_728
    assert c["expert_ffn"]["formats"]["mxfp4"] == {"b": 0.53, "precision": "fp4"}
    assert c["ridges"]["B200"] == {"fp4": 1125.0, "fp8": 562.5, "bf16": 281.25}
    assert c["attention_models"]["mla"]["values"] == [576, 73_728, 139_264]


def test_constants_name_the_formula_arguments_they_fill():
    c = codegen.model_constants()
    signatures = {f.name: [str(a) for a in f.args] for f in codegen.formulas()}
    assert signatures["gemm_cost"][1:] == c["proj"]["names"]
    assert signatures["moe_cost"][1:] == c["ffn"]["names"]
    assert signatures["attn_cost"][3:] == c["attn"]["names"]


def test_a_dense_model_binds_the_gemm_formula_and_has_no_expert_tax():
    c = codegen.model_constants("Llama-3-70B")
    assert c["ffn"]["formula"] == "gemm" and "expert_ffn" not in c
    assert not {"expert_tax", "expert_tax_log"} & set(codegen.live_figures(c))


def test_strict_printing_refuses_what_javascript_cannot_compute():
    x = sp.Symbol("x")
    with pytest.raises(Exception):
        codegen.javascript_expression(sp.Function("mystery")(x))
    with pytest.raises(ValueError, match="free symbols"):
        catalog.Formula("bad", x + sp.Symbol("y"), (x,), "y is not an argument")


def seq_len(control, u):
    return control["map"]["base"] * 2 ** (control["map"]["span"] * u)


def test_live_controls_are_the_papers():
    figures = codegen.live_figures(codegen.model_constants())
    ledger = {c["name"]: c for c in figures["ledger"]["controls"]}
    # MODEL.md: S = 512 * 2^(8u), u in [0, 1] (512 ... 131,072, default ~8,192).
    u = ledger["u"]
    assert (u["min"], u["max"]) == (0, 1)
    assert [seq_len(u, v) for v in (0, 0.5, 1)] == [512, 8192, 131_072]
    assert seq_len(u, u["value"]) == 8192
    assert (ledger["c_draft"]["min"], ledger["c_draft"]["max"], ledger["c_draft"]["value"]) == (0, 0.5, 0.1)
    assert ledger["components"]["kind"] == "checkbox"
    gamma = {c["name"]: c for c in figures["optimal_gamma"]["controls"]}
    assert seq_len(gamma["u"], gamma["u"]["value"]) == 4096
    assert (gamma["alpha"]["min"], gamma["alpha"]["max"], gamma["alpha"]["value"]) == (0.01, 0.99, 0.75)
    assert gamma["c_draft"]["value"] == 0.1
    for name in ("ledger", "optimal_gamma"):
        x = figures[name]["x"]
        assert (x["scale"], x["min"], x["max"]) == ("log", 1, 30_000)
    assert (figures["ledger"]["y"]["min"], figures["ledger"]["y"]["max"]) == (0, 1.3)
    tax = figures["expert_tax"]
    assert (tax["x"]["scale"], tax["x"]["max"], tax["y"]["max"]) == ("linear", 11_000, 1200)
    assert {c["name"]: c["value"] for c in tax["controls"]} == {"experts": 256, "top_k": 6, "weights": "mxfp4",
                                                              "hardware": "B200"}
    assert all(c["value"] is not None for spec in figures.values() for c in spec["controls"])


def test_every_range_default_sits_on_its_slider_grid():
    for name, spec in codegen.live_figures(codegen.model_constants()).items():
        for c in spec["controls"]:
            if c["kind"] == "range" and c["value"] is not None:
                steps = (c["value"] - c["min"]) / c["step"]
                assert c["min"] <= c["value"] <= c["max"] and abs(steps - round(steps)) < 1e-9, (name, c["name"])


# --- the Sphinx extension: nothing from another host -----------------------------------


class _Config(dict):
    """Enough of sphinx.config.Config: attribute access and ``in``."""

    __getattr__ = dict.__getitem__

    def __setattr__(self, key, value):
        self[key] = value


def fake_config(**values):
    return _Config({"html_context": {}, "html_favicon": None, "nb_ipywidgets_js": {"https://cdn/x.js": {}}, **values})


@pytest.mark.parametrize("cdn", [
    "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js",
    "//cdn.example.org/mathjax.js",
])
def test_remote_mathjax_is_replaced_by_the_local_copy(cdn):
    config = fake_config(mathjax_path=cdn)
    sphinx_ext._configure(None, config)
    assert config.mathjax_path == "mathjax/tex-mml-chtml.js"
    assert config.nb_ipywidgets_js == {}
    assert config.html_context["default_mode"] == "auto"
    assert config.html_favicon.endswith("favicon.svg")


def test_a_local_mathjax_path_and_a_chosen_theme_mode_are_kept():
    config = fake_config(mathjax_path="my/mathjax.js", html_context={"default_mode": "dark"})
    sphinx_ext._configure(None, config)
    assert config.mathjax_path == "my/mathjax.js"
    assert config.html_context["default_mode"] == "dark"


def test_thebe_and_widget_state_are_dropped_from_pages():
    from sphinx.builders.html._assets import _CascadingStyleSheet, _JavaScript

    kept = [_JavaScript("doctools.js"), _JavaScript("mathjax/tex-mml-chtml.js", defer="defer")]
    dead = [
        _JavaScript(None, body='const THEBE_JS_URL = "https://unpkg.com/thebe"'),
        _JavaScript("sphinx-thebe.js", **{"async": "async"}),
        _JavaScript(None, type=sphinx_ext.WIDGET_STATE_TYPE, body="{}"),
    ]
    context = {"script_files": dead[:1] + kept + dead[1:], "css_files": [_CascadingStyleSheet("sphinx-thebe.css")]}
    sphinx_ext._drop_dead_assets(context, keep_thebe=False)
    assert context["script_files"] == kept and context["css_files"] == []


def test_mathjax_copy_has_its_entry_fonts_and_lazy_parts(tmp_path):
    copied = offline.copy_mathjax(tmp_path)
    assert copied > 10
    assert (tmp_path / offline.MATHJAX_ENTRY).is_file()
    assert (tmp_path / "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()
    assert (tmp_path / "a11y/assistive-mml.js").is_file()  # loaded by the menu's default settings
    assert (tmp_path / "input/tex/extensions/ams.js").is_file()
    assert offline.copy_mathjax(tmp_path) == 0  # a rebuild copies nothing again
    size = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert size < 15e6


# --- the sequel's live figures: the page's JavaScript in Node, against speclib ----------------

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import sequel_live  # noqa: E402

LIVE_JS = Path(codegen.__file__).parent / "static" / "speclib_live.js"


def run_live_script(expression: str) -> object:
    """speclib_model.js and speclib_live.js in Node with a page that has no
    figures, then print ``expression`` (which may use ``live``, the page's
    window.speclibLive) as JSON."""
    stub = ("globalThis.window = globalThis; globalThis.document = {readyState: 'complete', "
            "querySelectorAll: () => [], addEventListener: () => {}};\n")
    script = (stub + codegen.model_javascript() + "\n" + LIVE_JS.read_text(encoding="utf-8")
              + f"\nconst live = window.speclibLive;\nprocess.stdout.write(JSON.stringify({expression}));\n")
    # on stdin: the script is longer than one command-line argument may be
    done = subprocess.run([NODE, "-"], input=script, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


@needs_node
def test_sequel_live_figures_compute_speclibs_numbers():
    figures = codegen.live_figures(codegen.model_constants())
    cases = [(name, p) for name, settings in sequel_live.SETTINGS.items() for p in settings]
    got = run_live_script(
        "(" + json.dumps([[n, p, figures[n]] for n, p in cases]) + ").map(([n, p, spec]) => live.compute[n](p, spec))"
    )
    assert set(sequel_live.SETTINGS) == set(codegen.sequel_figure_names())
    for (name, params), data in zip(cases, got):
        sequel_live.check(name, params, data)


def test_sequel_constants_are_the_models():
    from speclib import presets
    from speclib.evidence import sequel
    from speclib.presentation.figures import sequel as fig

    c = codegen.model_constants()["sequel"]
    assert c["context"] == sequel.context() == 512.5
    target = c["architectures"]["target"]
    arch = sequel.simulated_model().step_architecture()
    assert target["dense_params"] == arch.dense_params and target["linear_layers"] == 30
    assert c["architectures"]["dflash"]["dense_params"] == 982_515_712  # FOLLOWUP: P_DF
    assert c["drafters"]["dflash"]["positions"] == 16 and c["drafters"]["mtp"]["positions"] == 1
    # the DFlash curve is padded to its block with a never-surviving 16th position
    assert len(c["drafters"]["dflash"]["survival"]) == 16 and c["drafters"]["dflash"]["survival"][-1] == 0
    assert c["drafter_order"] == list(fig.DRAFTER_KEYS)
    assert c["grid"]["drafters"]["mtp"]["goodput"][0][0] == pytest.approx(1394, abs=0.5)  # FOLLOWUP: no-spec, C = 1
    cross = c["crossover"]["B200"]
    assert cross["names"] == [str(a) for a in catalog.FORMULAS["drafter_crossover_batch"].args][1:]
    assert cross["values"] == list(fig.crossover_constants("B200").values())
    b200 = c["hardware"]["B200"]
    assert b200 == {"peak": {"fp4": 9e15, "fp8": 4.5e15, "bf16": 2.25e15}, "bandwidth": 8e12}
    assert set(c["architectures"]) >= set(presets.model_names())
    assert c["hybrid"]["gdn"]["names"] == ["n_k", "n_v", "d_k", "d_v", "K_conv", "b_s"]


def test_sequel_live_controls_open_on_the_static_figures_defaults():
    from speclib.presentation.figures import sequel as fig

    figures = codegen.live_figures(codegen.model_constants())
    for name in codegen.sequel_figure_names():
        cls, _ = fig.FIGURES[name]
        spec = figures[name]
        assert len(spec["controls"]) >= 2, name
        for control in spec["controls"]:
            value = control["value"]
            if control.get("map"):  # the sequence-length slider
                value = seq_len(control, value)
            default = cls.defaults.get(control["param"])
            if default is not None:
                assert value == default, (name, control["param"])
