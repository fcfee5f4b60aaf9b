#!/usr/bin/env bash
# Build the Jupyter Book to _build/html, with every notebook's outputs from
# an execution of its current code.
#
#   bash scripts/build_book.sh [--fresh] [extra jupyter-book build args]
#
# The notebooks are executed first, several at once (one per core; scripts/
# _execute_book.py), into a jupyter-cache in _build/.jupyter_cache; Sphinx then
# takes every notebook's outputs from there (MyST-NB's "cache" mode). A
# notebook is executed again whenever its code changed, and every notebook is
# when anything else its outputs depend on did (speclib/, the requirements,
# _config.yml, the venv): a build never shows outputs older than their
# sources. Where scripts/test.sh's nbval run executed a notebook with the same
# code and inputs, its outputs are taken (CI runs the tests, then the build).
# --fresh executes every notebook, reusing nothing.
#
# Sphinx warnings are errors (-W), cross-references are checked (-n), and
# --keep-going reports every warning before failing. Any exception in a
# notebook cell fails the build (see _config.yml: execute).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

execute_args=()
if [ "${1:-}" = "--fresh" ]; then
    execute_args+=(--fresh)
    shift
fi

start=$SECONDS
# Stamp of a successful build, for the scripts that rebuild a stale book
# (_browser.sh: _book_stale); jupyter-book never rewrites index.html.
stamp="$REPO_ROOT/_build/html/.speclib-built"
rm -f "$stamp"
cache="$REPO_ROOT/_build/.jupyter_cache"
mkdir -p "$REPO_ROOT/_build"
python "$REPO_ROOT/scripts/_execute_book.py" "$cache" ${execute_args[@]+"${execute_args[@]}"}
executed=$((SECONDS - start))

# _config.yml with its execution mode set to read the cache just filled.
config="$(mktemp --suffix=.yml)"
trap 'rm -f "$config"' EXIT
python - "$REPO_ROOT/_config.yml" "$config" "$cache" <<'PY'
import sys, yaml
with open(sys.argv[1]) as f:
    config = yaml.safe_load(f)
config.setdefault("execute", {}).update(execute_notebooks="cache", cache=sys.argv[3])
with open(sys.argv[2], "w") as f:
    yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
PY

_log "building the book ..."
jupyter-book build --all -W -n --keep-going --config "$config" "$@" .
# In cache mode MyST-NB leaves the source notebooks in _build/jupyter_execute;
# put the executed ones there, as its force mode does (build_pdf.sh reads them).
python "$REPO_ROOT/scripts/_execute_book.py" "$cache" --export "$REPO_ROOT/_build/jupyter_execute"
touch "$stamp"
_log "book built in $((SECONDS - start)) s (notebooks $executed s, Sphinx $((SECONDS - start - executed)) s)"
echo "HTML: $REPO_ROOT/_build/html/index.html"
