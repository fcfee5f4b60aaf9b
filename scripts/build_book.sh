#!/usr/bin/env bash
# Build the Jupyter Book to _build/html, executing every notebook from scratch.
#
#   bash scripts/build_book.sh [extra jupyter-book build args]
#
# Sphinx warnings are errors (-W), cross-references are checked (-n), and
# --keep-going reports every warning before failing.  Notebook execution is
# forced and any cell error fails the build (see _config.yml: execute).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

_log "building the book (all notebooks are executed; this takes a while) ..."
start=$SECONDS
# Stamp of a successful build, for the scripts that rebuild a stale book
# (_browser.sh: _book_stale); jupyter-book never rewrites index.html.
stamp="$REPO_ROOT/_build/html/.speclib-built"
rm -f "$stamp"
jupyter-book build --all -W -n --keep-going "$@" .
touch "$stamp"
_log "book built in $((SECONDS - start)) s"
echo "HTML: $REPO_ROOT/_build/html/index.html"
