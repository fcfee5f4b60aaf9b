#!/usr/bin/env bash
# Write the whole book as one PDF: _build/pdf/speculative-decoding-economics.pdf
#
#   bash scripts/build_pdf.sh [--rebuild]
#
# A single-page HTML build of the book (jupyter-book's singlehtml builder, with
# Sphinx warnings as errors like the HTML build) printed by headless Chromium:
# maths typeset by MathJax, every figure as the static image the notebooks
# produced (the live figures fall back to it in print), a title page, page
# numbers and bookmarks. The notebooks are not executed a second time: the
# single page is built from the executed copies the HTML build leaves in
# _build/jupyter_execute, so the HTML book is built first when it is missing or
# older than its sources (or with --rebuild). Installs Debian's chromium and
# Playwright for Python like scripts/browser_test.sh.
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
_need_book "$rebuild"

start=$SECONDS
out="$REPO_ROOT/_build/pdf"
src="$out/src"
pdf="$out/speculative-decoding-economics.pdf"
executed="$REPO_ROOT/_build/jupyter_execute"

# The book's sources, with each notebook replaced by its executed copy.
rm -rf "$src" "$out/_build"
mkdir -p "$src"
cp -r _toc.yml references.bib _static book "$src/"
find "$src" -name '.ipynb_checkpoints' -prune -exec rm -rf {} +
for nb in book/*.ipynb; do
    if [ ! -f "$executed/$nb" ] || [ "$nb" -nt "$executed/$nb" ]; then
        _log "ERROR: no executed copy of $nb newer than it in $executed; run: bash scripts/build_pdf.sh --rebuild"
        exit 1
    fi
    cp "$executed/$nb" "$src/$nb"
done
# Same configuration, but the notebooks' outputs are taken as they are.
python - "$REPO_ROOT/_config.yml" "$src/_config.yml" <<'PY'
import sys, yaml
with open(sys.argv[1]) as f:
    config = yaml.safe_load(f)
config.setdefault("execute", {})["execute_notebooks"] = "off"
with open(sys.argv[2], "w") as f:
    yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
PY

_log "building the single-page HTML book ..."
log="$out/singlehtml.log"
if ! jupyter-book build --all -W -n --keep-going --builder singlehtml --path-output "$out" "$src" >"$log" 2>&1; then
    cat "$log" >&2
    _log "ERROR: the single-page build failed (log above, also in $log)"
    exit 1
fi

root_doc="$(python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["root"])' _toc.yml)"
python "$REPO_ROOT/scripts/_print_pdf.py" "$out/_build/singlehtml" "$root_doc" "$pdf"
_log "PDF written in $((SECONDS - start)) s: $pdf ($(du -h "$pdf" | cut -f1))"
