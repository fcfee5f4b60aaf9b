"""Running ``speclib`` command lines as a chapter shows them: :class:`Shell`
runs each in a scratch folder of the shipped public engine output and gives
back the command and what it printed, once (:class:`Terminal`)."""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

from ..presentation.figures.your_deployment import PUBLIC, WIDTH, Terminal
from .cli import run_line


class Shell:
    """A scratch folder holding copies of ``files`` (paths, or the names of
    files in :data:`PUBLIC`), where :meth:`run` runs ``speclib`` command lines
    as a shell in that folder would: the command and what it printed, once, as
    a :class:`Terminal`. A command whose exit status is not the expected one
    raises RuntimeError with what it printed, so a chapter cannot show a
    failure it did not mean to. The folder is removed by :meth:`close` or
    when the object is collected; the caller's working directory is never
    changed."""

    def __init__(self, *files, width: int = WIDTH):
        self.width = width
        self.root = Path(tempfile.mkdtemp(prefix="speclib-shell-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.root), True)
        for f in files:
            source = Path(f) if Path(f).is_absolute() or Path(f).exists() else PUBLIC / str(f)
            if not source.is_file():
                raise ValueError(f"files must be paths or names of files in {PUBLIC}; got {str(f)!r}")
            shutil.copy(source, self.root / source.name)

    def run(self, line: str, status: int = 0) -> Terminal:
        """``line`` run in the folder: a :class:`Terminal` of it and what it printed."""
        here = os.getcwd()
        os.chdir(self.root)
        try:
            got, printed = run_line(line)
        finally:
            os.chdir(here)
        if got != status:
            raise RuntimeError(f"{line!r} exited with status {got}, not {status}; it printed:\n{printed}")
        return Terminal(line, printed, self.width)

    def path(self, name: str) -> Path:
        """The path of ``name`` in the folder (a file a command wrote, or a copy)."""
        return self.root / name

    def close(self) -> None:
        self._cleanup()
