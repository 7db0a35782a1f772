"""Shared helpers of the CLI commands: exit statuses, located errors, ``--json`` output,
size guards and output paths.

Every command module imports these from here (not from :mod:`neuronsim.verify.cli`, which imports the
command modules), so a command module can be imported on its own.

Exit statuses (:data:`EXIT_INPUT` and the others): 0 success, 1 a finding (races, outputs
that differ, a fuzz failure), 2 unusable input (a located one-line message; work too big for
the limits is unusable input too), 3 an internal error (a bug of neuronsim: one line, the
traceback only with ``NEURONSIM_TRACEBACK=1``), 130 interrupted (Ctrl-C).  Under ``--json``
every exit but 0 and 1 still writes exactly one ``neuronsim.error/1`` document.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
import traceback
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import click

from neuronsim.machine.ir.errors import ProgramError, printable
from neuronsim.machine.formats.files import (
    begin_outputs,
    settle_outputs,
    write_text,
)
from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.ir.program import Program
from neuronsim.machine.ir.source import shown_document
from neuronsim.verify.cli import tampering  # (here: an import in the handler failed once str was replaced)
from neuronsim.verify.cli import document
from neuronsim.verify.cli.failures import UsageFailure
from neuronsim.verify.cli.output_paths import (check_not_imported, check_output, check_plot, distinct_outputs,
                                              pass_sources, plot_format_or_fail, stdout_for_json, text_aside)
from neuronsim.verify.cli.signals import HungUp, Terminated, end_now, mark_reported, raise_if_received, received
from neuronsim.machine.order.work_estimate import SizeEstimate, estimate_size
from neuronsim.verify.app.host import (
    address_space,
    available_memory,
    describe_instances,
    format_bytes,
    format_count,
    kernel_site,
    machine_memory,
)

__all__ = [
    "UsageFailure", "fail", "run_command", "emit_json", "check_output", "check_plot", "plot_format_or_fail",
    "program_argument", "json_option", "run_output_paths", "write_run_outputs",
    "size_options", "guard_size", "distinct_outputs", "stdout_for_json", "max_memory_option", "max_instances_option",
    "keep_in_context", "text_aside", "check_not_imported", "pass_sources",
    "DEFAULT_MAX_INSTANCES", "MAX_INSTANCES_KEY", "MAX_MEMORY_KEY",
    "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_BROKEN_PIPE", "EXIT_TERMINATED", "EXIT_HUNG_UP",
    "TRACEBACK_ENV", "Terminated", "closed_pipe", "internal_error", "stopped",
]

EXIT_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
#: Ended by SIGTERM (128 + 15).
EXIT_TERMINATED = 143
#: Ended by SIGHUP, its terminal closed (128 + 1).
EXIT_HUNG_UP = 129
#: Standard output is a closed pipe (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141
#: Commands whose files written before a signal stay: each is whole on its own (fuzz's failures
#: found, one report each); every other command's outputs go back with the signal.
KEEPS_ON_SIGNAL = frozenset({"fuzz"})
#: Instances a command unrolls at most unless ``--max-instances`` says otherwise.
DEFAULT_MAX_INSTANCES = 5_000_000
#: Set to 1 to get the Python traceback of an internal error (for developers).
TRACEBACK_ENV = "NEURONSIM_TRACEBACK"


class FiniteFloat(click.FloatRange):
    """A float option within a range and finite: click's FloatRange lets ``nan`` through every
    bound (a NaN compares false), so ``--max-idle nan`` switched the idle watchdog off."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:  # noqa: D102
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def emit_json(doc: Any, *, failing: bool = False) -> None:
    """Write the one JSON document of a ``--json`` run (strict JSON: a NaN or an infinity
    that reached a figure is written as null, never as the non-JSON ``NaN``)."""
    if not failing:  # a signal whose exception a finaliser swallowed: its error document, not two
        raise_if_received()
    out = document.stream()
    if out is None:
        raise UsageFailure("standard output is closed; --json writes its document there", "--json")
    try:
        out.write(dumps_strict(doc, indent=1) + "\n")
        out.flush()
    except BrokenPipeError:
        if not failing:
            raise
        document.silence()  # an error document nobody reads: its line is out, its status stands
    except OSError as err:  # a full device (> /dev/full): one line, not a second failure writing there
        document.silence()
        if not failing:  # (an error document: its line is already out, its status stands)
            click.echo(f"error: standard output: {err.strerror or err}", err=True)
            raise SystemExit(EXIT_INPUT) from None


def fail(path: str, message: str, as_json: bool, *, status: int = EXIT_INPUT) -> None:
    """Print the one error line (and under ``--json`` the error document) and exit."""
    say_error(path, message, as_json, status=status)
    raise SystemExit(status)


def _shortened(line: str, most: int = 2000) -> str:
    """``line``, or its start and end around a count of what was left out (a user's exception
    of 2 MB was one 2 MB line: a probe; the ``--json`` document keeps it whole)."""
    if len(line) <= most:
        return line
    return f"{line[:most - 500]} ... ({len(line) - most:,} characters left out) ... {line[-500:]}"


def say_error(path: str, message: str, as_json: bool, *, status: int = EXIT_INPUT) -> None:
    """The one error line (and under ``--json`` the error document) of :func:`fail`."""
    internal = status == EXIT_INTERNAL
    label = "internal error" if internal else {EXIT_INTERRUPTED: "interrupted", EXIT_TERMINATED: "terminated",
                                               EXIT_HUNG_UP: "hung up"}.get(status, "error")
    where = f"{path}: " if path else ""
    line = _shortened(printable(f"{where}{message}")) if label == "error" or internal else ""
    try:
        click.echo(f"{label}: {line}" if line else label, err=True)
    except OSError:  # standard error full or gone (`2>/dev/full`): the exit status still says it
        pass
    if as_json and document.stream() is not None:
        emit_json({"format": "neuronsim.error/1", "path": printable(path), "message": printable(message),
                   "internal": internal}, failing=True)



def stopped(err: KeyboardInterrupt, as_json: bool) -> None:
    """Ctrl-C: exit 130 with ``interrupted``; SIGTERM: exit 143 with ``terminated``; SIGHUP:
    exit 129 with ``hung up``."""
    mark_reported()
    if isinstance(err, HungUp):
        fail("", "hung up", as_json, status=EXIT_HUNG_UP)
    if isinstance(err, Terminated):
        fail("", "terminated", as_json, status=EXIT_TERMINATED)
    fail("", "interrupted", as_json, status=EXIT_INTERRUPTED)


def closed_pipe() -> None:
    """The reader of standard output went away (``neuronsim show BIG | head``): exit 141, as
    a shell reports a SIGPIPE, with nothing on standard error.  Standard output is pointed at
    /dev/null first, so the interpreter's last flush into the closed pipe stays quiet."""
    document.silence()
    raise SystemExit(EXIT_BROKEN_PIPE)


def internal_error(err: BaseException, as_json: bool) -> None:
    """Exit 3 for an exception no input explains (its traceback first with ``NEURONSIM_TRACEBACK=1``)."""
    changed = tampering.replaced()
    if changed:  # (put back before anything else: a kernel's builtins.str = bytes failed the lines below)
        tampering.restore()
    if os.environ.get(TRACEBACK_ENV, "").strip().lower() not in ("", "0", "no", "false", "off"):
        # the traceback, then the same line, exit 3 and clean-up as without it (re-raised, it
        # was exit 1, a finding's status, and left the half-made output folder: probe_bc)
        traceback.print_exception(err, file=sys.stderr)
    text = str(err).splitlines()[0] if str(err) else ""
    if changed:  # the user's code broke the interpreter neuronsim runs in: their input, exit 2
        names = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        fail("", f"the user's code this command ran (a kernel, a reference or a pass) replaced {names}, which "
                 f"neuronsim uses in the same interpreter; then {type(err).__name__}{': ' + text if text else ''}",
             as_json)
    message = (f"{type(err).__name__}{': ' + text if text else ''} (a bug in neuronsim: rerun with "
               f"{TRACEBACK_ENV}=1 for the traceback and report it)")
    try:
        fail("", message, as_json, status=EXIT_INTERNAL)
    except Exception:  # noqa: BLE001 - even the report failed (a library the user's code replaced): the line alone
        sys.stderr.write(f"internal error: {message}\n")
        raise SystemExit(EXIT_INTERNAL) from None


def _raised_by_code(err: KeyboardInterrupt) -> str | None:
    """``file:line`` of the user's code that raised ``err`` when no signal came (Ctrl-C and
    SIGTERM are recorded by :mod:`~neuronsim.verify.cli.signals` as they arrive), else None."""
    if received() is not None or isinstance(err, Terminated):
        return None
    from neuronsim.machine.nki.kernel_frames import kernel_frame

    where = kernel_frame(err)
    return str(where) if where is not None else None


def run_command(fn: Callable[..., int | None]) -> Callable[..., None]:
    """Decorator: turn input errors into exit 2, bugs into exit 3, Ctrl-C into 130, and
    return values into exit statuses."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from neuronsim.machine.formats import pyfile

        begin_outputs()
        pyfile.PRINTS_ASIDE[0] = bool(kwargs.get("as_json")) or kwargs.get("output") == "-"
        held = document.hold(pyfile.PRINTS_ASIDE[0])
        try:
            guarded(*args, **kwargs)
        except SystemExit as done:
            # a failure takes back the files already written (nothing half-done), and so does a
            # signal (a run stopped after its trace was written, before its report: the folder
            # it made, the trace and footprint were left, the report missing); findings and a
            # reader that went away (`run K | head`: 141, a SIGPIPE) keep them, complete files
            # the user may want, as fuzz keeps on a signal the failures it found before it
            context = click.get_current_context(silent=True)
            signalled = done.code in (EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HUNG_UP) and (
                context is None or context.info_name not in KEEPS_ON_SIGNAL)
            settle_outputs(keep=done.code not in (EXIT_INPUT, EXIT_INTERNAL) and not signalled)
            raise
        finally:
            pyfile.PRINTS_ASIDE[0] = False
            document.release(held)

    def guarded(*args: Any, **kwargs: Any) -> None:
        as_json = bool(kwargs.get("as_json"))
        try:
            status = fn(*args, **kwargs)
            raise_if_received()  # a signal whose exception something swallowed still ends the run with its status
        except ProgramError as err:  # the document itself (no place in it) is the PROGRAM it was read from
            fail(err.path or shown_document(kwargs.get("program")), err.message, as_json)
        except UsageFailure as err:
            fail(err.path, err.message, as_json)
        except RecursionError:
            fail("", "the program nests too deeply to process", as_json)
        except MemoryError:
            fail("--max-memory", "ran out of memory: the work outgrew its estimate and the memory this process may "
                                 "use (the limit is --max-memory, or this machine's available memory)", as_json)
        except BrokenPipeError:
            closed_pipe()
        except OSError as err:  # a file that cannot be read or written: unusable input, not a crash
            fail(getattr(err, "filename", None) or document.closed_stream() or "", err.strerror or str(err), as_json)
        except KeyboardInterrupt as err:
            raised_at = _raised_by_code(err)
            if raised_at:  # a kernel's (or a user's pass's) own `raise KeyboardInterrupt`: its error, at its line
                fail(raised_at, "KeyboardInterrupt raised here, not by a signal", as_json)
            stopped(err, as_json)
        except Exception as err:  # noqa: BLE001 - anything else is a bug: one line, exit 3
            internal_error(err, as_json)
        raise SystemExit(status or 0)

    return wrapper


def _set_input_limit(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    from neuronsim.machine.formats.inputs import set_input_limit

    set_input_limit(value)


def program_argument(fn: Callable) -> Callable:
    """The PROGRAM argument and ``--max-input SIZE``, the most program text read (see
    :mod:`neuronsim.machine.formats.inputs`)."""
    fn = click.option("--max-input", type=ByteSize(), default=None, metavar="SIZE", expose_value=False,
                      callback=_set_input_limit, is_eager=True,
                      help="Read at most this much program text, e.g. 1G (default 256M).")(fn)
    return click.argument("program", metavar="PROGRAM")(fn)
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Write exactly one JSON document to standard output.")


# -- size guards --------------------------------------------------------------------------
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)


class ByteSize(click.ParamType):
    """A byte count: ``8G``, ``512MiB``, ``1.5T`` or plain bytes (powers of 1024)."""

    name = "SIZE"

    def convert(self, value: Any, param, ctx) -> int:
        if isinstance(value, int):
            return value
        match = _SIZE.match(str(value))
        if not match:
            self.fail(f"expected a size such as 8G, 512M or 1073741824, got {value!r}", param, ctx)
        digits, unit = match.group(1), match.group(2).lower()
        if len(digits.split(".")[0].lstrip("0")) > 19:  # beyond any size below 2**63, before any conversion
            self.fail(f"expected a size below 2**63 bytes (8 EiB), got {printable(str(value))[:40]}", param, ctx)
        number = Decimal(digits)  # not a float: 2**63 - 1 would round, and 400 digits overflow to infinity
        size = int(number * 1024 ** "bkmgtp".index(unit or "b"))
        if size <= 0:
            self.fail("expected a positive size", param, ctx)
        if size >= 2**63:
            self.fail(f"expected a size below 2**63 bytes (8 EiB), got {printable(str(value))[:40]}", param, ctx)
        return size


def keep_in_context(key: str) -> Callable:
    """A click callback that keeps an option's value in the context's ``meta`` under ``key``.

    For options a kernel's tracing reads (:func:`neuronsim.verify.cli.cmd_nki.trace_from_options`)
    rather than the command itself: every kernel command takes them without a parameter of its own.
    """
    def keep(ctx: click.Context, _param: click.Parameter, value):
        ctx.meta[key] = value
        return value
    return keep


MAX_MEMORY_KEY = "neuronsim.max_memory"
MAX_INSTANCES_KEY = "neuronsim.max_instances"

max_memory_option = click.option(
    "--max-memory", type=ByteSize(), default=None, metavar="SIZE", callback=keep_in_context(MAX_MEMORY_KEY),
    help="Refuse work estimated to need more memory, e.g. 8G (default: this machine's memory).")

max_instances_option = click.option(
    "--max-instances", type=click.IntRange(min=1), default=DEFAULT_MAX_INSTANCES, show_default=True, metavar="N",
    callback=keep_in_context(MAX_INSTANCES_KEY),
    help="Refuse programs that unroll to more instances (a kernel: also while it is traced; the program: before "
         "any work).")


MAX_IDLE_KEY = "neuronsim.max_idle"
#: ``--max-idle``'s default: an import-time table or a Python-side precomputation takes
#: seconds; a minute of a kernel's Python without one NKI call, or of a user's pass on one
#: program, is a loop that does not end.
IDLE_SECONDS = 60.0


def _keep_idle(ctx: click.Context, _param: click.Parameter, value: float) -> float:
    """``--max-idle``: kept for the kernel's watch, and the limit of a user's ``--passes`` pass;
    a stop the user's code swallows ends the process (:func:`_end_swallowed`)."""
    from neuronsim.machine.nki import watch
    from neuronsim.passes.runner import USER_PASS_SECONDS

    ctx.meta[MAX_IDLE_KEY] = value
    USER_PASS_SECONDS.set(value or None)  # (0: never; the command runs in this context)
    watch.on_swallowed[:] = [_end_swallowed]
    return value


def _end_swallowed(where: Any, seconds: float) -> None:
    """The user's code caught the ``--max-idle`` stop (an ``except:`` that takes every exception)
    and ran on: the process ends here, exit 2 at its line, its outputs taken back."""
    from neuronsim.machine.nki.watch import stopped_message

    context = click.get_current_context(silent=True)
    as_json = bool(context is not None and context.params.get("as_json"))
    settle_outputs(keep=False)
    say_error(str(where), stopped_message("the code", seconds, "without an NKI call or returning") +
              "; it caught that stop and ran on, so the process ends", as_json)
    end_now(EXIT_INPUT)


def max_idle_seconds() -> float:
    """``--max-idle`` of the command running (its default outside one)."""
    context = click.get_current_context(silent=True)
    return (context.meta if context is not None else {}).get(MAX_IDLE_KEY, IDLE_SECONDS)


_PASS_IDLE_HELP = ("Stop a pass given by its address (--passes) that runs this long on one program without "
                   "returning (a loop that never ends), at its line; 0: never.")


def max_idle_option(help: str = _PASS_IDLE_HELP) -> Callable:
    """``--max-idle SECONDS`` (default :data:`IDLE_SECONDS`): what a command runs of the user's own
    Python (a kernel, a pass given by its address) is stopped at its line after that long."""
    return click.option("--max-idle", type=FiniteFloat(min=0), default=IDLE_SECONDS, show_default=True,
                        metavar="SECONDS", expose_value=False, callback=_keep_idle, help=help)


def size_options(fn: Callable) -> Callable:
    """``--max-instances`` and ``--max-memory``: the limits :func:`guard_size` enforces."""
    return max_instances_option(max_memory_option(fn))


def guard_size(program: Program, *, max_instances: int | None, max_memory: int | None,
               simulated_runs: int = 0, functional: bool = True, unrolls: bool = True,
               scheduled: int = 0) -> SizeEstimate:
    """Estimate the work of ``program`` (no unrolling) and refuse it, exit 2 with the figure and
    the option that raises the limit, when it is beyond ``max_instances`` instances (when the
    command ``unrolls``; instances times ``simulated_runs`` when it simulates) or
    ``max_memory`` bytes (default: the machine's memory).  ``scheduled``: the bytes a flat
    schedule of it will take besides (:func:`neuronsim.passes.schedule.scheduled_flat_memory`)."""
    size = estimate_size(program)
    if unrolls and max_instances is not None and size.instances > max_instances:
        raise UsageFailure(f"the program unrolls to {describe_instances(size)}; the limit is "
                           f"{format_count(max_instances)}: raise it with --max-instances N",
                           kernel_site(program, size) or "--max-instances")
    if unrolls and max_instances is not None and size.instances * max(simulated_runs, 1) > max_instances:
        raise UsageFailure(f"{format_count(simulated_runs)} simulated runs of {format_count(size.instances)} instances "
                           f"are {format_count(size.instances * simulated_runs)} instance runs; the limit is "
                           f"{format_count(max_instances)}: simulate fewer runs or raise it with --max-instances N",
                           "--max-instances")
    limit = max_memory if max_memory is not None else machine_memory()
    if limit is not None and MEMORY_BACKSTOP["enabled"]:
        cap_address_space(limit)
    need = size.memory_bytes(unrolled=unrolls, simulated_runs=simulated_runs, functional=functional) + scheduled
    if limit is not None and need > limit:
        parts = [f"{format_bytes(scheduled)} for its flat schedule"] if scheduled else []
        if simulated_runs and functional:
            parts.append(f"{format_bytes(size.simulated_bytes)} of simulated SBUF, PSUM and DRAM, copied per run")
        if size.footprint_starts > 1 << 20:
            parts.append(f"{format_count(size.footprint_starts)} byte runs in access footprints")
        if unrolls and size.instance_runs > 1 << 20:
            parts.append(f"{format_count(size.instance_runs)} byte runs of access instances")
        if unrolls:
            parts.append(f"{format_count(size.instances)} instances")
        whose = "this machine's memory" if max_memory is None else "--max-memory"
        raise UsageFailure(f"the work needs about {format_bytes(need)} of memory"
                           f"{' (' + ', '.join(parts) + ')' if parts else ''}; the limit is "
                           f"{format_bytes(limit)} ({whose}): raise it with --max-memory SIZE", "--max-memory")
    return size


#: Turned on by the console entry point only (a test runner's process is left alone): then
#: :func:`guard_size` also caps the address space, see :func:`cap_address_space`.
MEMORY_BACKSTOP = {"enabled": False}


def cap_address_space(limit: int) -> None:
    """Cap this process's address space at its size now plus ``limit`` (or plus the memory
    the kernel has available now, when that is less), so work that outgrows its estimate
    (an analysis quadratic in its input, say) ends in a ``MemoryError`` (exit 2, one line)
    instead of the kernel killing the process, or its neighbours, with no word.  A cap already
    lower is kept."""
    import resource

    cap = (address_space() or 0) + min(limit, available_memory() or limit)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or cap < soft:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def run_output_paths(out_dir: str, name: str) -> dict[str, str]:
    """The files ``neuronsim run`` writes for ``name`` in ``out_dir`` (``trace``, ``footprint``),
    each checked writable before any work: one layout for kernels, instruction and task scenarios."""
    paths = {"trace": os.path.join(out_dir, f"{name}.trace.json"),
             "footprint": os.path.join(out_dir, f"{name}.footprint.json")}
    for path in paths.values():
        check_output(path, "--out")
    return paths


def write_run_outputs(paths: dict[str, str], trace: Any, footprint: Mapping[str, Any], *,
                      write_trace: Callable[[Any, str], None], plot: Callable[[Any, str], None],
                      plot_path: str | None) -> None:
    """Write a run's nominal ``trace`` and sync ``footprint`` to :func:`run_output_paths`'s files
    and, with ``plot_path``, its timeline (then named in ``paths`` as ``plot``); the writers are
    the run's kind's (instructions or tasks)."""
    write_trace(trace, paths["trace"])
    write_text(paths["footprint"], dumps_strict(footprint, indent=1))
    if plot_path:
        plot(trace, plot_path)
        paths["plot"] = plot_path


def placed(program: Program) -> Program:
    """``program`` with its virtual tensors placed by the ``alloc`` pass (said on standard
    error), so ``check``, ``simulate`` and ``report`` take a program before it is compiled;
    a placed program as it is."""
    if not program.has_virtual_tensors:
        return program
    from neuronsim.passes import parse_pipeline, run_pipeline

    virtual = sum(1 for t in program.tensors.values() if t.is_virtual)
    result = run_pipeline(program, parse_pipeline("alloc"))
    click.echo(f"note: {virtual} virtual tensor(s): placed with the alloc pass first (its deps are the program's; "
               f"neuronsim compile runs the whole pipeline)", err=True)
    return result
