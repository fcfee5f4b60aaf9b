"""The HTML book's live figures: speclib's model running in the reader's browser.

* :mod:`.codegen` prints the catalogue's sympy closed forms as JavaScript
  (``speclib_model.js``) and each live figure's definition, with its compute
  recorded as a graph, as data (``figures/<name>.js``);
* ``static/speclib_live.js`` evaluates any recorded graph and draws any
  definition's panels (controls plus small SVG plots) over the static image
  of the cell tagged ``figure-<name>``;
* :mod:`.offline` gathers the MathJax files the book serves itself, so no page
  loads anything from another host;
* :mod:`speclib.presentation.sphinx_ext` wires all of it into the Sphinx build.
"""
