"""Every page of the built book on a phone (a 390 px window, headless Chromium via Playwright).

One load of each page at a phone's width measures all of it (:data:`MEASURE`); one test per check reads
that measurement:

* the page does not scroll sideways (a wide table, figure or equation scrolls inside its own box);
* no word is broken across two lines mid-word (at a space, a hyphen, a slash or a dot only; a commit
  hash, wider than the column, is no word);
* every caption wraps inside what the reader sees of it: none runs past the edge of the screen or of the
  box that scrolls its table;
* the text of every static figure renders at 9 CSS px or more;
* no live figure's control is covered by anything (the theme's sticky header above all) when the reader
  scrolls it to the top of the screen.

(The same pages at a desktop's width and a phone's, nothing wider than the text column, no literal maths:
test_book_in_browser.py.)
"""
from __future__ import annotations

import struct
from urllib.parse import unquote, urlsplit

import pytest

from speclib.presentation import style

from .conftest import BASE_PATH, HTML_DIR, book_pages, live_instances

PAGES = book_pages()
#: An iPhone 12-15's CSS width, and its height.
PHONE = (390, 844)
#: The smallest text a reader can read in a figure, in CSS px.
LEGIBLE_PX = 9.0
#: (base path, page) -> what MEASURE found there.
MEASURED: dict = {}

MEASURE = r"""() => {
    const root = document.scrollingElement, view = root.clientWidth;
    const out = {view: view, scrolled: 0, wide: [], broken: [], clipped: [], images: []};
    const y = window.scrollY;
    window.scrollTo(1e6, y);
    out.scrolled = window.scrollX;
    window.scrollTo(0, y);
    const clips = (el) => {  // the box through which the reader sees el: the screen, less every box that clips it
        let left = 0, right = view;
        for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== 'visible') {
                const r = a.getBoundingClientRect();
                left = Math.max(left, r.left + a.clientLeft);
                right = Math.min(right, r.left + a.clientLeft + a.clientWidth);
            }
        }
        return {left, right};
    };
    const name = (el) => el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
        ? '.' + el.className.trim().split(/\s+/).slice(0, 2).join('.') : '');
    // What makes the page wider than the screen: the outermost boxes past its right edge, none clipping them.
    for (const el of document.body.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.right <= view + 1) continue;
        if (clips(el.parentElement || el).right < view - 1) continue;  // inside a box that scrolls or clips it
        if (el.parentElement && el.parentElement.getBoundingClientRect().right > view + 1) continue;
        out.wide.push(`${name(el)} to ${Math.round(r.right)} px: ${(el.textContent || '').trim().slice(0, 40)}`);
        if (out.wide.length >= 5) break;
    }
    const article = document.querySelector('article') || document.body;
    // A word is a run of letters and digits; a line may end after any other character.
    const word = /[\p{L}\p{N}]+/gu, range = document.createRange();
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.parentElement.closest('script, style, svg, mjx-container, .math')) continue;
        for (const m of n.textContent.matchAll(word)) {
            if (m[0].length < 2 || /^[0-9a-f]{16,}$/.test(m[0])) continue;  // a commit hash or digest is no word
            range.setStart(n, m.index);
            range.setEnd(n, m.index + m[0].length);
            const tops = Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => r.top);
            if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 2) {
                const cell = n.parentElement.closest('td, th, caption, p, li, figcaption') || n.parentElement;
                out.broken.push(`"${m[0]}" in ${name(cell)}`);
            }
        }
    }
    for (const cap of article.querySelectorAll('caption, figcaption')) {
        if (cap.getBoundingClientRect().width === 0) continue;
        const box = clips(cap);
        range.selectNodeContents(cap);
        const out_of = Array.from(range.getClientRects()).filter(r => r.width > 0)
            .filter(r => r.right > box.right + 1 || r.left < box.left - 1);
        if (out_of.length) {
            const r = out_of[0];
            out.clipped.push(`${cap.textContent.trim().slice(0, 50)} (a line from ${Math.round(r.left)} to `
                             + `${Math.round(r.right)} px, seen from ${Math.round(box.left)} to ${Math.round(box.right)})`);
        }
    }
    for (const img of article.querySelectorAll('img')) {
        const r = img.getBoundingClientRect();
        if (r.width === 0) continue;  // a static figure that its live figure replaced
        out.images.push({src: img.currentSrc || img.src, natural: img.naturalWidth, width: r.width});
    }
    return out;
}"""

#: Each live control scrolled to the top of the screen, as a reader's thumb leaves it: what is on top of
#: its middle, where it is not the control.
COVERED = r"""async () => {
    const out = [];
    const frame = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
    for (const control of document.querySelectorAll('.speclib-live [data-control]')) {
        const r0 = control.getBoundingClientRect();
        window.scrollTo(0, window.scrollY + r0.top);
        await frame();
        const r = control.getBoundingClientRect();
        const x = r.left + r.width / 2, y = r.top + r.height / 2;
        const hit = document.elementFromPoint(x, y);
        if (!hit || !(control === hit || control.contains(hit) || (control.labels && Array.from(control.labels)
                .some(l => l.contains(hit))))) {
            const what = hit ? hit.tagName.toLowerCase() + '.' + String(hit.className).trim().split(/\s+/)[0]
                + ' in ' + ((hit.closest('header, .bd-header-article, .bd-header') || hit).className || '') : 'nothing';
            out.push(`${control.getAttribute('data-control')} (under ${what.slice(0, 80)})`);
        }
    }
    return out;
}"""


def record(v, path):
    """Measure a page loaded at a phone's width (``visit(path, width=PHONE[0])``) for the checks below. Called
    by test_book_in_browser's phone test too, on the page it loaded at this width: one load for both."""
    v.page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    if v.page.locator(".speclib-live").count():
        live_instances(v.page)
    v.page.wait_for_timeout(300)  # speclib_fit_math.js fits the equations after MathJax's typesetting
    measured = v.page.evaluate(MEASURE)
    measured["covered"] = v.page.evaluate(COVERED)
    MEASURED[(BASE_PATH, path)] = measured


def _measure(visit, path):
    key = (BASE_PATH, path)
    if key not in MEASURED:
        record(visit(path, width=PHONE[0]), path)
    return MEASURED[key]


def png_dpi(data: bytes) -> float:
    """The resolution a PNG says it was drawn at (its pHYs chunk, pixels per metre), in dots per inch."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at = 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"pHYs":
            x, _y, unit = struct.unpack(">IIB", data[at + 8:at + 17])
            assert unit == 1, "pHYs not in metres"
            return x * 0.0254
        if kind == b"IDAT":
            break
        at += 12 + length
    raise AssertionError("the PNG says nothing of its resolution (no pHYs chunk)")


def figure_text_px(image: dict) -> float:
    """The smallest text of a static figure as rendered, in CSS px: the figures' smallest type in points
    (style.SMALLEST_TEXT_PT, the floor of everything static.py draws) at the resolution the PNG was drawn
    at is that many image pixels, shown at the image's rendered width over its natural width."""
    path = HTML_DIR / unquote(urlsplit(image["src"]).path)[len(BASE_PATH):]
    dpi = png_dpi(path.read_bytes())
    return style.SMALLEST_TEXT_PT * dpi / 72 * image["width"] / image["natural"]


@pytest.mark.parametrize("path", PAGES)
def test_phone_page_does_not_scroll_sideways(visit, path):
    m = _measure(visit, path)
    assert m["scrolled"] == 0, f"{path} at {PHONE[0]} px scrolls {m['scrolled']} px sideways, past it: {m['wide']}"


@pytest.mark.parametrize("path", PAGES)
def test_phone_breaks_no_word(visit, path):
    m = _measure(visit, path)
    assert m["broken"] == [], f"{path} at {PHONE[0]} px breaks words mid-word: {m['broken'][:12]}"


@pytest.mark.parametrize("path", PAGES)
def test_phone_captions_wrap(visit, path):
    m = _measure(visit, path)
    assert m["clipped"] == [], f"{path} at {PHONE[0]} px: captions that run out of sight: {m['clipped']}"


@pytest.mark.parametrize("path", PAGES)
def test_phone_figure_text_is_legible(visit, path):
    m = _measure(visit, path)
    small = [f"{img['src'].rsplit('/', 1)[-1]}: {figure_text_px(img):.1f} px ({img['width']:.0f} of "
             f"{img['natural']} px)" for img in m["images"] if figure_text_px(img) < LEGIBLE_PX - 1e-6]
    assert small == [], f"{path} at {PHONE[0]} px: figure text under {LEGIBLE_PX:g} px: {small}"


@pytest.mark.parametrize("path", PAGES)
def test_phone_covers_no_live_control(visit, path):
    m = _measure(visit, path)
    assert m["covered"] == [], f"{path} at {PHONE[0]} px: live controls covered: {m['covered']}"


def test_png_dpi_reads_what_matplotlib_wrote():
    """The resolution png_dpi reads is the one the figure was saved at (an independent route: matplotlib
    writes it; any of three resolutions)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    for dpi in (72, 100, 150):
        buf = io.BytesIO()
        Figure(figsize=(1, 1)).savefig(buf, format="png", dpi=dpi)
        assert png_dpi(buf.getvalue()) == pytest.approx(dpi, abs=0.02)
