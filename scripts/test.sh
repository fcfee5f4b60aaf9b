#!/usr/bin/env bash
# Run the full test suite: unit/property tests in tests/ and nbval on every
# notebook in book/ (each notebook is re-executed and its stored outputs are
# compared, after applying nbval_sanitize.cfg, which conftest.py applies to any
# nbval run that names no sanitizer: the bare `pytest --nbval book/` too). Files run in parallel on
# every core (pytest-xdist), each file on one worker. The notebooks nbval
# executed are kept in _build/.nbval-executed for the book build, which takes
# their outputs instead of executing them again while their code and inputs are
# unchanged (scripts/_nbval_executed.py).
#
#   bash scripts/test.sh [extra pytest args, e.g. -k expert -x -m "not slow"]
#   bash scripts/test.sh tests/test_cli.py book/pricing.ipynb [pytest args]   # those alone
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

# tests/ and book/, unless the arguments name files or folders of their own
# (`bash scripts/test.sh tests/test_cli.py -x` runs that file alone).
paths=()
named=0
for a in "$@"; do
    [ -e "${a%%::*}" ] && named=1
done
if [ "$named" = 0 ]; then
    for p in tests book; do
        [ -e "$p" ] && paths+=("$p")
    done
fi

set -x
exec python -m pytest --nbval --nbval-current-env -p scripts._nbval_executed \
    -n auto --dist loadfile \
    "${paths[@]}" "$@"
