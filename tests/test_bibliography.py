"""The bibliography as a reader sees it: each entry formatted by pybtex's plain style, the one
sphinxcontrib-bibtex uses for the book, reads as plain text: no LaTeX command, maths or brace
left over, and no phrase printed twice (a note that repeats the entry's type or its year)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from pybtex.database import parse_file
from pybtex.plugin import find_plugin

BIB = Path(__file__).resolve().parents[1] / "references.bib"


def rendered() -> dict:
    data = parse_file(str(BIB))
    style = find_plugin("pybtex.style.formatting", "plain")()
    backend = find_plugin("pybtex.backends", "text")()
    return {entry.key: entry.text.render(backend) for entry in style.format_entries(data.entries.values())}


def leftovers(text: str) -> list:
    """What in a rendered entry is LaTeX a reader should not see, or a phrase said twice."""
    found = [m.group(0) for m in re.finditer(r"\\[A-Za-z]+|\$|[{}]", text)]
    for sentence in re.split(r"\.\s+", text):
        words = [w.strip(".,;:()") for w in sentence.split()]
        for n in range(1, 4):  # a phrase of one to three words, printed twice in a row ("2026, 2026")
            for i in range(len(words) - 2 * n + 1):
                a, b = words[i:i + n], words[i + n:i + 2 * n]
                if a == b and not all(w.isdigit() and len(w) < 4 for w in a):
                    found.append(" ".join(a + b))
    # two sentences that open alike ("Blog post, June 2026. Blog post, 22 June 2026.")
    openings = [tuple(s.split()[:2]) for s in re.split(r"\.\s+", text) if len(s.split()) >= 2]
    found += [" ".join(o) for o in set(openings) if openings.count(o) > 1]
    return found


ENTRIES = rendered()


def test_the_bibliography_has_entries():
    assert len(ENTRIES) > 30


@pytest.mark.parametrize("key", sorted(ENTRIES))
def test_an_entry_reads_as_plain_text(key):
    assert leftovers(ENTRIES[key]) == [], ENTRIES[key]


@pytest.mark.parametrize("text", [
    r"Fergus Finn. Adaptive speculative decoding. Blog post, June 2026. Blog post, 22 June 2026.",
    "A pull request, merged 13 March 2026, 2026.",
    r"Engine arguments: \texttt –gpu-memory-utilization.",
    "+38% at 8, $-37$% at 32.",
])
def test_the_check_finds_what_the_reader_should_not_see(text):
    assert leftovers(text) != []
