"""How a neuronsim process ends on Ctrl-C (SIGINT, exit 130), SIGTERM (exit 143) and SIGHUP
(exit 129: the terminal or ssh session it ran in closed; it died of the signal, no line, its
``--out`` folder left).

This module imports nothing heavy, so :func:`install_startup_handlers` can run before the
command line's imports (about a second of numpy, simpy, matplotlib...): a signal in that window
ends the process at once with its status and one line (``interrupted`` / ``terminated``), never
a ``KeyboardInterrupt`` traceback, never a death by the signal itself.  Nothing has been
written yet then, so there is nothing to clean.

Once the commands are loaded, :func:`install_handlers` raises the signal as an exception where
the process is (:class:`KeyboardInterrupt`, or its subclasses :class:`Terminated` and
:class:`HungUp`), so
``finally`` blocks run, worker pools are terminated and the atomic writer removes its
temporary file; the command's wrapper turns it into the one line and the status.

A raised exception can be swallowed: Python ignores an exception raised inside a garbage
collector callback or a ``__del__`` ("Exception ignored in ..."), and a library may catch it.
So every signal also arms a watchdog: when the process has not ended :data:`GRACE_SECONDS`
after the signal, the watchdog removes the temporary files still in flight, terminates child
processes, writes the line and leaves with the status (``os._exit``).  A run that carried on
after a swallowed signal can never end with 0: :func:`raise_if_received` (called before a
command reports success) raises it again.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["Terminated", "HungUp", "install_startup_handlers", "install_handlers", "raise_if_received", "received",
           "mark_reported", "ignore_from_now", "as_worker", "end_now", "GRACE_SECONDS", "STATUS"]

#: Seconds a signalled process has to unwind before the watchdog ends it.
GRACE_SECONDS = 3.0
#: Exit status per signal (128 + the signal's number, as a shell reports it).
STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
#: Bound as the command starts, before any user code: while a kernel runs, the module's own name
#: is guarded (:func:`neuronsim.machine.formats.pyfile.running_users_code`), and a child forked then
#: sets its worker's signals through this one.
_set_handler = signal.signal
_WORD = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}
#: The ``--json`` error document per signal, written out here rather than by
#: ``neuronsim.machine.formats.jsonio.dumps_strict``: importing that loads ``neuronsim.machine`` (numpy,
#: ml_dtypes: most of a second), and a signal in that time must already find these handlers.
_DOCUMENT = {signum: '{\n "format": "neuronsim.error/1",\n "path": "",\n "message": "%s",\n "internal": false\n}'
             % word for signum, word in _WORD.items()}
_received: list[int] = []
#: The process's own exit, bound now: while a kernel is traced ``os._exit`` is the stand-ins'
#: refusal (machine/nki/standins.py), and a signal then must still end the process.
_process_exit = os._exit
_reported: list[bool] = []


def mark_reported() -> None:
    """The command has written its line for the signal: the watchdog only ends the process."""
    _reported.append(True)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is (so ``finally`` blocks and temporary files are
    cleaned up as on Ctrl-C)."""


class HungUp(Terminated):
    """SIGHUP (the terminal closed), raised and cleaned up as SIGTERM is; exit 129."""


def _raised(signum: int) -> KeyboardInterrupt:
    return {signal.SIGTERM: Terminated, signal.SIGHUP: HungUp}.get(signum, KeyboardInterrupt)()


def received() -> int | None:
    """The first signal this process received, or None."""
    return _received[0] if _received else None


def _as_json() -> bool:
    return "--json" in sys.argv[1:]


def _say_and_exit(signum: int) -> None:
    """The one line (and the ``--json`` error document), then leave with the status at once."""
    word = _WORD[signum]
    try:
        if _as_json():
            document = sys.modules.get("neuronsim.verify.cli.document")  # (loaded with the commands)
            out = document.stream() if document is not None else sys.stdout
            out.write(_DOCUMENT[signum] + "\n")
            out.flush()
        sys.stderr.write(f"{word}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # closed streams: the status still says it
        pass
    _process_exit(STATUS[signum])


def _startup(signum: int, frame) -> None:
    _say_and_exit(signum)


def _install(handler) -> None:
    for signum in STATUS:
        if signal.getsignal(signum) is signal.SIG_IGN:  # ignored by whoever started us (nohup, ``cmd &``): kept so
            continue
        _set_handler(signum, handler)


def install_startup_handlers() -> None:
    """SIGINT and SIGTERM end the process at once (the window before any work starts).  The
    signals neuronsim answers are unblocked first: a mask is inherited through exec, and a
    parent that had SIGALRM blocked (a job runner, Python code calling ``pthread_sigmask``
    before it spawned us) turned ``--max-idle`` off, a run that never ended (a probe)."""
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {*STATUS, signal.SIGALRM})
    except (AttributeError, OSError, ValueError):  # a platform without it
        pass
    _install(_startup)


def _watchdog(signum: int) -> None:
    from neuronsim.machine.formats.files import remove_pending, settle_outputs

    remove_pending()
    if _reported:  # the line is out; the process is slow to leave (freeing a large heap, say)
        _process_exit(STATUS[signum])
    settle_outputs(keep=False)  # the command never got to: the folders and files it made go
    _kill_children()
    _say_and_exit(signum)


def end_now(status: int) -> None:
    """End the process with ``status`` at once, as the watchdog does: files in flight removed,
    child processes killed (for a stop the user's code swallowed; the caller said why)."""
    from neuronsim.machine.formats.files import remove_pending

    remove_pending()
    _kill_children()
    _process_exit(status)


def _kill_children() -> None:
    """Every child process still alive, killed (SIGKILL: a worker stuck before it set its own
    signals may not heed SIGTERM, and one left alive holds the command's output pipes open)."""
    try:
        import multiprocessing

        children = list(multiprocessing.active_children())
    except Exception:  # noqa: BLE001 - a pool's thread adding a child meanwhile; ending anyway
        children = []
    for child in children:
        try:
            child.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass


def as_worker() -> None:
    """A worker process's signals: Ctrl-C and SIGHUP are left to the parent (one message, once), SIGTERM
    ends the worker at once (the parent's pool terminating it, or the signal to the whole
    group), not through the parent's handler it was forked with.  Run in every child forked
    of a command (:func:`install_handlers`) and as a pool's initializer (a spawned worker
    forks nothing).  A child forked after the parent received a signal would otherwise
    inherit that record, and with it a handler that does nothing for a second signal: a pool
    replacing a worker the signal killed made such a child, which outlived the run."""
    _received.clear()
    _reported.clear()
    _set_handler(signal.SIGINT, signal.SIG_IGN)
    _set_handler(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal's: the whole group gets it, as Ctrl-C
    _set_handler(signal.SIGTERM, signal.SIG_DFL)


def _raise(signum: int, frame) -> None:
    if _received:  # a second signal while unwinding: the first one's status, the watchdog's deadline
        return
    _received.append(signum)
    timer = threading.Timer(GRACE_SECONDS, _watchdog, args=(signum,))
    timer.daemon = True
    timer.start()
    raise _raised(signum)


def _unraisable(report) -> None:
    # the signal's exception raised inside a callback Python cannot raise from (a gc callback,
    # a __del__): Python would print it with a traceback and go on.  The signal is kept in
    # _received, so raise_if_received and the armed watchdog still end the process with its
    # one line; nothing else is printed
    if _received and isinstance(report.exc_value, (Terminated, KeyboardInterrupt)):
        return
    _previous_unraisable(report)


_previous_unraisable = sys.unraisablehook


def install_handlers() -> None:
    """SIGINT and SIGTERM raise where the process is, with the watchdog armed."""
    global _previous_unraisable
    _install(_raise)
    if sys.unraisablehook is not _unraisable:  # the command's own hook, kept for all other exceptions
        _previous_unraisable = sys.unraisablehook
    sys.unraisablehook = _unraisable
    if not _fork_hooked:
        os.register_at_fork(after_in_child=as_worker)
        _fork_hooked.append(True)


_fork_hooked: list[bool] = []


def ignore_from_now() -> None:
    """The command has ended (its output complete, its status decided): a signal while the
    interpreter tears down changes neither, so from here on it is ignored.  Left to Python,
    finalization puts a Python-level handler back to the default action, and a Ctrl-C in that
    window (a large heap being freed) ended the finished process by the signal itself, with no
    line and no status of ours; an ignored signal stays ignored to the end."""
    for signum in STATUS:
        try:
            _set_handler(signum, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread, or a platform without it
            pass


def raise_if_received() -> None:
    """Raise the signal received earlier whose exception something swallowed."""
    signum = received()
    if signum is not None:
        raise _raised(signum)
