"""The built HTML book in a real browser (headless Chromium via Playwright).

Every page: no console errors or failed requests, nothing loaded from another
host, its maths typeset by MathJax, its images loaded, and under 5 MB with all
its assets. Every live figure: each control moves and redraws the figure, and
the numbers the page computes equal speclib's at sampled settings.
"""
from __future__ import annotations

import re
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import numpy as np
import pytest

import speclib
from speclib.core import attention
from speclib.core import cost
from speclib.core import moe
from speclib.core import speculation
from speclib.presentation.figures.paper import (attention_table, mha_counterpart, moe_what_if, seq_len_from_slider,
                                   v4_attention_what_if)
from speclib.presets import resolve

from .conftest import BASE_PATH, HTML_DIR, PAGE_LIMIT_BYTES, REDRAWS, REPO, WEIGHTS, book_pages

import sequel_live  # tests/sequel_live.py: what the sequel's live figures must compute  # noqa: E402

PAGES = book_pages()
#: Figures the book must show live (issue 7); the others are checked when present.
REQUIRED_LIVE = ("ledger", "optimal_gamma")
#: The chapters on the sequel's figures, with the settings their numbers are checked at (tests/sequel_live.py).
SEQUEL = tuple(sequel_live.SETTINGS)
LIVE = ("expert_tax", "expert_tax_log", "ledger", "ledger_components", "ledger_dense", "optimal_gamma",
        "speedup_curves", "gamma_map", "attention_width", "attention_table", "compressed_attention") + SEQUEL


def pages_with(name: str) -> list:
    pattern = re.compile(rf"\btag_figure-{name}\b")
    return [p for p in PAGES if pattern.search((HTML_DIR / p).read_text(encoding="utf-8"))]


def page_for(name: str) -> str:
    found = pages_with(name)
    if not found:
        if name in REQUIRED_LIVE:
            pytest.fail(f"no page of the book has a cell tagged figure-{name}")
        pytest.skip(f"no page of the book has a cell tagged figure-{name} (yet)")
    return found[0]


# --- every page -------------------------------------------------------------------


@pytest.mark.subpath
@pytest.mark.parametrize("path", PAGES or ["(no built book)"])
def test_page_loads_cleanly_offline_and_light(visit, path):
    if not PAGES:
        pytest.fail(f"no built book at {HTML_DIR}")
    v = visit(path)
    weight = v.bytes_loaded()
    WEIGHTS[path] = (len(v.requests), weight, len(v.external), v.load_seconds)
    assert v.external == [], f"{path} asked other hosts for: {v.external}"
    assert v.console_errors == [], f"{path}: console errors {v.console_errors}"
    assert v.failed == [], f"{path}: failed requests {v.failed}"
    assert weight < PAGE_LIMIT_BYTES, f"{path} loads {weight / 1e6:.2f} MB"

    math = v.page.evaluate("""() => {
        const math = Array.from(document.querySelectorAll('.math'));
        return {
            total: math.length,
            typeset: math.filter(m => m.querySelector('mjx-container') || m.closest('mjx-container')).length,
            errors: document.querySelectorAll('mjx-merror, .MathJax_Error').length,
            raw: math.filter(m => /\\\\\\(|\\\\\\[|\\$/.test(m.textContent) && !m.querySelector('mjx-container'))
                     .map(m => m.textContent.slice(0, 60)),
        };
    }""")
    assert math["typeset"] == math["total"], f"{path}: untypeset maths {math['raw']}"
    assert math["errors"] == 0, f"{path}: {math['errors']} MathJax errors"

    images = v.page.evaluate("""() => Array.from(document.images).map(img => ({
        src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth}))""")
    broken = [img["src"] for img in images if not (img["complete"] and img["width"] > 0)]
    assert broken == [], f"{path}: images that did not load: {broken}"

    # A table wider than the text column hides its last columns behind a scroll bar.
    wide = v.page.evaluate("""() => {
        const text = document.querySelector('article');
        if (!text) return [];
        const article = text.getBoundingClientRect().width;
        return Array.from(text.querySelectorAll('table'))
            .filter(t => t.getBoundingClientRect().width > article + 1)
            .map(t => (t.caption ? t.caption.textContent : t.innerText).slice(0, 60));
    }""")
    assert wide == [], f"{path}: tables wider than the text column: {wide}"

    empty = v.page.evaluate("""() => Array.from(document.querySelectorAll("[class*='tag_figure-']"))
        .filter(c => !c.querySelector('img, svg.speclib-svg, table')).map(c => c.className)""")
    assert empty == [], f"{path}: tagged figure cells that show nothing: {empty}"

    # The live figures found their scripts and constants (what serving the
    # book from another path would break) and each drew its picture.
    if v.page.locator(".speclib-live").count():
        names = live_instances(v.page)
        drawn = v.page.evaluate("""() => window.speclibLive.instances.map(i => ({name: i.name, redraws: i.redraws,
            svg: !!i.element.querySelector('.speclib-figure svg, .speclib-figure table')}))""")
        assert len(names) == v.page.locator(".speclib-live").count()
        assert all(d["redraws"] >= 1 and d["svg"] for d in drawn), f"{path}: live figures not drawn: {drawn}"


@pytest.mark.subpath
def test_the_book_has_pages():
    assert len(PAGES) >= 3, f"only {PAGES} built"


def test_chapters_link_to_binder_colab_and_the_repository(visit):
    """The launch and repository buttons of _config.yml are on a chapter page,
    as links to the chapter's notebook in the repository (nothing is loaded
    from those hosts: test_page_loads_cleanly_offline_and_light)."""
    import yaml

    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    repo = urlsplit(config["repository"]["url"]).path.strip("/")
    branch = config["repository"]["branch"]
    chapter = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))["root"]  # a notebook
    page = visit(f"{chapter}.html", settle=False).page
    links = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    wanted = {
        "binder": f"{config['launch_buttons']['binderhub_url']}/v2/gh/{repo}/{branch}?urlpath=lab/tree/{chapter}.ipynb",
        "colab": f"{config['launch_buttons']['colab_url']}/github/{repo}/blob/{branch}/{chapter}.ipynb",
        "repository": config["repository"]["url"],
    }
    missing = {name: url for name, url in wanted.items() if url not in links}
    assert not missing, f"{chapter}.html lacks the links {missing}"
    assert any(link.startswith(config["repository"]["url"] + "/issues/new") for link in links)


@pytest.mark.subpath
def test_served_under_its_base_path_only(base_url):
    """The book is served under BASE_PATH and nowhere else, so that a page
    reaching outside it (a link from the site's root) fails the page tests,
    as it would on a project site of GitHub Pages."""
    assert urlsplit(base_url).path == BASE_PATH
    with urllib.request.urlopen(base_url + "index.html") as answer:
        assert answer.status == 200
    if BASE_PATH != "/":
        root = base_url[: -len(BASE_PATH)] + "/index.html"
        with pytest.raises(urllib.error.HTTPError) as outside:
            urllib.request.urlopen(root)
        assert outside.value.code == 404


# --- live figures: controls ---------------------------------------------------------

SNAPSHOT = """(i) => {
    const inst = window.speclibLive.instances[i];
    const fig = inst.element.querySelector('.speclib-figure');
    return {html: fig.innerHTML, redraws: inst.redraws, ms: inst.lastRedrawMs,
            data: JSON.stringify(inst.data)};
}"""


def live_instances(page):
    """Names of the page's live figures, in page order, once they are mounted."""
    page.wait_for_function("() => window.speclibLive && window.speclibLive.ready")
    return page.evaluate("() => window.speclibLive.instances.map(i => i.name)")


@pytest.mark.parametrize("name", LIVE)
def test_every_control_moves_and_redraws(visit, name):
    v = visit(page_for(name), settle=False)
    page = v.page
    names = live_instances(page)
    assert name in names
    # From here on the browser has no network at all: the figures need none. (The page's own
    # maths, fonts and the MathJax parts its menu loads later finish loading first: on a busy
    # machine they would otherwise be fetched offline and fail.)
    page.evaluate("""async () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
        await document.fonts.ready;
    }""")
    page.wait_for_load_state("networkidle")
    page.context.set_offline(True)
    # The static PNG stays in the page (the no-JavaScript fallback) but is hidden.
    hidden = page.evaluate("""(name) => Array.from(document.querySelectorAll('.tag_figure-' + name + ' .cell_output'))
        .every(o => getComputedStyle(o).display === 'none')""", name)
    assert hidden
    for index, found in enumerate(names):
        if found != name:
            continue
        box = page.locator(".speclib-live").nth(index)
        box.scroll_into_view_if_needed()
        controls = box.locator("[data-control]")
        assert controls.count() >= 2
        for c in range(controls.count()):
            control = controls.nth(c)
            before = page.evaluate(SNAPSHOT, index)
            kind = control.evaluate("e => e.tagName === 'SELECT' ? 'select' : e.type")
            if kind == "range":
                at_max = control.evaluate("e => parseFloat(e.value) >= parseFloat(e.max)")
                control.focus()
                # A reader's keyboard: several steps so that a change shows even where the curve is flat.
                for _ in range(4):
                    control.press("ArrowLeft" if at_max else "ArrowRight")
            elif kind == "checkbox":
                control.click()
            else:
                options = control.evaluate("e => Array.from(e.options).map(o => o.value)")
                current = control.input_value()
                control.select_option(next(o for o in options if o != current))
            after = page.evaluate(SNAPSHOT, index)
            label = control.get_attribute("data-control")
            assert after["redraws"] > before["redraws"], f"{name}: moving {label} did not redraw"
            assert after["html"] != before["html"], f"{name}: moving {label} left the figure unchanged"
            REDRAWS.setdefault(name, []).append(after["ms"])
    assert v.console_errors == [], v.console_errors


# --- live figures: the numbers are speclib's ----------------------------------------------

SET_AND_READ = """([i, settings]) => {
    const inst = window.speclibLive.instances[i];
    for (const [name, value] of Object.entries(settings)) {
        const input = inst.element.querySelector('[data-control="' + name + '"]');
        if (input.type === 'checkbox') { input.checked = value; input.dispatchEvent(new Event('change')); }
        else if (input.tagName === 'SELECT') { input.value = value; input.dispatchEvent(new Event('change')); }
        else { input.value = String(value); input.dispatchEvent(new Event('input')); }
        if (input.type === 'range' && parseFloat(input.value) !== value) { throw new Error(name + ' did not take ' + value); }
        if (input.tagName === 'SELECT' && input.value !== value) { throw new Error(name + ' did not take ' + value); }
    }
    return {params: inst.params, data: inst.data};
}"""

RTOL = 1e-9


def first_instance(page, name):
    return live_instances(page).index(name)


@pytest.mark.parametrize("name", ["ledger", "ledger_components", "ledger_dense"])
def test_ledger_equals_speclib(visit, name):
    page = visit(page_for(name), settle=False).page
    i = first_instance(page, name)
    for u, c, qb in [(0.5, 0.1, False), (0.0, 0.0, False), (0.25, 0.37, True), (1.0, 0.5, False),
                     (0.625, 0.02, True)]:
        got = page.evaluate(SET_AND_READ, [i, {"u": u, "c_draft": c, "query_bytes": qb}])
        S = seq_len_from_slider(u)
        assert got["params"]["S"] == pytest.approx(S, rel=1e-15)
        B = np.array(got["data"]["B"])
        assert B[0] == 1 and B[-1] == 30_000 and np.all(np.diff(B) > 0)
        model = got["params"]["model"]
        assert model == ("Llama-3-70B" if name == "ledger_dense" else "DeepSeek-V4-Flash")
        want = speclib.marginal_cost(B, S, c, model, query_bytes=qb)
        shares = cost.cost_shares(B, S, model, query_bytes=qb)
        np.testing.assert_allclose(got["data"]["total"], want["total"], rtol=RTOL)
        for key in ("attn_proj", "moe", "attention"):
            np.testing.assert_allclose(got["data"]["slopes"][key], np.broadcast_to(want[key], B.shape), rtol=RTOL)
            np.testing.assert_allclose(got["data"]["shares"][key], shares[key], rtol=RTOL)


def test_optimal_gamma_equals_speclib(visit):
    page = visit(page_for("optimal_gamma"), settle=False).page
    i = first_instance(page, "optimal_gamma")
    for u, alpha, c in [(0.375, 0.75, 0.1), (0.0, 0.01, 0.0), (1.0, 0.99, 0.5), (0.5, 0.9, 0.05), (0.75, 0.6, 0.25)]:
        got = page.evaluate(SET_AND_READ, [i, {"u": u, "alpha": alpha, "c_draft": c}])
        S = seq_len_from_slider(u)
        B = np.array(got["data"]["B"])
        g, best = speclib.optimal_gamma(alpha, B, S, c)
        np.testing.assert_array_equal(got["data"]["gamma_star"], g)
        np.testing.assert_allclose(got["data"]["speedup"], best, rtol=RTOL)
        # The batches beyond it are shaded: what fits in HBM, as speclib.capacity says.
        assert got["data"]["max_batch"] == speclib.core.capacity.max_batch(None, None, S)


def test_speedup_curves_equal_speclib(visit):
    page = visit(page_for("speedup_curves"), settle=False).page
    i = first_instance(page, "speedup_curves")
    for u, alpha, c in [(0.375, 0.75, 0.1), (0.875, 0.95, 0.0), (0.125, 0.3, 0.4)]:
        got = page.evaluate(SET_AND_READ, [i, {"u": u, "alpha": alpha, "c_draft": c}])
        S = seq_len_from_slider(u)
        gammas, batches = np.array(got["data"]["gammas"]), np.array(got["data"]["batches"])
        table = speculation.speedup(alpha, gammas[None, :], batches[:, None], S, c)
        np.testing.assert_allclose(got["data"]["table"], table, rtol=RTOL)
        g, _ = speclib.optimal_gamma(alpha, batches, S, c)
        np.testing.assert_array_equal(got["data"]["gamma_star"], g)


@pytest.mark.parametrize("name", ["expert_tax", "expert_tax_log"])
def test_expert_tax_equals_speclib(visit, name):
    page = visit(page_for(name), settle=False).page
    i = first_instance(page, name)
    for experts, top_k, weights, hw in [(256, 6, "mxfp4", "B200"), (64, 1, "fp8", "H100-SXM"),
                                        (512, 16, "bf16", "MI300X"), (8, 16, "mxfp4", "H200")]:
        got = page.evaluate(SET_AND_READ, [i, {"experts": experts, "top_k": top_k, "weights": weights,
                                               "hardware": hw}])
        # As the notebook widget: top-k is clipped to the number of experts.
        model = moe_what_if(None, experts=experts, top_k=min(top_k, experts), weights=weights)
        B = np.array(got["data"]["B"])
        np.testing.assert_allclose(got["data"]["moe"], moe.ffn_intensity(B, model, hw), rtol=RTOL)
        np.testing.assert_allclose(got["data"]["dense"], moe.dense_equivalent_intensity(B, model, hw), rtol=RTOL)


def test_gamma_map_equals_speclib(visit):
    page = visit(page_for("gamma_map"), settle=False).page
    i = first_instance(page, "gamma_map")
    for alpha, c in [(0.75, 0.1), (0.99, 0.0), (0.4, 0.3)]:
        got = page.evaluate(SET_AND_READ, [i, {"alpha": alpha, "c_draft": c}])
        B, S = np.array(got["data"]["B"]), np.array(got["data"]["S"])
        assert (B[0], B[-1], S[0], S[-1]) == (1, 30_000, 512, 131_072)
        g, _ = speclib.optimal_gamma(alpha, B[None, :], S[:, None], c)
        np.testing.assert_array_equal(got["data"]["gamma_star"], g)
        np.testing.assert_array_equal(got["data"]["max_batch"], speclib.core.capacity.max_batch(None, None, S))


def test_gamma_map_and_figure_3_shade_the_batches_that_cannot_fit(visit):
    for name in ("optimal_gamma", "gamma_map"):
        page = visit(page_for(name), settle=False).page
        i = first_instance(page, name)
        page.evaluate(SET_AND_READ, [i, {"alpha": 0.75, "c_draft": 0.1}])
        hatched = page.evaluate(
            "(i) => window.speclibLive.instances[i].element.querySelectorAll('rect.speclib-memory').length", i)
        assert hatched > 0, name


def test_attention_width_equals_speclib(visit):
    page = visit(page_for("attention_width"), settle=False).page
    i = first_instance(page, "attention_width")
    gqa, _ = resolve("Llama-3-70B", None)
    models = {"mha": mha_counterpart(gqa), "gqa": gqa, "mla": resolve("DeepSeek-V4-Flash", None)[0]}
    for u, qb, hw in [(0.5, True, "B200"), (0.0, False, "H100-SXM"), (1.0, True, "MI300X")]:
        got = page.evaluate(SET_AND_READ, [i, {"u": u, "query_bytes": qb, "hardware": hw}])
        S = seq_len_from_slider(u)
        T = np.array(got["data"]["T"])
        for key, m in models.items():
            np.testing.assert_allclose(got["data"]["intensity"][key],
                                       attention.attention_intensity(T, S, m, query_bytes=qb), rtol=RTOL)
        assert got["data"]["ridge"] == resolve(None, hw)[1].ridge("bf16")


def test_attention_table_equals_speclib(visit):
    page = visit(page_for("attention_table"), settle=False).page
    i = first_instance(page, "attention_table")
    for model, variant, hw, qb in [("DeepSeek-V4-Flash", "mla", "B200", True), ("DeepSeek-V4-Flash", "hca", "H100-SXM", False),
                                   ("DeepSeek-V4-Pro", "csa", "MI300X", True), ("DeepSeek-V4-Flash", "indexer", "B200", True),
                                   ("Llama-3-70B", "mla", "H200", True), ("DeepSeek-V3", "mla", "GB300", False)]:
        got = page.evaluate(SET_AND_READ, [i, {"model": model, "variant": variant, "hardware": hw, "query_bytes": qb}])
        kind = resolve(model, None)[0].attention.kind
        want = attention_table(model, hw, variant="gqa" if kind == "gqa" else variant, query_bytes=qb)
        np.testing.assert_allclose(got["data"]["values"], want.values, rtol=RTOL)
        assert got["data"]["ridge"] == want.ridge
        cells = page.evaluate("(i) => Array.from(window.speclibLive.instances[i].element.querySelectorAll('td'))"
                              ".map(td => td.className === 'compute-bound')", i)
        assert cells == want.compute_bound.ravel().tolist()
        disabled = page.evaluate("(i) => window.speclibLive.instances[i].element"
                                 ".querySelector('[data-control=variant]').disabled", i)
        assert disabled == (kind == "gqa" or model == "DeepSeek-V3")


def test_compressed_attention_equals_speclib(visit):
    page = visit(page_for("compressed_attention"), settle=False).page
    i = first_instance(page, "compressed_attention")
    # The sliders step through lists of values; indices select them.
    for hca, top_k, ratio, qb in [(128, 512, 4, True), (8, 4096, 1, False), (512, 128, 16, True)]:
        settings = page.evaluate("""([i, want]) => {
            const controls = window.speclibLive.instances[i].spec.controls;
            const out = {};
            for (const c of controls) { if (c.kind === 'choice') { out[c.name] = c.options.indexOf(want[c.name]); } }
            return out;
        }""", [i, {"hca_ratio": hca, "csa_top_k": top_k, "csa_ratio": ratio}])
        got = page.evaluate(SET_AND_READ, [i, {**settings, "query_bytes": qb}])
        assert (got["params"]["hca_ratio"], got["params"]["csa_top_k"], got["params"]["csa_ratio"]) == (hca, top_k, ratio)
        model = v4_attention_what_if(None, hca_ratio=hca, csa_top_k=top_k, csa_ratio=ratio)
        S, T = np.array(got["data"]["S"]), np.array(got["data"]["widths"])
        for variant in ("hca", "csa", "indexer"):
            want = attention.attention_intensity(T[:, None], S[None, :], model, variant, query_bytes=qb)
            np.testing.assert_allclose(got["data"]["intensity"][variant], want, rtol=RTOL)


def control_settings(controls, params):
    """The control values that set ``params``: the sequence-length slider
    holds u (S = base * 2**(span u)), a choice slider the option's index."""
    out = {}
    for c in controls:
        if c["param"] not in params:
            continue
        value = params[c["param"]]
        if c.get("map"):
            value = float(np.log2(value / c["map"]["base"]) / c["map"]["span"])
        elif c["kind"] == "choice":
            value = c["options"].index(value)
        out[c["name"]] = value
    return out


@pytest.mark.parametrize("name", SEQUEL)
def test_sequel_figure_equals_speclib(visit, name):
    """Two settings per figure in the page (tests/test_web.py runs every
    setting of tests/sequel_live.py through the same JavaScript in Node)."""
    page = visit(page_for(name), settle=False).page
    i = first_instance(page, name)
    controls = page.evaluate("(i) => window.speclibLive.instances[i].spec.controls", i)
    for params in sequel_live.SETTINGS[name][-2:]:
        got = page.evaluate(SET_AND_READ, [i, control_settings(controls, params)])
        for key, value in params.items():
            assert got["params"][key] == (pytest.approx(value, rel=1e-15) if isinstance(value, float) else value)
        sequel_live.check(name, got["params"], got["data"])


@pytest.mark.subpath
def test_without_javascript_the_static_figures_show(browser, base_url):
    """The PNG each live figure replaces is the page's fallback with JavaScript off."""
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(base_url + page_for("ledger"), wait_until="load")
        assert page.locator(".speclib-live").count() == 0
        shown = page.evaluate("""() => Array.from(document.querySelectorAll('.tag_figure-ledger .cell_output img'))
            .map(img => img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width > 0)""")
        assert shown and all(shown)
    finally:
        context.close()
