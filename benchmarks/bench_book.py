"""Benchmark the book: full build time, nbval time, and live-widget redraw times.

    python benchmarks/bench_book.py                 # everything
    python benchmarks/bench_book.py --widgets-only  # just the redraw medians
    python benchmarks/bench_book.py --skip-build --skip-nbval
    python benchmarks/bench_book.py --widgets-only --baseline /tmp/widgets-base   # against another checkout

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
  moves, each a step along one control as a reader's drag would make, and
  the median's processor time (which the other users' load adds little to).

``--baseline PATH`` times the widgets of another checkout of the repository
(``git worktree add /tmp/widgets-base <commit>``) in the same run: two worker
processes, one importing speclib from PATH and one from this checkout, time
each widget in turn (alternating which goes first), and the table gives both
and their ratio, so a load that changes during the run weighs on both.
``--rounds N`` repeats the moves N times, each on a widget built afresh (the
medians are over all of them).

Targets: build <= 180 s, nbval <= 120 s, a widget's median redraw <= 30 ms and
its worst <= 60 ms. Missing a target is reported, not an error; a failing
build or nbval run exits non-zero.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"build": 180.0, "nbval": 120.0, "redraw_ms": 30.0, "worst_ms": 60.0}
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


def _live_names() -> list:
    import matplotlib

    matplotlib.use("Agg")
    import speclib.presentation.figures  # noqa: F401 - fills the registry
    from speclib.presentation.definition import REGISTRY

    return [name for name, definition in REGISTRY.items() if definition.controls]


def time_widget(name: str, rounds: int = 1) -> dict:
    """Build widget ``name`` and time its redraws over the simulated moves, ``rounds`` times, each
    time on a widget built afresh (so that no round redraws from what an earlier one drew) (ms)."""
    from speclib.presentation.definition import REGISTRY

    definition = REGISTRY[name]
    times, cpu, builds = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        w = definition.widget()
        builds.append(time.perf_counter() - start)
        for move in _moves(definition):
            start, start_cpu = time.perf_counter(), time.process_time()
            w.update(**move)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    return {"median": statistics.median(times) * 1e3, "worst": max(times) * 1e3, "build": builds[0] * 1e3,
            "cpu": statistics.median(cpu) * 1e3}


def _worker() -> None:
    """``--worker``: say which speclib this process imports, then time each widget named on stdin."""
    import speclib

    names = _live_names()
    print(json.dumps({"speclib": str(Path(speclib.__file__).resolve().parents[1]), "names": names}), flush=True)
    for line in sys.stdin:
        name, rounds = line.split()
        print(json.dumps(time_widget(name, int(rounds))), flush=True)


class _Worker:
    """A worker process timing widgets with speclib imported from ``tree``."""

    def __init__(self, tree: Path):
        env = {**os.environ, "PYTHONPATH": str(tree), "MPLBACKEND": "Agg"}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"], cwd=tree, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = json.loads(self.proc.stdout.readline())
        if Path(hello["speclib"]) != tree.resolve():
            raise SystemExit(f"--baseline: the worker imported speclib from {hello['speclib']}, not {tree}")
        self.names = hello["names"]

    def time(self, name: str, rounds: int) -> dict:
        self.proc.stdin.write(f"{name} {rounds}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _verdict(result: dict) -> str:
    over = [what for what, key, target in (("median", "median", TARGETS["redraw_ms"]),
                                           ("worst", "worst", TARGETS["worst_ms"])) if result[key] > target]
    return f"  OVER target ({', '.join(over)})" if over else ""


def bench_widgets(rounds: int = 1) -> None:
    names = _live_names()
    print(f"\n[widgets] median redraw over {MOVES_PER_WIDGET * rounds} simulated moves (compute + draw + encode)")
    print(f"[widgets] before: {_load()}")
    print(f"    {'widget':<22} {'median':>9} {'worst':>9} {'cpu':>9} {'build':>9}")
    for name in names:
        r = time_widget(name, rounds)
        print(f"    {name:<22} {r['median']:7.1f} ms {r['worst']:7.1f} ms {r['cpu']:7.1f} ms {r['build']:7.0f} ms"
              f"{_verdict(r)}")
    print(f"[widgets] after: {_load()}  (targets: median <= {TARGETS['redraw_ms']:.0f} ms, "
          f"worst <= {TARGETS['worst_ms']:.0f} ms)")


def bench_widgets_against(baseline: Path, rounds: int = 1) -> None:
    """The widgets of ``baseline`` (another checkout) and of this one, timed in turn in one run."""
    base, ours = _Worker(baseline), _Worker(REPO)
    print(f"\n[widgets] median and worst redraw over {MOVES_PER_WIDGET * rounds} simulated moves "
          f"(compute + draw + encode), ms; cpu: the median's processor time (what the load does not add)")
    print(f"[widgets] baseline: {baseline}   ours: {REPO}")
    print(f"[widgets] before: {_load()}")
    print(f"    {'':<22} {'baseline':^28}  {'ours':^28}")
    print(f"    {'widget':<22} {'median':>8} {'worst':>8} {'cpu':>8}  {'median':>8} {'worst':>8} {'cpu':>8} {'ratio':>6}")
    ratios, cpu_ratios, missed = [], [], []
    try:
        for k, name in enumerate(ours.names):
            if name not in base.names:
                print(f"    {name:<22} (not in the baseline)")
                continue
            if k % 2:  # alternate which goes first
                o, b = ours.time(name, rounds), base.time(name, rounds)
            else:
                b, o = base.time(name, rounds), ours.time(name, rounds)
            ratio = o["median"] / b["median"]
            ratios.append(ratio)
            cpu_ratios.append(o["cpu"] / b["cpu"])
            verdict = _verdict(o)
            if verdict:
                missed.append(name)
            print(f"    {name:<22} {b['median']:8.1f} {b['worst']:8.1f} {b['cpu']:8.1f}  {o['median']:8.1f} "
                  f"{o['worst']:8.1f} {o['cpu']:8.1f} {ratio:6.2f}{verdict}")
    finally:
        base.close()
        ours.close()
    print(f"[widgets] after: {_load()}")
    print(f"[widgets] median ratio (ours / baseline): {statistics.median(ratios):.2f} in time, "
          f"{statistics.median(cpu_ratios):.2f} in processor time; targets (median <= "
          f"{TARGETS['redraw_ms']:.0f} ms, worst <= {TARGETS['worst_ms']:.0f} ms) "
          + ("met by every widget" if not missed else f"missed by {', '.join(missed)}"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-build", action="store_true", help="do not time the book build")
    parser.add_argument("--skip-nbval", action="store_true", help="do not time nbval")
    parser.add_argument("--widgets-only", action="store_true", help="only the widget redraw medians")
    parser.add_argument("--baseline", type=Path, metavar="PATH",
                        help="also time the widgets of the checkout at PATH, in the same run")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the simulated moves (default 1)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker()
        return 0
    if args.baseline is not None and not (args.baseline / "speclib" / "__init__.py").is_file():
        parser.error(f"--baseline: {args.baseline} is not a checkout of this repository (no speclib/__init__.py)")
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    ok = True
    if args.baseline is not None:
        bench_widgets_against(args.baseline, args.rounds)
    else:
        bench_widgets(args.rounds)
    if not (args.widgets_only or args.skip_nbval):
        ok &= bench_nbval()
    if not (args.widgets_only or args.skip_build):
        ok &= bench_build()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
