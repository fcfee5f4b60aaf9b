"""What a reader sees of a chapter's outputs is prose and numbers, not Python: no raw repr (a tuple of
arrays, a dict, a Deployment or any other object's repr), no "nan", and no Python literal True, False or
None standing in for a word, in any output the book shows (the cells it removes aside), in the form the
book renders it (HTML before plain text). The sources are fixed, not the outputs: the figure modules'
formatting and the command line's tables."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from speclib.tools.cli import main

BOOK = Path(__file__).resolve().parents[1] / "book"
SAMPLES = Path(__file__).resolve().parents[1] / "speclib" / "data" / "samples" / "public"

#: What the book renders of an output, richest first (myst-nb's priority for HTML).
RENDER_ORDER = ("application/vnd.jupyter.widget-view+json", "application/javascript", "text/html", "image/svg+xml",
                "image/png", "image/jpeg", "text/markdown", "text/latex", "text/plain")
#: Python showing through: literals, reprs, NaN.
PYTHON = re.compile(r"\bnan\b|\bNaN\b|\bTrue\b|\bFalse\b|\bNone\b|array\(|<speclib|Deployment\(|\{'")
#: English that the pattern above would take for Python ("None of the three ...").
WORDS = re.compile(r"\bNone of\b")


def shown_outputs(path: Path):
    """(cell index, the rendered text) of every output of ``path`` the book shows."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        tags = set(cell.get("metadata", {}).get("tags", ()))
        if cell["cell_type"] != "code" or tags & {"remove-cell", "remove-output"}:
            continue
        for out in cell.get("outputs", ()):
            if out.get("metadata", {}).get("scrapbook"):
                continue  # a glue record: shown only where the prose pastes it, by the prose's format
            if out.get("output_type") == "stream":
                yield i, "".join(out["text"])
                continue
            data = out.get("data", {})
            shown = next((k for k in RENDER_ORDER if k in data), None)
            if shown in ("text/html", "text/markdown", "text/latex", "text/plain"):
                yield i, "".join(data[shown])


def leaks(text: str) -> list:
    """The Python in ``text`` a reader would see, each with a little context."""
    found = []
    for m in PYTHON.finditer(WORDS.sub("", text)):
        found.append(text[max(0, m.start() - 40):m.end() + 20])
    return found


@pytest.mark.parametrize("name", sorted(p.stem for p in BOOK.glob("*.ipynb")))
def test_no_chapter_shows_python_where_a_reader_expects_words(name):
    found = [(i, leak) for i, text in shown_outputs(BOOK / f"{name}.ipynb") for leak in leaks(text)]
    assert found == [], f"{name} shows {found[:5]}"


@pytest.mark.parametrize("text", [
    "(array([1, 8, 6, 5]), array([1.043, 1.39 , 2.431, 2.272]))",
    "{'reproduced': 80, 'differs': 6}",
    "query bytes counted: False  r_attn = 1 everywhere: True",
    "  7   6   0.0000   nan  0.0000-0.0558",
    "Deployment(model='DeepSeek-V3', tp=8)",
])
def test_the_check_finds_what_the_book_used_to_show(text):
    assert leaks(text)


def test_none_of_is_english():
    assert leaks("None of the three documents a largest draft length") == []


def test_an_undefined_conditional_rate_prints_as_a_word(capsys):
    # the DFlash log: nothing past position 5 survived, so the rate at 7 given 6 is 0 / 0
    assert main(["acceptance", str(SAMPLES / "vllm-aeon7-6-qwen3.6-27b-dflash-k15.log")]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out and re.search(r"^\s+7\s+6\s+0\.0000\s+undefined\s", out, re.M)
