#!/usr/bin/env bash
# Test the built HTML book in a real browser: Debian's Chromium, headless,
# driven by Playwright for Python (tests/browser). Installs what it needs on a
# fresh machine, builds the book if _build/html is missing or older than its
# sources, serves it on 127.0.0.1 and opens every page.
#
#   bash scripts/browser_test.sh [--rebuild] [extra pytest args]
#
# Checks: no console errors, no request to another host (blocked and listed),
# maths typeset, images loaded, each page < 5 MB with its assets (a table is
# printed), every live-figure control redraws its figure, and the numbers the
# page computes equal speclib's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

rebuild=0
if [ "${1:-}" = "--rebuild" ]; then
    rebuild=1
    shift
fi

# Chromium from Debian's packages. Playwright's own browser download cannot
# work on a machine that reaches only package registries, and is never used.
CHROMIUM="${SPECLIB_CHROMIUM:-/usr/bin/chromium}"
export SPECLIB_CHROMIUM="$CHROMIUM"
if [ ! -x "$CHROMIUM" ]; then
    _log "installing Debian's chromium (a few minutes) ..."
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

# Playwright for Python is pinned in requirements.txt (installed by _env.sh);
# this covers a venv made before it was added.
if ! python -c 'import playwright.sync_api' >/dev/null 2>&1; then
    _log "installing playwright into .venv ..."
    _pip "$(grep -E '^playwright==' requirements.txt || echo playwright)"
fi

html="$REPO_ROOT/_build/html/index.html"
if [ "$rebuild" = 1 ] || [ ! -f "$html" ] ||
    [ -n "$(find book speclib _config.yml _toc.yml references.bib -newer "$html" \
        \( -name '*.ipynb' -o -name '*.md' -o -name '*.py' -o -name '*.js' -o -name '*.css' \
           -o -name '*.yml' -o -name '*.bib' \) -not -path '*/.ipynb_checkpoints/*' -print -quit)" ]; then
    _log "building the book first (missing or older than its sources) ..."
    bash "$REPO_ROOT/scripts/build_book.sh"
fi

start=$SECONDS
set +e
SPECLIB_BROWSER_TESTS=1 python -m pytest tests/browser "$@"
status=$?
set -e
_log "browser tests took $((SECONDS - start)) s"
exit $status
