"""A progress line for a long command, written only where a person watches.

A command that may run for seconds (``speclib frontier`` over a calibration's
draws) says what it is doing once it has run :func:`delay` seconds. The line
goes to an interactive terminal alone: where standard error is a file, a pipe
or a captured buffer (a notebook's output, a CI log, ``run_line``), nothing is
written, so what a command prints never depends on how fast the machine ran
it. ``SPECLIB_PROGRESS_DELAY`` sets the delay in seconds (default 1); the
tests set it to 0, so that a line that did leak into a captured output would
do so on every run, not only on a loaded machine.
"""
from __future__ import annotations

import math
import os
import sys
import threading

#: The environment variable that sets the delay, in seconds.
DELAY_VARIABLE = "SPECLIB_PROGRESS_DELAY"
DEFAULT_DELAY = 1.0


def delay() -> float:
    """The delay before a progress line, from ``SPECLIB_PROGRESS_DELAY``
    (seconds, a finite number >= 0; unset or empty: 1)."""
    text = os.environ.get(DELAY_VARIABLE, "").strip()
    if not text:
        return DEFAULT_DELAY
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{DELAY_VARIABLE}: must be a number of seconds >= 0; got {text!r}")
    return value


def interactive(stream) -> bool:
    """Whether ``stream`` is an interactive terminal (a captured buffer is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


class Progress:
    """``with Progress(message):`` writes ``message`` (one line) to standard
    error once the block has run :func:`delay` seconds, if standard error is
    an interactive terminal; a block that ends sooner, or any other standard
    error, gets nothing."""

    def __init__(self, message: str, stream=None):
        self.message = " ".join(str(message).split())
        self.stream = stream
        self._timer = None

    def _write(self, stream) -> None:
        stream.write(self.message + "\n")
        stream.flush()

    def __enter__(self):
        stream = sys.stderr if self.stream is None else self.stream
        if interactive(stream):
            self._timer = threading.Timer(delay(), self._write, args=(stream,))
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc) -> bool:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return False
