"""The book's live figures in a real browser (headless Chromium via Playwright).

Every live figure: each control moves and redraws the figure with the browser
offline, and the numbers the page computes at a reader's settings equal
speclib's, computed by numpy from the same definition. (The pages themselves:
test_book_in_browser.py; scripts/browser_test.sh runs the two files at once.)
"""
from __future__ import annotations

import numpy as np
import pytest

from speclib.presentation.definition import REGISTRY, Slider
from speclib.presentation.web import codegen

from .conftest import REDRAWS, live_instances, page_for

#: Every figure the page draws live: a definition with controls, computed in the browser.
LIVE = codegen.live_names()


# --- controls ---------------------------------------------------------

SNAPSHOT = """(i) => {
    const inst = window.speclibLive.instances[i];
    const fig = inst.element.querySelector('.speclib-plots');
    return {html: fig.innerHTML + inst.element.querySelector('.speclib-title').textContent, redraws: inst.redraws,
            ms: inst.lastRedrawMs, data: JSON.stringify(inst.data)};
}"""


def _every_control_moves_and_redraws(v, name):
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
    offline_from = len(v.failed)  # what fails from here on, see _offline_artefacts
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
                # by index: a menu of numbers (1, 2, 4, 8) has labels that are other options' values
                control.select_option(index=next(i for i, o in enumerate(options) if o != current))
            after = page.evaluate(SNAPSHOT, index)
            label = control.get_attribute("data-control")
            assert after["redraws"] > before["redraws"], f"{name}: moving {label} did not redraw"
            assert after["html"] != before["html"], f"{name}: moving {label} left the figure unchanged"
            REDRAWS.setdefault(name, []).append(after["ms"])
    return offline_from


# --- the numbers are speclib's ----------------------------------------------

SET_AND_READ = """([i, settings]) => {
    const inst = window.speclibLive.instances[i];
    for (const [name, value] of Object.entries(settings)) {
        const input = inst.element.querySelector('[data-control="' + name + '"]');
        if (input.type === 'checkbox') { input.checked = value; input.dispatchEvent(new Event('change')); }
        else if (input.tagName === 'SELECT') { input.value = String(value); input.dispatchEvent(new Event('change')); }
        else { input.value = String(value); input.dispatchEvent(new Event('input')); }
    }
    return {params: inst.params, data: inst.data};
}"""

RTOL = 1e-9


def first_instance(page, name):
    return live_instances(page).index(name)


def _settings(f):
    """The definition's settings to check in the page: each slider at its ends,
    then each menu at another option, then every toggle flipped."""
    out = []
    for c in f.controls:
        if isinstance(c, Slider):
            out += [{c.name: c.lo}, {c.name: c.hi}]
        elif hasattr(c, "options"):
            out.append({c.name: next(v for v in c.values() if v != c.value)})
        else:
            out.append({c.name: not c.value})
    return out


def _inputs(f, values):
    """What the page's inputs hold for ``values``: a log2 slider its exponent,
    a menu the option's index."""
    out = {}
    for c in f.controls:
        if c.name not in values:
            continue
        v = values[c.name]
        if isinstance(c, Slider):
            out[c.name] = float(np.log2(v)) if c.scale == "log2" else v
        elif hasattr(c, "options"):
            out[c.name] = c.values().index(v)
        else:
            out[c.name] = bool(v)
    return out


def _same(got, expected):
    if isinstance(expected, str) or (isinstance(expected, list) and expected and isinstance(expected[0], str)):
        return got == expected
    e = np.asarray(expected, dtype=float)
    g = np.asarray(got, dtype=float) if np.ndim(got) == 0 else np.asarray(
        [np.nan if v is None else v for v in np.ravel(np.asarray(got, dtype=object))], dtype=float)
    return g.size == e.size and np.allclose(g.reshape(e.shape), e, rtol=RTOL, equal_nan=True)


def _the_page_computes_speclibs_numbers(page, name):
    """The page's numbers, after a reader's settings, against the definition
    evaluated by numpy in Python at the parameters the page reports."""
    i = first_instance(page, name)
    f = REGISTRY[name]
    for values in _settings(f):
        got = page.evaluate(SET_AND_READ, [i, _inputs(f, values)])
        for key, value in values.items():
            assert got["params"][key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value)
        expected = f.data(**{**f.live_params, **{c.name: got["params"][c.name] for c in f.controls}})
        for key, value in got["data"].items():
            assert _same(value, expected[key]), (name, values, key)


#: The live figures that hatch the batches memory cannot hold (figure 3 of the post and the gamma map).
HATCHED = ("optimal_gamma", "gamma_map")


def test_the_hatched_figures_are_live():
    assert set(HATCHED) <= set(LIVE)


@pytest.mark.parametrize("name", LIVE)
def test_a_live_figure_redraws_on_every_control_and_computes_speclibs_numbers(visit, name):
    """One load of the figure's page for all its checks (a page load is most of each check's time): a figure
    of :data:`HATCHED` hatches the batches that cannot fit; each control moves and redraws the figure with
    the browser offline; then the page's numbers at a reader's settings are speclib's; and the page logged
    no error."""
    v = visit(page_for(name), settle=False)
    if name in HATCHED:  # at the defaults, as the page opens
        i = first_instance(v.page, name)
        hatched = v.page.evaluate(
            "(i) => window.speclibLive.instances[i].element.querySelectorAll('rect[fill^=\"url(#\"]').length", i)
        assert hatched > 0, name
    offline_from = _every_control_moves_and_redraws(v, name)
    _the_page_computes_speclibs_numbers(v.page, name)
    assert _offline_artefacts(v, offline_from) == [], v.console_errors


#: What the page's MathJax may still fetch once the browser is offline: a component or a font it loads
#: lazily, after its first typesetting (on a busy machine, after the network went idle).
MATHJAX = "/_static/mathjax/"
OFFLINE = "Failed to load resource: net::ERR_INTERNET_DISCONNECTED"


def _offline_artefacts(v, offline_from: int) -> list:
    """The page's console errors, less one "failed to load" for each of MathJax's own files that failed
    only because the test took the network away: a figure's redraw that needed the network would fail a
    request of its own, and stay in the list."""
    late = v.failed[offline_from:]
    ours = sum(1 for f in late if MATHJAX in f and "ERR_INTERNET_DISCONNECTED" in f)
    errors = list(v.console_errors)
    for _ in range(min(ours, errors.count(OFFLINE))):
        errors.remove(OFFLINE)
    return errors
