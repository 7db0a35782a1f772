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

import _signal
import importlib.util
import os
import posix
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import ModuleType
from typing import Any

from neuronsim.machine.ir.source import shown_path

__all__ = ["run_file", "running_users_code", "ProcessExit", "UserFork", "exit_call", "user_site", "function_site",
           "SIGNAL", "SETITIMER"]

_PROCESS_EXIT = os._exit
_EXECS = ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe")
#: The calls that end or replace the process at once, each under every name a user's code reaches
#: it by (``posix._exit`` is ``os._exit``; ``os.execl*`` / ``execvp*`` end in ``os.execv`` /
#: ``execve``), and the real ones, put back when the last guard ends.
_ENDERS = [(module, name, getattr(module, name)) for module in (os, posix)
           for name in ("_exit", "abort", *_EXECS) if hasattr(module, name)]
#: The calls that fork the process: its child would go on running the command (a pass that forked
#: made ``compile`` run twice, both writing ``-o``, and ``fuzz`` multiply, leaving orphans: a probe).
_FORKERS = [(module, name, getattr(module, name)) for module in (os, posix)
            for name in ("fork", "forkpty") if hasattr(module, name)]
#: The calls that signal this process (the others' are let through, see :func:`_signals_itself`).
_SIGNALLERS = [(os, "kill", os.kill), (os, "killpg", os.killpg), (signal, "raise_signal", signal.raise_signal),
               (signal, "pthread_kill", signal.pthread_kill)]
#: Signals whose default action ends nothing: sent to itself, the process goes on.
_HARMLESS = frozenset({0, signal.SIGCHLD, signal.SIGURG, signal.SIGWINCH, signal.SIGCONT})
#: The signal module's own setters, for neuronsim's code that sets a handler or the timer while a
#: user's code runs (the ``--max-idle`` watch): the module's names are guarded meanwhile.
SIGNAL, SETITIMER, _ALARM = signal.signal, signal.setitimer, signal.alarm
#: The C module's mask setter (``signal.pthread_sigmask`` calls it): guarded too, with its timer
#: and alarm, which ``import _signal`` reaches past the signal module's names (probe_r: a kernel
#: blocking SIGTERM / SIGINT / SIGALRM, or stopping the timer so, hung the command).
_SIGMASK = _signal.pthread_sigmask
#: The signals neuronsim answers while the user's code runs: Ctrl-C, SIGTERM and SIGHUP end the
#: command with its status (130 / 143 / 129), SIGALRM ticks its ``--max-idle`` watch.
_OURS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM})
_guards = [0]
_guards_lock = threading.Lock()


class UserFork(RuntimeError):
    """A user's ``os.fork()`` while :func:`running_users_code` holds, raised where it was called."""


class ProcessExit(SystemExit):
    """A user's ``os._exit(status)`` while :func:`running_users_code` holds, raised where it was
    called: an exit like ``sys.exit``'s, which whoever runs the user's code reports at its line."""

    def __init__(self, status: Any = 0, call: str | None = None) -> None:
        super().__init__(status)
        self.call = call or f"os._exit({shown(status)})"


def shown(value: Any) -> str:
    """``repr(value)`` for a message, short, and ``...`` when the user's ``__repr__`` raises
    (a message made of a user's object must not fail in its turn: ``sys.exit(obj)``)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - the user's __repr__: whatever it raises, the message still goes out
        return "..."
    return text if len(text) <= 60 else text[:57] + "..."


#: Installed libraries (the interpreter's and the environment's) and neuronsim's own packages (or
#: the checkout's folders, in an editable install): no user's code lives there.
_NOT_USERS = (sys.prefix, sys.base_prefix, *(
    os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), package) + os.sep
    for package in ("machine", "passes", "verify")))


def user_site(err: BaseException) -> str | None:
    """``file:line`` of the innermost frame of ``err``'s traceback in the user's own code (not
    neuronsim, the installed libraries or frozen modules), relative to the current folder when
    under it; a SyntaxError's own file and line; else None."""
    site = None
    if isinstance(err, SyntaxError) and err.filename and err.lineno:
        return f"{shown_path(err.filename)}:{err.lineno}"
    for frame, line in _walk(err.__traceback__):
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_NOT_USERS) or "site-packages" in path or frame.f_code.co_filename.startswith("<")):
            site = f"{shown_path(path)}:{line}"
    return site


def function_site(fn: Any) -> str | None:
    """``file:line`` of the ``def`` of a user's function, or None (a builtin, a partial)."""
    code = getattr(fn, "__code__", None)
    return f"{shown_path(code.co_filename)}:{code.co_firstlineno}" if code is not None else None


def _walk(tb: Any) -> Iterator[tuple[Any, int]]:
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next




def exit_call(err: SystemExit) -> str:
    """How a user's exit reads in a message: ``sys.exit(3)``, or ``os._exit(0)`` for a :class:`ProcessExit`.

    >>> exit_call(SystemExit(3)), exit_call(ProcessExit(0))
    ('sys.exit(3)', 'os._exit(0)')
    """
    return getattr(err, "call", None) or f"sys.exit({shown(err.code)})"  # (shown: sys.exit(obj) whose repr raises)


def _refuse_exit(call: str, status: Any = 2) -> None:
    raise ProcessExit(status, call)


def _guarded_enders(raiser: Callable[..., None]) -> dict[tuple[Any, str], Callable[..., None]]:
    """The stand-ins of :data:`_ENDERS` and :data:`_SIGNALLERS`: each refuses through ``raiser``
    (given the call as it reads: ``os.execv('/bin/true', ...)``) where the user called it."""

    def _exit(status: Any = 0) -> None:
        raiser(f"os._exit({shown(status)})", status)

    def abort() -> None:
        raiser("os.abort()")

    def execing(name: str) -> Callable[..., None]:
        def exec_(path: Any = None, *_rest: Any) -> None:
            raiser(f"os.{name}({shown(path)}, ...)")
        return exec_

    def signaller(name: str, real: Callable[..., Any], module: Any) -> Callable[..., Any]:
        def send(*args: Any) -> Any:
            if _signals_itself(name, args):
                raiser(f"{module.__name__}.{name}({', '.join(_signal_arg(a) for a in args)})")
            return real(*args)
        return send

    def forking(module: Any, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        found = getattr(module, name)
        if found is not real:  # a guard of its own in place (the kernel's, which names the kernel's line)
            return found

        def fork(*_args: Any) -> Any:
            raise UserFork(f"os.{name}(): its child would run the rest of the command a second time (a user's "
                           "code runs in the command's one process)")
        return fork

    mine = {"_exit": _exit, "abort": abort}
    out = {(module, name): mine.get(name) or execing(name) for module, name, _real in _ENDERS}
    out.update({(module, name): forking(module, name, real) for module, name, real in _FORKERS})
    out.update({(module, name): signaller(name, real, module) for module, name, real in _SIGNALLERS})
    return out


def _signal_arg(value: Any) -> str:
    """A signal call's argument as the user wrote it, likely: ``os.getpid()``, ``SIGHUP``."""
    if isinstance(value, signal.Signals):
        return value.name
    return "os.getpid()" if value == os.getpid() else shown(value)


def _signals_itself(name: str, args: tuple[Any, ...]) -> bool:
    """Whether a call of :data:`_SIGNALLERS` sends this process a signal that would end or stop
    it with no word (its default action, SIGKILL, SIGSTOP), or a signal of neuronsim's, which
    would stop the command as if its user had (SIGINT, SIGTERM, SIGHUP)."""
    try:
        signum = int(args[-1]) if args else 0
        if name == "kill":
            me = int(args[0]) in (os.getpid(), 0, -1, -os.getpgrp())
        elif name == "killpg":
            me = int(args[0]) in (0, os.getpgrp())
        else:  # raise_signal, pthread_kill: this process, always
            me = True
        if not me or signum in _HARMLESS or signal.getsignal(signum) == signal.SIG_IGN:
            return False  # (neuronsim's own are ignored once the command has ended)
        if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            return True
        return signal.getsignal(signum) in (signal.SIG_DFL, None)
    except (TypeError, ValueError, OverflowError):  # not a number: the call itself refuses it
        return False


@contextmanager
def running_users_code(raiser: Callable[..., None] = _refuse_exit) -> Iterator[None]:
    """The block in which a user's file or function runs (a kernel, a ``--reference``, a
    scenario, a pass given by its address), kept from taking over the process neuronsim runs in.
    Blocks nest and may run on several threads (a reference on its own thread): what the
    outermost one sets holds until the last ends.

    - ``os._exit`` raises (:class:`ProcessExit`, or ``raiser``'s own error) where it was called:
      the command would have ended with the user's status and nothing said, a run that seems to
      pass.  neuronsim's own exits bind ``os._exit`` when they load, so they are not caught.
      A thread the user's code started and left running keeps meeting the refusal after the
      block ends (:data:`LINGERING`).
      So do its other names and the calls that end the process as surely (``posix._exit``,
      ``os.abort``, ``os.execv`` and the ``exec*`` family: each ended the run with exit 0 or
      by a signal, nothing said, the ``--out`` folder left), and a signal the process sends
      itself that would end it by its default action or stop the command (``os.kill(os.getpid(),
      SIGHUP)``, ``signal.raise_signal(SIGUSR1)``: the process died of the signal, no line).
    - ``signal.signal`` of SIGINT, SIGTERM, SIGHUP or SIGALRM, ``signal.alarm`` and the real-time
      ``signal.setitimer`` (under the ``_signal`` module's names too) change nothing, and
      ``signal.pthread_sigmask`` blocks any signal but those: they are neuronsim's (a kernel that ignored SIGTERM
      made the command unkillable but by SIGKILL; a library that sets a Ctrl-C handler as it is
      imported still imports).
    - When the last block ends, the working folder, ``sys.stdout`` / ``sys.stderr``, the
      recursion limit and the file-mode mask (``os.umask``) are the command's again (a kernel's
      ``os.chdir`` as it loads moved every relative path of the command line elsewhere; a
      replaced ``sys.stdout`` took the command's whole output; a lowered limit failed the next
      deep walk of the program; a kernel's ``os.umask(0o777)`` wrote its files unreadable).
    - While a command's standard output is one document (:data:`PRINTS_ASIDE`), what the
      user's code prints goes to standard error.

    >>> with running_users_code():
    ...     try:
    ...         os._exit(3)
    ...     except ProcessExit as err:
    ...         print(err.call)
    os._exit(3)
    """
    with _guards_lock:
        if not _guards[0]:
            _forks_found[:] = [getattr(module, name) for module, name, _real in _FORKERS]
            for (module, name), stand_in in _guarded_enders(raiser).items():
                setattr(module, name, stand_in)
            signal.signal, signal.setitimer, signal.alarm = _signal_kept, _setitimer_kept, _alarm_kept
            _signal.setitimer, _signal.alarm, _signal.pthread_sigmask = _setitimer_kept, _alarm_kept, _sigmask_kept
            _kept[:] = [_cwd(), sys.stdout, sys.stderr, sys.getrecursionlimit(), _umask()]
            _timers_found[:] = _user_timers()
            _threads_before[:] = threading.enumerate()
            if PRINTS_ASIDE[0]:
                sys.stdout = sys.stderr
        _guards[0] += 1
    try:
        yield
    finally:
        with _guards_lock:
            _guards[0] -= 1
            if not _guards[0]:
                for module, name, real in (*_ENDERS, *_SIGNALLERS):
                    setattr(module, name, real)
                _stop_user_timers(_timers_found)
                for (module, name, _real), found in zip(_FORKERS, _forks_found):
                    setattr(module, name, found)  # (as found: a guard around this one's is still in place)
                _guard_lingering_threads()
                signal.signal, signal.setitimer, signal.alarm = SIGNAL, SETITIMER, _ALARM
                _signal.setitimer, _signal.alarm, _signal.pthread_sigmask = SETITIMER, _ALARM, _SIGMASK
                if PRINTS_ASIDE[0] and sys.stdout is _kept[2]:
                    sys.stdout = _kept[1]
                _give_back(*_kept)


_kept: list[Any] = []  # what the outermost block found: folder, streams, recursion limit, umask
_forks_found: list[Any] = []  # os.fork and os.forkpty as the outermost block found them
_timers_found: list[Any] = []  # the profiling / virtual timers and handlers as it found them
_threads_before: list[threading.Thread] = []  # the threads alive when the outermost block began
#: Threads the user's code started that outlived its blocks (a kernel's ``Thread(target=...)``),
#: held weakly: a finished one leaves, and a new thread that gets its number is not it.
LINGERING: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def _guard_lingering_threads() -> None:
    """Keep ``os._exit`` from the threads the user's code started and left running: such a
    thread found the real one once the kernel had returned, and ended the command with its
    status, nothing said, the ``--out`` folder empty (probe_r).  Any other thread (the command's
    own, a forked child's) exits as ever."""
    try:
        left = [t for t in threading.enumerate() if t not in _threads_before and t.is_alive()]
    except Exception:  # noqa: BLE001 - the user's code broke what this needs (builtins.len = None): its failure, said after
        return
    _threads_before.clear()
    for thread in left:
        LINGERING.add(thread)
    if left:
        os._exit = posix._exit = _exit_unless_lingering


def _exit_unless_lingering(status: Any = 0) -> None:
    if threading.current_thread() in LINGERING:
        raise ProcessExit(status)
    _PROCESS_EXIT(status)
#: Set by a command whose standard output is one document (``--json``, a program to ``-``): what
#: the user's code prints inside the blocks (a kernel, a reference, a pass, a scenario) goes to
#: standard error.  The one place that says so: the commands had redirected around kernels and
#: references only, and a pass's or a scenario's ``print`` made the document unreadable (a probe).
PRINTS_ASIDE = [False]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _give_back(folder: str | None, stdout: Any, stderr: Any, recursion: int, umask: int) -> None:
    if _umask() != umask:  # (a kernel's os.umask(0o777) wrote the command's files unreadable: a probe)
        os.umask(umask)
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
    call returns it, as if replaced); any other is set, and a timer's signal put back to its
    default action stops that timer first (the next tick would end the command: a probe)."""
    if signum in _OURS:
        return signal.getsignal(signum)
    if handler == signal.SIG_DFL:
        for which, sent in _TIMER_SIGNALS.items():
            if sent == signum and which != signal.ITIMER_REAL:
                SETITIMER(which, 0)
    return SIGNAL(signum, handler)


def _user_timers() -> list[tuple[Any, ...]]:
    """The profiling and virtual timers as they are, with their signals' handlers."""
    return [(which, sent, signal.getitimer(which), signal.getsignal(sent))
            for which, sent in _TIMER_SIGNALS.items() if which != signal.ITIMER_REAL]


def _stop_user_timers(before: list) -> None:
    """Stop the timers the user's code started and put their handlers back: one left running
    fired in neuronsim's own code after the kernel had returned (its handler raised: exit 3)."""
    for which, sent, timer, handler in before:
        if signal.getitimer(which) != (0.0, 0.0) and timer == (0.0, 0.0):
            SETITIMER(which, 0)
        if handler is not None and signal.getsignal(sent) is not handler:  # (None: a handler set in C)
            SIGNAL(sent, handler)


#: The signal each interval timer sends
_TIMER_SIGNALS = {signal.ITIMER_REAL: signal.SIGALRM, signal.ITIMER_VIRTUAL: signal.SIGVTALRM,
                  signal.ITIMER_PROF: signal.SIGPROF}


def _setitimer_kept(which: int, seconds: float, interval: float = 0.0) -> Any:
    """``signal.setitimer`` for the user's code: the real-time timer is the watch's, and a timer
    whose signal would end the process (its default action, no handler set) is not started (a
    kernel's ITIMER_PROF ended the command by SIGPROF, exit 155, nothing said: a probe)."""
    sent = _TIMER_SIGNALS.get(which)
    if which == signal.ITIMER_REAL or (seconds and sent is not None and signal.getsignal(sent) == signal.SIG_DFL):
        return signal.getitimer(which)
    return SETITIMER(which, seconds, interval)


def _sigmask_kept(how: int, mask: Any) -> Any:
    """``signal.pthread_sigmask`` for the user's code: neuronsim's signals are never blocked."""
    if how != signal.SIG_UNBLOCK:
        mask = [s for s in mask if int(s) not in _OURS]
    return _SIGMASK(how, mask)


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
