"""The chapters as notebooks in a real client: JupyterLab in headless Chromium.

For every chapter notebook of _toc.yml, as a reader would: open it in
JupyterLab (a server the session starts on a free local port, see
labserver.py; the lab is loaded once and each notebook opened in it, with its
own session and a fresh kernel). A chapter with widgets is then run, Run >
Run All Cells, until every code cell has run: no output is an error (stderr,
a traceback, "Error displaying widget"); every cell whose stored output is a
widget now renders it as controls and a picture, not as a text repr; and
moving one control of each widget (the first slider by keyboard, or the first
menu) changes its picture. Run-All time per notebook and the redraw latency
per widget (from the key press or the menu change to the new picture decoded
in the page) are printed at the end.

A chapter without widgets is not run again here: its kernel side is the same
kernel in the same environment that nbval runs every notebook in (scripts/test.sh,
each output compared with the stored one), so what JupyterLab adds is its front
end, which renders the stored outputs: each code cell that has outputs shows
them, none is an error, and nothing is asked of another host. (Running them
again took 170 s of the browser stage's critical path on two cores.)

SPECLIB_SCREENSHOTS=DIR saves a screenshot of each notebook after Run All (at
its first widget, once moved).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from .conftest import LAB_RUNS, LOCAL_HOSTS, REPO

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SCREENSHOTS = os.environ.get("SPECLIB_SCREENSHOTS")
RUN_ALL_TIMEOUT_MS = 300_000
REDRAW_TIMEOUT_MS = 30_000


def chapter_notebooks() -> list:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [f"{f}.ipynb" for f in files if (REPO / f"{f}.ipynb").is_file()]


def widget_cells(nb: dict) -> dict:
    """Index -> last source line (the widget's expression) of every code cell whose stored output is a widget."""
    return {i: "".join(c["source"]).strip().splitlines()[-1]
            for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "code" and any(WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", []))}


NOTEBOOKS = chapter_notebooks()


# Every output area there is now is stale: the run replaces each of them.
MARK_STALE = """() => {
    document.querySelectorAll('.jp-Notebook .jp-OutputArea-child').forEach(e => e.dataset.speclibStale = '1');
    const started = new Set();
    const prompts = Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt'));
    const observer = new MutationObserver(records => {
        for (const r of records) {
            const prompt = (r.target.nodeType === 1 ? r.target : r.target.parentElement).closest('.jp-InputPrompt');
            if (prompt) { started.add(prompt); }
        }
    });
    prompts.forEach(p => observer.observe(p, {subtree: true, childList: true, characterData: true}));
    window.speclibRun = {prompts, started, observer};
}"""

# Done when every code cell's prompt went through a run ([*]) and shows its
# number, and no output of before the run is left; or when the run stopped
# on an error (the queued cells lose their [*]).
RUN_FINISHED = """() => {
    const run = window.speclibRun;
    const texts = run.prompts.map(p => p.textContent.trim());
    if (texts.some(t => t.includes('*'))) { return false; }
    const errored = document.querySelector('.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
    if (errored) { return true; }
    return run.started.size === run.prompts.length && texts.every(t => /^\\[\\d+\\]:$/.test(t))
        && document.querySelectorAll('.jp-Notebook [data-speclib-stale]').length === 0;
}"""

PROBLEMS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-OutputArea-output'))
    .filter(o => o.dataset.mimeType === 'application/vnd.jupyter.stderr'
                 || /Traceback \\(most recent call last\\)|Error displaying widget/.test(o.textContent))
    .map(o => o.textContent.slice(0, 600))"""

# The picture of a widget is the last view of its box (speclib.widgets: the
# controls' rows, then an Image or, for a table, an HTML view).
PICTURE = """async (root) => {
    const view = root.lastElementChild;
    if (view.tagName === 'IMG') {
        const bytes = await (await fetch(view.src)).arrayBuffer();
        const digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)))
            .map(b => b.toString(16).padStart(2, '0')).join('');
        return {kind: 'image', width: view.naturalWidth, bytes: bytes.byteLength, digest};
    }
    return {kind: view.querySelector('table') ? 'table' : 'html', width: view.clientWidth,
            bytes: view.innerHTML.length, digest: view.innerHTML};
}"""

# From the reader's move (key press, or the menu's input/change event) to the
# new picture in the page (an image decoded, or the table's HTML replaced).
ARM_PROBE = """(root) => {
    const view = root.lastElementChild;
    const probe = {t0: null, t1: null, pending: false};
    const start = () => { if (probe.t0 === null) { probe.t0 = performance.now(); } };
    for (const type of ['keydown', 'input', 'change']) { root.addEventListener(type, start, true); }
    const done = () => { if (probe.t1 === null) { probe.t1 = performance.now(); } observer.disconnect(); };
    const observer = new MutationObserver(() => {
        if (probe.t0 === null || probe.pending) { return; }
        probe.pending = true;
        if (view.tagName === 'IMG') { view.decode().then(done, done); } else { done(); }
    });
    observer.observe(view, {attributes: true, childList: true, subtree: true, characterData: true});
    root.speclibProbe = probe;
}"""


#: A glued value's record (myst-nb's glue with display=False): kept in the notebook for the book, drawn by
#: no front end (JupyterLab leaves its output area empty).
RECORD = "application/papermill.record/"


def shown_output(output: dict) -> bool:
    """Whether a front end shows ``output``: a stream, an error, or data of some type other than a glued record."""
    return output["output_type"] in ("stream", "error") or any(not m.startswith(RECORD) for m in output.get("data", {}))


#: The notebook's cells (by index) that show an output.
SHOWN = ("Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'))"
         ".flatMap((c, i) => c.querySelector('.jp-OutputArea-output') ? [i] : [])")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def move_one_control(root) -> str:
    """Move the widget's first slider one page by keyboard, or pick another
    entry of its first menu; returns what was moved."""
    handles = root.locator(".noUi-handle")
    if handles.count():
        handle = handles.first
        handle.scroll_into_view_if_needed()
        at_max = handle.evaluate("h => parseFloat(h.getAttribute('aria-valuenow')) >= "
                                 "parseFloat(h.getAttribute('aria-valuemax'))")
        label = root.locator(".widget-slider").first.locator(".widget-label").inner_text().strip()
        handle.focus()
        key = "PageDown" if at_max else "PageUp"
        handle.press(key)
        return f"{label} ({key})"
    menus = root.locator("select")
    assert menus.count(), "a widget with neither a slider nor a menu"
    menu = menus.first
    menu.scroll_into_view_if_needed()
    options = menu.evaluate("s => Array.from(s.options).map(o => o.value)")
    current = menu.input_value()
    # by index: a menu of numbers has labels that may be other options' values
    menu.select_option(index=next(i for i, o in enumerate(options) if o != current))
    return menu.evaluate("s => s.closest('.widget-dropdown').querySelector('.widget-label').textContent").strip()


# Close every document of the main area without saving (a run makes a notebook
# "dirty"; closing it would otherwise ask whether to save it), and wait until
# they are gone from the page.
CLOSE_ALL = """async () => {
    const app = window.jupyterapp;
    for (const widget of Array.from(app.shell.widgets('main'))) {
        if (widget.context && widget.context.model) { widget.context.model.dirty = false; }
        widget.dispose();
    }
}"""


@pytest.fixture(scope="module")
def lab(jupyterlab, browser):
    """One JupyterLab page, loaded once in a fresh workspace, in which each test
    opens its notebook (JupyterLab's own "open" command, as a reader's double
    click in the file browser does) and closes it again; requests to other hosts
    are recorded for the test that is running (``lab.external``).

    Loading the whole application again for every notebook (a few seconds
    each on two busy cores) would test nothing more: each notebook still gets
    its own session and a fresh kernel, which the test shuts down."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    external = []
    # Requests to other hosts are recorded, not intercepted: routing JupyterLab's
    # requests through Playwright breaks its session set-up (no kernel starts).
    context.on("request", lambda r: (r.url.startswith(("http:", "https:", "ws:", "wss:"))
                                     and urlsplit(r.url).hostname not in LOCAL_HOSTS and external.append(r.url)))
    page = context.new_page()
    try:
        page.goto(jupyterlab.lab_url(""), wait_until="load")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60_000)
        page.evaluate("() => window.jupyterapp.restored")
        page.external = external
        yield page
    finally:
        context.close()


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_chapter_runs_in_jupyterlab_with_live_widgets(jupyterlab, lab, path):
    nb_file = REPO / path
    before = digest(nb_file)
    nb = json.loads(nb_file.read_text(encoding="utf-8"))
    widgets = widget_cells(nb)
    code_cells = sum(c["cell_type"] == "code" for c in nb["cells"])
    page = lab
    external = page.external  # since the lab was loaded: no test may see one
    try:
        page.evaluate(CLOSE_ALL)
        page.wait_for_function("() => document.querySelectorAll('.jp-Notebook').length === 0", timeout=30_000)
        start = time.perf_counter()
        page.evaluate("p => window.jupyterapp.commands.execute('docmanager:open', {path: p, factory: 'Notebook'})"
                      ".then(() => null)", path)
        page.wait_for_selector(".jp-Notebook .jp-CodeCell .jp-InputPrompt", timeout=60_000)
        deadline = time.monotonic() + 60
        while jupyterlab.kernel_state(path) != "idle":
            assert time.monotonic() < deadline, f"{path}: no idle kernel after 60 s:\n{jupyterlab.log()}"
            time.sleep(0.1)
        kernel_seconds = time.perf_counter() - start
        # JupyterLab attaches the cells to the page progressively.
        page.wait_for_function("n => document.querySelectorAll('.jp-Notebook .jp-Cell').length === n",
                               arg=len(nb["cells"]), timeout=60_000)

        cells = page.locator(".jp-Notebook .jp-Cell")
        if not widgets:  # its stored outputs, as JupyterLab renders them (see the module notes)
            stored = {i for i, c in enumerate(nb["cells"])
                      if c["cell_type"] == "code" and any(map(shown_output, c.get("outputs", [])))}
            page.wait_for_function(f"n => ({SHOWN}).length >= n", arg=len(stored), timeout=60_000)
            shown = set(page.evaluate(f"() => {SHOWN}"))
            assert shown == stored, f"{path}: outputs shown in cells {sorted(shown)}, stored in {sorted(stored)}"
            problems = page.evaluate(PROBLEMS)
            assert problems == [], f"{path}: error output in the opened notebook: {problems}"
            assert external == [], f"JupyterLab asked other hosts for {external}"
            LAB_RUNS[Path(path).stem] = {"cells": len(nb["cells"]), "kernel": kernel_seconds, "run_all": None,
                                         "widgets": []}
            return

        page.evaluate(MARK_STALE)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        item = page.locator(".lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel", has_text="Run All Cells")
        item.first.click()
        start = time.perf_counter()
        page.wait_for_function(RUN_FINISHED, timeout=RUN_ALL_TIMEOUT_MS, polling=100)
        run_all = time.perf_counter() - start

        problems = page.evaluate(PROBLEMS)
        assert problems == [], f"{path}: error output after Run All: {problems}"
        prompts = page.evaluate("() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt'))"
                                ".map(p => p.textContent.trim())")
        assert prompts == [f"[{n}]:" for n in range(1, code_cells + 1)], f"{path}: cells not run in order: {prompts}"

        rendered = {i for i in range(cells.count())
                    if cells.nth(i).locator(".jp-OutputArea-output .jupyter-widgets.widget-vbox").count()}
        assert rendered == set(widgets), (f"{path}: widgets rendered in cells {sorted(rendered)}, "
                                          f"the notebook's widget cells are {sorted(widgets)}")
        moved = []
        for index, source in widgets.items():
            root = cells.nth(index).locator(".jp-OutputArea-output .jupyter-widgets.widget-vbox").first
            root.scroll_into_view_if_needed()
            controls = root.locator(".widget-slider, .widget-dropdown, .widget-checkbox").count()
            assert controls >= 1, f"{path} [{source}]: a widget without controls"
            picture = root.evaluate(PICTURE)
            assert picture["kind"] in ("image", "table") and picture["width"] > 0, f"{source}: no picture {picture}"
            root.evaluate(ARM_PROBE)
            control = move_one_control(root)
            root.evaluate("r => new Promise((ok, fail) => { const t = Date.now(); (function wait() {"
                          " if (r.speclibProbe.t1 !== null) { ok(); } else if (Date.now() - t > %d) {"
                          " fail(new Error('no new picture')); } else { setTimeout(wait, 10); } })(); })"
                          % REDRAW_TIMEOUT_MS)
            probe = root.evaluate("r => r.speclibProbe")
            after = root.evaluate(PICTURE)
            assert after["digest"] != picture["digest"], f"{path} [{source}]: moving {control} left the picture as it was"
            assert after["width"] > 0
            moved.append((source, control, probe["t1"] - probe["t0"]))
        assert page.evaluate(PROBLEMS) == [], f"{path}: error output after moving the widgets"
        if SCREENSHOTS:  # the first widget after its move, or the end of the notebook
            if widgets:
                cells.nth(next(iter(widgets))).locator(".jupyter-widgets.widget-vbox").first.scroll_into_view_if_needed()
                page.wait_for_timeout(500)  # cells off screen are laid out only once scrolled to
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(SCREENSHOTS) / f"{Path(path).stem}-run-all.png"))
        assert external == [], f"JupyterLab asked other hosts for {external}"
        LAB_RUNS[Path(path).stem] = {"cells": len(nb["cells"]), "kernel": kernel_seconds, "run_all": run_all,
                                     "widgets": moved}
    finally:
        page.evaluate(CLOSE_ALL)
        jupyterlab.shut_down_sessions()
        assert digest(nb_file) == before, f"{path} was changed on disk by the test"
