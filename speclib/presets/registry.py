"""Finding a preset by name, and the interconnect table.

:func:`lookup` finds an item of a preset table by its name or an alias. The
interconnect table lives here rather than in the package ``__init__`` because
a hardware config names its interconnect (:mod:`.hardware_config` checks the
name): both that module and the package import this one, and neither imports
the other.
"""
from __future__ import annotations

from . import catalog as _catalog
from .architecture import Interconnect

#: The interconnect presets, in listing order (``interconnects.json``).
INTERCONNECTS = _catalog.read_table("interconnects")


def lookup(kind: str, name, registry):
    """The item of ``registry`` whose name or alias is ``name`` (case-insensitive);
    otherwise a ValueError listing the known names of this ``kind``."""
    if isinstance(name, str):
        key = name.strip().lower()
        for item in registry:
            if key == item.name.lower() or key in (a.lower() for a in item.aliases):
                return item
    known = ", ".join(item.name for item in registry)
    raise ValueError(f"unknown {kind} {name!r}; known: {known}")


def interconnect(name) -> Interconnect:
    """The interconnect preset called ``name`` (case-insensitive), or
    ``name`` itself if it already is an :class:`Interconnect`."""
    if isinstance(name, Interconnect):
        return name
    return lookup("interconnect", name, INTERCONNECTS)


def interconnect_names() -> list:
    return [item.name for item in INTERCONNECTS]
