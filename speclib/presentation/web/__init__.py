"""The HTML book's live figures: speclib's model running in the reader's browser.

* :mod:`.codegen` prints speclib's sympy closed forms as JavaScript and emits
  the model's constants and the figures' controls as data (``speclib_model.js``);
* :mod:`.live_figures` says which figures are live, with which controls,
  axes and defaults (the notebook widgets' and the static figures');
* ``static/speclib_live.js`` draws each live figure (controls plus a small SVG
  plot) over the static PNG of the cell tagged ``figure-<name>``;
* :mod:`.offline` gathers the MathJax files the book serves itself, so no page
  loads anything from another host;
* :mod:`speclib.sphinx_ext` wires all of it into the Sphinx build.
"""
from .codegen import cost_constants, formulas, javascript_expression, model_constants, model_javascript

__all__ = ["cost_constants", "formulas", "javascript_expression", "model_constants", "model_javascript"]
