"""Start-up cost of the ``speclib`` command and of ``import speclib`` (issue 10).

A command people call in loops and scripts should answer at once, so the whole
process is timed, interpreter start included, against the floor any numpy
program pays: ``python -c "import numpy"``. Each of

    python -c "import numpy"                      (the baseline)
    python -c "import speclib"
    speclib gamma --model deepseek-v4-flash --hardware b200 --batch 64 --seq 4096 --alpha 0.75 --draft-cost 0.1
    speclib presets

is run ``REPEATS`` times, round-robin so that a change in the machine's load
hits all of them alike, and the medians are printed with their ratio to the
baseline's. Target: both commands within 2.5x the baseline. Also printed:
which heavy packages ``import speclib`` loads (sympy, matplotlib, ipywidgets
must not be among them). Exits non-zero if a target is missed.

Run from the repository root:  python benchmarks/bench_startup.py
(or ``bash scripts/bench.sh startup``).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 10
TARGET_RATIO = 2.5
HEAVY = ("sympy", "matplotlib", "ipywidgets", "IPython", "scipy")

PYTHON = sys.executable
SPECLIB = str(Path(sys.executable).with_name("speclib"))
GAMMA = [SPECLIB, "gamma", "--model", "deepseek-v4-flash", "--hardware", "b200", "--batch", "64", "--seq", "4096",
         "--alpha", "0.75", "--draft-cost", "0.1"]

CASES = {
    "python -c 'import numpy'": [PYTHON, "-c", "import numpy"],
    "python -c 'import speclib'": [PYTHON, "-c", "import speclib"],
    "speclib gamma ...": GAMMA,
    "speclib presets": [SPECLIB, "presets"],
}
BASELINE = "python -c 'import numpy'"
WITH_TARGET = ("speclib gamma ...", "speclib presets")


def _wall(cmd) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def _heavy_imports() -> list:
    probe = f"import sys, speclib; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([PYTHON, "-c", probe], check=True, capture_output=True, text=True).stdout
    return out.split()


def main() -> int:
    one, five, _ = os.getloadavg()
    print(f"load average {one:.2f} / {five:.2f} (1/5 min) on {os.cpu_count()} CPUs; {REPEATS} runs of each, round-robin")
    for cmd in CASES.values():  # warm the file cache once; not timed
        _wall(cmd)
    times = {name: [] for name in CASES}
    for _ in range(REPEATS):
        for name, cmd in CASES.items():
            times[name].append(_wall(cmd))
    base = statistics.median(times[BASELINE])
    failed = []
    print(f"\n{'command':<30} {'median':>9} {'min':>9} {'max':>9} {'x numpy':>8}  target")
    for name, values in times.items():
        med = statistics.median(values)
        ratio = med / base
        target = f"<= {TARGET_RATIO:g}x" if name in WITH_TARGET else ""
        if name in WITH_TARGET and ratio > TARGET_RATIO:
            failed.append(name)
            target += "  MISSED"
        print(f"{name:<30} {med * 1e3:7.0f} ms {min(values) * 1e3:6.0f} ms {max(values) * 1e3:6.0f} ms {ratio:7.2f}x  {target}")
    heavy = _heavy_imports()
    print(f"\nheavy packages loaded by 'import speclib': {', '.join(heavy) if heavy else 'none'}")
    if heavy:
        failed.append("import speclib loads " + ", ".join(heavy))
    if failed:
        print("MISSED: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
