"""TEMPORARY shim while the figures move to :mod:`speclib.presentation.style`."""
from ..style import *  # noqa: F401,F403
from ..style import BAND_ALPHA, CYCLE, COLORS, DPI, FIGSIZE, MEMORY_ALPHA, MEMORY_HATCH, RC, RIDGE_STYLE  # noqa: F401
from ..style import batch_label, encode_jpeg, new_canvas_figure, new_figure, png_bytes, style, thousands  # noqa: F401
