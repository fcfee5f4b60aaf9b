"""Every closed form of the model, written once as a sympy expression.

This is the place to change a formula. From here it flows three ways:

* ``python -m speclib.formulas.generate`` prints the expressions that the
  numeric model evaluates (:data:`speclib.formulas.catalog.NUMERIC`) with
  sympy's NumPy printer into :mod:`speclib.formulas.numpy_functions`, which
  :mod:`speclib.core` (the API, the ``speclib`` command, every figure) calls
  without importing sympy; a test regenerates that file and requires it to be
  identical, so the two cannot drift;
* :mod:`speclib.presentation.web.codegen` prints the same catalogue to
  JavaScript for the live figures of the HTML book;
* :mod:`speclib.evidence.derivations` and :mod:`speclib.evidence.claims`
  derive, check and render them (``sympy.latex``) for the book.

One module per idea, as in :mod:`speclib.core`: :mod:`.moe`,
:mod:`.attention`, :mod:`.acceptance`, :mod:`.cost`, :mod:`.speculation`,
:mod:`.parallel`, :mod:`.workload`. Importing this package itself imports
nothing; its modules import sympy.
"""