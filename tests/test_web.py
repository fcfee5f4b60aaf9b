"""The HTML book's live layer without a browser: the closed forms printed to
JavaScript from speclib's sympy expressions, the generic evaluator and
template filler of speclib_live.js against numpy and Python on every live
figure's recorded graph, and the Sphinx extension that keeps every page off
the network.

The generated JavaScript is run in Node.js (present on the project's machines;
these tests skip without it): the formulas against sympy evaluating the same
expression to 30 digits (an independent route from both the JS printer and
numpy's lambdify), every figure's recorded compute graph against the
definition's numpy evaluation. The browser tests (tests/browser) check the
page end to end.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

import itertools
from pathlib import Path

from exact_values import exact
from speclib.formulas import catalog
from speclib.presentation import sphinx_ext
from speclib.presentation.definition import REGISTRY, Slider, combo_key, fill
from speclib.presentation.web import codegen, offline

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
    # DeepSeek-V4's compressed attention (and as served: the indexer's constants, layers of each kind)
    "c_HCA": (8, 512), "c_CSA": (1, 16), "K_CSA": (128, 4096),
    "m_ci": (1, 512), "m_qi": (0, 1e5), "f_i": (1e3, 1e5), "n_f": (0, 8), "n_w": (0, 8), "n_c": (1, 32),
    "n_h": (0, 32),
    # rolling back linear attention; the all-to-all's latency
    "rho": (0, 1e7), "psi": (0, 1e7), "n_m": (0, 4), "l": (1e-6, 1e-3),
    # the calibrated engine step: kernel and unhidden-FLOP seconds, fixed and per-position seconds
    "t_k": (1e-4, 1e-1), "t_c": (1e-6, 1e-2), "a": (1e-5, 1e-2), "e": (1e-6, 1e-3),
    "t_0": (1e-4, 1e-1),
    # the extra positions' work below peak, and a fixed time scaled by layers
    "chi": (0, 50), "t_x": (1e-6, 1e-2), "a_0": (1e-4, 1e-2), "L": (1, 128), "L_ref": (1, 128),
    # one GPU's share of a split step: its calibrated kernels, its collectives, the prefill's roofline
    "mu": (1, 3), "nu": (0, 4), "t_r": (1e-4, 1e-1), "t_at": (1e-6, 1e-2), "l_c": (1e-6, 1e-3), "h": (1024, 16384),
    "b_a": (1, 2), "Q_p": (1e8, 1e12), "d_n": (64, 256), "d_r": (32, 128), "n_tp": (1, 16), "I": (1, 32768),
    "O": (1, 32768), "P_act": (1e9, 1e12), "P_peak": (1e14, 2e16),
    # one GPU's memory in a deployment: draft slots and states, shares, drafter, weights held whole
    "g": (0, 130), "g_s": (0, 65), "s_c": (0.01, 1), "s_l": (0.01, 1), "rho_m": (0, 1e7), "m_d": (0, 2e4),
    "R_w": (0, 2e10), "W_d": (0, 2e10), "W_g": (1e9, 1e11), "m_g": (1e5, 1e9), "n_p": (1, 1e6),
    # a concurrency above what memory holds: what it holds, each arm's running batch
    "M_h": (0, 5000), "R_0": (1, 5000), "R_gamma": (1, 5000),
    # the layers a token passes through, a grouped GEMM's tile, accept lengths read as a survival curve
    "L_s": (0, 128), "m_t": (1, 256), "A_2": (0.2, 1.9), "s_3": (0.01, 0.9),
    "P_h": (0.1, 20), "X_g": (1, 1e5), "B_r": (1, 5000),
    # attention split over GPUs (GPUs the heads are split over, KV heads), CSA's selections' overlap
    "h_split": (1, 32), "n_kvh": (1, 16), "omega": (0, 1),
}
INTEGER = {"k", "E", "n_s", "gamma", "q", "D", "L_a", "L_l", "d", "L_f", "L_csa", "L_hca", "L_w", "n", "n_f", "n_w",
           "n_c", "n_h", "n_m"}


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


LIVE_JS = Path(codegen.__file__).parent / "static" / "speclib_live.js"


def run_generated_script(expression: str, figures=()) -> object:
    """speclib_model.js, the given figures' scripts and speclib_live.js in
    Node, on a page with no figure cells; then print ``expression`` (which may
    use ``live``, the page's window.speclibLive) as JSON."""
    script = "\n".join([codegen.model_javascript(), *(codegen.figure_javascript(n) for n in figures),
                        LIVE_JS.read_text(encoding="utf-8"), "const live = globalThis.speclibLive;",
                        f"process.stdout.write(JSON.stringify({expression}));"])
    # on stdin: the script is longer than one command-line argument may be
    done = subprocess.run([NODE, "-"], input=script, capture_output=True, text=True, timeout=300, check=True)
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
        written = exact(as_written(formula), formula.args)  # 50 digits in mpmath: tests/exact_values.py
        for args, value in zip(cases[formula.name], got[formula.name]):
            assert value == pytest.approx(written(*args), rel=1e-12, abs=1e-300), (formula.name, args)


@needs_node
def _settings(f, limit=40):
    """Control settings to check: the defaults, each slider at its ends, in
    every combination of the discrete controls (at most ``limit`` of them,
    spread over the list)."""
    sliders = [c for c in f.controls if isinstance(c, Slider)]
    discrete = [c for c in f.controls if c.discrete]
    combos = list(itertools.product(*(c.values() for c in discrete)))
    combos = combos[::max(1, len(combos) // limit)]
    points = [{}] + [{s.name: v} for s in sliders for v in (s.lo, s.hi)]
    for combo in combos:
        for point in points:
            values = {**f.defaults(), **dict(zip((c.name for c in discrete), combo)), **point}
            yield {c.name: values[c.name] for c in f.controls}


def _same(got, expected):
    if isinstance(expected, str) or (isinstance(expected, list) and expected and isinstance(expected[0], str)):
        return got == expected
    e = np.asarray(expected, dtype=float)
    g = np.asarray([np.nan if v is None else v for v in np.ravel(got)] if np.ndim(got) else got, dtype=float)
    return g.size == e.size and np.allclose(g.reshape(e.shape), e, rtol=1e-9, atol=1e-300, equal_nan=True)


@needs_node
@pytest.mark.parametrize("name", codegen.live_names())
def test_the_page_computes_what_numpy_computes(name):
    """Every live figure's recorded graph, evaluated by speclib_live.js in
    Node, against the definition's numpy evaluation at the same controls."""
    f = REGISTRY[name]
    spec = codegen.live_spec(name)
    cases = list(_settings(f))
    got = run_generated_script(
        "(" + json.dumps([[combo_key([c[n] for n in spec["discrete"]]), c] for c in cases]) + ").map(([k, p]) => "
        "live.evaluate(live.graph(SpeclibModel.figures[" + json.dumps(name) + "], k), p))", figures=[name])
    for values, out in zip(cases, got):
        expected = f.data(**{**f.live_params, **values})
        assert set(out) == set(expected) - {"params"}
        for key, value in out.items():
            assert _same(value, expected[key]), (name, values, key)


TEMPLATES = [
    ("{S:,.0f} tokens", {"S": 131072.0}), ("{alpha:.0%}", {"alpha": 0.75}), ("{b:g} bytes", {"b": 0.53}),
    ("{b:g}", {"b": 1.0}), ("{x:.3f}", {"x": 2.0 / 3}), ("{x:,}", {"x": 1234567}), ("{x:.2%}", {"x": 0.12345}),
    ("{x:g}", {"x": 1e-7}), ("{x:g}", {"x": 123456789.0}), ("{x:.3g}", {"x": 0.000123456}),
    ("{model} on {hardware}", {"model": "DeepSeek-V4-Flash", "hardware": "B200"}), ("{n}", {"n": 8.0}),
    ("{r:,.2f} FLOP/byte", {"r": 281.25}), ("{x:,.1f}", {"x": -12345.67}),
]


@needs_node
def test_the_page_fills_templates_as_python_does():
    got = run_generated_script("(" + json.dumps(TEMPLATES) + ").map(([t, v]) => live.fill(t, v, {}))")
    assert got == [fill(t, {"params": {}, **v}) for t, v in TEMPLATES]


@needs_node
def test_an_operation_the_page_does_not_know_is_an_error_not_a_blank():
    with pytest.raises(subprocess.CalledProcessError) as err:
        run_generated_script('live.evaluate({nodes: [["mystery", [], {}]], outputs: {}, arrays: []}, {})')
    assert "unknown operation in a recorded graph: mystery" in err.value.stderr


def test_the_renderer_has_no_figure_of_its_own_and_stays_small():
    text = LIVE_JS.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 700
    for name in REGISTRY:  # no figure is named in the generic renderer
        assert f'"{name}"' not in text and f"'{name}'" not in text and f".{name} " not in text, name


def test_strict_printing_refuses_what_javascript_cannot_compute():
    x = sp.Symbol("x")
    with pytest.raises(Exception):
        codegen.javascript_expression(sp.Function("mystery")(x))
    with pytest.raises(ValueError, match="free symbols"):
        catalog.Formula("bad", x + sp.Symbol("y"), (x,), "y is not an argument")


def test_live_controls_are_the_papers():
    ledger = {c["name"]: c for c in codegen.live_spec("ledger")["controls"]}
    # The paper's slider: S = 512 * 2^(8u), u in [0, 1], in steps of 1/64: 512 ... 131,072 in steps of 2^(1/8).
    s = ledger["S"]
    assert (s["lo"], s["hi"], s["scale"], s["step"], s["value"]) == (512, 131_072, "log2", 1 / 8, 8192)
    assert (ledger["c_draft"]["lo"], ledger["c_draft"]["hi"], ledger["c_draft"]["value"]) == (0, 0.5, 0.1)
    assert ledger["components"]["kind"] == "toggle"
    gamma = {c["name"]: c for c in codegen.live_spec("optimal_gamma")["controls"]}
    assert gamma["S"]["value"] == 4096
    assert (gamma["alpha"]["lo"], gamma["alpha"]["hi"], gamma["alpha"]["value"]) == (0.01, 0.99, 0.75)
    for name in ("ledger", "optimal_gamma"):
        x = codegen.live_spec(name)["panels"][0]["x"]
        assert (x["scale"], x["lo"], x["hi"]) == ("log", 1, 30_000)
    assert codegen.live_spec("ledger")["panels"][0]["y"]["lo"] == 0
    tax = codegen.live_spec("expert_tax")
    assert (tax["panels"][0]["x"]["scale"], tax["panels"][0]["x"]["hi"]) == ("linear", 11_000)
    assert {c["name"]: c["value"] for c in tax["controls"]} == {"experts": 256, "top_k": 6, "weights": "mxfp4",
                                                              "hardware": "B200"}


def test_every_slider_default_sits_on_its_grid():
    for name in codegen.live_names():
        for c in codegen.live_spec(name)["controls"]:
            if c["kind"] == "slider":
                log = c["scale"] == "log2"
                lo, value = (np.log2(c["lo"]), np.log2(c["value"])) if log else (c["lo"], c["value"])
                steps = (value - lo) / c["step"]
                assert c["lo"] <= c["value"] <= c["hi"] and abs(steps - round(steps)) < 1e-9, (name, c["name"])


def test_a_page_carries_only_its_own_figures():
    for name in codegen.live_names():
        # one figure's data, each chip preset's arrays in it (about 5 % more for each four chips added), against
        # the 4.5 MB of every live figure together
        assert len(codegen.figure_javascript(name)) < 700_000, name
    assert "SpeclibModel.figures = " not in codegen.model_javascript().replace("figures: {}", "")


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
