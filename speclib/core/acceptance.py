"""How many tokens one verify pass commits: the accepted draft prefix plus the
target's own bonus token. The closed forms are in
:mod:`speclib.formulas.acceptance`.

Two acceptance models:

* i.i.d.: every draft token is accepted with the same probability alpha, so
  draft position d survives verification with probability alpha**d
  (:func:`expected_committed`);
* a measured survival curve: position d survives with probability
  ``survival[d-1]``, whatever shape the curve has
  (:func:`expected_committed_from_survival`, :class:`SurvivalCurve`,
  :func:`load_survival_curves`).

Every public function that takes an acceptance (``alpha`` of
:func:`speclib.speedup`, :func:`speclib.optimal_gamma` and
:func:`speclib.schedule`, ``acceptance`` of :func:`speclib.throughput`) sorts
it out once, with :meth:`Acceptance.of`.
"""
from __future__ import annotations

import json
from importlib import resources

import numpy as np

from .._checks import checked_array, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf



def committed_numeric(alpha_arr: np.ndarray, gamma_arr: np.ndarray) -> np.ndarray:
    """N(alpha, gamma) for already-checked arrays (no validation)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        general = nf.committed(alpha_arr, gamma_arr)
    return np.where(alpha_arr == 1, nf.committed_at_one(gamma_arr) + 0 * alpha_arr, general)


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
        return nf.committed_at_zero() + np.concatenate([[0.0], np.cumsum(self._values)])

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
    a = float(checked_array("alpha", alpha_value, lo=0, hi=1))
    n = checked_int("length", length, lo=1, hi=100_000)
    return SurvivalCurve(nf.iid_survival(a, np.arange(1, n + 1, dtype=float)), name=name)


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


# --- the one acceptance every public function takes ---------------------------------

#: What a call without an acceptance is told.
NO_ALPHA = ("alpha must be given (an acceptance in [0, 1] or a SurvivalCurve): only a drafter preset brings a "
            "measured survival curve")


class Acceptance:
    """An acceptance as the model uses it: i.i.d. alphas (``alpha``, a checked
    array, ``curve`` None) or a measured survival curve (``curve``, ``alpha``
    None). Build it with :meth:`of`, the one place where a number, an array,
    a :class:`SurvivalCurve` or None is told apart."""

    __slots__ = ("alpha", "curve")

    def __init__(self, alpha=None, curve=None):
        # Unchecked: :meth:`of` checks; the model broadcasts a checked alpha here.
        self.alpha = alpha
        self.curve = curve

    @classmethod
    def of(cls, alpha, priced=None) -> "Acceptance":
        """``alpha`` as one :class:`Acceptance`: a number or an array of
        numbers in [0, 1] (i.i.d.; a plain list is a batch of alphas), a
        :class:`SurvivalCurve`, an :class:`Acceptance` (returned as is), or
        None for the measured survival curve of the drafter preset ``priced``
        (a pricing from :meth:`speclib.Deployment.pricing`) prices with."""
        if isinstance(alpha, cls):
            return alpha
        if alpha is None:
            measured = getattr(priced, "measured_acceptance", None)
            if measured is None:
                raise ValueError(NO_ALPHA)
            return cls(curve=measured())
        if isinstance(alpha, SurvivalCurve):
            return cls(curve=alpha)
        return cls(alpha=check_alpha(alpha))

    @property
    def max_gamma(self):
        """The longest draft with a known survival (the curve's length), or None."""
        return None if self.curve is None else len(self.curve)

    def checked_gamma(self, gamma_value) -> np.ndarray:
        """``gamma`` as whole numbers >= 0, at most the curve's length."""
        if self.curve is not None:
            return check_gamma_for_curve(gamma_value, self.curve)
        return check_gamma(gamma_value)

    def committed(self, gamma_arr) -> np.ndarray:
        """N, the tokens one verify pass commits, for checked ``gamma``."""
        if self.curve is not None:
            return committed_from_curve(self.curve, gamma_arr)
        return committed_numeric(self.alpha, gamma_arr)

    def describe(self) -> str:
        """One line for a table's header."""
        if self.curve is not None:
            return f"survival curve {self.curve.name or 'given'} (sum {float(np.sum(self.curve.values)):.2f})"
        return f"alpha {float(np.ravel(self.alpha)[0]):g} (i.i.d.)"

    def __repr__(self) -> str:
        return f"Acceptance({self.curve!r})" if self.curve is not None else f"Acceptance(alpha={self.alpha!r})"


#: Where the measured curves came from (the README in speclib/data says more).
SURVIVAL_SOURCE = (
    "Qwen3.6-35B-A3B on SPEED-Bench at temperature 0.6; F. Finn, "
    "'Adaptive speculative decoding: picking draft lengths at runtime' (2026)"
)


#: Survival curves read off accept lengths a source printed for chains of
#: several lengths: {name: (the run in data/engine-speculation/sweeps.json,
#: label)}. vLLM issue 20780 printed EAGLE-3's accept length on Llama-3.1-8B
#: at batch 1 for chains of 2 to 7 drafts.
ACCEPT_LENGTH_CURVES = {"eagle3": ("vllm-eagle3-llama31-8b-bs1", "EAGLE-3 (Llama-3.1-8B, vLLM issue 20780)")}


def survival_from_accept_lengths(lengths: dict, name: str = "", source: str = "") -> "SurvivalCurve":
    """The survival curve whose committed tokens are the accept lengths
    ``{K: AL(K)}`` measured for chains of K = 2, 3, ...: position d's survival
    AL(d) - AL(d - 1) from the third on, and the first two split from
    AL(2) - 1 with the first three positions decaying at one rate
    (:data:`speclib.formulas.acceptance.first_survival_expr`)."""
    by_k = {int(k): float(v) for k, v in lengths.items()}
    ks = sorted(by_k)
    if len(ks) < 2 or ks != list(range(2, ks[-1] + 1)):
        raise ValueError(f"accept lengths must be given for every chain of 2 to K drafts (K >= 3); got {ks}")
    al = np.array([by_k[k] for k in ks])
    tail = np.diff(al)
    s1 = float(nf.first_survival(al[0] - 1.0, tail[0]))
    return SurvivalCurve(np.concatenate([[s1, al[0] - 1.0 - s1], tail]), name=name, source=source)


def load_survival_curves() -> dict:
    """The sequel's measured survival curves, by drafter: ``{"mtp":
    SurvivalCurve (8 positions), "dflash": SurvivalCurve (15)}``, Qwen3.6-35B-A3B's."""
    text = resources.files("speclib").joinpath("data", "acceptance", "survival.json").read_text()
    raw = json.loads(text)
    names = {"mtp": "MTP", "dflash": "DFlash"}
    return {key: SurvivalCurve(raw[key], name=label, source=SURVIVAL_SOURCE) for key, label in names.items()}


def drafter_curves() -> dict:
    """Every survival curve a drafter preset can name (its ``acceptance``):
    :func:`load_survival_curves`'s and those read off accept lengths
    (:data:`ACCEPT_LENGTH_CURVES`: ``"eagle3"``, 7 positions)."""
    out = load_survival_curves()
    sweeps = json.loads(resources.files("speclib").joinpath("data", "engine-speculation", "sweeps.json").read_text())
    runs = {r["id"]: r for r in sweeps["runs"]}
    for key, (run_id, label) in ACCEPT_LENGTH_CURVES.items():
        run = runs[run_id]
        out[key] = survival_from_accept_lengths(run["acceptance"]["accept_length"], name=label,
                                                source=f"{run['source']['title']}, {run['source']['url']}")
    return out
