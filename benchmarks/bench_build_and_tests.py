"""Time the README's commands from a fresh clone: scripts/test.sh and scripts/build_book.sh.

    python benchmarks/bench_build_and_tests.py                     # a fresh clone of HEAD
    python benchmarks/bench_build_and_tests.py --baseline c4539dd  # ... and of another commit, same session
    python benchmarks/bench_build_and_tests.py --ci                # ... then the other CI stages too

Each commit is cloned (committed work only) into a temporary folder, and its
stages are timed one after another, the commits' runs of one stage back to
back, so that a busy machine weighs on both alike (the 2-core machine is
shared: the load average is printed before and after every figure):

* ``venv``: creating .venv and installing the requirements (what any script
  does first on a fresh clone);
* ``build_book.sh``: the whole book, every notebook executed (nothing to reuse
  yet); its notebook and Sphinx parts where its log tells them;
* ``test.sh``: the full suite (pytest + nbval), on the venv just made;
* ``build_book.sh after test.sh``: the book again from an empty notebook cache,
  as CI builds it right after the tests;
* ``build_book.sh unchanged``: again with nothing changed;
* with ``--ci``: ``build_pdf.sh`` and ``browser_test.sh`` (Chromium from
  Debian must be installed already).

A fresh clone's test.sh or build_book.sh is ``venv`` plus its own line; both
are printed, against the targets (<= 120 s each; CI <= 600 s). Missing a
target is reported, not an error; a failing command exits non-zero.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"test.sh": 120.0, "build_book.sh": 120.0, "ci": 600.0}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}/{five:.2f}/{fifteen:.2f}"


def clean_env() -> dict:
    """The caller's environment without its venv, so that each clone makes its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "JUPYTER_PATH", "MPLBACKEND", "PYTHONPATH", "REPO_ROOT")}
    venv_bin = os.environ.get("VIRTUAL_ENV")
    if venv_bin:
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                      if not p.startswith(venv_bin))
    return env


def clone(rev: str, into: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "--quiet", rev], check=True)
    return into


def parts(stage: str, log: str) -> str:
    """What the stage's own log says about its parts."""
    found = []
    m = re.search(r"notebooks (\d+) s, Sphinx (\d+) s", log)
    if m:
        found.append(f"notebooks {m.group(1)} s, Sphinx {m.group(2)} s")
    else:
        executed = [float(t) for t in re.findall(r"Executed notebook in ([\d.]+) seconds", log)]
        if executed:
            found.append(f"notebooks {sum(executed):.0f} s (one after another)")
    m = re.search(r"(\d+) notebooks' outputs taken from test\.sh's nbval run", log)
    if m:
        found.append(f"{m.group(1)} notebooks from nbval")
    if stage == "test.sh":
        m = re.search(r"(\d+) passed.* in ([\d.]+)s", log)
        if m:
            found.append(f"pytest {float(m.group(2)):.0f} s, {m.group(1)} passed")
    groups = re.findall(r"(\d+) passed(?:, \d+ deselected)? in ([\d.]+)s", log) if stage == "browser_test.sh" else []
    if groups:
        found.append("groups " + ", ".join(f"{float(s):.0f} s ({n} passed)" for n, s in groups))
    return "; ".join(found)


def run(stage: str, cmd: list, cwd: Path, env: dict) -> dict:
    before = load()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (cwd.parent / f"{cwd.name}-{re.sub(r'[^a-z_.]+', '-', stage)}.log").write_text(log)
    if proc.returncode != 0:
        print("\n".join(f"    {line}" for line in log.strip().splitlines()[-30:]))
    return {"seconds": seconds, "ok": proc.returncode == 0, "load": f"{before} -> {load()}",
            "parts": parts(stage, log)}


STAGES = [
    ("venv", ["bash", "-c", "source scripts/_env.sh"]),
    ("build_book.sh", ["bash", "scripts/build_book.sh"]),
    ("test.sh", ["bash", "scripts/test.sh"]),
    ("build_book.sh after test.sh", ["bash", "-c", "rm -rf _build/.jupyter_cache && bash scripts/build_book.sh"]),
    ("build_book.sh unchanged", ["bash", "scripts/build_book.sh"]),
]
CI_STAGES = [
    ("build_pdf.sh", ["bash", "scripts/build_pdf.sh"]),
    ("browser_test.sh", ["bash", "scripts/browser_test.sh"]),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD", help="the commit to time (default HEAD)")
    parser.add_argument("--baseline", help="another commit to time in the same session, stage by stage")
    parser.add_argument("--ci", action="store_true", help="also build_pdf.sh and browser_test.sh")
    parser.add_argument("--keep", action="store_true", help="keep the clones (and each stage's log)")
    args = parser.parse_args(argv)

    revs = [r for r in (args.baseline, args.rev) if r]
    work = Path(tempfile.mkdtemp(prefix="speclib-bench-"))
    env = clean_env()
    results = {rev: {} for rev in revs}
    ok = True
    print(f"[bench] {os.cpu_count()} CPUs, load average {load()} (1/5/15 min); clones in {work}")
    try:
        clones = {rev: clone(rev, work / f"clone-{i}") for i, rev in enumerate(revs)}
        for stage, cmd in STAGES + (CI_STAGES if args.ci else []):
            for rev in revs:
                r = run(stage, cmd, clones[rev], env)
                results[rev][stage] = r
                ok &= r["ok"]
                status = "ok" if r["ok"] else "FAILED"
                print(f"[bench] {rev:>10} {stage:<28} {r['seconds']:6.1f} s  {status:<6} load {r['load']}"
                      f"{'  (' + r['parts'] + ')' if r['parts'] else ''}", flush=True)
    finally:
        if args.keep:
            print(f"[bench] clones and logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print("\n[bench] from a fresh clone (venv + the command):")
    for rev in revs:
        r = results[rev]
        if "venv" not in r:
            continue
        for command in ("test.sh", "build_book.sh"):
            if command in r:
                total = r["venv"]["seconds"] + r[command]["seconds"]
                verdict = "within" if total <= TARGETS[command] else "OVER"
                print(f"    {rev:>10} {command:<14} {total:6.1f} s ({verdict} the {TARGETS[command]:.0f} s target)")
        ci = ["venv", "test.sh", "build_book.sh after test.sh"] + ([s for s, _ in CI_STAGES] if args.ci else [])
        if all(s in r for s in ci):
            total = sum(r[s]["seconds"] for s in ci)
            label = "CI stages" if args.ci else "test.sh then build_book.sh"
            print(f"    {rev:>10} {label:<14} {total:6.1f} s"
                  + (f" ({'within' if total <= TARGETS['ci'] else 'OVER'} the {TARGETS['ci']:.0f} s target;"
                     " chromium's install overlaps them in CI)" if args.ci else ""))
    print(f"[bench] load average at the end {load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
