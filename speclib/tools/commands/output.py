"""What every ``speclib`` command shares on the way out: numbers as text
(:func:`format_table`, :func:`exact`), the notes on standard error
(:func:`note`, :func:`queue_line`) and files written whole or not at all
(:func:`write_output`, :func:`write_bytes`)."""
from __future__ import annotations

import math
import os
import sys
import tempfile

from .options import UsageError

#: What a conditional rate prints as where no draft reached the position before it (0 / 0).
NO_RATE = "undefined"


def rate(value) -> str:
    """A conditional acceptance rate to four places, or :data:`NO_RATE` where
    it is undefined (no draft survived to the position before)."""
    return f"{value:.4f}" if math.isfinite(value) else NO_RATE


def format_table(headers, rows, align=None) -> str:
    """Columns padded to a common width. ``align`` has one letter per column,
    ``l`` or ``r``; by default the first column is left-aligned and the rest
    (numbers) right-aligned."""
    align = align or "l" + "r" * (len(headers) - 1)
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def exact(x) -> str:
    """A number as text that reads back to the same float (whole numbers without '.0')."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def grouped(x, digits=0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def queue_line(deployment, batch, context, gammas=(), consequence="", *, what="concurrency") -> str:
    """The line the command prints on standard error where ``batch`` (one
    number) is above what ``deployment`` holds at ``context`` without a draft
    or with one of the draft lengths ``gammas``
    (:meth:`speclib.Deployment.max_batch`, the count
    :meth:`speclib.Deployment.running` bounds every priced batch with), saying
    what that does (``consequence``); "" where it holds them all or has no
    memory check."""
    if not deployment.memory_checked:
        return ""
    ks = [0] + sorted({int(g) for g in gammas} - {0})
    held = [int(deployment.max_batch(float(context), k)) for k in ks]
    if float(batch) <= min(held):
        return ""
    counts = ", ".join(f"{m:,} sequences with \u03b3 = {k}" if i == 0 else f"{m:,} with \u03b3 = {k}"
                       for i, (k, m) in enumerate(zip(ks, held)))
    return (f"{what} {exact(batch)} is above what memory holds at {float(context):,.0f} tokens ({counts}): "
            f"{consequence}")


#: An acceptance at or above this is at the edge: the drafts run toward the search cap.
EDGE_ALPHA = 0.99


def extrapolation_notes(command: str, notes=(), *, alpha=None, gamma_star=None, searched=None) -> None:
    """One line on standard error for each thing the answer extrapolates:
    the calibration's ``notes`` (a chip or an engine with no fitted constant,
    a batch outside the fitted range; :meth:`speclib.core.calibrated.Calibration.notes`)
    and an i.i.d. acceptance ``alpha`` at the edge (>= :data:`EDGE_ALPHA`),
    with what gamma* (the largest, ``gamma_star``) then rests on: the search
    cap 0..``searched`` where it reaches it."""
    for line in notes:
        note(f"extrapolates: {line}", command)
    if alpha is not None and float(alpha) >= EDGE_ALPHA:
        if gamma_star is not None and searched is not None and int(gamma_star) >= int(searched) > 0:
            rests = (f"gamma* = {int(gamma_star)} is the search cap (--gamma-max {int(searched)}), not an optimum: "
                     "set --gamma-max (or --max-k) to the longest draft the engine runs")
        else:
            rests = f"gamma* = {int(gamma_star)} rests on it" if gamma_star is not None else "the answer rests on it"
        note(f"extrapolates: acceptance {float(alpha):g} is at the edge (>= {EDGE_ALPHA:g}), where every drafted "
             f"token is all but certain to be kept; {rests}", command)


def note(line: str, command: str):
    """``line`` on standard error, after the command's name (nothing for "")."""
    if line:
        sys.stderr.write(f"speclib {command}: {line}\n")


def write_output(args, text: str, out) -> int:
    """Everything is computed before this: stdout, or FILE replaced atomically."""
    if args.output is None:
        out.write(text)
        return 0
    directory = os.path.dirname(os.path.abspath(args.output))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".speclib-", dir=directory)
        try:
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(tmp, args.output)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise UsageError(f"--output: cannot write {args.output!r} ({exc.strerror or exc})") from None
    return 0


def write_bytes(option: str, path: str, data: bytes) -> None:
    """``data`` to ``path``, replaced atomically (nothing written on a failure)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".speclib-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path!r} ({exc.strerror or exc})") from None


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def trust_line(by: str = "model") -> str:
    """What the calibrated step's stored hold-out ``by`` a grouping scores
    beside its null baselines, in one line
    (:func:`speclib.calibration.baselines.trust_line`)."""
    from speclib.calibration import baselines
    from speclib.calibration.held_out import stored_skill

    return baselines.trust_line(stored_skill(by)["skill"], {"model": "by model family", "chip": "by chip"}[by])


def trust_record(by: str = "model") -> list:
    """The stored hold-out's figures beside their baselines, for ``--json``:
    {figure, items, step, baseline, baseline's score, beats}."""
    from speclib.calibration.held_out import stored_skill

    keys = ("figure", "items", "step", "baseline", "baseline_score", "beats")
    return [dict(zip(keys, row)) for row in stored_skill(by)["skill"]]
