"""The whole book as one PDF (``bash scripts/build_pdf.sh``).

Read back with poppler's tools (Debian's poppler-utils, installed by
scripts/browser_test.sh): every chapter of _toc.yml starts a page with its
title (the first heading of its source), every static figure of the
notebooks is in it at its own pixel size, and no maths is left as raw TeX.
Environment: SPECLIB_PDF (default ``<repo>/_build/pdf/speculative-decoding-economics.pdf``).
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
import yaml

from .conftest import REPO

PDF = Path(os.environ.get("SPECLIB_PDF", REPO / "_build" / "pdf" / "speculative-decoding-economics.pdf"))
#: Cells whose outputs the book does not show (Jupyter Book's tags).
HIDDEN_OUTPUT_TAGS = {"remove-cell", "remove-output"}


def toc_files() -> list:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part.get("chapters", [])]
    return files


def source_of(name: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (REPO / f"{name}{suffix}").is_file():
            return REPO / f"{name}{suffix}"
    raise FileNotFoundError(name)


def title_of(path: Path) -> str:
    """The first level-1 heading of a notebook's markdown cells or a MyST file."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    match = re.search(r"^# +(.+?)\s*$", text, re.MULTILINE)
    assert match, f"{path.name} has no '# ' heading"
    return match.group(1)


def normalise(text: str) -> str:
    """One space for any run of white space, and the straight quotes the sources type for the curly
    ones Sphinx's smart quotes print ("The sequel's numbers" is printed "The sequel’s numbers")."""
    text = unicodedata.normalize("NFKC", text).translate(QUOTES)
    return re.sub(r"\s+", " ", text).strip()


QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def static_figures() -> Counter:
    """Pixel sizes of the PNG figures the notebooks show, as (width, height) counts."""
    sizes = Counter()
    for name in toc_files():
        path = source_of(name)
        if path.suffix != ".ipynb":
            continue
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code" or HIDDEN_OUTPUT_TAGS & set(cell.get("metadata", {}).get("tags", [])):
                continue
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                if png:
                    head = base64.b64decode(png.replace("\n", "")[:64])
                    sizes[struct.unpack(">II", head[16:24])] += 1
    return sizes


def run(*cmd) -> str:
    if not shutil.which(cmd[0]):
        pytest.fail(f"{cmd[0]} not found: `apt-get install poppler-utils` (browser_test.sh does)")
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def pdf() -> Path:
    if not PDF.is_file():
        pytest.fail(f"no PDF at {PDF}: run `bash scripts/build_pdf.sh` (browser_test.sh does)")
    return PDF


@pytest.fixture(scope="module")
def pages(pdf) -> list:
    """The text of each page (pdftotext separates pages by form feeds)."""
    return [normalise(p) for p in run("pdftotext", "-enc", "UTF-8", str(pdf), "-").split("\f")]


def test_one_document_of_many_pages(pdf, pages):
    info = run("pdfinfo", str(pdf))
    count = int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))
    size = pdf.stat().st_size
    print(f"PDF: {count} pages, {size / 1e6:.1f} MB")
    assert count >= len(toc_files()), f"{count} pages for {len(toc_files())} chapters"
    assert size < 50e6


#: DejaVu Sans, the face the PDF is set in: a line's box (what pdftotext's -bbox
#: gives a word) is its ascent plus descent, 0.928 + 0.236 of the type's size.
DEJAVU_BOX_PER_POINT = 0.928 + 0.236


def test_body_type_is_a_book_s_size(pdf):
    """The PDF is made shorter by setting it closer, not by shrinking its type
    (scripts/_print_pdf.py scales the page): the most common word height, the
    body text's, is 9 pt type or more (the screen's 16 px prints at 9.4 pt)."""
    boxes = run("pdftotext", "-bbox", str(pdf), "-")
    heights = Counter(round(float(y1) - float(y0), 1) for y0, y1 in
                      re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)"', boxes))
    assert sum(heights.values()) > 10_000, "pdftotext -bbox found almost no words"
    body = heights.most_common(1)[0][0] / DEJAVU_BOX_PER_POINT
    print(f"PDF: body text set in {body:.1f} pt")
    assert body >= 9.0, f"the body text is set in {body:.1f} pt, under 9 pt"


@pytest.mark.parametrize("name", toc_files())
def test_every_chapter_starts_a_page_with_its_title(pages, name):
    title = normalise(title_of(source_of(name)))
    # Numbered chapters carry their number ("1. The expert tax").
    # pdftotext may read a stretched maths glyph of the page (a tall bar) before
    # the first line; what is not a letter or digit is passed over.
    heading = re.compile(rf"^[^\w(]*(\d+(\.\d+)*\.? )?{re.escape(title)}")
    starts = [i + 1 for i, page in enumerate(pages) if heading.match(page)]
    assert starts, f"no page starts with the title of {name}: {title!r}"


def test_every_static_figure_is_in_it(pdf):
    want = static_figures()
    assert sum(want.values()) > 0, "the notebooks show no PNG figure"
    listed = run("pdfimages", "-list", str(pdf)).splitlines()[2:]
    have = Counter((int(cols[3]), int(cols[4])) for cols in map(str.split, listed) if cols[2] == "image")
    missing = {f"{w}x{h}": n - have[(w, h)] for (w, h), n in want.items() if have[(w, h)] < n}
    print(f"PDF: {sum(have.values())} images; the notebooks show {sum(want.values())} static figures")
    assert not missing, f"figures missing from the PDF (pixel size: how many): {missing}"


def test_maths_is_typeset_not_raw_tex(pages):
    raw = [(i + 1, m.group(0)) for i, page in enumerate(pages) for m in re.finditer(r"\\[(\[]|\$\$|\\frac\{", page)]
    assert not raw, f"raw TeX in the PDF (page, text): {raw[:10]}"
