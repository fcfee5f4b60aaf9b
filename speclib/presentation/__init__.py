"""What the book shows. Each figure is one definition (:mod:`.definition`:
controls, a compute function in the figure array language of :mod:`.arrays`,
panels), in the module of its chapter (:mod:`.figures`); three generic
renderers draw every definition: :mod:`.static` (matplotlib: the book's
images and the PDF), :mod:`.interactive` (ipywidgets, in a kernel) and
:mod:`.web` (the HTML page, from the recorded compute graphs). Tables of
computed values (:mod:`.tables`), display maths (:mod:`.equations`), the
look of every figure (:mod:`.style`) and the Sphinx extension that puts it
all in the book (:mod:`.sphinx_ext`) complete it."""

from .._extras import require as _require

_require("speclib.presentation (the book's figures and widgets)", ("matplotlib", "ipywidgets", "sympy"))
