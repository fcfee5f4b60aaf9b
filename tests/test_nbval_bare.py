"""The check the README promises, ``pytest --nbval book/``, run bare.

A float glued with all its digits prints differently in its last ones on
another CPU (numpy's SIMD paths add in different orders on AVX2 and AVX-512),
so a notebook whose outputs were stored on one machine would fail on another
unless nbval_sanitize.cfg is applied. The project's pytest configuration
(conftest.py) applies it to every nbval run that names no sanitizer of its own.
Here the bare command (no ``--nbval-sanitize-with``, no other option) runs on
two copies of one chapter: one whose stored glued floats have their last digits
changed as another CPU would print them, which passes, and one with a glued
number changed in its third significant digit, a real change, whose cell fails
while the others pass.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from nbval.plugin import get_sanitize_patterns

REPO = Path(__file__).resolve().parents[1]
#: A short chapter with glued floats printed with all their digits.
CHAPTER = REPO / "book" / "command_line.ipynb"
GLUE = "application/papermill.record/text/plain"
LONG_FLOAT = re.compile(r"-?\d+\.\d{9,}")


def glued_floats(nb: dict):
    """(cell index, output, value) of every glued float printed with more than 8 decimals."""
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            value = output.get("data", {}).get(GLUE)
            if isinstance(value, str) and LONG_FLOAT.fullmatch(value):
                yield i, output, value


def last_digits_changed(value: str) -> str:
    """``value`` a few units in the last place away, printed as Python prints it: what another CPU's sum in
    another order gives."""
    x = float(value)
    for _ in range(5):
        x = math.nextafter(x, math.inf)
    return repr(x)


def sanitized(text: str) -> str:
    cfg = (REPO / "nbval_sanitize.cfg").read_text(encoding="utf-8")
    for pattern, replacement in get_sanitize_patterns(cfg):
        text = re.sub(pattern, replacement, text)
    return text


def test_the_bare_nbval_command_passes_last_digit_noise_and_fails_a_real_change():
    nb = json.loads(CHAPTER.read_text(encoding="utf-8"))
    floats = list(glued_floats(nb))
    assert len(floats) >= 3, "the chapter no longer glues long floats: pick another"
    noisy = json.loads(json.dumps(nb))
    for (_, output, value), (_, _, _) in zip(glued_floats(noisy), floats):
        changed = last_digits_changed(value)
        # noise: a different number, the same to the 8 decimals the sanitizer keeps
        assert changed != value and float(changed) != float(value)
        assert abs(float(changed) / float(value) - 1) < 1e-14 and sanitized(changed) == sanitized(value)
        output["data"][GLUE] = changed
    real = json.loads(json.dumps(nb))
    cell, output, value = next(glued_floats(real))
    output["data"][GLUE] = repr(float(value) * 1.002)  # a change in the third significant digit

    (REPO / "_build").mkdir(exist_ok=True)
    # inside the repository, so that pytest finds its configuration as it does for book/
    folder = Path(tempfile.mkdtemp(prefix="nbval-bare-", dir=REPO / "_build"))
    try:
        for name, content in (("noisy.ipynb", noisy), ("real.ipynb", real)):
            (folder / name).write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        report = folder / "report.xml"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        done = subprocess.run([sys.executable, "-m", "pytest", "--nbval", str(folder / "noisy.ipynb"),
                               str(folder / "real.ipynb"), f"--junitxml={report}", "-q"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        outcome = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            which = "noisy" if "noisy" in case.get("classname") else "real"
            outcome[(which, case.get("name"))] = not failed
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    log = done.stdout[-3000:] + done.stderr[-2000:]
    code_cells = sum(c["cell_type"] == "code" for c in nb["cells"])
    noisy_cells = {name: ok for (nb_name, name), ok in outcome.items() if nb_name == "noisy"}
    real_cells = {name: ok for (nb_name, name), ok in outcome.items() if nb_name == "real"}
    assert len(noisy_cells) == len(real_cells) == code_cells, log
    assert all(noisy_cells.values()), log
    # nbval numbers the code cells
    number = sum(c["cell_type"] == "code" for c in nb["cells"][:cell])
    assert {name for name, ok in real_cells.items() if not ok} == {f"Cell {number}"}, log
    assert done.returncode == 1, log
