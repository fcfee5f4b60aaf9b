"""The array language a figure's compute function is written in, and its two
back ends.

A figure's ``compute(p, xp)`` is ordinary Python over ``xp``: numpy-like
functions (``xp.geomspace``, ``xp.where``, ``xp.argmax(a, axis)`` ...), the
catalogue's closed forms (``xp.F.moe_intensity(B, k, E, n_s, b, R)``) and
arithmetic. Two back ends run it:

* :data:`numpy_ops` evaluates it with numpy and the generated numpy functions
  (:mod:`speclib.formulas.numpy_functions`): the static figures, the widgets
  and the tests;
* :class:`Tracer` records it as a graph of operations on the figure's
  continuous controls (sliders), which :mod:`speclib.presentation.web` writes
  into the page and ``speclib_live.js`` evaluates with the same closed forms
  printed to JavaScript.

Everything that depends only on discrete choices (a menu, a checkbox, the
model and chip of the page) is plain Python: it runs once per combination when
the graph is recorded, so presets and data files never reach the browser as
code, only as the numbers they produce. A value that depends on a slider is a
:class:`Node` while tracing; Python control flow on it raises (use
``xp.where``).
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..formulas import numpy_functions as _nf

#: The array functions both back ends offer, with their arity: every name
#: here is one generic step of the browser's evaluator.
UNARY = ("log", "log2", "log10", "exp", "sqrt", "abs", "floor", "ceil", "round", "isfinite", "negative",
         "logical_not")
BINARY = ("add", "subtract", "multiply", "divide", "power", "minimum", "maximum", "less", "less_equal", "greater",
          "greater_equal", "equal", "not_equal", "logical_and", "logical_or")
REDUCTIONS = ("sum", "max", "min", "argmax", "argmin", "any", "all", "cumsum", "first_true")
#: The other operations of a recorded graph: ``param`` (a slider's value),
#: ``formula`` (a catalogue closed form, elementwise), ``asarray`` (a
#: constant array), ``index`` (basic indexing), ``transpose``, and these.
OTHER = ("geomspace", "linspace", "arange", "where", "clip", "stack", "concatenate", "take")


def _in_language(name):
    if name not in UNARY + BINARY + REDUCTIONS + OTHER:
        raise AttributeError(f"the figure array language has no function {name!r}")
    return name


def _first_true(mask, axis=-1):
    """Index of the first True along ``axis`` (-1 where there is none)."""
    mask = np.asarray(mask, dtype=bool)
    idx = np.argmax(mask, axis=axis)
    return np.where(np.any(mask, axis=axis), idx, -1)


def _quiet(fn):
    """A closed form evaluated as the browser evaluates it: a division by zero
    or a log of 0 at a limit (k = E, S = 0) gives inf or nan without a warning."""

    def call(*args):
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(*args)

    call.__name__ = call.__qualname__ = fn.__name__
    return call


def _take(a, index, axis=0):
    """``a``'s entries at integer ``index`` along ``axis`` (numpy's take_along_axis
    when ``index`` has ``a``'s rank, else take)."""
    a, index = np.asarray(a), np.asarray(index).astype(int)
    if index.ndim == a.ndim:
        return np.take_along_axis(a, index, axis=axis)
    return np.take(a, index, axis=axis)


#: The operations numpy does not offer under the tracer's name and arguments.
_ADAPTED = {
    "asarray": lambda value: np.asarray(value, dtype=float),
    "geomspace": lambda lo, hi, n: np.geomspace(float(lo), float(hi), int(n)),
    "linspace": lambda lo, hi, n: np.linspace(float(lo), float(hi), int(n)),
    "arange": lambda lo, hi, step=1: np.arange(lo, hi, step, dtype=float),
    "clip": lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi),
    "stack": lambda arrays, axis=0: np.stack(np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in arrays]),
                                             axis=axis),
    "concatenate": lambda arrays, axis=0: np.concatenate([np.asarray(a, dtype=float) for a in arrays], axis=axis),
    "take": _take,
    "cumsum": lambda a, axis=-1: np.cumsum(a, axis=axis),
    "first_true": _first_true,
}


class _NumpyOps:
    """numpy, under the names the tracer records."""

    F = SimpleNamespace(**{name: _quiet(getattr(_nf, name)) for name in _nf.ARGUMENTS})

    def __getattr__(self, name):
        # the others take numpy's own arguments (a reduction: a, axis=None)
        return _ADAPTED[name] if name in _ADAPTED else getattr(np, _in_language(name))


#: The numpy back end.
numpy_ops = _NumpyOps()


# --- the tracer ------------------------------------------------------------------


class Node:
    """One recorded operation: ``op`` applied to ``args`` (nodes or constants)."""

    __slots__ = ("op", "args", "attrs")
    __array_priority__ = 1000  # numpy scalars defer to the node's operators

    def __init__(self, op, args=(), attrs=None):
        self.op, self.args, self.attrs = op, tuple(args), dict(attrs or {})

    def __bool__(self):
        raise TypeError("a value that depends on a slider has no truth value while the figure is traced: "
                        "use xp.where / xp.any instead of if / and / or")

    def __float__(self):
        raise TypeError("a value that depends on a slider cannot become a Python number while the figure is traced")

    __int__ = __index__ = __float__

    def __iter__(self):
        raise TypeError("a traced array cannot be iterated: index it or use a reduction")

    def __len__(self):
        raise TypeError("a traced array has no length while tracing")

    def __neg__(self):
        return Node("negative", (self,))

    def __invert__(self):
        return Node("logical_not", (self,))

    __hash__ = object.__hash__

    def __getitem__(self, key):
        return Node("index", (self,), {"key": _index_key(key)})

    @property
    def T(self):
        return Node("transpose", (self,))


#: Python's operators on a node and the operations they record (with the
#: reflected forms, ``2 * node``, for the arithmetic and logical ones).
_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide", "pow": "power",
              "and": "logical_and", "or": "logical_or"}
_COMPARISONS = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
                "ne": "not_equal"}


def _operator(op, swap):
    return lambda self, other: Node(op, (other, self) if swap else (self, other))


for _name, _op_name in {**_OPERATORS, **_COMPARISONS}.items():
    setattr(Node, f"__{_name}__", _operator(_op_name, False))
    if _name in _OPERATORS:
        setattr(Node, f"__r{_name}__", _operator(_op_name, True))


def _index_key(key):
    """Basic indexing as data: None (a new axis), an int, a slice, or ``...``."""
    key = key if isinstance(key, tuple) else (key,)
    out = []
    for k in key:
        if k is None:
            out.append({"new": True})
        elif k is Ellipsis:
            out.append({"ellipsis": True})
        elif isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and not isinstance(part, (int, np.integer)):
                    raise TypeError("a traced slice takes whole numbers only")
            out.append({"slice": [None if v is None else int(v) for v in (k.start, k.stop, k.step)]})
        elif isinstance(k, (int, np.integer)):
            out.append({"int": int(k)})
        else:
            raise TypeError(f"a traced array takes basic indices only (None, int, slice, ...); got {k!r}")
    return out


class _Formulas:
    def __getattr__(self, name):
        if name not in _nf.ARGUMENTS:
            raise AttributeError(f"no closed form named {name!r} in the catalogue")
        arity = len(_nf.ARGUMENTS[name])

        def call(*args):
            if len(args) != arity:
                raise TypeError(f"{name} takes {arity} arguments {_nf.ARGUMENTS[name]}; got {len(args)}")
            return Node("formula", args, {"name": name})

        return call


class Tracer:
    """The recording back end: the same names as :data:`numpy_ops`."""

    F = _Formulas()

    def __getattr__(self, name):
        name = _in_language(name)
        return lambda *args, **kwargs: Node(name, args, kwargs)

    @staticmethod
    def asarray(value):
        """A constant array as a node, so that what is computed from it is
        recorded (and evaluated in the page) rather than written out in full."""
        return value if isinstance(value, Node) else Node("asarray", (value,))


def _constant(value, pool):
    """A constant argument as JSON: a number, a string, a list of strings, or
    an array (kept once in ``pool`` and named by its index there)."""
    if isinstance(value, (bool, np.bool_)):
        return {"c": bool(value)}
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        return {"c": v if math.isfinite(v) else str(v)}
    if isinstance(value, str):
        return {"s": value}
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return {"strs": list(value)}
    arr = np.asarray(value, dtype=float)
    key = (arr.shape, arr.tobytes())
    if key not in pool:
        pool[key] = len(pool)
    return {"a": pool[key]}


def graph(outputs: dict) -> dict:
    """The recorded operations behind ``outputs`` (name -> node or constant),
    as JSON-ready data: ``nodes`` in evaluation order, each ``[op, args,
    attrs]`` with an argument either ``{"n": i}`` (node i) or a constant
    (``{"c": number}``, ``{"s": string}``, ``{"strs": [...]}``, or ``{"a": i}``,
    array i of ``arrays``, each ``{"shape": [...], "data": [...]}``), and
    ``outputs`` naming a node or a constant for each output."""
    order: list[Node] = []
    seen: dict[int, int] = {}
    pool: dict = {}

    # depth first, without recursion (a graph can be deep), the outputs in their order
    stack = [(v, False) for v in reversed(list(outputs.values())) if isinstance(v, Node)]
    while stack:
        n, done = stack.pop()
        if id(n) in seen:
            continue
        if done:
            seen[id(n)] = len(order)
            order.append(n)
            continue
        stack.append((n, True))
        for a in reversed(_flat_args(n)):
            if isinstance(a, Node) and id(a) not in seen:
                stack.append((a, False))

    def arg(a):
        if isinstance(a, Node):
            return {"n": seen[id(a)]}
        if isinstance(a, (list, tuple)) and any(isinstance(v, Node) for v in a):
            return {"list": [arg(v) for v in a]}
        return _constant(a, pool)

    nodes = [[n.op, [arg(a) for a in n.args], _json_attrs(n.attrs)] for n in order]
    outs = {k: arg(v) for k, v in outputs.items()}
    arrays = [None] * len(pool)
    for (shape, raw), i in pool.items():
        data = [float(v) if math.isfinite(v) else str(float(v)) for v in np.frombuffer(raw, dtype=float)]
        arrays[i] = {"shape": list(shape), "data": data}
    return {"nodes": nodes, "outputs": outs, "arrays": arrays}


def _flat_args(n):
    return [v for a in n.args for v in (a if isinstance(a, (list, tuple)) else (a,))]


def _json_attrs(attrs):
    for k, v in attrs.items():
        if isinstance(v, Node):
            raise TypeError(f"the keyword {k!r} of a traced operation must not depend on a slider")
    return dict(attrs)


def evaluate_graph(g: dict, params: dict) -> dict:
    """Evaluate a recorded graph with numpy: the reference the browser's
    evaluator is tested against (and a check that the record is complete)."""
    values = []

    def arg(a):
        if "n" in a:
            return values[a["n"]]
        if "list" in a:
            return [arg(v) for v in a["list"]]
        if "s" in a:
            return a["s"]
        if "strs" in a:
            return list(a["strs"])
        if "a" in a:
            entry = g["arrays"][a["a"]]
            return np.array([float(v) for v in entry["data"]], dtype=float).reshape(entry["shape"])
        return float(a["c"]) if not isinstance(a["c"], bool) else a["c"]

    graph_ops = {"param": lambda name: np.asarray(params[name], dtype=float),
                 "formula": lambda *args, name: getattr(numpy_ops.F, name)(*args),
                 "index": lambda a, key: np.asarray(a)[_numpy_key(key)],
                 "transpose": lambda a: np.asarray(a).T}
    for op, args, attrs in g["nodes"]:
        fn = graph_ops[op] if op in graph_ops else getattr(numpy_ops, op)
        values.append(fn(*[arg(x) for x in args], **attrs))
    return {k: arg(v) for k, v in g["outputs"].items()}


#: The entries of a recorded index (see :func:`_index_key`) as numpy's.
_NUMPY_KEY = {"new": lambda _: None, "ellipsis": lambda _: Ellipsis, "slice": lambda v: slice(*v), "int": int}


def _numpy_key(key):
    return tuple(_NUMPY_KEY[kind](v) for k in key for kind, v in k.items())


def param(name: str) -> Node:
    """The traced value of the slider ``name``."""
    return Node("param", (), {"name": name})
