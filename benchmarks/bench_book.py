"""Benchmark the book: full build time, nbval time, and live-widget redraw times.

    python benchmarks/bench_book.py                 # everything
    python benchmarks/bench_book.py --widgets-only  # just the redraw medians
    python benchmarks/bench_book.py --skip-build --skip-nbval

Prints, with the machine's load average before and after (the 2-core machine
is shared, so the load is part of the result):

* the time of the book build as ``scripts/build_book.sh`` makes it, with every
  notebook executed (``scripts/_execute_book.py --fresh``, one per core, then
  ``jupyter-book build --all -W -n --keep-going`` reading their outputs; output
  to a temporary directory, so a build someone else is reading in ``_build`` is
  left alone);
* the time of ``pytest --nbval`` over ``book/``;
* for each live figure (a definition with controls, in
  :data:`speclib.presentation.definition.REGISTRY`), the median and worst
  redraw time (compute plus draw plus image encoding) over 20 simulated
  moves, each a step along one control as a reader's drag would make.

Targets (issue 3): build <= 180 s, nbval <= 120 s, redraw <= 100 ms. Missing a
target is reported, not an error; a failing build or nbval run exits non-zero.
"""
from __future__ import annotations

import argparse
import math
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
    """The build as scripts/build_book.sh makes it: every notebook executed (one
    per core, nothing reused) into a notebook cache, then Sphinx reading it."""
    with tempfile.TemporaryDirectory(prefix="speclib-book-") as out:
        cache = Path(out) / ".jupyter_cache"
        import yaml

        config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
        config.setdefault("execute", {}).update(execute_notebooks="cache", cache=str(cache))
        config_file = Path(out) / "_config.yml"
        config_file.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
        script = (f"{sys.executable} scripts/_execute_book.py {cache} --fresh && "
                  f"{_bin('jupyter-book')} build --all -W -n --keep-going --config {config_file} --path-output {out} .")
        return _timed("book build", ["bash", "-c", script], TARGETS["build"])


def bench_nbval() -> bool:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "--nbval-sanitize-with", "nbval_sanitize.cfg", "book"]
    return _timed("nbval", cmd, TARGETS["nbval"])


def _moves(definition) -> list:
    """MOVES_PER_WIDGET moves, as a reader's: each slider dragged in steps
    across its range, each menu and checkbox flipped, in turn."""
    from speclib.presentation.spec import Slider

    tracks = []
    for c in definition.controls:
        if isinstance(c, Slider):
            lo, hi = (math.log2(c.lo), math.log2(c.hi)) if c.scale == "log2" else (c.lo, c.hi)
            steps = [lo + (hi - lo) * (k + 0.5) / MOVES_PER_WIDGET for k in range(MOVES_PER_WIDGET)]
            values = [2.0 ** v if c.scale == "log2" else v for v in steps]
            tracks.append((c.name, [round(v) if c.integer else v for v in values]))
        else:
            tracks.append((c.name, list(c.values())[1:] + [c.value]))
    return [{tracks[i % len(tracks)][0]: tracks[i % len(tracks)][1][i % len(tracks[i % len(tracks)][1])]}
            for i in range(MOVES_PER_WIDGET)]


def bench_widgets() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import speclib.presentation.figures  # noqa: F401 - fills the registry
    from speclib.presentation.definition import REGISTRY

    print(f"\n[widgets] median redraw over {MOVES_PER_WIDGET} simulated moves (compute + draw + encode)")
    print(f"[widgets] before: {_load()}")
    print(f"    {'widget':<22} {'median':>9} {'worst':>9} {'build':>9}")
    for name, definition in REGISTRY.items():
        if not definition.controls:
            continue
        start = time.perf_counter()
        w = definition.widget()
        built = time.perf_counter() - start
        times = []
        for move in _moves(definition):
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
