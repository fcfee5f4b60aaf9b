"""pytest plugin, loaded by scripts/test.sh: keep the notebooks nbval executed.

``pytest --nbval`` runs every code cell of every notebook in a fresh kernel and
compares what it printed with the stored outputs. When every cell of a notebook
passed, this writes the notebook with the outputs the kernel sent (as received,
before nbval merges streams and sanitises them for its comparison) to
``_build/.nbval-executed/<path>``, with the key of everything else its outputs
depend on (scripts/_execute_book.py: ``inputs_key``) in its metadata. The book
build (scripts/_execute_book.py) then takes those outputs instead of executing
the notebook once more, but only where that key and the notebook's code are
still the ones it was executed with; CI runs the tests and then the build, so
its notebooks are executed once for both.

A notebook is not kept when a cell failed or was skipped, or when nbval met a
message it does not turn into an output (``clear_output``, display updates):
the build executes that one itself. Nothing here changes what nbval runs,
compares or reports.
"""
from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "_build" / ".nbval-executed"
METADATA_KEY = "speclib_executed_by"

_raw: dict = {}  # nodeid -> the outputs as received
_current: list = []  # the cell item running now
_cells: dict = {}  # notebook path -> {cell index: (outputs, passed)}


@functools.lru_cache(maxsize=1)
def _inputs_key() -> str:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from _execute_book import inputs_key
    finally:
        sys.path.pop(0)
    return inputs_key()


def pytest_configure(config):
    if not config.getoption("nbval", False) and not config.getoption("nbval_lax", False):
        return
    import nbval.plugin

    original = nbval.plugin.coalesce_streams

    def keep_then_coalesce(outputs):
        # runtest calls this first on the outputs it received, then on the stored ones
        if _current and _current[-1].nodeid not in _raw:
            _raw[_current[-1].nodeid] = copy.deepcopy(list(outputs))
        return original(outputs)

    nbval.plugin.coalesce_streams = keep_then_coalesce
    config.pluginmanager.register(_Keeper(), "speclib-nbval-executed")


class _Keeper:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        _current.append(item)
        try:
            yield
        finally:
            _current.pop()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" or not hasattr(item, "cell_num") or not hasattr(item.parent, "nb"):
            return
        path = Path(str(item.fspath))
        if item.cell_num == 0:  # whatever this run keeps of it, nothing of an earlier one
            (OUT / path.resolve().relative_to(REPO)).unlink(missing_ok=True)
        unhandled = "unhandled iopub msg" in (report.capstdout or "")
        outputs = _raw.pop(item.nodeid, None)
        cells = _cells.setdefault(path, {})
        cells[item.cell_num] = (outputs, report.passed and not unhandled and outputs is not None)
        code_cells = sum(1 for c in item.parent.nb.cells if c.cell_type == "code")
        if len(cells) == code_cells:
            _write(path, _cells.pop(path))


def _write(path: Path, cells: dict, out: Path = OUT):
    """``path`` with each code cell's outputs from ``cells`` ({index: (outputs,
    passed)}) under ``out``, if every cell passed."""
    target = out / path.resolve().relative_to(REPO)
    if not all(passed for _, passed in cells.values()):
        return
    nb = nbformat.read(path, as_version=4)
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs, _ = cells[count]
        count += 1
        cell.execution_count = count
        cell.outputs = [nbformat.from_dict(dict(o)) for o in outputs]
        for output in cell.outputs:  # nbval runs the cells without history: its results say 0
            if output.output_type == "execute_result":
                output.execution_count = count
    nb.metadata[METADATA_KEY] = {"tool": "nbval", "inputs": _inputs_key()}
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
