"""Where a quantity takes its extreme over a grid, and how flat it is there.

An argmax over a grid returns one point even where the objective is flat: a
plateau of floating-point ties (the price of a drafted token past the far
knee) or of equal integers (gamma* over a run of batches). :func:`optimum`
says how wide the extreme is at two relative tolerances: :data:`TIES`, where
the values are the same number but for rounding (a prose that reports the
extreme states this range where it holds more than one point), and
:data:`PRACTICALLY_FLAT`, within which the objective hardly moves.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Relative distance from the extreme within which a value ties it (floating-point rounding).
TIES = 1e-9
#: Relative distance from the extreme within which the objective is practically flat.
PRACTICALLY_FLAT = 5e-3


def extreme_range(x, y, which: str = "max", rel: float = TIES) -> tuple:
    """(first, last) of the ``x`` where ``y`` takes its ``which`` ("max" or
    "min") to a relative ``rel``: an extreme over a flat plateau is a range
    of ties, not the one point an argmax returns (the prose states it as a
    range where first < last)."""
    if which not in ("max", "min"):
        raise ValueError(f"which must be 'max' or 'min'; got {which!r}")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    v = y.max() if which == "max" else y.min()
    at = x[np.abs(y - v) <= rel * abs(v)]
    return float(at.min()), float(at.max())


@dataclass(frozen=True)
class Optimum:
    """The extreme of a quantity over a grid: its ``value``, ``at`` (the first
    grid point reaching it, what an argmax returns), ``ties`` and ``flat``
    ((first, last) within :data:`TIES` and within ``flat_rel`` of it)."""

    value: float
    at: float
    ties: tuple
    flat: tuple
    flat_rel: float = PRACTICALLY_FLAT

    @property
    def plateau(self) -> bool:
        """Whether the extreme is a range of ties rather than one point."""
        return self.ties[0] < self.ties[1]

    @property
    def verdict(self) -> str:
        return "plateau" if self.plateau else "point"


def optimum(x, y, which: str = "max", flat_rel: float = PRACTICALLY_FLAT) -> Optimum:
    """Where ``y`` over the grid ``x`` takes its ``which`` and how flat it is there."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i = int(np.argmax(y) if which == "max" else np.argmin(y))
    return Optimum(float(y[i]), float(x[i]), extreme_range(x, y, which, TIES), extreme_range(x, y, which, flat_rel),
                   flat_rel)
