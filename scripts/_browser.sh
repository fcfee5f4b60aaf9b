# shellcheck shell=bash
# What the scripts that drive a browser need beyond _env.sh (browser_test.sh,
# build_pdf.sh). Source it after _env.sh:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
#   source "$(dirname "${BASH_SOURCE[0]}")/_browser.sh"
#
# Functions (each installs only what is missing, quietly):
#   _need_chromium     Debian's chromium (SPECLIB_CHROMIUM, default /usr/bin/chromium)
#   _need_playwright   Playwright for Python in .venv (the driver only, no browser download)
#   _need_poppler      Debian's poppler-utils: pdftotext, pdfimages, pdfinfo, pdftoppm
#   _need_book [1]     _build/html built and not older than its sources (1: rebuild anyway)

CHROMIUM="${SPECLIB_CHROMIUM:-/usr/bin/chromium}"
export SPECLIB_CHROMIUM="$CHROMIUM"

_apt_updated=0
_apt_install() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if [ "$_apt_updated" = 0 ]; then
        $sudo apt-get update -qq
        _apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# Chromium from Debian's packages. Playwright's own browser download cannot
# work on a machine that reaches only package registries, and is never used.
_need_chromium() {
    if [ ! -x "$CHROMIUM" ]; then
        _log "installing Debian's chromium (a few minutes) ..."
        _apt_install chromium
    fi
}

# Playwright for Python is pinned in requirements.txt (installed by _env.sh);
# this covers a venv made before it was added.
_need_playwright() {
    if ! python -c 'import playwright.sync_api' >/dev/null 2>&1; then
        _log "installing playwright into .venv ..."
        _pip "$(grep -E '^playwright==' requirements.txt || echo playwright)"
    fi
}

_need_poppler() {
    if ! command -v pdftotext >/dev/null 2>&1 || ! command -v pdfimages >/dev/null 2>&1; then
        _log "installing Debian's poppler-utils (PDF text and image extraction) ..."
        _apt_install poppler-utils
    fi
}

# True when _build/html is missing, its last build failed, or it is older than
# any of its sources (build_book.sh stamps a successful build).
_book_stale() {
    local stamp="$REPO_ROOT/_build/html/.speclib-built"
    [ -f "$REPO_ROOT/_build/html/index.html" ] && [ -f "$stamp" ] || return 0
    [ -n "$(find book speclib _static _config.yml _toc.yml references.bib -newer "$stamp" \
        \( -name '*.ipynb' -o -name '*.md' -o -name '*.py' -o -name '*.js' -o -name '*.css' \
           -o -name '*.yml' -o -name '*.bib' \) -not -path '*/.ipynb_checkpoints/*' -print -quit 2>/dev/null)" ]
}

_need_book() {
    if [ "${1:-0}" = 1 ] || _book_stale; then
        _log "building the book first (missing, older than its sources, or --rebuild) ..."
        bash "$REPO_ROOT/scripts/build_book.sh"
    fi
}
