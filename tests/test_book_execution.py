"""What the book build reuses instead of executing a notebook (scripts/_execute_book.py,
scripts/_nbval_executed.py): never outputs older than their sources."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import _execute_book  # noqa: E402
import _nbval_executed  # noqa: E402


def _tree(root: Path):
    (root / "speclib" / "data").mkdir(parents=True)
    (root / "speclib" / "model.py").write_text("A = 1\n")
    (root / "speclib" / "data" / "chips.json").write_text('{"b200": 1}\n')
    for name in _execute_book.INPUT_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{name}\n")


def test_the_inputs_key_changes_with_anything_the_outputs_depend_on(tmp_path):
    _tree(tmp_path)
    key = _execute_book.inputs_key(tmp_path)
    assert _execute_book.inputs_key(tmp_path) == key
    # byte-code and caches are not inputs
    (tmp_path / "speclib" / "__pycache__").mkdir()
    (tmp_path / "speclib" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    assert _execute_book.inputs_key(tmp_path) == key
    for changed, text in (("speclib/model.py", "A = 2\n"), ("speclib/data/chips.json", '{"b200": 2}\n'),
                          ("requirements.txt", "numpy==9\n"), ("_config.yml", "execute: {timeout: 1}\n"),
                          ("scripts/_env.sh", "export X=1\n"), ("speclib/new.py", "")):
        before = (tmp_path / changed).read_text() if (tmp_path / changed).exists() else None
        (tmp_path / changed).write_text(text)
        assert _execute_book.inputs_key(tmp_path) != key, changed
        if before is None:
            (tmp_path / changed).unlink()
        else:
            (tmp_path / changed).write_text(before)
        assert _execute_book.inputs_key(tmp_path) == key, changed


def _notebook(*sources):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell("# a chapter")] + [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def test_a_notebook_nbval_executed_is_taken_only_with_the_same_code_and_inputs(tmp_path):
    from jupyter_cache import get_cache

    cache = get_cache(str(tmp_path / "cache"))
    source = _notebook("x = 1", "print(x)")
    kept = _notebook("x = 1", "print(x)")
    kept.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    kept.metadata["speclib_executed_by"] = {"tool": "nbval", "inputs": "KEY"}
    (tmp_path / "kept" / "book").mkdir(parents=True)
    nbformat.write(kept, tmp_path / "kept" / "book" / "x.ipynb")

    def taken(nb, key="KEY", name="x.ipynb"):
        return _execute_book.kept_by_nbval(cache, Path("book") / name, nb, key, kept_dir=tmp_path / "kept")

    got = taken(source)
    assert got is not None and got.cells[2].outputs[0].text == "1\n"
    assert taken(source, key="OTHER") is None  # speclib, the requirements, ... changed since
    assert taken(_notebook("x = 2", "print(x)")) is None  # the code changed since
    assert taken(_notebook("x = 1", "print(x)", "x")) is None  # a cell added since
    assert taken(source, name="y.ipynb") is None  # never executed by nbval


def test_nbval_outputs_are_kept_only_when_every_cell_passed(tmp_path):
    path = REPO / "book" / "conclusion.ipynb"
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    outputs = [[nbformat.v4.new_output("stream", name="stdout", text=f"cell {i}\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": f"{i}"}, execution_count=0)]
               for i in range(len(code))]
    target = tmp_path / "book" / "conclusion.ipynb"

    _nbval_executed._write(path, {i: (o, i != len(code) - 1) for i, o in enumerate(outputs)}, out=tmp_path)
    assert not target.exists()

    _nbval_executed._write(path, {i: (o, True) for i, o in enumerate(outputs)}, out=tmp_path)
    kept = nbformat.read(target, as_version=4)
    kept_code = [c for c in kept.cells if c.cell_type == "code"]
    assert [c.source for c in kept_code] == [c.source for c in code]
    assert [c.execution_count for c in kept_code] == list(range(1, len(code) + 1))
    for i, cell in enumerate(kept_code):
        assert cell.outputs[0].text == f"cell {i}\n"
        assert cell.outputs[1].data == {"text/plain": f"{i}"}
        assert cell.outputs[1].execution_count == i + 1  # nbval's 0, as the cell's count
    assert kept.metadata["speclib_executed_by"]["inputs"] == _execute_book.inputs_key()


def test_every_chapter_notebook_of_the_toc_is_executed():
    import yaml

    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    chapters = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    expected = [f"{c}.ipynb" for c in chapters if (REPO / f"{c}.ipynb").is_file()]
    assert [str(p) for p in _execute_book.toc_notebooks()] == expected
    assert len(expected) >= 20
