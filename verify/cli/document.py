"""Where a command's one document goes (``--json``, a program to ``-o -``).

Such a command promises exactly one document on standard output.  The user's code runs in the
same process (a kernel, a reference, a pass), and :data:`~neuronsim.machine.formats.pyfile.PRINTS_ASIDE`
sends its ``print`` to standard error; but ``print`` is only the Python level.  What writes to
file descriptor 1 itself went into the document or took it (probe_bad F3): ``os.write(1, ...)``,
a child process that inherits the descriptor (a kernel that runs ``git``), a C library's
``printf``, and ``os.dup2(devnull, 1)``, after which the report was lost with exit 0.

So while such a command runs, the document gets a descriptor of its own and descriptor 1 points
at standard error; the command's ``sys.stdout`` writes to the document's descriptor.  When the
command ends, descriptor 1 is the document's again.  :func:`stream` is where the document goes
wherever it is written from: an error that arrives while the user's reference still runs on its
thread, whose block keeps ``sys.stdout`` pointed at standard error, wrote its error document
there and left standard output empty (probe_bad F5).
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, TextIO

__all__ = ["hold", "release", "stream", "descriptor", "silence", "closed_stream"]

#: The document's stream while a one-document command runs (None: no such command).
_HELD: list[Any] = [None]
#: Bound as the module loads: a kernel's ``os.dup2 = None`` failed the release after the report
#: was written, and a second (error) document followed it (a probe).
_DUP, _DUP2, _CLOSE, _OPEN, _FSTAT = os.dup, os.dup2, os.close, os.open, os.fstat


def stream() -> TextIO | None:
    """The stream of the command's document: the held one, else ``sys.stdout``."""
    return _HELD[0] if _HELD[0] is not None else sys.stdout


def descriptor() -> int:
    """The file descriptor the document is written to (1 when none is held apart)."""
    try:
        return stream().fileno()
    except (AttributeError, OSError, ValueError):
        return 1


def closed_stream() -> str | None:
    """What names a standard stream whose descriptor was closed while the command ran (a
    kernel's ``os.close(1)``: its failure was a bare "Bad file descriptor"), or None."""
    for fd, name in ((descriptor(), "standard output"), (2, "standard error")):
        try:
            _FSTAT(fd)
        except OSError:
            return f"{name} (descriptor {fd}, closed while the command ran)"
    return None


def silence() -> None:
    """Point the document's stream at /dev/null, so that nothing writes into a closed pipe or a
    full device again (an error document, the interpreter's last flush)."""
    try:
        devnull = _OPEN(os.devnull, os.O_WRONLY)
        _DUP2(devnull, stream().fileno())
    except (AttributeError, OSError, ValueError):
        pass
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - held until the process exits
    if _HELD[0] is not None:
        _HELD[0] = sys.stdout


def hold(active: bool) -> tuple[TextIO, int] | None:
    """At the start of a command: under a one-document command (``active``), give the
    document a descriptor of its own and point descriptor 1 at standard error.  What
    :func:`release` needs, or None (nothing held apart: standard output closed, or not
    descriptor 1, as under a test's in-memory runner, whose stream is still the document's)."""
    if not active or sys.stdout is None:
        return None
    _HELD[0] = sys.stdout
    try:
        if sys.stdout.fileno() != 1:
            return None
        sys.stdout.flush()
        own = _DUP(1)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    try:
        _DUP2(2, 1)
    except OSError:  # no standard error to point at (`2>&-`): the document keeps descriptor 1
        _CLOSE(own)
        return None
    kept = sys.stdout
    # closefd=False: the descriptor outlives the stream (release puts it back on 1), and a stream
    # dropped on a failing path warned "unclosed file" from its finaliser, a second line under
    # PYTHONWARNINGS=error (a probe)
    sys.stdout = _HELD[0] = io.TextIOWrapper(io.BufferedWriter(io.FileIO(own, "w", closefd=False)),
                                             encoding=kept.encoding, errors=kept.errors, line_buffering=True)
    return kept, own


def release(held: tuple[TextIO, int] | None) -> None:
    """At the end of the command: descriptor 1 and ``sys.stdout`` are the document's again."""
    document, _HELD[0] = _HELD[0], None
    if held is None:
        return
    kept, own = held
    try:
        if document is not None:
            document.flush()
    except (OSError, ValueError):  # a reader gone or a full device: the command has said so already
        pass
    try:
        _DUP2(own, 1)  # (after silencing, /dev/null: so stays the interpreter's last flush)
    except OSError:
        pass
    if sys.stdout is document:
        sys.stdout = kept
