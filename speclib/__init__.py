"""speclib: the cost model of "The economics of speculative decoding"
(F. Finn, 2026) as sympy-derived closed forms, with presets and figures.

Public API (all broadcast over numpy arrays; ``model=`` and ``hardware=``
default to DeepSeek-V4-Flash on one B200, as in the paper)::

    experts_activated(B, k, E, routing=None)
    expected_committed(alpha, gamma)
    expected_committed_from_survival(survival, gamma)
    attention_intensity(T, S, model=None, variant=None)
    marginal_cost(B, S, c_draft, model=None, hardware=None)
    speedup(alpha, gamma, B, S, c_draft, model=None, hardware=None)
    optimal_gamma(alpha, B, S, c_draft, model=None, hardware=None, gamma_max=64)
    schedule(model, hardware, seq, alpha=..., max_batch=N)   gamma* per batch size, as engines read it
    capacity.max_batch(model, hardware, context, tp=1)
    presets.hardware(name), presets.model(name), presets.from_hf_config(path)

``speedup`` and ``optimal_gamma`` (and :func:`speclib.speculation.pricing`)
also take ``step_time="roofline" | "calibrated"``, ``tp``, ``engine`` and
``routing`` (see :mod:`.core.calibrated`).

``alpha`` may also be a :class:`SurvivalCurve` (depth-dependent acceptance).

The package is grouped by role; a formula flows from the bottom up:

* :mod:`.formulas`: every closed form, once, as a sympy expression, and its
  numpy print-out :mod:`.formulas.numpy_functions` (generated, never edited);
* :mod:`.presets`: chips, interconnects and models, as data files and one reader;
* :mod:`.core`: the model, numerically, with checked arguments, one module
  per idea (:mod:`.core.moe`, :mod:`.core.attention`, :mod:`.core.acceptance`,
  :mod:`.core.cost`, :mod:`.core.speculation`, :mod:`.core.parallel`,
  :mod:`.core.capacity`); these
  also answer to their short names, ``speclib.moe`` and so on;
* :mod:`.evidence`: the model checked (:mod:`.evidence.claims`, the paper's
  numbers recomputed; :mod:`.evidence.derivations`, the appendix derivations;
  :mod:`.evidence.validation`, measured decoding);
* :mod:`.presentation`: the book's tables, figures, widgets, the live HTML
  figures and the Sphinx extension;
* :mod:`.tools`: the ``speclib`` command (:mod:`.tools.cli`) and speculation
  schedules for serving engines (:mod:`.tools.schedule`, :mod:`.tools.engines`).

``import speclib`` loads the model and the presets only (numpy, no sympy,
matplotlib or ipywidgets); ``speclib.claims``, ``speclib.figures`` and the
other modules above the core load on first use.
"""
import importlib as _importlib
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys

from . import presets
from .core import acceptance, attention, capacity, cost, moe, parallel, speculation
from .core.acceptance import SurvivalCurve, expected_committed, expected_committed_from_survival
from .core.attention import attention_intensity
from .core.cost import marginal_cost
from .core.moe import experts_activated
from .core.speculation import optimal_gamma, speedup

#: Where each module known by a short name lives.
SHORT_NAMES = {
    **{name: f"speclib.core.{name}" for name in ("acceptance", "attention", "capacity", "cost", "moe", "parallel",
                                                        "speculation")},
    "claims": "speclib.evidence.claims",
    "derivations": "speclib.evidence.derivations",
    "validation": "speclib.evidence.validation",
    "tables": "speclib.presentation.tables",
    "summaries": "speclib.presentation.summaries",
    "figures": "speclib.presentation.figures",
    "widgets": "speclib.presentation.widgets",
    "web": "speclib.presentation.web",
    "sphinx_ext": "speclib.presentation.sphinx_ext",
    "cli": "speclib.tools.cli",
}
_ROLES = ("formulas", "evidence", "presentation", "tools")


class _ShortNames(_abc.MetaPathFinder, _abc.Loader):
    """``import speclib.figures.paper`` finds speclib.presentation.figures.paper:
    the module itself, imported on first use, under both names."""

    def find_spec(self, fullname, path=None, target=None):
        head, _, rest = fullname.partition(".")
        short, _, below = rest.partition(".")
        if head != __name__ or short not in SHORT_NAMES:
            return None
        return _util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        _, short, *below = spec.name.split(".")
        module = _importlib.import_module(".".join([SHORT_NAMES[short], *below]))
        spec.loader_state = module.__spec__  # the import system is about to overwrite it
        return module

    def exec_module(self, module):
        # Already executed under its own name: give it its own spec back.
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _ShortNames) for finder in _sys.meta_path):
    _sys.meta_path.insert(0, _ShortNames())  # before the path finder, which would load a second copy


def __getattr__(name):
    if name == "schedule":  # a tool, imported on first use (keeps ``import speclib`` light)
        from .tools.schedule import schedule

        globals()["schedule"] = schedule
        return schedule
    # speclib.claims, speclib.figures, speclib.formulas ...: imported on first use.
    if name in SHORT_NAMES or name in _ROLES:
        module = _importlib.import_module(SHORT_NAMES.get(name, f"speclib.{name}"))
        globals()[name] = module
        return module
    raise AttributeError(f"module 'speclib' has no attribute {name!r}")


__all__ = [
    "SurvivalCurve",
    "acceptance",
    "attention",
    "attention_intensity",
    "capacity",
    "cost",
    "expected_committed",
    "expected_committed_from_survival",
    "experts_activated",
    "marginal_cost",
    "moe",
    "optimal_gamma",
    "parallel",
    "presets",
    "schedule",
    "speculation",
    "speedup",
]
