#!/usr/bin/env bash
# Run every benchmarks/bench_*.py with the project's venv Python.
#
#   bash scripts/bench.sh            # every benchmark
#   bash scripts/bench.sh startup    # only benchmarks/bench_*startup*.py
#
# Each benchmark is run as a plain script from the repository root; the first
# failing benchmark makes this script exit non-zero (after running the rest).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
export MPLBACKEND=Agg   # plain scripts: never try to open a window

shopt -s nullglob
benches=(benchmarks/bench_*${1:-}*.py)
if [ ${#benches[@]} -eq 0 ]; then
    echo "No benchmarks found (benchmarks/bench_*.py); nothing to run."
    exit 0
fi

failed=()
for b in "${benches[@]}"; do
    echo "=== $b ==="
    start=$SECONDS
    if python "$b"; then
        echo "=== $b: ok ($((SECONDS - start)) s) ==="
    else
        echo "=== $b: FAILED ($((SECONDS - start)) s) ===" >&2
        failed+=("$b")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "Failed benchmarks: ${failed[*]}" >&2
    exit 1
fi
echo "All ${#benches[@]} benchmark(s) ran."
