"""The ``neuronsim`` command line (spec, "Command line").

Every command reads a program from a path or ``-`` (standard input).  Exit statuses: 0 for
success, 1 for a finding (races, outputs that differ), 2 for unusable input (and for work
beyond the size limits ``--max-instances`` / ``--max-memory``), 3 for an internal error (a
bug: one line ``internal error: ...``; ``NEURONSIM_TRACEBACK=1`` shows the traceback), 130 when
interrupted (Ctrl-C), 143 when terminated (SIGTERM), 129 when hung up (SIGHUP), 141 when the
reader of standard output went away.  With ``--json`` standard output carries exactly one JSON
document; on exit 2, 3, 129, 130 or 143 it is ``{"format": "neuronsim.error/1", "path": ..., "message": ..., "internal":
...}``, and the message is on standard error as well.  Never a traceback: any
:class:`~neuronsim.machine.ir.errors.ProgramError` (and any other failure to read input, including a bad
flag) becomes exit 2 with a located one-line message.

Commands live in small modules beside this one (``verify/cli/cmd_NAME.py`` for ``neuronsim NAME``,
named apart from the checkers they call: ``cmd_fuzz`` runs :mod:`neuronsim.verify.fuzz`); each defines click
commands and :mod:`.app` imports the one a command line names (``--help`` lists them all).
"""

from __future__ import annotations

import codecs
import gc
import io
import os
import sys
import threading

from neuronsim.verify.cli import signals  # noqa: I001 - first, and light: see main()

#: The process's exit, bound now: while a user's code runs ``os._exit`` refuses
#: (``machine/formats/pyfile.py``, ``running_users_code``), and a reference may still run on its
#: own thread when the command ends.
_PROCESS_EXIT = os._exit

__all__ = ["main", "cli", "run_command", "emit_json", "program_argument", "json_option", "UsageFailure"]

#: Names this module offers from :mod:`neuronsim.verify.cli.app` and :mod:`neuronsim.verify.cli.common`, imported when
#: first asked for: the console script imports this module before :func:`main` can handle a
#: signal, so it imports nothing heavy (not even click).
_FROM_CLIUTIL = ("run_command", "emit_json", "program_argument", "json_option", "UsageFailure")


def __getattr__(name: str):
    if name == "cli":
        from neuronsim.verify.cli.app import cli

        return cli
    if name in _FROM_CLIUTIL:
        from neuronsim.verify.cli import common

        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Where ``running_users_code`` stands in for ``os._exit`` and its kin (a warning names the user's line).
_GUARD_FILE = os.path.join("machine", "formats", "pyfile.py")

#: Commands that loop over many independent pieces of work in one process (``fuzz``: thousands
#: of generated programs and hypothesis's own records): the cyclic collector stays on for them.
KEEPS_COLLECTING = frozenset({"fuzz"})


def _thread_raised(args: threading.ExceptHookArgs) -> None:
    """A thread the user's code started (a kernel's, a reference's) ended by an exception: one
    line at the innermost line it raised from, not Python's traceback; the command goes on."""
    if issubclass(args.exc_type, SystemExit):
        call = getattr(args.exc_value, "call", None)  # (a lingering thread's os._exit: machine/formats/pyfile.py)
        if call is not None:
            _warn_raised(args.exc_type, args.exc_value, args.exc_traceback,
                         args.thread.name if args.thread is not None else "a thread",
                         f"ends the process ({call}) after the code that started it returned: ignored, the "
                         "command goes on")
        return
    _warn_raised(args.exc_type, args.exc_value, args.exc_traceback,
                 args.thread.name if args.thread is not None else "a thread")


def _unraisable(args) -> None:
    """An exception Python cannot raise (a ``__del__`` of the user's objects, a callback of the
    collector): one warning line, as a thread's, not "Exception ignored in" and a traceback."""
    call = getattr(args.exc_value, "call", None)
    if call is not None:  # an exit handler's os._exit, refused (_exit_handlers): the status stands
        _warn_raised(args.exc_type, args.exc_value, args.exc_traceback, "an exit handler (atexit)",
                     f"ends the process ({call}): ignored, the command's status stands")
        return
    _warn_raised(args.exc_type, args.exc_value, args.exc_traceback, "a finaliser")


def _warn_raised(kind: type, value: BaseException | None, tb, who: str, did: str = "") -> None:
    site = ""
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.endswith(_GUARD_FILE):  # the user's line, not the guard's stand-in
            site = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}: "
        tb = tb.tb_next
    try:
        text = str(value).splitlines()[0] if str(value) else ""
        did = did or f"raised {kind.__name__}{': ' + text if text else ''}"
        sys.stderr.write(f"warning: {site}{who} {did}\n")
    except Exception:  # noqa: BLE001 - closed streams, a message that cannot be made: nothing to say it with
        pass


def main() -> None:
    """Console entry point: signal handlers first (a Ctrl-C while the commands load exits 130
    with one line, see :mod:`neuronsim.verify.cli.signals`), then the command asked for.

    A command other than those of :data:`KEEPS_COLLECTING` runs with the cyclic collector off
    from start to exit: the process does one piece of work and ends, its records hold no
    cycles worth a scan (performance notes, section 0), and the collection that re-enabling
    the collector at the end would start scans every record the run made (0.4 s of a tiled
    4096^3 matmul's ``run``, issue 31) to free nothing before the process exits anyway."""
    signals.install_startup_handlers()
    if sys.stdout is None:  # started with standard output closed (`>&-`): refused before any work
        if sys.stderr is not None:
            print("error: standard output is closed: neuronsim writes its results there (send them to a file, "
                  "or to /dev/null)", file=sys.stderr)
        raise SystemExit(2)
    _standard_error()
    _buffered_stdout()
    _working_folder()
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    if command not in KEEPS_COLLECTING:
        gc.disable()
    try:
        from neuronsim.verify.cli.common import MEMORY_BACKSTOP
        from neuronsim.verify.cli.app import cli, load_command

        load_command(sys.argv[1:])
        from neuronsim.verify.cli import tampering
    except Exception as err:  # noqa: BLE001 - before any user code: a module the environment put first
        _foreign_import(err)
        raise

    # the drawings go to files through matplotlib's Agg; a backend the environment names, which
    # matplotlib checks as it loads (MPLBACKEND=nonexistent), would end a --plot with its error
    os.environ.pop("MPLBACKEND", None)
    MEMORY_BACKSTOP["enabled"] = True
    threading.excepthook = _thread_raised
    sys.unraisablehook = _unraisable  # first: the signals' hook keeps it for all but a signal's exception
    signals.install_handlers()
    tampering.remember()  # before any user code, after our own hooks: what a kernel replaces is its failure
    status: object = 0
    try:
        cli.main()
    except SystemExit as done:
        status = done.code
    finally:
        signals.ignore_from_now()
    # fuzz too ends without the interpreter's teardown, which joins every thread still running: a
    # user's pass that left one made `fuzz --workers 1` wait for it forever, its signals ignored
    # by then (probe_ax)
    _leave(status)


def _foreign_import(err: Exception) -> None:
    """Exit 2 with one line when importing neuronsim's own modules failed inside a file that is
    neither neuronsim's nor the standard library's nor an installed package's: a ``rich.py`` or a
    ``numpy/`` on ``PYTHONPATH`` (or in the working folder) shadowing a dependency gave a
    traceback and exit 1, the status of a finding (probe_al)."""
    import sysconfig
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    # the file that failed: the innermost frame's, or the module an ``from X import name`` found wanting
    places = []
    if isinstance(err, ImportError):  # (``rich.table`` not found when a ``rich.py`` took the package's name)
        top = sys.modules.get((err.name or "").split(".")[0])
        places += [(getattr(err, "path", None), None), (getattr(top, "__file__", None), None)]
    places += [(frames[-1].filename, frames[-1].lineno)] if frames else []
    # or a module imported from PYTHONPATH before the failure (a numpy/ there broke ml_dtypes' import of it)
    entries = [os.path.realpath(e) for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    places += [(m.__file__, None) for m in list(sys.modules.values())
               if isinstance(getattr(m, "__file__", None), str)
               and any(os.path.realpath(m.__file__).startswith(e + os.sep) for e in entries)][:1]
    ours = [os.path.realpath(p) for p in (os.path.dirname(os.path.dirname(__file__)), sysconfig.get_path("stdlib"),
                                          sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))]
    for file, line in places:
        if file and not any(os.path.realpath(file).startswith(root + os.sep) for root in ours):
            where = f"{file}:{line}" if line else file
            print(f"error: {where}: {type(err).__name__}: {err} (neuronsim's dependencies are imported from here: a "
                  "module on PYTHONPATH shadowing one of them?)", file=sys.stderr)
            raise SystemExit(2)
    # neuronsim's own import failing: a bug, reported as one


def _exit_handlers() -> None:
    """The exit hooks (``atexit``), run now with ``os._exit`` and its kin guarded as while the
    user's code runs: a hook a kernel, a reference or a pass registered and that calls
    ``os._exit(0)`` turned a failed run into exit 0.  Such a call is refused inside the hook
    (one warning line, :func:`_unraisable`), and the command's status stands."""
    import atexit

    pyfile = sys.modules.get("neuronsim.machine.formats.pyfile")  # not loaded: no user code ran
    if pyfile is None:
        atexit._run_exitfuncs()
        return
    with pyfile.running_users_code():
        atexit._run_exitfuncs()


def _standard_error() -> None:
    """Started with standard error closed (`2>&-`): descriptor 2 and ``sys.stderr`` on /dev/null,
    so the error lines go nowhere and the exit status still says it (the progress display asked
    None whether it was a terminal, which read as the user's code having closed it; and the
    document's own descriptor, the lowest free one, became 2: a probe)."""
    if sys.stderr is not None:
        return
    try:
        os.fstat(2)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        if null != 2:
            os.dup2(null, 2)
            os.close(null)
    sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")  # noqa: SIM115 - the process's own


def _working_folder() -> None:
    """Started in a folder removed since (``cd d; rmdir ../d``): refused in one line naming it,
    before any work.  Relative paths, the import of a kernel's helpers and the names of its
    lines all stand on the working folder; they failed as a bare "No such file or directory",
    or a traceback in ``fuzz`` (a probe)."""
    try:
        os.getcwd()
    except OSError as err:
        from neuronsim.verify.cli.common import fail

        fail("the working folder", f"{err.strerror or err} (removed after the command was started there?): run "
                                   "neuronsim from a folder that exists", "--json" in sys.argv[1:])


def _escaped(err: UnicodeError) -> tuple[str | bytes, int]:
    """An encoding error handler: a command line's bytes held as surrogates go out as they came
    (surrogateescape), any other character the encoding lacks escaped (backslashreplace)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    part = err.object[err.start:err.end]
    if all(0xDC80 <= ord(c) <= 0xDCFF for c in part):
        return bytes(ord(c) - 0xDC00 for c in part), err.end
    return codecs.backslashreplace_errors(err)


_ESCAPE = "neuronsim.escape"
codecs.register_error(_ESCAPE, _escaped)


def _buffered_stdout() -> None:
    """Standard output through a buffer even under ``PYTHONUNBUFFERED`` (set in many
    containers): Python then writes text straight to the file descriptor and drops the rest of a
    write the pipe took only part of, silently (``neuronsim show BIG | head`` exited 0, and a
    listing could lose its end).  Line-buffered, so each line still shows at once."""
    raw = getattr(sys.stdout, "buffer", None)
    # a character the stream's encoding lacks is written escaped, as on standard error (a folder
    # named oé under PYTHONIOENCODING=ascii made the run's own `trace:` line exit 3: a probe)
    before = getattr(sys.stdout, "errors", None)
    errors = _ESCAPE if before in ("strict", "surrogateescape") else before
    if isinstance(raw, io.RawIOBase):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding=sys.stdout.encoding, errors=errors,
                                      line_buffering=True)
    elif errors != before and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors=errors)


def _output_done(code: int) -> int:
    """The command's output is complete: standard output flushed, and from here on what an exit
    hook prints (a kernel module's atexit handler) goes to standard error, after the one document
    `--json` promises on standard output; nothing is left for the interpreter's last flush, which
    failed into a full device once more with exit 120 (``fuzz --help >/dev/full``: a probe)."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader went away with output still buffered: as a SIGPIPE
        code = code or 141
    except (OSError, ValueError):
        pass
    sys.stdout = sys.stderr
    return code


def _leave(status: object) -> None:
    """End the process with ``status`` as :func:`sys.exit` would, without the interpreter's
    teardown: the exit hooks run and the standard streams are flushed, then the process ends
    (:func:`os._exit`).  The teardown would free, one by one, every object the command made
    (1.1 s of a 4096^3 matmul kernel's ``run`` traced from the current API, 25 k instructions),
    memory the system takes back at once.  Every file a command writes is closed when written."""
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:  # sys.exit("message"): the message on standard error, status 1
        print(status, file=sys.stderr)
        code = 1
    code = _output_done(code)
    _exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # the reader went away with output still buffered: as a SIGPIPE
            code = code or 141
        except (OSError, ValueError):
            pass
    _PROCESS_EXIT(code & 0xFF)
