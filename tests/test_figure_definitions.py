"""Every figure definition, generically: its controls are sound, its recorded
compute graph gives what numpy gives (at the defaults, at each slider's ends
and in every combination of the discrete controls), and the array language
refuses what it cannot record. That each draws at its defaults is checked by
tests/test_legibility.py, on the drawings it reads; that a figure's widget has
one control per definition control and redraws when one moves, by the tour of
tests/test_widgets.py (a live table's, here)."""
from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pytest

from speclib.presentation import arrays, definition, figures  # noqa: F401 - fills the registry
from speclib.presentation.definition import REGISTRY, Figure, Slider, combination_graph, combo_key, fill

matplotlib.use("Agg")

#: The live figures: the widgets, and the HTML page computing from their recorded graphs.
LIVE = sorted(name for name, f in REGISTRY.items() if f.controls)


def _same(a, b):
    if isinstance(a, (str, list)) or isinstance(b, (str, list)):
        return list(a) == list(b) if not isinstance(a, str) else a == b
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=0, equal_nan=True)


def _settings(f: Figure):
    """Defaults, then each slider at its ends, for every discrete combination."""
    sliders = [c for c in f.controls if isinstance(c, Slider)]
    discrete = [c for c in f.controls if c.discrete]
    points = [{}] + [{s.name: v} for s in sliders for v in (s.lo, s.hi)]
    for combo in itertools.product(*(c.values() for c in discrete)):
        for point in points:
            yield dict(zip((c.name for c in discrete), combo)), point


@pytest.mark.parametrize("name", LIVE)
def test_the_recorded_graph_computes_what_numpy_computes(name):
    f = REGISTRY[name]
    live = f.live()
    for combo, point in _settings(f):
        expected = f.data(**{**f.live_params, **combo, **point})
        sliders = {c.name: expected["params"][c.name] for c in f.controls if not c.discrete}
        key = combo_key([combo[n] for n in live["discrete"]])
        got = arrays.evaluate_graph(combination_graph(live, key), sliders)
        assert set(got) == set(expected) - {"params"}
        for out, value in got.items():
            assert _same(value, expected[out]), f"{name} {combo} {point}: output {out!r} differs"


@pytest.mark.parametrize("name", [n for n in LIVE if REGISTRY[n].panels[0].series[0].kind == "table"])
def test_a_widget_has_one_control_per_definition_control_and_redraws(name):
    """A live table (a figure's widget is built and moved by the same checks in tests/test_widgets.py's tour)."""
    f = REGISTRY[name]
    w = f.widget()
    assert list(w.controls) == [c.name for c in f.controls]
    before = w.image.value
    c = f.controls[0]
    w.update(**{c.name: c.hi if isinstance(c, Slider) else [v for v in c.values() if v != c.value][0]})
    assert w.data["params"][c.name] != c.value
    assert w.image.value != before


def test_bad_parameters_are_refused_with_their_name():
    f = REGISTRY["optimal_gamma"]
    with pytest.raises(ValueError, match="alpha must be in"):
        f(alpha=1.5)
    with pytest.raises(ValueError, match="unknown parameter"):
        f(beta=1)


def test_traced_values_refuse_python_control_flow():
    node = arrays.param("S")
    with pytest.raises(TypeError, match="xp.where"):
        bool(node > 1)
    with pytest.raises(TypeError):
        float(node)


def test_the_tracer_records_operations_on_constant_arrays_instead_of_writing_them_out():
    xp = arrays.Tracer()
    B = xp.asarray(np.arange(1000.0))
    g = arrays.graph({"y": B * arrays.param("S")})
    assert len(g["arrays"]) == 1 and len(g["arrays"][0]["data"]) == 1000
    out = arrays.evaluate_graph(g, {"S": 2.0})
    assert np.array_equal(out["y"], 2.0 * np.arange(1000.0))


def test_templates_fill_from_outputs_then_parameters():
    data = {"params": {"S": 4096.0, "model": "M"}, "ridge": np.float64(562.5)}
    assert fill("{model}: S = {S:,.0f}, ridge {ridge:,.1f} ({ridge:.0%})", data) == "M: S = 4,096, ridge 562.5 (56250%)"
    with pytest.raises(ValueError, match="browser"):
        fill("{S:>10}", data)
