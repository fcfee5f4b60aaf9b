"""Execute the book's notebooks on every core into the build's jupyter-cache.

    python scripts/_execute_book.py CACHE_DIR [--workers N] [--fresh]

Run by scripts/build_book.sh before ``jupyter-book build``, which then reads
each notebook's outputs from CACHE_DIR (MyST-NB's ``cache`` execution mode)
instead of executing the notebooks one after another itself. Each notebook is
executed exactly as MyST-NB's ``force`` mode does (jupyter-cache's
``single_nb_execution``: a fresh kernel of the project's venv, the notebook's
folder as working directory, the timeout and allow_errors of _config.yml), in
up to N at once, the longest first.

Reuse is keyed twice, so that a build never shows outputs older than what made
them: jupyter-cache matches a notebook by the hash of its code cells and
kernelspec, and the whole cache is emptied unless the hash of everything else a
notebook's outputs depend on (speclib/, the requirements, pyproject.toml,
_config.yml, the kernel environment of scripts/_env.sh, the installed
distributions and the Python version) equals the one it was filled with.

Where scripts/test.sh's nbval run already executed a notebook (it keeps each
one whose cells all passed in _build/.nbval-executed, see
scripts/_nbval_executed.py) and both keys are still the ones of that run, its
outputs are taken instead of executing it again.

--fresh empties the cache and executes every notebook, whatever was kept.

Any exception in a cell stops with the cell's traceback and exit status 1
(nothing of that notebook is cached).

    python scripts/_execute_book.py CACHE_DIR --export DIR

writes each notebook with its cached outputs to DIR/<path>, as MyST-NB's force
mode leaves the executed notebooks in _build/jupyter_execute (its cache mode
writes the source notebooks there instead, with their stored outputs);
scripts/build_pdf.sh builds the PDF from those copies.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
import yaml

REPO = Path(__file__).resolve().parents[1]
#: Everything besides the notebooks' own code that their outputs depend on.
INPUT_FILES = ("requirements.txt", "pyproject.toml", "_config.yml", "scripts/_env.sh")
INPUT_TREES = ("speclib",)
KEY_FILE = "speclib-inputs.sha256"
#: Where scripts/_nbval_executed.py keeps the notebooks nbval executed.
KEPT = REPO / "_build" / ".nbval-executed"
#: Wall time of each notebook's last execution, to start the longest first.
TIMES_FILE = "speclib-notebook-seconds.json"


def toc_notebooks() -> list:
    """The notebooks of _toc.yml, relative to the repository."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    walk(toc.get("sections"))
    return [Path(f"{f}.ipynb") for f in files if (REPO / f"{f}.ipynb").is_file()]


def inputs_key(root: Path = REPO) -> str:
    """sha256 of what the notebooks' outputs depend on besides their code cells
    (the files under ``root``, the venv's distributions, Python, the kernels' environment)."""
    h = hashlib.sha256()

    def add(label: str, data: bytes):
        h.update(label.encode() + b"\0" + hashlib.sha256(data).digest())

    for name in INPUT_FILES:
        path = root / name
        add(name, path.read_bytes() if path.is_file() else b"(missing)")
    for tree in INPUT_TREES:
        for path in sorted((root / tree).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                add(str(path.relative_to(root)), path.read_bytes())
    site = Path(nbformat.__file__).resolve().parents[1]
    add("distributions", "\n".join(sorted(p.name for p in site.glob("*.dist-info"))).encode())
    add("python", sys.version.encode())
    for var in ("PYTHONHASHSEED", "JUPYTER_PATH"):
        add(var, os.environ.get(var, "").encode())
    return h.hexdigest()


def execution_settings() -> dict:
    execute = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8")).get("execute", {})
    return {"timeout": execute.get("timeout", 30), "allow_errors": bool(execute.get("allow_errors", False))}


def execute(path: str, timeout, allow_errors: bool):
    """One notebook, as MyST-NB's force mode executes it (in a worker process)."""
    from jupyter_cache.executors.utils import single_nb_execution

    # A kernel picks its ports free and binds them a moment later: on a busy machine another
    # process can take one in between, and the kernel dies before it replies ("Address already
    # in use"). That is the machine's race, not the notebook's: start a fresh kernel, twice at most.
    for attempt in range(3):
        nb = nbformat.read(REPO / path, as_version=4)
        try:
            result = single_nb_execution(nb, cwd=str((REPO / path).parent), timeout=timeout,
                                         allow_errors=allow_errors, meta_override=True)
        except RuntimeError as died:
            if "Kernel died before replying" not in str(died) or attempt == 2:
                raise
            continue
        return path, result.nb, result.time, result.exc_string if result.err is not None else None


def kept_by_nbval(cache, path: Path, nb, key: str, kept_dir: Path = KEPT):
    """The notebook as test.sh's nbval run executed it, if that was with the
    same inputs and the same code; else None."""
    kept_file = kept_dir / path
    if not kept_file.is_file():
        return None
    kept = nbformat.read(kept_file, as_version=4)
    if kept.metadata.pop("speclib_executed_by", {}).get("inputs") != key:
        return None
    if cache.create_hashed_notebook(kept)[1] != cache.create_hashed_notebook(nb)[1]:
        return None
    return kept


def export(cache, out: Path) -> int:
    """Each notebook of the toc with its outputs from the cache, under ``out``."""
    missing = []
    for path in toc_notebooks():
        nb = nbformat.read(REPO / path, as_version=4)
        try:
            _, merged = cache.merge_match_into_notebook(nb)
        except KeyError:
            missing.append(str(path))
            continue
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(merged, out / path)
    if missing:
        print(f"[execute] no outputs in the cache for {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", type=Path, help="the jupyter-cache folder jupyter-book build reads")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="notebooks executed at once (default: one per core)")
    parser.add_argument("--fresh", action="store_true",
                        help="execute every notebook, reusing nothing (the cache is emptied)")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help="write the executed notebooks (source + cached outputs) under DIR; execute nothing")
    args = parser.parse_args(argv)

    from jupyter_cache import get_cache

    if args.export is not None:
        return export(get_cache(str(args.cache)), args.export)
    from jupyter_cache.base import CacheBundleIn

    key = inputs_key()
    key_file = args.cache / KEY_FILE
    if args.cache.exists() and args.fresh:
        shutil.rmtree(args.cache)
    elif args.cache.exists() and (not key_file.is_file() or key_file.read_text().strip() != key):
        print(f"[execute] inputs changed since {args.cache} was filled: emptying it", file=sys.stderr)
        shutil.rmtree(args.cache)
    args.cache.mkdir(parents=True, exist_ok=True)
    cache = get_cache(str(args.cache))
    key_file.write_text(key + "\n")
    times_file = args.cache.parent / TIMES_FILE
    try:
        seconds = json.loads(times_file.read_text())
    except (OSError, ValueError):
        seconds = {}

    todo, reused = [], []
    for path in toc_notebooks():
        nb = nbformat.read(REPO / path, as_version=4)
        try:
            cache.match_cache_notebook(nb)
            continue
        except KeyError:
            pass
        kept = None if args.fresh else kept_by_nbval(cache, path, nb, key)
        if kept is not None:
            cache.cache_notebook_bundle(CacheBundleIn(kept, str(REPO / path), data={"executed_by": "nbval"}),
                                        check_validity=False, overwrite=True)
            reused.append(str(path))
        else:
            todo.append(str(path))
    notebooks = len(toc_notebooks())
    if reused:
        print(f"[execute] {len(reused)} notebooks' outputs taken from test.sh's nbval run "
              f"(same code, same inputs)", file=sys.stderr)
    if not todo:
        print(f"[execute] all {notebooks} notebooks' outputs are current in {args.cache}", file=sys.stderr)
        return 0
    # Longest first (by the last run, else by size), so that no core idles at the end.
    todo.sort(key=lambda p: (-seconds.get(p, 0.0), -(REPO / p).stat().st_size))
    workers = max(1, min(args.workers, len(todo)))
    print(f"[execute] executing {len(todo)} of {notebooks} notebooks, {workers} at once ...", file=sys.stderr)
    settings = execution_settings()
    start = time.perf_counter()
    failed = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(execute, p, settings["timeout"], settings["allow_errors"]) for p in todo]
        for future in concurrent.futures.as_completed(futures):
            path, nb, took, error = future.result()
            if error is not None:
                failed.append(path)
                print(f"[execute] {path}: a cell failed\n{error}", file=sys.stderr)
                continue
            seconds[path] = round(took, 2)
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(REPO / path), data={"execution_seconds": took}),
                                        check_validity=False, overwrite=True)
            print(f"[execute] {path}: {took:.1f} s", file=sys.stderr)
    times_file.write_text(json.dumps(seconds, indent=1, sort_keys=True) + "\n")
    print(f"[execute] {len(todo) - len(failed)} notebooks executed in {time.perf_counter() - start:.1f} s "
          f"(sum of their times {sum(seconds.get(p, 0.0) for p in todo if p not in failed):.1f} s)",
          file=sys.stderr)
    if failed:
        print(f"[execute] FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
