"""Input checks shared by every public function.

Every public entry point validates its arguments here so that a user gets one
clear ``ValueError`` naming the parameter and its allowed range, instead of a
NaN, an inf or a silently clipped value further down.
"""
from __future__ import annotations

import math

import numpy as np


def read_text(path, what: str, kind: str, empty: str) -> str:
    """The UTF-8 text of the file at ``path``, not blank; else a ``ValueError`` that names the file:
    "cannot read ``what``", "not a text file (``kind``)" or ``empty``."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read{' ' + what if what else ''} ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file ({kind})") from None
    if not text.strip():
        raise ValueError(f"{path}: {empty}")
    return text


def _describe(lo, hi, lo_open, hi_open) -> str:
    # An unbounded end is always open: infinities are rejected like NaN.
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def checked_array(
    name: str,
    value,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    integer: bool = False,
) -> np.ndarray:
    """Return ``value`` as a float array after checking it lies in the range.

    ``lo``/``hi`` of ``None`` mean unbounded; ``*_open`` makes that end exclusive.
    Raises ``ValueError`` naming ``name`` and the allowed range otherwise.
    """
    allowed = _describe(lo, hi, lo_open, hi_open)
    kind = "an integer" if integer else "a number"
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {kind} in {allowed} (or an array of them); got {value!r}") from None
    if arr.size == 0:
        raise ValueError(f"{name} must be {kind} in {allowed} (or a non-empty array of them); got an empty array")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be {kind} in {allowed}; got a NaN or infinite value")
    bad = np.zeros(arr.shape, dtype=bool)
    if lo is not None:
        bad |= (arr <= lo) if lo_open else (arr < lo)
    if hi is not None:
        bad |= (arr >= hi) if hi_open else (arr > hi)
    if integer:
        bad |= arr != np.round(arr)
    if np.any(bad):
        first = arr[bad].flat[0]
        raise ValueError(f"{name} must be {kind} in {allowed}; got {first:g}")
    return arr


def checked_int(name: str, value, *, lo: int | None = None, hi: int | None = None) -> int:
    """A scalar integer in [lo, hi]."""
    message = f"{name} must be an integer in {_describe(lo, hi, False, False)}; got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ValueError(message)
    if isinstance(value, (float, np.floating)) and (not math.isfinite(value) or value != int(value)):
        raise ValueError(message)
    ivalue = int(value)
    if (lo is not None and ivalue < lo) or (hi is not None and ivalue > hi):
        raise ValueError(message)
    return ivalue


def checked_choice(name: str, value, choices) -> str:
    """A case-insensitive string among ``choices``; returns the canonical spelling."""
    if isinstance(value, str):
        for choice in choices:
            if value.strip().lower() == choice.lower():
                return choice
    raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")


def scalar_or_array(arr: np.ndarray):
    """Give a Python float back for 0-d results, an array otherwise."""
    return float(arr) if np.ndim(arr) == 0 else arr
