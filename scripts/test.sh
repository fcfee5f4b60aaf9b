#!/usr/bin/env bash
# Run the full test suite: unit/property tests in tests/ and nbval on every
# notebook in book/ (each notebook is re-executed and its stored outputs are
# compared, after applying nbval_sanitize.cfg). Files run in parallel on
# every core (pytest-xdist), each file on one worker. The notebooks nbval
# executed are kept in _build/.nbval-executed for the book build, which takes
# their outputs instead of executing them again while their code and inputs are
# unchanged (scripts/_nbval_executed.py).
#
#   bash scripts/test.sh [extra pytest args, e.g. -k expert -x -m "not slow"]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

paths=()
for p in tests book; do
    [ -e "$p" ] && paths+=("$p")
done

set -x
exec python -m pytest --nbval --nbval-current-env -p scripts._nbval_executed \
    --nbval-sanitize-with nbval_sanitize.cfg \
    -n auto --dist loadfile \
    "${paths[@]}" "$@"
