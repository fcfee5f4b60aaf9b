"""Figures and tables of the book, as functions returning matplotlib Figures
(or table objects with an HTML and a plain-text form).

Each function's defaults are the paper's (DeepSeek-V4-Flash on one B200) and
each takes ``model=``, ``hardware=`` and its figure's controls as keyword
arguments. A notebook cell that ends with the call shows exactly one image:
the figure is made through pyplot (so Jupyter's inline display is active) and
then closed in pyplot, so it is not shown a second time. Use :func:`show` to
display one that is not the cell's last expression.

Modules: :mod:`.paper` holds the paper's figures and the main chapters'
extras; other chapters add sibling modules and one import line here
(:mod:`.beyond`, :mod:`.deployments`, :mod:`.sequel`, :mod:`.schedules`).
"""
# Chapters whose figures are definitions (speclib.presentation.definition):
from . import common, draft_length, pricing  # noqa: F401
from . import expert_tax as expert_tax_figures  # noqa: F401
from . import attention as attention_figures  # noqa: F401
from . import beyond  # figures of the "Beyond the paper" chapters
from . import deployments  # figures and tables of the "Other deployments" chapter
from . import sequel  # figures of the chapters on the sequel (drafters, hybrid attention, adaptive gamma)
from . import schedules  # figures of the "Putting it on an engine" chapter
from . import realism  # figures and tables of the deployment-realism chapters
from ._style import png_bytes
from .notebook import NumberTable, equation, equations, ridge_crossing
from .paper import (
    BATCH_RANGE,
    FIGURES,
    IntensityTable,
    artist,
    artists,
    attention_table,
    attention_width,
    compressed_attention,
    expert_tax,
    expert_tax_log,
    gamma_map,
    gamma_regions,
    integer_batches,
    ledger,
    optimal_gamma,
    seq_len_from_slider,
    speedup_curves,
    zero_gamma_bands,
)


def show(fig):
    """Display ``fig`` once in a notebook (a no-op outside IPython)."""
    from IPython.display import display

    display(fig)


__all__ = [
    "BATCH_RANGE",
    "NumberTable",
    "equation",
    "equations",
    "ridge_crossing",
    "FIGURES",
    "IntensityTable",
    "artist",
    "artists",
    "attention_table",
    "attention_width",
    "compressed_attention",
    "expert_tax",
    "expert_tax_log",
    "gamma_map",
    "gamma_regions",
    "integer_batches",
    "ledger",
    "optimal_gamma",
    "png_bytes",
    "seq_len_from_slider",
    "show",
    "speedup_curves",
    "zero_gamma_bands",
]
