"""How many tokens one verify pass commits: the accepted draft prefix plus the
target's own bonus token.

Two acceptance models:

* i.i.d.: every draft token is accepted with the same probability alpha, so
  draft position d survives verification with probability alpha**d
  (:func:`expected_committed`);
* a measured survival curve: position d survives with probability
  ``survival[d-1]``, whatever shape the curve has
  (:func:`expected_committed_from_survival`, :class:`SurvivalCurve`,
  :func:`load_survival_curves`).
"""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1
from sympy.series.limitseq import difference_delta

from ._checks import checked_array, scalar_or_array
from .tables import NumberTable, RendersAsTable

alpha = sp.Symbol("alpha", nonnegative=True)
gamma = sp.Symbol("gamma", integer=True, nonnegative=True)
_d = sp.Symbol("d", integer=True, nonnegative=True)

#: Survival of draft position d under i.i.d. acceptance: the d drafts up to and
#: including it are all accepted.
iid_survival_expr = alpha**_d

#: Draft position d (0-based; d = 0 is the bonus token) is committed when the d
#: drafts before it are all accepted, with probability alpha**d. sympy sums the
#: geometric series itself, returning the alpha = 1 branch (gamma + 1) exactly.
expected_committed_expr = sp.summation(iid_survival_expr, (_d, 0, gamma))

#: The alpha != 1 branch, (1 - alpha**(gamma+1)) / (1 - alpha).
expected_committed_closed_form = next(
    expr for expr, cond in expected_committed_expr.args if cond is sp.true
)

#: The same branch written with expm1 so that alpha a hair below 1 does not
#: lose digits to 1 - alpha**(gamma+1); the tests check it equals the closed form.
#: The denominator is kept unevaluated (sympy would turn it into alpha - 1) so
#: that gamma = 0 gives exactly x/x = 1 in floating point.
expected_committed_stable_expr = expm1((gamma + 1) * sp.log(alpha)) / expm1(sp.log(alpha), evaluate=False)

_N_stable = sp.lambdify((alpha, gamma), expected_committed_stable_expr, "numpy")
_N_at_one = sp.lambdify(gamma, expected_committed_expr.args[0][0], "numpy")


def committed_numeric(alpha_arr: np.ndarray, gamma_arr: np.ndarray) -> np.ndarray:
    """N(alpha, gamma) for already-checked arrays (no validation)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        general = _N_stable(alpha_arr, gamma_arr)
    return np.where(alpha_arr == 1, _N_at_one(gamma_arr) + 0 * alpha_arr, general)


def check_alpha(alpha_value) -> np.ndarray:
    return checked_array("alpha", alpha_value, lo=0, hi=1)


def check_gamma(gamma_value) -> np.ndarray:
    return checked_array("gamma", gamma_value, lo=0, integer=True)


def expected_committed(alpha, gamma):
    """Expected tokens committed by one verify pass with draft length ``gamma``
    and i.i.d. acceptance ``alpha``: (1 - alpha^(gamma+1)) / (1 - alpha), and
    exactly gamma + 1 at alpha = 1. Broadcasts over arrays."""
    return scalar_or_array(committed_numeric(check_alpha(alpha), check_gamma(gamma)))


# --- depth-dependent acceptance: a measured survival curve --------------------

#: survival[d] (sympy, 1-based): the probability that draft position d survives
#: verification, i.e. that the accepted prefix is at least d long.
survival = sp.IndexedBase("s")
_pos = sp.Symbol("d", integer=True, positive=True)

#: Tail-sum form of the expected accepted length: E[L] = sum_{d>=1} P(L >= d),
#: so one verify pass commits N = 1 + sum_{d=1}^{gamma} s_d (the 1 is the bonus
#: token). No shape is assumed for s_d.
expected_committed_survival_expr = 1 + sp.Sum(survival[_pos], (_pos, 1, gamma))

#: N(0): with no drafts only the bonus token is committed.
committed_at_zero_expr = expected_committed_survival_expr.subs(gamma, 0).doit()

#: N(gamma + 1) - N(gamma) = s_{gamma+1}: each extra draft position adds its own
#: survival. This forward difference is why the numeric N is a cumulative sum.
committed_increment_expr = difference_delta(expected_committed_survival_expr, gamma)

#: The i.i.d. special case: substituting s_d = alpha**d into the survival form
#: and summing (the tests check this equals ``expected_committed_expr``).
expected_committed_geometric_expr = expected_committed_survival_expr.replace(
    lambda e: isinstance(e, sp.Indexed) and e.base == survival,
    lambda e: iid_survival_expr.subs(_d, e.indices[0]),
).doit()

_iid_survival = sp.lambdify((alpha, _d), iid_survival_expr, "numpy")
_N_ZERO = float(committed_at_zero_expr)


class SurvivalCurve:
    """A measured per-position survival curve: ``values[d-1]`` is the
    probability that draft position d survives verification.

    Checked on construction: a non-empty 1-D sequence of numbers in [0, 1]
    that never increases with depth (surviving position d+1 requires surviving
    d). Passing a ``SurvivalCurve`` where the API takes ``alpha``
    (:func:`speclib.speedup`, :func:`speclib.optimal_gamma`) replaces the
    i.i.d. model by this curve; a plain list there still means a batch of
    i.i.d. alphas.
    """

    __slots__ = ("_values", "name", "source")

    def __init__(self, values, name: str = "", source: str = ""):
        if isinstance(values, SurvivalCurve):
            values = values.values
        arr = checked_array("survival", values, lo=0, hi=1)
        if arr.ndim != 1:
            raise ValueError(f"survival must be a 1-D sequence (one probability per draft position); got shape {arr.shape}")
        rises = np.flatnonzero(np.diff(arr) > 0)
        if rises.size:
            d = int(rises[0]) + 1
            raise ValueError(
                "survival must be non-increasing in draft position (surviving position d+1 needs position d); "
                f"got survival[{d}] = {arr[d - 1]:g} < survival[{d + 1}] = {arr[d]:g} (1-based)"
            )
        arr = arr.copy()
        arr.setflags(write=False)
        self._values = arr
        self.name = str(name)
        self.source = str(source)

    @property
    def values(self) -> np.ndarray:
        """The survival probabilities, position 1 first (read-only)."""
        return self._values

    def __len__(self) -> int:
        return self._values.size

    @property
    def first_position_acceptance(self) -> float:
        """survival(1): the alpha of the i.i.d. curve this one is compared with."""
        return float(self._values[0])

    @property
    def conditional_acceptance(self) -> np.ndarray:
        """P(position d survives | position d-1 survived) = s_d / s_{d-1}
        (s_0 = 1); NaN after a zero."""
        prev = np.concatenate([[1.0], self._values[:-1]])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(prev > 0, self._values / prev, np.nan)

    def committed_table(self) -> np.ndarray:
        """N(gamma) for gamma = 0 .. len(self): N(0) plus the running sum of
        the increments s_gamma."""
        return _N_ZERO + np.concatenate([[0.0], np.cumsum(self._values)])

    def iid(self) -> "SurvivalCurve":
        """The i.i.d. curve alpha**d of the same length and first-position
        acceptance."""
        return geometric_survival(self.first_position_acceptance, len(self), name=f"i.i.d. (alpha = {self.first_position_acceptance:g})")

    def __repr__(self) -> str:
        vals = ", ".join(f"{v:g}" for v in self._values)
        label = f"{self.name!r}, " if self.name else ""
        return f"SurvivalCurve({label}[{vals}])"


def as_survival_curve(value) -> SurvivalCurve:
    """``value`` as a checked :class:`SurvivalCurve`."""
    return value if isinstance(value, SurvivalCurve) else SurvivalCurve(value)


def geometric_survival(alpha_value, length: int, name: str = "") -> SurvivalCurve:
    """The i.i.d. survival curve alpha**d, d = 1 .. length."""
    from ._checks import checked_int

    a = float(checked_array("alpha", alpha_value, lo=0, hi=1))
    n = checked_int("length", length, lo=1, hi=100_000)
    return SurvivalCurve(_iid_survival(a, np.arange(1, n + 1, dtype=float)), name=name)


def check_gamma_for_curve(gamma_value, curve: SurvivalCurve) -> np.ndarray:
    """gamma as an integer array in [0, len(curve)]."""
    try:
        return checked_array("gamma", gamma_value, lo=0, hi=len(curve), integer=True)
    except ValueError as err:
        raise ValueError(f"{err} (the survival curve has {len(curve)} positions, so gamma can be 0 to {len(curve)})") from None


def committed_from_curve(curve: SurvivalCurve, gamma_arr: np.ndarray) -> np.ndarray:
    """N for already-checked integer gamma (a float array); no validation."""
    return curve.committed_table()[gamma_arr.astype(np.intp)]


def expected_committed_from_survival(survival, gamma):
    """Expected tokens committed by one verify pass with draft length ``gamma``
    when draft position d survives with probability ``survival[d-1]``:
    N = 1 + survival[0] + ... + survival[gamma-1].

    ``survival``: a :class:`SurvivalCurve` or a 1-D sequence (values in [0, 1],
    non-increasing, non-empty). ``gamma``: integers in [0, len(survival)];
    broadcasts over arrays. With ``survival = alpha**d`` this equals
    :func:`expected_committed`.
    """
    curve = as_survival_curve(survival)
    return scalar_or_array(committed_from_curve(curve, check_gamma_for_curve(gamma, curve)))


#: Where the measured curves came from (the README in speclib/data says more).
SURVIVAL_SOURCE = (
    "Qwen3.6-35B-A3B on SPEED-Bench at temperature 0.6; F. Finn, "
    "'Adaptive speculative decoding: picking draft lengths at runtime' (2026)"
)


def load_survival_curves() -> dict:
    """The measured survival curves shipped with speclib, by drafter:
    ``{"mtp": SurvivalCurve (8 positions), "dflash": SurvivalCurve (15)}``."""
    text = resources.files("speclib").joinpath("data", "acceptance", "survival.json").read_text()
    raw = json.loads(text)
    names = {"mtp": "MTP", "dflash": "DFlash"}
    return {key: SurvivalCurve(raw[key], name=label, source=SURVIVAL_SOURCE) for key, label in names.items()}


# --- presentation: the chapter's derivation and table --------------------------------


def survival_derivation():
    """The survival-curve form of N as a sympy step list (a
    :class:`speclib.derivations.Derivation`): the tail sum, N(0), the forward
    difference, and the reduction to the i.i.d. formula, each identity checked
    here with sympy before it is shown."""
    from .derivations import Derivation, Step

    N = sp.Function("N")
    # sympy returns 1 + Piecewise(...): take the general branch of the Piecewise term
    pieces = [t for t in sp.Add.make_args(expected_committed_geometric_expr) if isinstance(t, sp.Piecewise)]
    rest = sum(t for t in sp.Add.make_args(expected_committed_geometric_expr) if not isinstance(t, sp.Piecewise))
    general = rest + next(expr for expr, cond in pieces[0].args if cond is sp.true)
    if sp.simplify(general - expected_committed_closed_form) != 0:  # pragma: no cover - a broken identity
        raise ArithmeticError("the geometric survival curve does not reduce to the i.i.d. N")
    if committed_increment_expr != survival[gamma + 1]:  # pragma: no cover
        raise ArithmeticError("the forward difference of N is not the next survival")
    steps = (
        Step("tail", "Tail sum: the accepted prefix reaches position d exactly when d survives; "
             "the 1 is the bonus token", (N(gamma), expected_committed_survival_expr)),
        Step("zero", "No drafts: only the bonus token", (N(0), committed_at_zero_expr)),
        Step("difference", "Forward difference (sympy difference_delta): one more position adds its own survival",
             (N(gamma + 1) - N(gamma), committed_increment_expr)),
        Step("iid", "i.i.d. acceptance, s_d = alpha^d, summed by sympy (alpha != 1 branch)",
             (N(gamma), general, expected_committed_closed_form)),
    )
    return Derivation("Expected committed tokens from a survival curve", steps)


class CommittedTable(RendersAsTable):
    """N(gamma) under each measured curve and under the i.i.d. curve of the
    same first-position acceptance, gamma = 1 .. the curve's length."""

    def __init__(self, curves):
        self.curves = dict(curves)
        self.length = max(len(c) for c in self.curves.values())

    def _cells(self, curve, g):
        if g > len(curve):
            return ("", "", "")
        n = expected_committed_from_survival(curve, g)
        n_iid = expected_committed(curve.first_position_acceptance, g)
        return (f"{n:.3f}", f"{n_iid:.3f}", f"{n - n_iid:+.3f}")

    def _caption(self) -> str:
        return ("Expected tokens committed per verify pass, N(gamma): measured survival curve, the i.i.d. curve "
                "alpha^d with alpha = survival(1), and measured minus i.i.d. (positive: the curve beats i.i.d.)")

    def _header(self):
        head = ["gamma"]
        for curve in self.curves.values():
            head += [f"{curve.name} N", "i.i.d. N", "diff"]
        return head

    def _rows(self):
        for g in range(1, self.length + 1):
            row = [str(g)]
            for curve in self.curves.values():
                row += list(self._cells(curve, g))
            yield row

    def as_table(self) -> NumberTable:
        return NumberTable(tuple(self._header()), tuple(map(tuple, self._rows())), caption=self._caption(),
                           css_class="speclib-committed-table")


def committed_table(curves=None) -> CommittedTable:
    """:class:`CommittedTable` for ``curves`` (default: the shipped MTP and
    DFlash curves)."""
    curves = load_survival_curves() if curves is None else {k: as_survival_curve(v) for k, v in dict(curves).items()}
    return CommittedTable(curves)
