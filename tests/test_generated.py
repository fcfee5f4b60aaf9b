"""The numpy functions the package calls are printed from the sympy
expressions: the shipped module is exactly what the generator prints today,
and each function agrees with sympy evaluating its expression."""
import inspect
import math

import numpy as np
import pytest
from exact_values import exact
from speclib.formulas import catalog, generate
from speclib.formulas import numpy_functions as nf


def test_the_shipped_module_is_what_the_generator_prints():
    shipped = generate.TARGET.read_text(encoding="utf-8")
    assert shipped == generate.render(), (
        "speclib/formulas/numpy_functions.py is stale: run python -m speclib.formulas.generate"
    )


def test_the_check_mode_reports_a_stale_module(tmp_path, monkeypatch):
    stale = tmp_path / "numpy_functions.py"
    stale.write_text("# edited by hand\n", encoding="utf-8")
    monkeypatch.setattr(generate, "TARGET", stale)
    assert generate.main(["--check"]) == 1
    assert generate.main([]) == 0 and generate.main(["--check"]) == 0


def test_every_catalogue_entry_is_a_function_with_its_arguments():
    assert set(nf.ARGUMENTS) == set(catalog.FORMULAS)
    for name, formula in catalog.FORMULAS.items():
        function = getattr(nf, name)
        assert tuple(inspect.signature(function).parameters) == tuple(str(a) for a in formula.args)
        assert nf.ARGUMENTS[name] == tuple(str(a) for a in formula.args)


def _sample(symbol, rng):
    """A value in the symbol's domain and in the range the model uses."""
    name = str(symbol)
    if name in ("alpha", "q", "r", "h"):  # probabilities and fractions
        return float(rng.uniform(0.05, 0.95))
    if name in ("gamma", "d", "k", "E", "G", "n_s", "I", "O") or symbol.is_integer:
        return float(rng.integers(1, 9))
    return float(rng.uniform(0.5, 8.0))


@pytest.mark.parametrize("name", sorted(catalog.FORMULAS))
def test_each_function_equals_sympy_evaluating_its_expression(name):
    """At random points: the printed function against the expression evaluated
    to 50 digits in mpmath (an independent route: tests/exact_values.py). The
    expert counts are drawn with k <= E."""
    formula = catalog.FORMULAS[name]
    value = exact(formula.expr, formula.args)
    rng = np.random.default_rng(sum(map(ord, name)))
    for _ in range(5):
        values = {a: _sample(a, rng) for a in formula.args}
        names = {str(a): a for a in formula.args}
        if "k" in names and "E" in names:
            values[names["E"]] = values[names["k"]] + float(rng.integers(1, 200))
        if "n_g" in names:  # group-limited routing: whole groups per GPU, the allowed groups hold k experts
            G = float(rng.choice([2, 4, 8]))
            n_g = G * float(rng.integers(1, 4))
            per_group = float(rng.integers(2, 40))
            k_g = float(rng.integers(1, n_g))
            values.update({names["G"]: G, names["n_g"]: n_g, names["E"]: n_g * per_group, names["k_g"]: k_g,
                           names["k"]: float(rng.integers(1, min(k_g * per_group, 16) + 1))})
        expected = value(*(values[a] for a in formula.args))
        got = float(getattr(nf, name)(*(values[a] for a in formula.args)))
        assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-300), (name, values, got, expected)
