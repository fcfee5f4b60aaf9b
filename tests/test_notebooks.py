"""The chapters as stored: what `pytest --nbval` and a reader opening them get.

The outputs are compared by nbval; here, what must not be stored with them.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


def test_the_book_has_notebooks():
    assert len(NOTEBOOKS) >= 20


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_timings_widget_state_or_errors(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    # ipywidgets' saved state: hundreds of kB of a widget's pictures that JupyterLab
    # does not draw from and the HTML build drops; it changes on every run.
    assert "widgets" not in nb["metadata"], f"{path.name} stores widget state (scripts/execute.sh drops it)"
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and c["source"]]
    timed = [i for i, c in enumerate(code) if "execution" in c.get("metadata", {})]
    assert timed == [], f"{path.name}: code cells {timed} store wall-clock execution times"
    errors = [i for i, c in enumerate(code) for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == [], f"{path.name}: code cells {errors} store an error"
    assert any(c.get("outputs") for c in code) or not code, f"{path.name} stores no outputs"
