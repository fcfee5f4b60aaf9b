"""How long the book is to read: the words of prose in each chapter's markdown
cells, by part of the table of contents, and the PDF's pages when one has been
built (``bash scripts/build_pdf.sh``), against issue 50's targets.

A word is a whitespace-separated run of characters with a letter or digit in
it, counted in the markdown cells' source after dropping what a reader does
not read as prose: fenced code, displayed maths (``$$ ... $$``) and a
directive's option lines (``:label:``). Inline roles and glued numbers count as
the one word each shows.

Targets: prose <= 25,000 words; the PDF <= 150 pages. A miss is reported,
not an error.

Run from the repository root:  python benchmarks/bench_reading_length.py
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS_TARGET, PAGES_TARGET = 25_000, 150
PDF = ROOT / "_build" / "pdf" / "speculative-decoding-economics.pdf"


def prose_words(markdown: str) -> int:
    """The words of prose in one markdown cell's source."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not re.match(r"\s*:[\w-]+:", line))
    return sum(1 for w in text.split() if re.search(r"[A-Za-z0-9]", w))


def chapter_words(path: Path) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum(prose_words("".join(c["source"])) for c in cells if c["cell_type"] == "markdown")


def parts() -> list:
    """(caption, [chapter paths]) in the table of contents' order, the root first."""
    out, caption = [("Introduction", [ROOT / "book" / "introduction.ipynb"])], None
    for line in (ROOT / "_toc.yml").read_text(encoding="utf-8").splitlines():
        if m := re.match(r'\s*- caption:\s*"?([^"]+)"?', line):
            caption = m.group(1)
            out.append((caption, []))
        elif (m := re.match(r"\s*- file:\s*(\S+)", line)) and caption:
            path = ROOT / f"{m.group(1)}.ipynb"
            if path.exists():
                out[-1][1].append(path)
    return out


def pdf_pages():
    if not PDF.exists():
        return None
    try:
        info = subprocess.run(["pdfinfo", str(PDF)], capture_output=True, text=True, check=True).stdout
        return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    except (OSError, subprocess.CalledProcessError, AttributeError):
        return len(re.findall(rb"/Type\s*/Page[^s]", PDF.read_bytes()))


def main() -> None:
    total = 0
    for caption, chapters in parts():
        words = [(p.stem, chapter_words(p)) for p in chapters]
        subtotal = sum(w for _, w in words)
        total += subtotal
        print(f"{caption:45s} {subtotal:7,d}")
        for stem, w in words:
            print(f"    {stem:41s} {w:7,d}")
    print(f"\nprose in the chapters' markdown cells: {total:,d} words "
          f"(target <= {WORDS_TARGET:,d}: {'met' if total <= WORDS_TARGET else 'missed'})")
    pages = pdf_pages()
    if pages is None:
        print(f"the PDF: not built ({PDF.relative_to(ROOT)}; bash scripts/build_pdf.sh)")
    else:
        print(f"the PDF: {pages} pages (target <= {PAGES_TARGET}: {'met' if pages <= PAGES_TARGET else 'missed'})")


if __name__ == "__main__":
    main()
