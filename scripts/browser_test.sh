#!/usr/bin/env bash
# Test the built HTML book in a real browser: Debian's Chromium, headless,
# driven by Playwright for Python (tests/browser). Installs what it needs on a
# fresh machine, builds the book if _build/html is missing or older than its
# sources, and the PDF (scripts/build_pdf.sh) if it is missing or older than
# the book, serves the book on 127.0.0.1 and opens every page; then serves it
# under a sub-path (/speculative-decoding-economics/, as on GitHub Pages; or
# SPECLIB_BASE_PATH) and runs the tests marked subpath again; the notebooks
# in JupyterLab and the PDF, the pages and their live figures, and the pages
# under the sub-path run at the same time.
#
#   bash scripts/browser_test.sh [--rebuild] [extra pytest args]
#
# Checks: no console errors, no request to another host (blocked and listed),
# maths typeset, images loaded, each page < 5 MB with its assets (a table is
# printed), every live-figure control redraws its figure, and the numbers the
# page computes equal speclib's. The PDF has every chapter and every figure.
# Every chapter notebook opens clean in JupyterLab (a server the tests start
# on a free local port); one with widgets runs clean there too, and each of its
# widgets redraws when a control moves (Run-All times and redraw latencies are
# printed). nbval runs every notebook (scripts/test.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
source "$REPO_ROOT/scripts/_browser.sh"

rebuild=0
if [ "${1:-}" = "--rebuild" ]; then
    rebuild=1
    shift
fi

_need_chromium
_need_playwright
_need_poppler
_install_extra requirements-lab.txt   # JupyterLab, for tests/browser/test_jupyterlab.py
_need_book "$rebuild"

pdf="$REPO_ROOT/_build/pdf/speculative-decoding-economics.pdf"
if [ ! -f "$pdf" ] || [ "$REPO_ROOT/_build/html/.speclib-built" -nt "$pdf" ]; then
    _log "building the PDF first (missing or older than the book) ..."
    bash "$REPO_ROOT/scripts/build_pdf.sh"
fi

# Three groups at once (each pytest picks its own free ports): the notebooks
# in JupyterLab and the PDF; the pages of the book and its live figures; and
# the pages served under a sub-path, as a GitHub Pages project site is
# (https://OWNER.github.io/REPO/: every page with all its assets and its live
# figures drawn, nothing served outside the sub-path). They keep two cores
# busy; more groups at once take no less time and leave each page longer to
# settle. Extra pytest arguments apply to the first two. Each group's report
# is printed when all have ended.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
start=$SECONDS
names=(lab pages subpath)
pids=()
set +e
SPECLIB_BROWSER_TESTS=1 python -m pytest tests/browser/test_jupyterlab.py tests/browser/test_pdf.py "$@" \
    >"$logs/lab" 2>&1 &
pids+=($!)
SPECLIB_BROWSER_TESTS=1 python -m pytest tests/browser/test_book_in_browser.py tests/browser/test_live_figures.py tests/browser/test_phone.py \
    "$@" >"$logs/pages" 2>&1 &
pids+=($!)
SPECLIB_BROWSER_TESTS=1 SPECLIB_BASE_PATH="${SPECLIB_BASE_PATH:-/speculative-decoding-economics/}" \
    python -m pytest tests/browser -m subpath >"$logs/subpath" 2>&1 &
pids+=($!)
statuses=()
for pid in "${pids[@]}"; do
    wait "$pid"
    statuses+=($?)
done
set -e
summary=""
failed=0
for i in "${!names[@]}"; do
    cat "$logs/${names[$i]}"
    summary+=" ${names[$i]}: exit ${statuses[$i]},"
    if [ "${statuses[$i]}" -ne 0 ] && [ "$failed" -eq 0 ]; then
        failed="${statuses[$i]}"
    fi
done
summary="${summary%,}"
_log "browser tests took $((SECONDS - start)) s (${summary# })"
exit "$failed"
