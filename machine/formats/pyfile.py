"""Running a user's Python file as a module: a kernel file, a ``--reference`` file, a scenario.

The file runs once under the given module name, registered in ``sys.modules`` while it runs,
as an import would register it: ``dataclasses`` and ``pickle`` find a class's module by name,
so a file with string annotations (``from __future__ import annotations``) and a
``@dataclass`` fails without it.  When the file raises, the name is let go again.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = os.path.join(folder, "user.py")
...     with open(path, "w") as handle:
...         _ = handle.write("from __future__ import annotations\\n"
...                          "from dataclasses import dataclass\\n\\n\\n"
...                          "@dataclass\\nclass Point:\\n    x: int = 1\\n")
...     run_file(path, "doctest_user_file").Point().x
1
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import ModuleType
from typing import Any

__all__ = ["run_file", "running_users_code", "ProcessExit", "exit_call", "SIGNAL", "SETITIMER"]

_PROCESS_EXIT = os._exit
#: The signal module's own setters, for neuronsim's code that sets a handler or the timer while a
#: user's code runs (the ``--max-idle`` watch): the module's names are guarded meanwhile.
SIGNAL, SETITIMER, _ALARM = signal.signal, signal.setitimer, signal.alarm
#: The signals neuronsim answers while the user's code runs: Ctrl-C and SIGTERM end the command
#: with its status (130 / 143), SIGALRM ticks its ``--max-idle`` watch.
_OURS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGALRM})
_guards = [0]
_guards_lock = threading.Lock()


class ProcessExit(SystemExit):
    """A user's ``os._exit(status)`` while :func:`running_users_code` holds, raised where it was
    called: an exit like ``sys.exit``'s, which whoever runs the user's code reports at its line."""

    def __init__(self, status: Any = 0) -> None:
        super().__init__(status)
        self.call = f"os._exit({status!r})"


def exit_call(err: SystemExit) -> str:
    """How a user's exit reads in a message: ``sys.exit(3)``, or ``os._exit(0)`` for a :class:`ProcessExit`.

    >>> exit_call(SystemExit(3)), exit_call(ProcessExit(0))
    ('sys.exit(3)', 'os._exit(0)')
    """
    return getattr(err, "call", f"sys.exit({err.code!r})")


def _refuse_exit(status: Any = 0) -> None:
    raise ProcessExit(status)


@contextmanager
def running_users_code(raiser: Callable[..., None] = _refuse_exit) -> Iterator[None]:
    """The block in which a user's file or function runs (a kernel, a ``--reference``, a
    scenario, a pass given by its address), kept from taking over the process neuronsim runs in.
    Blocks nest and may run on several threads (a reference on its own thread): what the
    outermost one sets holds until the last ends.

    - ``os._exit`` raises (:class:`ProcessExit`, or ``raiser``'s own error) where it was called:
      the command would have ended with the user's status and nothing said, a run that seems to
      pass.  neuronsim's own exits bind ``os._exit`` when they load, so they are not caught.
    - ``signal.signal`` of SIGINT, SIGTERM or SIGALRM, ``signal.alarm`` and the real-time
      ``signal.setitimer`` change nothing: those are neuronsim's (a kernel that ignored SIGTERM
      made the command unkillable but by SIGKILL; a library that sets a Ctrl-C handler as it is
      imported still imports).
    - When the last block ends, the working folder, ``sys.stdout`` / ``sys.stderr`` and the
      recursion limit are the command's again (a kernel's ``os.chdir`` as it loads moved every
      relative path of the command line elsewhere; a replaced ``sys.stdout`` took the
      command's whole output; a lowered limit failed the next deep walk of the program).

    >>> with running_users_code():
    ...     try:
    ...         os._exit(3)
    ...     except ProcessExit as err:
    ...         print(err.call)
    os._exit(3)
    """
    with _guards_lock:
        if not _guards[0]:
            os._exit = raiser
            signal.signal, signal.setitimer, signal.alarm = _signal_kept, _setitimer_kept, _alarm_kept
            _kept[:] = [_cwd(), sys.stdout, sys.stderr, sys.getrecursionlimit()]
        _guards[0] += 1
    try:
        yield
    finally:
        with _guards_lock:
            _guards[0] -= 1
            if not _guards[0]:
                os._exit = _PROCESS_EXIT
                signal.signal, signal.setitimer, signal.alarm = SIGNAL, SETITIMER, _ALARM
                _give_back(*_kept)


_kept: list[Any] = []  # what the outermost block found: folder, standard output and error, recursion limit


def _give_back(folder: str | None, stdout: Any, stderr: Any, recursion: int) -> None:
    if folder is not None and _cwd() != folder:
        with suppress(OSError):  # (removed meanwhile: the command's paths fail as they would)
            os.chdir(folder)
    # (a stream the command itself chose meanwhile, on another thread, stays: its own two ends)
    if sys.stdout not in (stdout, sys.__stdout__, sys.__stderr__):
        sys.stdout = stdout
    if sys.stderr not in (stderr, sys.__stdout__, sys.__stderr__):
        sys.stderr = stderr
    if sys.getrecursionlimit() != recursion:
        sys.setrecursionlimit(recursion)


def _signal_kept(signum: Any, handler: Any) -> Any:
    """``signal.signal`` for the user's code: a signal of neuronsim's keeps its handler (the
    call returns it, as if replaced); any other is set."""
    if signum in _OURS:
        return signal.getsignal(signum)
    return SIGNAL(signum, handler)


def _setitimer_kept(which: int, seconds: float, interval: float = 0.0) -> Any:
    """``signal.setitimer`` for the user's code: the real-time timer is the watch's."""
    if which == signal.ITIMER_REAL:
        return signal.getitimer(which)
    return SETITIMER(which, seconds, interval)


def _alarm_kept(seconds: int) -> int:
    """``signal.alarm`` for the user's code: SIGALRM is the watch's."""
    return 0


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # (the folder was removed)
        return None


def run_file(path: object, name: str) -> ModuleType:
    """The module made by running the Python file ``path`` under ``name`` (module doc)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with running_users_code():
            spec.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
