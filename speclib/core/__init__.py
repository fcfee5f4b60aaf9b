"""The model itself, numerically: numpy functions with checked arguments.

One module per idea: :mod:`.moe` (the expert tax), :mod:`.attention`
(attention intensity), :mod:`.acceptance` (committed tokens), :mod:`.cost`
(per-component rooflines and the ledger), :mod:`.speculation` (speedup and
gamma*), :mod:`.parallel` (expert parallelism). Every closed form they
evaluate is a function of :mod:`speclib.formulas.numpy_functions`, printed from
the sympy expression in :mod:`speclib.formulas`; nothing here imports sympy.
A sympy name that is not defined here (``speclib.formulas.moe.experts_activated_expr``,
``speclib.formulas.cost.t``) is looked up in the module's twin in
:mod:`speclib.formulas` on first use.
"""
