"""Print the single-page HTML build of the book to one PDF with headless Chromium.

    python scripts/_print_pdf.py SINGLEHTML_DIR ROOT_DOC OUT.pdf

Used by scripts/build_pdf.sh. The page is served on 127.0.0.1 (nothing may be
loaded from another host: such a request fails the print), MathJax typesets
it and every image loads before Chromium prints it with the print stylesheet
(_static/speclib_print.css: live figures fall back to their static images,
folded code stays folded, chapters start on new pages). The PDF gets a title
page, page numbers and an outline (bookmarks) of the headings.

Sphinx's single-page builder writes the page as ROOT_DOC.html (here
book/introduction.html) but links its assets as if it were at the top of the
build; the page is therefore printed from a copy at the top, with its links
into itself turned into in-document anchors.
"""
from __future__ import annotations

import datetime
import functools
import html
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import yaml

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("SPECLIB_CHROMIUM", "/usr/bin/chromium")
#: As tests/browser/conftest.py: headless, and none of Chromium's own calls home.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
#: A4 with the margins below, in CSS pixels (96 per inch): the width the print layout has.
PAGE_FORMAT, MARGIN_MM = "A4", {"top": 14, "bottom": 16, "left": 14, "right": 14}
#: The page is laid out 1 / SCALE wider than the paper and printed at SCALE: the
#: screen's 16 px body type is 9.4 pt on paper (tests/browser/test_pdf.py holds
#: it at 9 pt or more), a book's size; at the screen's 12 pt the book took
#: almost twice the pages.
SCALE = 0.78
CONTENT_WIDTH_PX = round((210 - MARGIN_MM["left"] - MARGIN_MM["right"]) / 25.4 * 96 / SCALE)

#: The title page and the PDF's own tweaks (the rest is _static/speclib_print.css).
PRINT_CSS = """
@media print {
  .speclib-print-cover { break-after: page; padding-top: 30%; text-align: center; }
  .speclib-print-cover .title { font-size: 2.1rem; font-weight: 600; line-height: 1.25; margin: 0 0 2rem; }
  .speclib-print-cover .author { font-size: 1.2rem; margin: 0 0 3rem; }
  .speclib-print-cover .built { font-size: 0.85rem; opacity: 0.75; }
  /* The theme prints a page's title above its contents and hides the page's own
     heading; here the contents list the whole book, and the introduction
     starts with its heading on the page after them. */
  .bd-main .bd-content #jb-print-docs-body > h1 { display: none; }
  .bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
  .bd-article > section:first-of-type { break-before: page; }
}
"""

FOOTER = """<div style="font-size: 8px; width: 100%; padding: 0 12mm; display: flex; justify-content: space-between;
  color: #555; font-family: sans-serif;"><span>{title}</span>
  <span><span class="pageNumber"></span> / <span class="totalPages"></span></span></div>"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _page_at_top(build: Path, root_doc: str) -> Path:
    """A copy of the single page at the top of the build, linking into itself by anchors."""
    source = (build / f"{root_doc}.html").read_text(encoding="utf-8")
    here = re.escape(f"{root_doc}.html")
    source = re.sub(rf'href="{here}#', 'href="#', source)
    source = re.sub(rf'href="{here}"', 'href="#"', source)
    target = build / "speclib-print.html"
    target.write_text(source, encoding="utf-8")
    return target


def _built_from() -> str:
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               check=True, capture_output=True, text=True).stdout.strip()
        commit = f"commit {commit}{' with local changes' if dirty else ''}"
    except (OSError, subprocess.CalledProcessError):
        commit = "a working copy"
    return f"Built {datetime.date.today().isoformat()} from {commit}."


def _cut_off_on_paper(page) -> list:
    """Tables, code, images and figures wider than the box that holds them in
    the print layout, where a scroll bar cannot reach: at the page's content
    width, the first clipping box (overflow not visible) above each one must
    not scroll sideways."""
    screen = page.viewport_size
    page.set_viewport_size({"width": CONTENT_WIDTH_PX, "height": screen["height"]})
    try:
        return page.evaluate("""() => Array.from(document.querySelectorAll(
                'article table, article pre, article img, article svg')).map(e => {
            for (let box = e.parentElement; box && box.tagName !== 'ARTICLE'; box = box.parentElement) {
                if (getComputedStyle(box).overflowX !== 'visible' && box.scrollWidth > box.clientWidth + 1) {
                    const what = e.caption ? e.caption.textContent : (e.innerText || e.getAttribute('src') || '');
                    return `${e.tagName.toLowerCase()} "${what.trim().slice(0, 60)}" (${box.scrollWidth} px in ${box.clientWidth})`;
                }
            }
            return null;
        }).filter(found => found)""")
    finally:
        page.set_viewport_size(screen)


def main(build: str, root_doc: str, out: str) -> int:
    from playwright.sync_api import sync_playwright

    build_dir = Path(build).resolve()
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    title, author = config.get("title", ""), config.get("author", "")
    page_file = _page_at_top(build_dir, root_doc)

    handler = functools.partial(_QuietHandler, directory=str(build_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page_file.name}"
    external, failed = [], []
    start = time.perf_counter()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900})

                def route(r):
                    host = urlsplit(r.request.url).hostname or ""
                    if r.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
                        r.continue_()
                    else:
                        external.append(r.request.url)
                        r.abort("blockedbyclient")

                page.route("**/*", route)
                # The single-page builder writes no search index, yet the theme links it.
                wanted = lambda u: not urlsplit(u).path.endswith("/searchindex.js")
                page.on("response", lambda r: r.status >= 400 and wanted(r.url) and failed.append(f"{r.url}: HTTP {r.status}"))
                page.on("requestfailed", lambda r: wanted(r.url) and failed.append(f"{r.url}: {r.failure}"))
                page.goto(url, wait_until="load")
                page.evaluate("""async () => {
                    if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
                    await Promise.all(Array.from(document.images).map(img => img.complete ? null
                        : new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); })));
                    await document.fonts.ready;
                }""")
                page.wait_for_load_state("networkidle")
                problems = page.evaluate("""() => ({
                    untypeset: Array.from(document.querySelectorAll('.math'))
                        .filter(m => !m.querySelector('mjx-container') && !m.closest('mjx-container')).length,
                    mathErrors: document.querySelectorAll('mjx-merror').length,
                    brokenImages: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))
                        .map(i => i.getAttribute('src')),
                })""")
                if external or failed or problems["untypeset"] or problems["mathErrors"] or problems["brokenImages"]:
                    print(f"_print_pdf: the page is not ready to print: {problems}, failed requests {failed}, "
                          f"requests to other hosts {external}", file=sys.stderr)
                    return 1
                page.add_style_tag(content=PRINT_CSS)
                page.evaluate("""([title, author, built]) => {
                    const cover = document.createElement('div');
                    cover.className = 'speclib-print-cover onlyprint';
                    for (const [cls, text] of [['title', title], ['author', author], ['built', built]]) {
                        const p = document.createElement('p');
                        p.className = cls;
                        p.textContent = text;
                        cover.appendChild(p);
                    }
                    const first = document.querySelector('#jb-print-docs-body') || document.querySelector('.bd-article');
                    first.parentNode.insertBefore(cover, first);
                }""", [title, author, _built_from()])
                page.emulate_media(media="print")
                cut = _cut_off_on_paper(page)
                if cut:
                    print("_print_pdf: on an A4 page these would be cut off at the margin (widen the print "
                          f"stylesheet's allowance or narrow them): {cut}", file=sys.stderr)
                    return 1
                Path(out).parent.mkdir(parents=True, exist_ok=True)
                page.pdf(path=out, format=PAGE_FORMAT, scale=SCALE, print_background=True, outline=True, tagged=True,
                         margin={side: f"{mm}mm" for side, mm in MARGIN_MM.items()},
                         display_header_footer=True, header_template="<span></span>",
                         footer_template=FOOTER.format(title=html.escape(title)))
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print(f"_print_pdf: printed {url} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
