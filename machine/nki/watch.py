"""A kernel's import and trace, watched while they run: never a silent wait.

A kernel is user code, and user code may run long or for ever: a Python loop of a billion NKI
calls, a ``while`` whose condition never turns, a module that computes a table at import.
:func:`watched` runs a block (loading and tracing a kernel) under a one-second timer
(``SIGALRM``) whose handler

* says now and then (``every`` seconds, through ``say``) how far the trace has got and the
  kernel line it is at, so that a long trace is never silent;
* stops the block with :class:`TraceStalled` at the kernel's line once the kernel has run
  ``idle_seconds`` of its own Python without an NKI call: the trace made no instruction, no
  NKI call started and none is running (a call may take long, e.g. one that reads device
  values runs the program so far: that is work, not idleness).

:class:`TraceStalled` is a ``BaseException``, as ``KeyboardInterrupt`` is, so that a kernel's
own ``except Exception`` does not swallow it.  The timer needs the main thread and a system
with ``setitimer``; elsewhere the block runs unwatched.

>>> import time
>>> said = []
>>> with watched(idle_seconds=None, say=said.append, every=0.5):
...     time.sleep(1.2)
>>> said[0].startswith("1 s")
True
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from neuronsim.machine.formats.pyfile import SETITIMER, SIGNAL
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.nki import tracer as tracing
from neuronsim.machine.nki.errors import SourceLine, line_of
from neuronsim.machine.nki.kernel_frames import library_folders

__all__ = ["TraceStalled", "watched", "kernel_line", "stopped_when_idle", "stopped_message", "thread_line",
           "HEARTBEAT_SECONDS", "SWALLOWED_SECONDS", "on_swallowed"]

#: Seconds between the lines that say how a long trace is getting on.
HEARTBEAT_SECONDS = 10.0

_TICK = 1.0

#: Files that are not the kernel's: neuronsim's packages, the standard library, installed packages.
_NOT_THE_KERNEL = library_folders("machine", "passes", "verify", "scenarios")


class TraceStalled(BaseException):
    """The kernel ran ``seconds`` of Python at ``where`` without an NKI call."""

    def __init__(self, where: SourceLine, seconds: float) -> None:
        super().__init__(f"{where}: no NKI call for {seconds:.0f} s")
        self.where, self.seconds = where, seconds


def kernel_line(frame: FrameType | None) -> SourceLine:
    """The innermost line of ``frame``'s stack that is the kernel's own (its module, its
    helpers): not neuronsim's, the standard library's or an installed package's.  The
    innermost frame when every one is (a kernel installed as a package)."""
    first = frame
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<") and not os.path.abspath(path).startswith(_NOT_THE_KERNEL):
            return line_of(frame)
        frame = frame.f_back
    return line_of(first)


#: Seconds the watched code has to leave once stopped.  Code that catches every exception (a
#: bare ``except:`` in a loop) swallows :class:`TraceStalled` and runs on: then the last
#: function in :data:`on_swallowed` ends the process (the command line's: exit 2 at the line,
#: outputs taken back); with none, the block is stopped again every second.
SWALLOWED_SECONDS = 3.0
on_swallowed: list[Callable[[SourceLine, float], None]] = []


def _progress() -> tuple[int, int, int, bool]:
    """``(tracer, instructions emitted, NKI calls started, in a call)`` of the active trace."""
    if not tracing._STACK:
        return 0, 0, 0, False
    active = tracing._STACK[-1]
    return id(active), active.kb.emitted, active.calls, active.site is not None


def _finishing() -> bool:
    """Whether the active trace's kernel has returned (its program is being finished)."""
    return bool(tracing._STACK) and getattr(tracing._STACK[-1], "finishing", False)  # (set by frontend._run)


@contextmanager
def watched(*, idle_seconds: float | None, say: Callable[[str], None] | None,
            every: float = HEARTBEAT_SECONDS) -> Iterator[None]:
    """Run the block under the watch described in the module doc (``idle_seconds`` None or 0:
    never stop it; ``say`` None: say nothing)."""
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer")
            or (not idle_seconds and say is None)):
        yield
        return
    started = time.monotonic()
    state = {"seen": _progress()[:3], "moved": started, "said": started, "stopped": None}

    def on_tick(_signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        *seen, busy = _progress()
        if tuple(seen) != state["seen"] or busy:
            state["seen"], state["moved"], state["stopped"] = tuple(seen), now, None
        idle = now - state["moved"]
        if idle_seconds and idle >= idle_seconds:
            where = kernel_line(frame)
            state["stopped"] = state["stopped"] or now
            if on_swallowed and now - state["stopped"] >= SWALLOWED_SECONDS:  # still here: it was caught
                on_swallowed[-1](where, idle_seconds)
            raise TraceStalled(where, idle_seconds)
        if say is not None and now - state["said"] >= every:
            state["said"] = now
            # between two traces of one kernel (a retrace) no kernel runs: the caller's line was named
            # (once the kernel has returned no frame is its: neuronsim's groups.py was named: probe_bc)
            where = ("; the kernel has returned: finishing its program" if _finishing()
                     else f"; the kernel is at {kernel_line(frame)}") if seen[0] else ""
            quiet = f"; no NKI call for {idle:.0f} s" if idle >= every else ""
            say(f"{now - started:.0f} s, {seen[1]:,} instructions so far{where}{quiet}")

    previous = SIGNAL(signal.SIGALRM, on_tick)
    SETITIMER(signal.ITIMER_REAL, _TICK, _TICK)
    try:
        yield
    finally:
        SETITIMER(signal.ITIMER_REAL, 0, 0)
        SIGNAL(signal.SIGALRM, previous)


@contextmanager
def stopped_when_idle(what: str, idle_seconds: float | None) -> Iterator[None]:
    """Run the block (a user's code that makes no NKI call: a ``--reference``, a scenario file)
    stopped once it has run ``idle_seconds`` (None or 0: never), at the user's line, as a
    located error: a loop that never ends is never waited on in silence."""
    try:
        with watched(idle_seconds=idle_seconds, say=None):
            yield
    except TraceStalled as stalled:
        raise ProgramError(str(stalled.where), stopped_message(what, stalled.seconds)) from None


def stopped_message(what: str, seconds: float, without: str = "without returning") -> str:
    """What a user's code stopped by ``--max-idle`` is told (the kernel: "without an NKI call")."""
    return (f"{what} ran {seconds:.0f} s of Python {without} (a loop that never ends?) and was stopped here; give "
            "it longer with --max-idle SECONDS")


def thread_line(thread: threading.Thread | None) -> SourceLine | None:
    """The user's innermost line where ``thread`` is now (None: it has ended)."""
    frame = sys._current_frames().get(thread.ident) if thread is not None and thread.ident is not None else None
    return kernel_line(frame) if frame is not None else None
