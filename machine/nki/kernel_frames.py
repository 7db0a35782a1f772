"""Which frames of a failure's traceback are the kernel's own code, and so where a kernel's
mistake is said: the innermost of them, never neuronsim's own frames (its frontend, passes,
checker), the Python or numpy libraries, or an import's machinery.  A shipped scenario's NKI
kernel (``scenarios/nki``) counts as a kernel.

An ``AssertionError`` raised by an assert helper of the kernel's library (a function whose name
says assert, as nki-library's ``kernel_assert(condition, text)``) is said at the line that
called the helper, the helper named: the helper's own line is the same for every check.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from collections.abc import Iterator

from neuronsim.machine.ir.source import shown_path
from neuronsim.machine.nki.errors import SourceLine

__all__ = ["OURS", "kernel_frame", "kernel_frames", "raised_by_us", "assertion_site", "the_kernels", "library_folders"]

#: neuronsim's ``machine`` package and its shipped scenarios
OURS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scenarios"))
def library_folders(*rooms: str) -> tuple[str, ...]:
    """Folders whose files are no user's: the standard library's, the installed packages' and
    neuronsim's ``rooms`` (``machine``, ``passes``, ...; also in a checkout installed editable,
    whose tests and examples are users' files), each ending in a separator.

    >>> any(folder.endswith(os.sep + "machine" + os.sep) for folder in library_folders("machine"))
    True
    """
    package = os.path.dirname(OURS[0])
    paths = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted({os.path.abspath(p) + os.sep for p in paths if p}
                        | {os.path.join(package, room) + os.sep for room in rooms}))


#: neuronsim's compiler and checker packages: never the kernel's own frame when locating an error
_PIPELINE = tuple(os.path.join(os.path.dirname(OURS[0]), package) + os.sep for package in ("passes", "verify"))


def kernel_frames(err: BaseException) -> Iterator[tuple[SourceLine, str]]:
    """The lines of ``err``'s traceback in the kernel's own code, outermost first, each with its
    function's name."""
    for frame, line in traceback.walk_tb(err.__traceback__):
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(OURS) and not path.startswith(os.path.join(OURS[1], "nki")):
            continue
        if path.startswith(_PIPELINE) or frame.f_code.co_filename.startswith("<frozen "):
            continue  # a kernel run at import (an eager call) fails inside our passes: not its line
        if path.startswith((sys.prefix, sys.base_prefix)) or "site-packages" in path:
            continue
        yield SourceLine(shown_path(path), line, path), frame.f_code.co_name


def kernel_frame(err: BaseException) -> SourceLine | None:
    """The innermost frame of ``err``'s traceback in the kernel's own code, if any (the
    loader has no kernel function yet when an import fails, only its file)."""
    frames = list(kernel_frames(err))
    return frames[-1][0] if frames else None


def assertion_site(err: BaseException) -> tuple[SourceLine, str] | None:
    """For an ``AssertionError`` an assert helper raised (module doc): the line calling the
    helper, and the helper's name with its own line; None otherwise."""
    if not isinstance(err, AssertionError):
        return None
    frames = list(kernel_frames(err))
    if len(frames) < 2 or "assert" not in frames[-1][1].lower():
        return None
    (caller, _), (inside, helper) = frames[-2], frames[-1]
    return caller, f"{helper}() at {inside}"


#: Set on an exception a stand-in raises for the kernel's own misuse of a Python builtin it
#: stands for (:func:`the_kernels`).
_KERNELS = "_neuronsim_kernels_mistake"


def the_kernels(err: BaseException) -> BaseException:
    """``err``, raised in a stand-in of a Python builtin (the legacy kernel's ``range``) for the
    kernel's misuse of it (``range(2.5)``), marked as the kernel's: :func:`raised_by_us` is
    False for it, so it is an error at the kernel's line (exit 2), not neuronsim's (exit 3)."""
    setattr(err, _KERNELS, True)
    return err


def raised_by_us(err: BaseException) -> bool:
    """True when the innermost frame of ``err``'s traceback outside the Python and numpy
    libraries is neuronsim's own code (not a kernel's, not a shipped NKI kernel's), unless a
    stand-in marked it the kernel's (:func:`the_kernels`)."""
    if getattr(err, _KERNELS, False):
        return False
    ours = False
    for frame, _line in traceback.walk_tb(err.__traceback__):
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(OURS):  # first: an installed neuronsim lives in site-packages
            ours = not path.startswith(os.path.join(OURS[1], "nki"))
        elif not (path.startswith((sys.prefix, sys.base_prefix)) or "site-packages" in path):
            ours = False
    return ours
