#!/usr/bin/env bash
# Open the book's chapters as notebooks in JupyterLab, on the project's
# environment (.venv, with speclib installed) and with working widgets.
#
#   bash scripts/lab.sh [extra jupyter lab args, e.g. --port 8899 --no-browser]
#
# Installs the pinned requirements-lab.txt into .venv on first use, serves the
# repository root, and opens the introduction. The kernel is the venv's Python
# ("Python 3 (speclib .venv)", registered by _env.sh). Run a chapter with
# Run > Run All Cells: its figures with sliders and menus redraw as you move them
# (until then each widget cell shows one line of text saying so).
# Stop the server with Ctrl-C (twice).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
_install_extra requirements-lab.txt

args=(--ServerApp.root_dir="$REPO_ROOT")
# Jupyter refuses to run as root unless told; containers and CI machines are root.
[ "$(id -u)" -ne 0 ] || args+=(--allow-root)

_log "starting JupyterLab on the chapters in book/ (Ctrl-C twice to stop) ..."
exec jupyter lab "${args[@]}" "$@" book/introduction.ipynb
