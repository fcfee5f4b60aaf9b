"""Fixtures for the browser tests of the built HTML book.

These tests drive Debian's Chromium through Playwright against the book in
``_build/html`` served on 127.0.0.1. They run only when SPECLIB_BROWSER_TESTS=1
(``bash scripts/browser_test.sh`` sets it after installing Chromium and
Playwright and building the book); in the ordinary test run they are skipped.
When the variable is set, a missing browser or book is a failure, not a skip.

Environment: SPECLIB_HTML_DIR (default ``<repo>/_build/html``),
SPECLIB_CHROMIUM (default ``/usr/bin/chromium``), SPECLIB_BASE_PATH (default
``/``): the URL path the book is served under, e.g. ``/speculative-decoding-economics/``
as on GitHub Pages; nothing outside it is served (a link that escapes it is a
404, so a failed request). browser_test.sh runs the tests marked ``subpath``
once more that way.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
ENABLED = os.environ.get("SPECLIB_BROWSER_TESTS") == "1"
HTML_DIR = Path(os.environ.get("SPECLIB_HTML_DIR", REPO / "_build" / "html"))
CHROMIUM = os.environ.get("SPECLIB_CHROMIUM", "/usr/bin/chromium")
#: As the machine notes advise: headless, and none of Chromium's own calls home
#: (on a closed network they fail loudly and slowly).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
_base = os.environ.get("SPECLIB_BASE_PATH", "/").strip("/")
#: The URL path of the book's root, with a slash at each end ("/" by default).
BASE_PATH = f"/{_base}/" if _base else "/"
PAGE_LIMIT_BYTES = 5 * 1024 * 1024

#: Filled by the page tests, printed at the end of the session.
WEIGHTS: dict = {}
REDRAWS: dict = {}
#: Filled by the JupyterLab tests: notebook -> timings and widget redraws.
LAB_RUNS: dict = {}


def pytest_collection_modifyitems(config, items):
    if ENABLED:
        return
    skip = pytest.mark.skip(reason="browser tests run with `bash scripts/browser_test.sh` (SPECLIB_BROWSER_TESTS=1)")
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(skip)


def book_pages() -> list:
    """Every HTML page of the built book, relative to its root."""
    if not (HTML_DIR / "index.html").is_file():
        return []
    skip_dirs = {"_static", "_sources", "_images"}
    return sorted(
        str(p.relative_to(HTML_DIR))
        for p in HTML_DIR.rglob("*.html")
        if not skip_dirs & set(p.relative_to(HTML_DIR).parts[:-1])
    )


#: Figures the book must show live; the others are checked when a page holds them.
REQUIRED_LIVE = ("ledger", "optimal_gamma")


def pages_with(name: str) -> list:
    """The book's pages with a cell tagged figure-``name``."""
    pattern = re.compile(rf"\btag_figure-{name}\b")
    return [p for p in book_pages() if pattern.search((HTML_DIR / p).read_text(encoding="utf-8"))]


def page_for(name: str) -> str:
    """The first page that shows figure ``name`` (a failure for a required live figure that no page has; a
    skip for another)."""
    found = pages_with(name)
    if not found:
        if name in REQUIRED_LIVE:
            pytest.fail(f"no page of the book has a cell tagged figure-{name}")
        pytest.skip(f"no page of the book has a cell tagged figure-{name} (yet)")
    return found[0]


def live_instances(page):
    """Names of the page's live figures, in page order, once they are mounted."""
    page.wait_for_function("() => window.speclibLive && window.speclibLive.ready")
    return page.evaluate("() => window.speclibLive.instances.map(i => i.name)")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    #: Served under this URL path only; any other path is not found.
    base_path = "/"

    def log_message(self, *args):  # keep pytest's output for the tests
        pass

    def send_head(self):
        if not self.path.startswith(self.base_path):
            self.send_error(404, f"outside {self.base_path}")
            return None
        return super().send_head()

    def translate_path(self, path):
        return super().translate_path("/" + path[len(self.base_path):])


@pytest.fixture(scope="session")
def html_dir():
    if not (HTML_DIR / "index.html").is_file():
        pytest.fail(f"no built book at {HTML_DIR}: run `bash scripts/build_book.sh` (browser_test.sh does)")
    return HTML_DIR


@pytest.fixture(scope="session")
def base_url(html_dir):
    """The book's root URL on a local static server: ``http://127.0.0.1:PORT`` + BASE_PATH."""
    handler_class = type("_Handler", (_QuietHandler,), {"base_path": BASE_PATH})
    handler = functools.partial(handler_class, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{BASE_PATH}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright for Python is not installed: `bash scripts/browser_test.sh` installs it")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: `apt-get install chromium` (browser_test.sh does)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def jupyterlab():
    """A JupyterLab server on the repository (tests/browser/labserver.py),
    started for the tests that use it and stopped after them."""
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        pytest.fail("JupyterLab is not installed: `bash scripts/browser_test.sh` installs requirements-lab.txt")
    from .labserver import LabServer

    server = LabServer(REPO)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@dataclass
class PageVisit:
    """One page load and everything it did on the network and the console."""

    page: object
    url: str
    requests: list = field(default_factory=list)
    external: list = field(default_factory=list)
    console_errors: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    load_seconds: float = 0.0

    def bytes_loaded(self) -> int:
        total = 0
        for request in self.requests:
            try:
                sizes = request.sizes()
            except Exception:  # a request that never got an answer
                continue
            total += sizes["responseBodySize"] + max(sizes["responseHeadersSize"], 0)
        return total


@pytest.fixture
def visit(browser, base_url):
    """``visit(path)``: open a page of the book in a fresh context (empty
    cache, so its weight counts every asset), with any request to another host
    blocked and recorded, and wait until its maths is typeset and the network
    is idle (``settle=False``: only until the load event)."""
    contexts = []

    def _visit(path: str, settle: bool = True, width: int = 1280) -> PageVisit:
        context = browser.new_context(viewport={"width": width, "height": 900}, service_workers="block")
        contexts.append(context)
        page = context.new_page()
        record = PageVisit(page=page, url=base_url + path)

        def route(r):
            host = urlsplit(r.request.url).hostname or ""
            if r.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
                r.continue_()
            else:
                record.external.append(r.request.url)
                r.abort("blockedbyclient")

        context.route("**/*", route)
        page.on("request", lambda r: record.requests.append(r))
        page.on("console", lambda m: m.type == "error" and record.console_errors.append(m.text))
        page.on("pageerror", lambda e: record.console_errors.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: record.failed.append(f"{r.url}: {r.failure}"))
        page.on("response", lambda r: r.status >= 400 and record.failed.append(f"{r.url}: HTTP {r.status}"))
        start = time.perf_counter()
        redirect = re.search(r"http-equiv=.refresh", (HTML_DIR / path).read_text(encoding="utf-8"), re.IGNORECASE)
        page.goto(record.url, wait_until="load")
        if redirect:
            # jupyter-book's index.html only redirects to the root chapter.
            page.wait_for_url(lambda url: url != record.url)
            page.wait_for_load_state("load")
        if settle:  # the live-figure tests need only the figures, not the fonts and maths
            page.evaluate("""async () => {
                if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
            }""")
            page.wait_for_load_state("networkidle")
        record.load_seconds = time.perf_counter() - start
        return record

    yield _visit
    for context in contexts:
        context.close()


def pytest_terminal_summary(terminalreporter):
    if WEIGHTS:
        tr = terminalreporter
        tr.section("page weight (every request of one page load, empty cache)")
        tr.write_line(f"{'page':<48} {'requests':>8} {'KiB':>9} {'external':>8} {'load s':>7}")
        for path, (n, size, external, seconds) in sorted(WEIGHTS.items()):
            tr.write_line(f"{path:<48} {n:>8} {size / 1024:>9.1f} {external:>8} {seconds:>7.2f}")
        heaviest = max(WEIGHTS.items(), key=lambda kv: kv[1][1])
        tr.write_line(f"heaviest: {heaviest[0]} at {heaviest[1][1] / 1024 / 1024:.2f} MiB "
                      f"(limit {PAGE_LIMIT_BYTES / 1024 / 1024:.0f} MiB); external requests in all: "
                      f"{sum(v[2] for v in WEIGHTS.values())}")
    if LAB_RUNS:
        tr = terminalreporter
        tr.section("chapters as notebooks in JupyterLab (headless Chromium): Run All Cells")
        tr.write_line(f"{'notebook':<30} {'cells':>5} {'kernel s':>8} {'run all s':>9} {'widgets':>7}")
        for name, run in LAB_RUNS.items():
            run_all = "opened" if run["run_all"] is None else f"{run['run_all']:.1f}"
            tr.write_line(f"{name:<30} {run['cells']:>5} {run['kernel']:>8.1f} {run_all:>9} "
                          f"{len(run['widgets']):>7}")
        ran = [r["run_all"] for r in LAB_RUNS.values() if r["run_all"] is not None]
        tr.write_line(f"run all in all: {sum(ran):.1f} s for the {len(ran)} notebooks with widgets; "
                      f"{len(LAB_RUNS) - len(ran)} without opened as stored (nbval runs them)")
        widgets = [(name, w) for name, run in LAB_RUNS.items() for w in run["widgets"]]
        if widgets:
            tr.section("widget redraw latency in JupyterLab: one control moved, until the new picture shows")
            for name, (cell, control, ms) in widgets:
                tr.write_line(f"{name:<22} {cell:<44} {control:<36} {ms:6.0f} ms")
            times = sorted(w[2] for _, w in widgets)
            tr.write_line(f"median {times[len(times) // 2]:.0f} ms, max {times[-1]:.0f} ms over {len(times)} widgets")
    if REDRAWS:
        tr = terminalreporter
        tr.section("live figure redraw time in Chromium (compute + SVG), per control move")
        for name, times in sorted(REDRAWS.items()):
            times = sorted(times)
            tr.write_line(f"{name:<16} moves {len(times):>3}  median {times[len(times) // 2]:6.1f} ms  "
                          f"max {times[-1]:6.1f} ms")
