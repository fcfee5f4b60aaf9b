"""What a part of speclib needs beyond the lean install, and one line saying
so when it is missing.

``pip install speclib`` brings what the model and the ``speclib`` command
need (numpy, PyYAML). The closed forms in sympy (:mod:`speclib.formulas`'s
modules, the derivations and the claims), the figures and the widgets
(:mod:`speclib.presentation`) need the ``book`` extra: sympy, matplotlib and
ipywidgets.
"""
from __future__ import annotations

import importlib.util

#: The extras, by name, and the modules each brings.
EXTRAS = {"book": ("sympy", "matplotlib", "ipywidgets")}


class MissingExtra(ImportError):
    """A part of speclib was imported without the extra it needs; the message
    is one line naming what to install."""


def require(part: str, modules, extra: str = "book") -> None:
    """Raise :class:`MissingExtra` if any of ``modules`` cannot be imported."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtra(f"{part} needs {', '.join(missing)}, which the lean install leaves out: "
                           f"pip install 'speclib[{extra}]'")
