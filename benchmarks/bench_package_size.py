"""The size of speclib's parts (issue 20): lines of the presentation layer
(Python and JavaScript together, counted as ``wc -l`` counts them) against
its targets, beside the model it presents.

Targets: ``speclib/presentation`` at most 4,000 lines, of which
``speclib_live.js`` at most 700. Also printed, for each part, the lines that
are code (not blank, not a comment, not a docstring), so that a reader can see
the count is not met by deleting blank lines or documentation.

Also printed: the bytes of the data speclib ships, by folder, and of the
measured kernel tables (``speclib/data/silicon/``, imported by
``scripts/import_silicon_tables.py``) by file, so that a wheel's growth is
seen where it comes from.

Run from the repository root:  python benchmarks/bench_package_size.py
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "speclib"
PARTS = {"formulas (sympy)": ["formulas"], "presets": ["presets"], "core (numeric model)": ["core"],
         "silicon (measured tables)": ["silicon"],
         "evidence": ["evidence"], "presentation": ["presentation"], "tools (CLI, schedules)": ["tools"]}
TARGET, JS_TARGET = 4000, 700


def _docstring_lines(tree) -> set:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def count(path: Path) -> tuple[int, int]:
    """(all lines, code lines) of one file."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if path.suffix == ".py":
        doc = _docstring_lines(ast.parse(text))
        code = sum(1 for i, line in enumerate(lines, 1)
                   if line.strip() and not line.strip().startswith("#") and i not in doc)
    else:
        code = sum(1 for line in lines if line.strip() and not line.strip().startswith("//"))
    return len(lines), code


def main() -> None:
    print(f"{'part':26s} {'lines':>7s} {'code':>7s}")
    for label, folders in PARTS.items():
        files = [p for f in folders for p in sorted((ROOT / f).rglob("*"))
                 if p.suffix in (".py", ".js") and "generated" not in p.parts]
        total = [sum(x) for x in zip(*(count(p) for p in files))]
        print(f"{label:26s} {total[0]:7,d} {total[1]:7,d}")
    pres = [p for p in sorted((ROOT / "presentation").rglob("*")) if p.suffix in (".py", ".js")]
    lines = sum(count(p)[0] for p in pres)
    js = count(ROOT / "presentation" / "web" / "static" / "speclib_live.js")[0]
    print(f"\nspeclib/presentation: {lines:,d} lines (target <= {TARGET:,d}: {'met' if lines <= TARGET else 'missed'})")
    print(f"speclib_live.js: {js:,d} lines (target <= {JS_TARGET:,d}: {'met' if js <= JS_TARGET else 'missed'})")
    print("\nlargest presentation files:")
    for p in sorted(pres, key=lambda p: -count(p)[0])[:8]:
        print(f"  {count(p)[0]:5d}  {p.relative_to(ROOT.parent)}")
    data_sizes()


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def data_sizes() -> None:
    """The shipped data's bytes by folder, and the measured tables' by file."""
    data = ROOT / "data"
    print(f"\n{'speclib/data/':34s} {'KiB':>8s}")
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        print(f"  {folder.name + '/':32s} {_bytes(folder) / 1024:8,.0f}")
    print(f"  {'(all)':32s} {_bytes(data) / 1024:8,.0f}")
    silicon = data / "silicon"
    if silicon.is_dir():
        files = sorted(silicon.glob("*.json"))
        print(f"\nmeasured kernel tables: {len(files)} files, {_bytes(silicon) / 1024:,.0f} KiB")
        for p in files:
            print(f"  {p.stat().st_size / 1024:6,.0f} KiB  {p.name}")


if __name__ == "__main__":
    main()
