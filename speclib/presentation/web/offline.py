"""Files the book serves itself so that no page reaches another host.

Sphinx's default MathJax comes from a CDN; CI and many readers have no such
network. MathJax 3 (the version Sphinx 7 configures for) is installed from PyPI
(``django-static-mathjax``: MathJax's own ``es5`` build as package data, with
no dependencies) and the parts a page can load are copied next to the book.
"""
from __future__ import annotations

import shutil
from pathlib import Path

#: The MathJax component Sphinx 7 loads by default (TeX and MathML input,
#: CommonHTML output), now served from the book's _static/mathjax/.
MATHJAX_ENTRY = "tex-mml-chtml.js"

#: What tex-mml-chtml.js may fetch after it starts, relative to its folder:
#: TeX extensions it autoloads, its fonts, the accessibility and menu
#: components (the menu enables assistive MathML by default), and the speech
#: rule engine the accessibility explorer loads when a reader turns it on.
MATHJAX_PARTS = (MATHJAX_ENTRY, "input/tex/extensions", "output/chtml", "output/chtml.js", "a11y", "ui", "sre")


def mathjax_root() -> Path:
    """MathJax's ``es5`` folder inside the installed package."""
    try:
        import mathjax
    except ImportError as exc:  # pragma: no cover - exercised only on a broken install
        raise RuntimeError(
            "MathJax is not installed: `pip install django-static-mathjax` (listed in requirements.txt)"
        ) from exc
    root = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (root / MATHJAX_ENTRY).is_file():
        raise RuntimeError(f"{root / MATHJAX_ENTRY} is missing: the MathJax package is not the expected layout")
    return root


def copy_mathjax(destination) -> int:
    """Copy the MathJax files a page can load into ``destination``; returns
    the number of files copied (unchanged files are skipped)."""
    root, destination = mathjax_root(), Path(destination)
    copied = 0
    for part in MATHJAX_PARTS:
        source = root / part
        files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        for path in files:
            target = destination / path.relative_to(root)
            if target.exists() and target.stat().st_size == path.stat().st_size \
                    and target.stat().st_mtime >= path.stat().st_mtime:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied += 1
    return copied
