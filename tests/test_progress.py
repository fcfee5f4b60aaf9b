"""A progress line reaches an interactive terminal only: what a command prints
into a captured output (a notebook's, ``run_line``'s) never depends on how
long it ran. conftest.py sets the delay to 0 for every test and every notebook
kernel nbval runs, so the chapters' own commands run with it at zero there and
their stored outputs are compared unchanged."""
from __future__ import annotations

import io
import os
import time

import pytest

from speclib.tools import progress
from speclib.tools.cli import run_line


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_suite_runs_with_no_progress_delay():
    # the premise of the nbval check: every notebook kernel inherits this
    assert os.environ.get(progress.DELAY_VARIABLE) == "0"
    assert progress.delay() == 0.0


def test_a_terminal_gets_the_line_and_a_buffer_does_not(monkeypatch):
    monkeypatch.setenv(progress.DELAY_VARIABLE, "0")
    terminal, buffer = _Terminal(), io.StringIO()
    with progress.Progress("working  ...", stream=terminal):
        deadline = time.monotonic() + 10
        while not terminal.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    with progress.Progress("working ...", stream=buffer):
        time.sleep(0.05)
    assert terminal.getvalue() == "working ...\n"
    assert buffer.getvalue() == ""


def test_a_block_that_ends_first_gets_nothing(monkeypatch):
    monkeypatch.setenv(progress.DELAY_VARIABLE, "30")
    terminal = _Terminal()
    with progress.Progress("working ...", stream=terminal):
        pass
    time.sleep(0.05)
    assert terminal.getvalue() == ""


@pytest.mark.parametrize("text", ["-1", "soon", "nan", "inf"])
def test_a_bad_delay_names_the_variable(monkeypatch, text):
    monkeypatch.setenv(progress.DELAY_VARIABLE, text)
    with pytest.raises(ValueError, match=progress.DELAY_VARIABLE):
        progress.delay()
    status, printed = run_line("speclib frontier --model deepseek-v4-flash --hardware b200 --alpha 0.7 --concurrency 1,8")
    assert status == 2
    assert printed.count("\n") == 1 and progress.DELAY_VARIABLE in printed


def test_frontier_output_is_the_same_at_any_delay(monkeypatch):
    line = "speclib frontier --model deepseek-v4-flash --hardware b200 --alpha 0.7 --concurrency 1,8,64 --format csv"
    monkeypatch.setenv(progress.DELAY_VARIABLE, "0")
    fast = run_line(line)
    monkeypatch.setenv(progress.DELAY_VARIABLE, "1000")
    slow = run_line(line)
    assert fast[0] == 0 and fast == slow
    assert "pricing" not in fast[1]
