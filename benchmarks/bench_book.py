"""Benchmark the book: full build time, nbval time, and live-widget redraw times.

    python benchmarks/bench_book.py                 # everything
    python benchmarks/bench_book.py --widgets-only  # just the redraw medians
    python benchmarks/bench_book.py --skip-build --skip-nbval

Prints, with the machine's load average before and after (the 2-core machine
is shared, so the load is part of the result):

* the time of ``jupyter-book build --all -W -n --keep-going`` with every
  notebook executed (output to a temporary directory, so a build someone else
  is reading in ``_build`` is left alone);
* the time of ``pytest --nbval`` over ``book/``;
* for each live widget in :data:`speclib.widgets.FACTORIES`, the median and
  worst redraw time (compute plus draw plus image encoding) over 20 simulated
  slider moves, each a step along one control as a reader's drag would make.

Targets (issue 3): build <= 180 s, nbval <= 120 s, redraw <= 100 ms. Missing a
target is reported, not an error; a failing build or nbval run exits non-zero.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"build": 180.0, "nbval": 120.0, "redraw_ms": 100.0}
MOVES_PER_WIDGET = 20


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} CPUs"


def _kernel_env() -> dict:
    """The environment scripts/_env.sh sets for notebook kernels. MPLBACKEND
    is removed: with it set, the kernels would not use the inline backend and
    the executed notebooks would lose their figures."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    venv_share = REPO / ".venv" / "share" / "jupyter"
    if venv_share.is_dir() and str(venv_share) not in env.get("JUPYTER_PATH", ""):
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(venv_share), env.get("JUPYTER_PATH")]))
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def _bin(name: str) -> str:
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def _timed(label: str, cmd: list, target: float) -> bool:
    print(f"\n[{label}] {' '.join(cmd)}")
    print(f"[{label}] before: {_load()}")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=_kernel_env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    print("\n".join(f"    {line}" for line in tail))
    print(f"[{label}] after: {_load()}")
    status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
    verdict = "within" if elapsed <= target else "OVER"
    print(f"[{label}] {status}: {elapsed:.1f} s ({verdict} the {target:.0f} s target)")
    return proc.returncode == 0


def bench_build() -> bool:
    with tempfile.TemporaryDirectory(prefix="speclib-book-") as out:
        cmd = [_bin("jupyter-book"), "build", "--all", "-W", "-n", "--keep-going", "--path-output", out, "."]
        return _timed("book build", cmd, TARGETS["build"])


def bench_nbval() -> bool:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "--nbval-sanitize-with", "nbval_sanitize.cfg", "book"]
    return _timed("nbval", cmd, TARGETS["nbval"])


def _drag(lo, hi, n=MOVES_PER_WIDGET, log=False):
    """n positions of a slider dragged from lo to hi."""
    import numpy as np

    values = np.geomspace(lo, hi, n) if log else np.linspace(lo, hi, n)
    return [float(v) for v in values]


def _moves():
    """Twenty moves per widget: drags along its sliders, flips of its toggles
    and menus (each listed value is one move)."""
    seq = _drag(512, 131_072, log=True)
    alpha = _drag(0.30, 0.95)
    drafter = _drag(0.0, 0.40)

    def alternate(*tracks):
        out = []
        for i in range(MOVES_PER_WIDGET):
            name, values = tracks[i % len(tracks)]
            out.append({name: values[i % len(values)]})
        return out

    return {
        "expert_tax": alternate(("experts", list(range(64, 512, 24))), ("top_k", [2, 4, 6, 8, 10, 12, 14, 16, 3, 5])),
        "expert_tax_log": alternate(("experts", list(range(64, 512, 24))), ("top_k", [2, 4, 6, 8, 10, 12, 14, 16])),
        "attention_table": alternate(("variant", ["hca", "csa", "indexer", "mla"]), ("query_bytes", [False, True])),
        "attention_width": alternate(("S", seq)),
        "compressed_attention": alternate(("hca_ratio", [8, 16, 32, 64, 256, 512, 128]), ("csa_top_k", [128, 256, 1024, 2048, 512])),
        "ledger": alternate(("S", seq), ("c_draft", drafter)),
        "optimal_gamma": alternate(("alpha", alpha), ("S", seq), ("c_draft", drafter)),
        "speedup_curves": alternate(("alpha", alpha), ("S", seq), ("c_draft", drafter)),
        "gamma_map": alternate(("alpha", alpha), ("c_draft", drafter)),
        # the chapters on the sequel: sliders dragged, menus flipped
        "drafter_cost": alternate(("gamma", [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1])),
        "drafter_crossover": alternate(("roofline", ["per-component", "aggregate"]),
                                       ("hardware", ["H200", "B200", "MI355X", "GB300"])),
        "hybrid_intensity": alternate(("S", seq)),
        "kv_state_bytes": alternate(("full_attention_layers", [4, 5, 8, 10, 20, 40, 20, 10, 8, 5])),
        "concurrency_gamma": alternate(("roofline", ["per-component", "aggregate"]),
                                       ("acceptance", ["geometric", "measured"])),
        "concurrency_throughput": alternate(("roofline", ["per-component", "aggregate"])),
        "throughput_tpot": alternate(("roofline", ["per-component", "aggregate"]),
                                     ("acceptance", ["geometric", "measured"])),
        "pricing_ratio": alternate(("S", seq)),
        "pricing_gamma": alternate(("drafter", ["mtp", "dflash"]), ("acceptance", ["geometric", "measured"])),
    }


def bench_widgets() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from speclib import widgets

    print(f"\n[widgets] median redraw over {MOVES_PER_WIDGET} simulated moves (compute + draw + encode)")
    print(f"[widgets] before: {_load()}")
    moves = _moves()
    missing = set(widgets.FACTORIES) - set(moves)
    if missing:
        raise SystemExit(f"no moves defined for widget(s): {', '.join(sorted(missing))}")
    print(f"    {'widget':<22} {'median':>9} {'worst':>9} {'build':>9}")
    for name, factory in widgets.FACTORIES.items():
        start = time.perf_counter()
        w = factory()
        built = time.perf_counter() - start
        times = []
        for move in moves[name]:
            start = time.perf_counter()
            w.update(**move)
            times.append(time.perf_counter() - start)
        median = statistics.median(times) * 1e3
        flag = "" if median <= TARGETS["redraw_ms"] else "  OVER target"
        print(f"    {name:<22} {median:7.1f} ms {max(times) * 1e3:7.1f} ms {built * 1e3:7.0f} ms{flag}")
    print(f"[widgets] after: {_load()}  (target: median <= {TARGETS['redraw_ms']:.0f} ms)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-build", action="store_true", help="do not time the book build")
    parser.add_argument("--skip-nbval", action="store_true", help="do not time nbval")
    parser.add_argument("--widgets-only", action="store_true", help="only the widget redraw medians")
    args = parser.parse_args(argv)
    ok = True
    bench_widgets()
    if not (args.widgets_only or args.skip_nbval):
        ok &= bench_nbval()
    if not (args.widgets_only or args.skip_build):
        ok &= bench_build()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
