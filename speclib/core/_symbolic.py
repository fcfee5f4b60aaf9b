"""Reach a core module's sympy twin by attribute, importing sympy only then."""
from __future__ import annotations

import importlib


def twin_lookup(module: str):
    """A module ``__getattr__`` (PEP 562) for :mod:`speclib.core.<module>` that
    finds a name it does not define in :mod:`speclib.formulas.<module>`: so
    ``speclib.moe.experts_activated_expr`` keeps working while ``import
    speclib`` never loads sympy."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module 'speclib.core.{module}' has no attribute {name!r}")
        formulas = importlib.import_module(f"speclib.formulas.{module}")
        try:
            return getattr(formulas, name)
        except AttributeError:
            raise AttributeError(f"module 'speclib.core.{module}' has no attribute {name!r}") from None

    return __getattr__
