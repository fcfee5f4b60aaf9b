# shellcheck shell=bash
# Shared environment setup, sourced by every script in scripts/.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
#
# After sourcing:
#   * the working directory is the repository root ($REPO_ROOT),
#   * .venv exists, is activated, and has requirements.txt and `pip install -e .`
#     installed in it,
#   * the Jupyter kernel used to execute notebooks is this venv's Python.
#
# Installation is quiet, but any failure aborts the calling script with pip's
# error output.  Everything is re-installed when requirements.txt,
# pyproject.toml or the Python version changes (hash stamp in .venv); otherwise
# only a missing or stale editable install of speclib is redone.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT
cd "$REPO_ROOT"

VENV="$REPO_ROOT/.venv"

_log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }

_pick_python() {
    local cand
    for cand in "${PYTHON:-}" python3.11 python3; do
        [ -n "$cand" ] || continue
        if command -v "$cand" >/dev/null 2>&1 &&
            "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            echo "$cand"
            return 0
        fi
    done
    _log "ERROR: need Python >= 3.11 (tried \$PYTHON, python3.11, python3)"
    return 1
}

if [ ! -x "$VENV/bin/python" ]; then
    PY="$(_pick_python)"
    _log "creating $VENV with $("$PY" --version 2>&1)"
    "$PY" -m venv "$VENV"
fi

# shellcheck disable=SC1091
source "$VENV/bin/activate"

export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1

_stamp_file="$VENV/.speclib-requirements.sha256"
_stamp="$( { cat requirements.txt pyproject.toml; python -VV; } | sha256sum | cut -d' ' -f1)"

# Install with uv (pinned here; put into the venv by pip on first use): it
# downloads and installs the pinned requirements in parallel, about 20 s on a
# fresh two-core machine where pip takes about 60 s, a quarter of the test
# command's four minutes. Where uv cannot be had, pip does the same install.
# Both compile every installed module to bytecode up front: where the machine
# sets PYTHONDONTWRITEBYTECODE (ours do), nothing imported is ever compiled
# for the next process, and each notebook's kernel and each test worker then
# spent two seconds compiling sympy, matplotlib and IPython again (80 s of the
# test command). Quiet: the output goes to a log that is printed only on
# failure.
UV_VERSION=0.13.9
_installer() {
    if [ ! -x "$VENV/bin/uv" ] && ! python -m pip install -q "uv==$UV_VERSION" >"$VENV/pip-uv.log" 2>&1; then
        _log "could not install uv $UV_VERSION (log: $VENV/pip-uv.log); installing with pip"
    fi
}
_pip() {
    local log="$VENV/pip-last.log"
    if [ -x "$VENV/bin/uv" ]; then
        if "$VENV/bin/uv" pip install --compile-bytecode --python "$VENV/bin/python" "$@" >"$log" 2>&1; then
            return 0
        fi
        # uv reads none of pip's configuration (an index, a certificate): what it cannot do, pip may
        _log "uv could not install $* (log: $VENV/uv-failed.log); trying pip"
        cp "$log" "$VENV/uv-failed.log"
    fi
    if ! python -m pip install "$@" >"$log" 2>&1; then
        cat "$log" >&2
        _log "ERROR: 'pip install $*' failed (full log above, also in $log)"
        return 1
    fi
}

if [ "$(cat "$_stamp_file" 2>/dev/null || true)" != "$_stamp" ]; then
    _log "installing requirements.txt and speclib (pip install -e .) into .venv ..."
    _installer
    _pip -r requirements.txt -e .
    echo "$_stamp" >"$_stamp_file"
elif ! [ -x "$VENV/bin/speclib" ] ||
    ! python -c 'import os, sys, speclib
sys.exit(0 if os.path.realpath(speclib.__file__).startswith(os.path.realpath(sys.argv[1])) else 1)' \
        "$REPO_ROOT/speclib" >/dev/null 2>&1; then
    # Requirements are current but speclib is not (yet) importable from this
    # checkout, e.g. the venv was created before speclib/ existed.
    _pip --no-deps -e .
fi

# Optional extras beside the main environment, e.g. requirements-lab.txt
# (JupyterLab, for scripts/lab.sh and the browser tests): installed into the
# same .venv on demand, constrained by requirements.txt so that no pinned
# package of the book changes, and again only when the file changes.
_install_extra() {
    local file="$1"
    local stamp_file="$VENV/.speclib-$(basename "$file").sha256"
    local stamp
    stamp="$( { cat "$file" requirements.txt; python -VV; } | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$stamp_file" 2>/dev/null || true)" != "$stamp" ]; then
        _log "installing $file into .venv ..."
        _pip -r "$file" -c requirements.txt
        echo "$stamp" >"$stamp_file"
    fi
}

# Execute notebooks with *this* venv's Python: register the kernelspec inside
# the venv and put that directory first on Jupyter's search path, so that a
# user-level "python3" kernelspec (e.g. ~/.local/share/jupyter/kernels/python3)
# pointing at another interpreter cannot hijack the build.
# The kernel's log level is raised to ERROR to drop ipykernel 7's per-kernel
# "Kernel is running over TCP without encryption" warning from build logs.
# (The ipykernel wheel itself ships a generic kernel.json with argv "python"
# into the same directory, so check for our marker rather than the file.)
_kernel_json="$VENV/share/jupyter/kernels/python3/kernel.json"
if ! grep -qs 'IPKernelApp.log_level=ERROR' "$_kernel_json"; then
    python -m ipykernel install --sys-prefix --name python3 \
        --display-name "Python 3 (speclib .venv)" >/dev/null
    python - "$_kernel_json" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as f:
    spec = json.load(f)
spec["argv"].append("--IPKernelApp.log_level=ERROR")
with open(path, "w") as f:
    json.dump(spec, f, indent=1)
PY
fi
export JUPYTER_PATH="$VENV/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"

# Quiet, deterministic notebook kernels.
export PYDEVD_DISABLE_FILE_VALIDATION=1   # debugpy "frozen modules" warning
export JUPYTER_PLATFORM_DIRS=1            # jupyter_core path-migration DeprecationWarning
export PYTHONHASHSEED=0
# One BLAS thread per process: every script here parallelises over processes
# (pytest-xdist's workers, one kernel per notebook), and OpenBLAS threads in
# each of them contend for the same cores; with the other core busy, one
# 1321 x 31 least-squares solve of the step fit took 0.18 s instead of 1 ms.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
# NOTE: MPLBACKEND is deliberately NOT exported here.  ipykernel only selects
# the inline backend when MPLBACKEND is unset, so MPLBACKEND=Agg would silently
# remove every figure from the executed notebooks (book and nbval).  Headless
# plain-Python processes fall back to Agg on their own; bench.sh sets it.
