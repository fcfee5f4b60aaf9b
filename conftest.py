"""The project's pytest configuration for every run from this checkout.

``pytest --nbval book/``, the check the README promises, compares each
notebook's stored outputs with a fresh execution after nbval_sanitize.cfg's
substitutions: without them a float glued with all its digits differs in its
last ones between CPUs (numpy's SIMD paths add in different orders on AVX2 and
AVX-512), and a notebook executed on one machine would fail on another. So the
sanitizer is applied here unless the command names its own
(``--nbval-sanitize-with``), by its absolute path, from whatever directory
pytest was started in. scripts/test.sh passes the same file explicitly.
"""
from __future__ import annotations

import os
from pathlib import Path

# One BLAS thread per process, as scripts/_env.sh sets for its own runs: pytest-xdist's workers and the
# notebooks' kernels inherit it, and OpenBLAS threads in each of them would otherwise contend for the same
# cores (a least-squares solve of the step fit ran a hundred times slower with the other core busy).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# A long command's progress line after no delay at all (speclib.tools.progress): it goes to an interactive
# terminal only, so every captured output (nbval's notebooks, the CLI tests) must come out unchanged. Were one
# to leak into an output, it would do so on every run here, not only where a loaded machine ran past the delay.
os.environ.setdefault("SPECLIB_PROGRESS_DELAY", "0")

#: The sanitizer the bare ``pytest --nbval`` applies.
NBVAL_SANITIZER = Path(__file__).resolve().parent / "nbval_sanitize.cfg"


def pytest_configure(config):
    option = config.option
    # nbval 0.11's option (absent when nbval is not installed); the deprecated
    # --sanitize-with is its alias, which nbval itself copies across.
    if not hasattr(option, "nbval_sanitize_with"):
        return
    if option.nbval_sanitize_with is None and getattr(option, "sanitize_with", None) is None:
        option.nbval_sanitize_with = str(NBVAL_SANITIZER)

