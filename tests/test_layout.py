"""The package's shape: imports run one way (model maths at the bottom, presets
beside it, the numeric core on them, evidence and presentation on top, tools
last), no module imports another that imports it back, and ``import speclib``
and the ``speclib`` command stay light (numpy, no sympy, matplotlib or
ipywidgets). Old import paths keep working."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import speclib.formulas.cost
import speclib.formulas.moe
import speclib

PACKAGE = Path(speclib.__file__).resolve().parent

#: Roles from the bottom up: a module may import its own role or a lower one.
LAYERS = (
    ("speclib._checks", "speclib._extras", "speclib.formulas"),
    ("speclib.presets",),
    ("speclib.silicon",),  # the measured kernel tables and the step read from them: numpy alone
    ("speclib.core",),
    ("speclib.evidence", "speclib.calibration"),  # the model checked; the calibrated step fitted and held out
    ("speclib.presentation",),
    ("speclib.tools",),
    ("speclib.__main__",),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(name: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{name} belongs to no role; add it to LAYERS")


def imported_modules(name: str) -> set:
    """Every speclib module ``name`` imports, at module level or inside a
    function (a cycle hidden in a function is still a cycle), with the
    package ``__init__`` modules each import passes through (but for the
    packages ``name`` itself is in: Python has them loaded before it runs)."""
    path = MODULES[name]
    own_packages = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            for i in range(2, len(parts) + 1):  # the packages on the way, then the module
                candidate = ".".join(parts[:i])
                if candidate in MODULES and candidate not in own_packages:
                    found.add(candidate)
    found.discard(name)
    found.discard("speclib")  # the facade: every module's parent, importing every role on demand
    return found


GRAPH = {name: imported_modules(name) for name in MODULES if name != "speclib"}


def test_every_module_has_a_role():
    for name in GRAPH:
        layer(name)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_go_down_the_layers(name):
    upward = sorted(t for t in GRAPH[name] if layer(t) > layer(name))
    assert not upward, f"{name} (role {LAYERS[layer(name)]}) imports from a higher role: {upward}"


def test_no_import_cycles():
    """Tarjan's strongly connected components: any with two or more modules
    is a cycle."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_cycle_check_can_fail():
    """The graph above is built from source: a planted cycle is found."""
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    saved = dict(GRAPH)
    GRAPH.clear()
    GRAPH.update(planted)
    try:
        with pytest.raises(AssertionError, match="import cycles"):
            test_no_import_cycles()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_core_and_presets_never_import_sympy_or_plotting():
    heavy = {"sympy", "matplotlib", "ipywidgets", "IPython"}
    for name, path in MODULES.items():
        symbolic = name.startswith("speclib.formulas.") and name != "speclib.formulas.numpy_functions"
        if name == "speclib" or symbolic or layer(name) > layer("speclib.core"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        roots |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and not node.level}
        assert not roots & heavy, f"{name} imports {sorted(roots & heavy)}"


def _loaded_after(code: str) -> set:
    probe = code + "\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
    probe += "('sympy', 'matplotlib', 'ipywidgets', 'IPython'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_speclib_loads_no_sympy_matplotlib_or_ipywidgets():
    assert _loaded_after("import speclib") == set()


@pytest.mark.parametrize("argv", [
    ["gamma", "--model", "deepseek-v4-flash", "--hardware", "b200", "--batch", "64", "--seq", "4096",
     "--alpha", "0.75", "--draft-cost", "0.1"],
    ["presets"],
    ["sweep", "--batch", "1,64", "--seq", "4096", "--alpha", "0.75"],
])
def test_the_command_loads_no_sympy(argv):
    code = ("import io, contextlib\nfrom speclib.tools.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0")
    assert _loaded_after(code) == set()


def test_a_core_module_has_no_sympy_twin_behind_it():
    # one home per name: the sympy side of an idea is speclib.formulas.<idea>, nothing else
    import speclib.core.moe
    import speclib.formulas.moe

    assert speclib.formulas.moe.experts_activated_expr is not None
    with pytest.raises(AttributeError):
        speclib.core.moe.experts_activated_expr


def test_each_module_has_one_import_path():
    import importlib
    import pkgutil

    assert not any(type(f).__module__.startswith("speclib") for f in sys.meta_path)  # no alias finder
    for info in pkgutil.walk_packages(speclib.__path__, "speclib."):
        if ".presentation" in info.name or info.name.endswith("__main__"):
            continue  # the presentation layer loads matplotlib; checked by its own tests
        module = importlib.import_module(info.name)
        assert "__getattr__" not in vars(module), f"{info.name} answers for names it does not define"
    for short in ("moe", "cost", "capacity", "claims", "figures", "widgets", "tables", "cli"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"speclib.{short}")


def test_the_public_api_is_explicit():
    import types

    public = {name for name, value in vars(speclib).items() if not name.startswith("_")
              and not (isinstance(value, types.ModuleType) and name != "presets")}  # subpackages, once imported
    assert set(speclib.__all__) == public
    for name in speclib.__all__:
        assert getattr(speclib, name) is not None
    assert speclib.throughput is speclib.core.speculation.throughput


def test_the_repository_stands_alone():
    """Nothing tracked cites a file outside the repository: the model's
    specification the code and tests rely on is docs/model.md and docs/sequel.md."""
    import subprocess

    root = PACKAGE.parent
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    pattern = re.compile(r"\b(MODEL|FOLLOWUP|ENGINES)\.md\b|\.\./shared\b|shared/(spec|data|seeds)\b")
    offenders = [f for f in files if (root / f).is_file() and f.endswith((".py", ".ipynb", ".md", ".sh", ".json",
                                                                          ".yml", ".cfg", ".toml"))
                 and pattern.search((root / f).read_text(encoding="utf-8", errors="replace"))]
    assert offenders == []
    assert (root / "docs" / "model.md").is_file() and (root / "docs" / "sequel.md").is_file()


def names_taken_from_own_package(name: str) -> list:
    """The names a module imports from its own package's ``__init__`` (``from .
    import x`` where ``x`` is no module of the package): the package imports its
    modules, so such an import is a cycle, at call time if it sits in a function."""
    path = MODULES[name]
    if path.name == "__init__.py":
        return []
    package = name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if base == package:
            found += [alias.name for alias in node.names if f"{package}.{alias.name}" not in MODULES]
    return found


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n != "speclib"))
def test_no_module_imports_a_name_from_its_own_package(name):
    assert names_taken_from_own_package(name) == [], \
        f"{name} imports {names_taken_from_own_package(name)} from its own package's __init__"


def test_the_own_package_check_can_fail(tmp_path, monkeypatch):
    """A module that reaches back into its package's ``__init__`` (the shape
    of the old presets.hardware_config) is found."""
    planted = tmp_path / "hardware_config.py"
    planted.write_text("def f():\n    from . import interconnect, catalog\n    return interconnect\n")
    monkeypatch.setitem(MODULES, "speclib.presets.planted", planted)
    assert names_taken_from_own_package("speclib.presets.planted") == ["interconnect"]
