"""Errors of the NKI frontend, located at the kernel's own source line.

Every problem a kernel author can cause is an :class:`NkiError` whose message starts with
``file.py:LINE:`` (the kernel frame that made the call), so the command line prints one line
and exits 2.  :class:`NotAffine` is internal: a legacy loop body that is not affine in its
loop variable makes the tracer start again with that loop unrolled.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import FrameType

from neuronsim.machine.ir.errors import ProgramError

__all__ = ["NkiError", "NkiInternalError", "NotAffine", "SourceLine", "user_line", "user_frame", "user_site",
           "line_of", "unsupported", "fail"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True, slots=True)
class SourceLine:
    """Where a call came from: the kernel file (relative to cwd when below it) and line."""

    file: str
    line: int
    path: str = ""

    def __str__(self) -> str:  # line 0: the file as a whole (it is missing, or not a kernel file)
        return f"{self.file}:{self.line}" if self.line else self.file


def _display(path: str) -> str:
    """The path as reports print it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return os.path.basename(path)
    return os.path.basename(path) if rel.startswith("..") else rel


_CODE: dict[int, tuple[bool, str, str, object]] = {}


def _code_info(code: object) -> tuple[bool, str, str, object]:
    """``(is the frontend's own code, display name, absolute path, code)`` of a code object
    (cached: tracing asks for every frame of every call).  Keyed by ``id``: hashing a code
    object hashes its constants every time (a third of a microsecond); the entry holds the
    code, so its id is never reused while cached."""
    info = _CODE.get(id(code))
    if info is None:
        path = os.path.abspath(code.co_filename)  # type: ignore[attr-defined]
        ours = path.startswith(_PACKAGE_DIR + os.sep) or path.endswith("contextlib.py")
        info = _CODE[id(code)] = (ours, _display(path), path, code)
    return info


def user_frame(depth: int = 1) -> FrameType | None:
    """The innermost frame outside this package (and the standard library's contextlib):
    the kernel statement being traced."""
    frame = sys._getframe(depth)
    while frame is not None:
        if not _code_info(frame.f_code)[0]:
            return frame
        frame = frame.f_back
    return None


def user_site(depth: int = 1) -> tuple[SourceLine, FrameType | None]:
    """The kernel line being traced and its frame (one walk: every NKI call asks)."""
    frame = sys._getframe(depth)
    while frame is not None:
        info = _CODE.get(id(frame.f_code)) or _code_info(frame.f_code)
        if not info[0]:
            return SourceLine(info[1], frame.f_lineno, info[2]), frame
        frame = frame.f_back
    return SourceLine("<unknown>", 0), None


def line_of(frame: FrameType | None) -> SourceLine:
    """The kernel line ``frame`` is running."""
    if frame is None:
        return SourceLine("<unknown>", 0)
    _ours, display, path, _code = _code_info(frame.f_code)
    return SourceLine(display, frame.f_lineno, path)


def user_line(depth: int = 1) -> SourceLine:
    """The kernel line being traced (:func:`user_frame`)."""
    return line_of(user_frame(depth + 1))


class NkiError(ProgramError):
    """A kernel that cannot be traced: ``"file.py:LINE: what"``.

    >>> str(NkiError(SourceLine("k.py", 3), "nisa.sendrecv is not supported (two-core kernels)"))
    'k.py:3: nisa.sendrecv is not supported (two-core kernels)'
    """

    def __init__(self, where: SourceLine | str, message: str) -> None:
        super().__init__(str(where), message)


class NkiInternalError(RuntimeError):
    """An exception raised inside the frontend's own code while tracing (not by the kernel's
    code, not an :class:`NkiError`): a bug of neuronsim, named with the kernel line it was
    tracing.  Not a :class:`ProgramError`, so the command line reports it as an internal error
    (exit 3, one line), never as the kernel author's mistake; the original exception is its
    ``__cause__``."""


class NotAffine(Exception):
    """Raised while tracing a kept legacy loop whose body is not affine in its variable.

    ``loops`` are the keys (``file:line`` of the range call) of the loops to unroll."""

    def __init__(self, loops: tuple[str, ...], what: str) -> None:
        super().__init__(what)
        self.loops = loops
        self.what = what


def fail(message: str) -> NkiError:
    """An :class:`NkiError` at the current kernel line (raise it)."""
    return NkiError(user_line(2), message)


def unsupported(construct: str, why: str) -> NkiError:
    """``"<construct> is not supported (<why>)"`` at the current kernel line (raise it)."""
    return NkiError(user_line(2), f"{construct} is not supported ({why})")
