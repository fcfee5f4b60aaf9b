"""The built HTML book in a real browser (headless Chromium via Playwright).

Every page: no console errors or failed requests, nothing loaded from another
host, its maths typeset by MathJax, its images loaded, and under 5 MB with all
its assets; its text read at a desktop's and a phone's width, nothing wider
than the text column. (The live figures' controls and numbers:
test_live_figures.py.)
"""
from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from . import test_phone as _phone
from .conftest import BASE_PATH, HTML_DIR, PAGE_LIMIT_BYTES, REPO, WEIGHTS, book_pages, live_instances, page_for

PAGES = book_pages()


# --- every page -------------------------------------------------------------------


#: A page's text as a reader meets it (see test_page_loads_cleanly_offline_and_light).
READING = r"""() => {
    const column = document.querySelector('article');
    const out = {cut: [], dollars: [], unpadded: [], ticks: []};
    if (!column) return out;
    for (const pre of column.querySelectorAll('.cell_output pre, .output pre')) {
        if (pre.scrollWidth > pre.clientWidth + 1) {
            const line = pre.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
            out.cut.push(`${line.slice(0, 60)} (${pre.scrollWidth} px in ${pre.clientWidth})`);
        }
    }
    const walker = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.parentElement.closest('pre, code, mjx-container, script, style, .highlight, .math')) continue;
        if (/\$|\\[A-Za-z]+/.test(n.textContent)) out.dollars.push(n.textContent.trim().slice(0, 60));
    }
    for (const cell of column.querySelectorAll('td, th')) {
        const s = getComputedStyle(cell);
        if (cell.textContent.trim() && parseFloat(s.paddingLeft) + parseFloat(s.paddingRight) < 4) {
            out.unpadded.push(cell.closest('table').innerText.slice(0, 40));
            break;
        }
    }
    for (const svg of column.querySelectorAll('svg.speclib-svg')) {  // a live figure's x tick labels
        const boxes = Array.from(svg.querySelectorAll('.speclib-grid text[text-anchor="middle"]'))
            .map(t => ({text: t.textContent, box: t.getBBox()})).filter(t => t.box.width > 0)
            .sort((a, b) => a.box.x - b.box.x);
        for (let i = 1; i < boxes.length; i++) {
            const a = boxes[i - 1], b = boxes[i];
            if (Math.abs(a.box.y - b.box.y) < 1 && b.box.x < a.box.x + a.box.width + 2) {
                out.ticks.push(`${a.text} ${b.text}`);
            }
        }
    }
    return out;
}"""


@pytest.mark.subpath
@pytest.mark.parametrize("path", PAGES or ["(no built book)"])
def test_page_loads_cleanly_offline_and_light(visit, path, request):
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


    # The page as test_nothing_is_wider_than_the_text_column loads it at this width
    # (a fresh context, settled, then its equations fitted): measured here, asserted there.
    if any(item.originalname == "test_nothing_is_wider_than_the_text_column" for item in request.session.items):
        v.page.wait_for_timeout(EQUATIONS_FITTED_MS)
        OVERFLOWS[(BASE_PATH, path, DESKTOP)] = v.page.evaluate(OVERFLOW)

    empty = v.page.evaluate("""() => Array.from(document.querySelectorAll("[class*='tag_figure-']"))
        .filter(c => !c.querySelector('img, svg.speclib-svg, table')).map(c => c.className)""")
    assert empty == [], f"{path}: tagged figure cells that show nothing: {empty}"

    # The live figures found their scripts and constants (what serving the
    # book from another path would break) and each drew its picture.
    if v.page.locator(".speclib-live").count():
        names = live_instances(v.page)
        drawn = v.page.evaluate("""() => window.speclibLive.instances.map(i => ({name: i.name, redraws: i.redraws,
            svg: !!i.element.querySelector('.speclib-plots svg, .speclib-plots table')}))""")
        assert len(names) == v.page.locator(".speclib-live").count()
        assert all(d["redraws"] >= 1 and d["svg"] for d in drawn), f"{path}: live figures not drawn: {drawn}"

    # What a reader reads at a desktop's width, the live figures drawn: every text output whole (none cut at the column's
    # edge behind a scroll bar), no "$" of unrendered maths in the prose, a table's cells apart.
    reading = v.page.evaluate(READING)
    assert reading["cut"] == [], f"{path}: text outputs cut at the column's edge: {reading['cut']}"
    assert reading["dollars"] == [], f"{path}: literal $ or LaTeX in the text: {reading['dollars']}"
    assert reading["unpadded"] == [], f"{path}: table cells without padding: {reading['unpadded']}"
    assert reading["ticks"] == [], f"{path}: x tick labels of a live figure that run together: {reading['ticks']}"


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_reads_it_cleanly(visit, path, request):
    """At a phone's width, as at a desktop's (test_page_loads_cleanly_offline_and_light): no literal
    $ or LaTeX, a table's cells apart, a live figure's tick labels apart. A text output may scroll
    sideways in its own box here, its start in view."""
    v = visit(path, width=PHONE)
    # The page as test_nothing_is_wider_than_the_text_column loads it at this width: measured
    # here, asserted there (one page load for both).
    if any(item.originalname == "test_nothing_is_wider_than_the_text_column" for item in request.session.items):
        v.page.wait_for_timeout(EQUATIONS_FITTED_MS)
        OVERFLOWS[(BASE_PATH, path, PHONE)] = v.page.evaluate(OVERFLOW)
    if v.page.locator(".speclib-live").count():
        live_instances(v.page)
    reading = v.page.evaluate(READING)
    # ... and as test_phone.py measures it (one page load for both, when those tests run in this session)
    if PHONE == _phone.PHONE[0] and any(item.originalname.startswith("test_phone_") for item in request.session.items):
        _phone.record(v, path)
    assert reading["dollars"] == [], f"{path}: literal $ or LaTeX in the text: {reading['dollars']}"
    assert reading["unpadded"] == [], f"{path}: table cells without padding: {reading['unpadded']}"
    assert reading["ticks"] == [], f"{path}: x tick labels of a live figure that run together: {reading['ticks']}"


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


# --- nothing wider than the text column, on a wide screen or a phone's ---------------------

#: A desktop window and a phone's (an iPhone 12-15's CSS width).
DESKTOP, PHONE = 1280, 390
WIDTHS = (DESKTOP, PHONE)
#: The equations' fitting runs right after MathJax's first typesetting.
EQUATIONS_FITTED_MS = 300
#: (base path, page, width) -> what OVERFLOW found on a page that
#: test_page_loads_cleanly_offline_and_light (at the desktop's width) or
#: test_a_phone_reads_it_cleanly (at the phone's) loaded already: the same page
#: load as a visit here would make, so it is not made twice.
OVERFLOWS: dict = {}

OVERFLOW = """() => {
    const column = document.querySelector('article');
    if (!column) return [];
    const c = column.getBoundingClientRect();
    const what = 'img, svg.speclib-svg, table, mjx-container[display="true"], .speclib-live';
    const out = [];
    for (const el of column.querySelectorAll(what)) {
        const equation = el.matches('mjx-container');
        // What a reader sees of it: the box that scrolls it sideways, if one does; an
        // equation's typeset content otherwise (its container may be narrower than it).
        let seen = equation ? (el.querySelector('mjx-math') || el) : el;
        for (let a = el; a && a !== column; a = a.parentElement) {
            const x = getComputedStyle(a).overflowX;
            if ((x === 'auto' || x === 'scroll') && a.scrollWidth > a.clientWidth + 1) { seen = a; break; }
        }
        const r = seen.getBoundingClientRect();
        if (r.width === 0) continue;  // hidden (a static image a live figure replaced)
        const tooWide = r.right > c.right + 1 || r.left < c.left - 1;
        // An equation may scroll inside the column only where scaling it to 60 % is not enough.
        const scrolls = equation && el.scrollWidth > el.clientWidth + 1;
        const scaled = parseFloat(getComputedStyle(el).fontSize) / parseFloat(getComputedStyle(el.parentElement).fontSize);
        const scrolled = scrolls && scaled > 0.61;
        if (tooWide || scrolled) {
            out.push({tag: el.tagName.toLowerCase(), text: (el.textContent || el.getAttribute('src') || '').slice(0, 50),
                      right: Math.round(r.right), column: Math.round(c.right), scrolled: scrolled});
        }
    }
    return out;
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PAGES)
def test_nothing_is_wider_than_the_text_column(visit, path, width):
    """Every figure, table, display equation and live figure fits the text
    column: a long equation is scaled to it (or, past 60 %, scrolls within
    it); a table that cannot fit a phone's column scrolls within it."""
    wide = OVERFLOWS.get((BASE_PATH, path, width))
    if wide is None:
        v = visit(path, width=width)
        v.page.wait_for_timeout(EQUATIONS_FITTED_MS)
        wide = v.page.evaluate(OVERFLOW)
    assert wide == [], f"{path} at {width} px: wider than the text column: {wide}"


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
