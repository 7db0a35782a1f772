"""``neuronsim nki KERNEL.py::FUNC --inputs IN.npz -o PROGRAM.json``: trace an NKI kernel.

The kernel runs unmodified with neuronsim's stand-ins for ``nki`` / ``neuronxcc.nki`` (the NKI
frontend, ``neuronsim.machine.nki``); the traced program is written atomically, its tensors named after
the kernel's parameters (a parameter the kernel writes is an output; returned tensors are
``return0``, ...), every instruction located at its kernel line (``x-source``).  ``IN.npz``
holds the input arrays by parameter name; a bf16 / fp8 array saved from ``ml_dtypes`` (raw
2- / 1-byte values) is read as ``bfloat16`` / ``float8_e4m3`` unless ``--dtype NAME=...``
says otherwise.  ``--arg NAME=VALUE`` passes another argument (a Python literal, else a
string); ``--grid 2x1`` runs an SPMD grid.  A kernel from a package is named
``path/to/pkg/mod.py::FUNC`` with its package root on ``PYTHONPATH``.

This module also runs a kernel end to end for ``neuronsim run KERNEL.py::FUNC``
(:func:`run_kernel_command`).  Exit 0, 1 (run: a finding or a failed check), 2 (unusable
input, including any construct the frontend does not support: one line ``file.py:LINE: ...``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import math
import os
import re
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from neuronsim.machine.formats.inputs import special_file
from neuronsim.machine.formats.program_json import save_program
from neuronsim.machine.formats.pyfile import run_file, user_site
from neuronsim.machine.ir.errors import message_of

from neuronsim.verify.app.host import available_memory, machine_memory
from neuronsim.verify.cli.common import (DEFAULT_MAX_INSTANCES, MAX_INSTANCES_KEY, MAX_MEMORY_KEY, UsageFailure,
                                         check_not_imported, check_output, check_plot, distinct_outputs, emit_json,
                                         json_option, keep_in_context, max_idle_option, max_idle_seconds,
                                         max_instances_option, pass_sources, run_command,
                                         run_output_paths, stdout_for_json, text_aside, write_run_outputs)
from neuronsim.verify.cli.npz_io import parse_dtype_options, read_npz

__all__ = ["nki", "kernel_options", "trace_from_options", "run_kernel_command", "load_reference", "is_kernel_spec"]


def is_kernel_spec(text: str | None) -> bool:
    """``path/to/file.py::FUNC``: a kernel, not a scenario name."""
    return bool(text) and "::" in text


def require_kernel_spec(spec: str, where: str = "KERNEL") -> None:
    """Exit 2 at ``where`` unless ``spec`` names a kernel as ``PATH.py::FUNC``."""
    if not is_kernel_spec(spec):
        raise UsageFailure(f"expected PATH.py::FUNC, got {spec!r}", where)


def _parse_args(items: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageFailure(f"expected NAME=VALUE, got {item!r}", "--arg")
        if name in out:
            raise UsageFailure(f"{name} is given twice", "--arg")
        try:
            out[name] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError) as err:  # not a literal (`{[]}` too): a bare word is its text
            if "Exceeds the limit" in str(err):  # a literal, but an integer past Python's digits (a probe)
                digits = max(len(run) for run in re.findall(r"\d+", raw))  # (the longest: brackets no digits)
                raise UsageFailure(f"{name}: an integer of {digits:,} digits; Python reads "
                                   f"at most {sys.get_int_max_str_digits():,} from text", "--arg") from None
            if raw and not _BARE_WORD.match(raw):  # `[1,`, `=1`: a literal meant, and mistyped
                cut = raw if len(raw) <= 40 else raw[:37] + "..."
                raise UsageFailure(f"{name}: {cut!r} is not a Python literal (a number, text in quotes, a tuple, list "
                                   "or dict of them; a bare word such as fast is taken as text)", "--arg") from None
            out[name] = _dtype_name(raw)
        except (MemoryError, RecursionError):  # Python's parser gives up on it
            raise UsageFailure(f"{name}: its value nests too deeply to read as a Python literal", "--arg") from None
    return out


#: An ``--arg`` value taken as text when it is no literal: a word, a dotted or path-like name.
_BARE_WORD = re.compile(r"[A-Za-z_][\w.\-/:]*\Z")
#: A dtype spelt as a kernel spells it: ``nl.float32``, ``np.float16``, ``nki.language.bfloat16``
_DTYPE_SPELLING = re.compile(r"(?:nl|np|numpy|(?:neuronxcc\.)?nki\.language)\.(\w+)\Z")


def _dtype_name(word: str) -> str:
    """``word``, or the dtype's name when it spells one of neuronsim's dtypes as a kernel does:
    ``--arg dtype=nl.float32`` reached the kernel as the text ``nl.float32``, refused at the
    kernel's correct line (a probe; ``float32`` ran)."""
    from neuronsim.machine.nki.dtypes import to_dtype

    found = _DTYPE_SPELLING.match(word)
    if found is None:
        return word
    try:
        to_dtype(found.group(1))
    except ValueError:  # (np.pi, nl.fast: no dtype, the text itself)
        return word
    return found.group(1)


def _parse_grid(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        grid = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        grid = ()
    if not grid or any(g < 1 for g in grid) or len(grid) > 3:
        raise UsageFailure(f"expected a grid such as 4 or 2x2 (positive sizes), got {text!r}", "--grid")
    if any(g >= 2**31 for g in grid):  # NKI's limit (the kernel's own kernel[g] is told at its line)
        raise UsageFailure(f"a grid of {text!r}: each dimension is an integer from 1 below 2**31", "--grid")
    return grid


RANKS_KEY = "neuronsim.ranks"
TARGET_KEY = "neuronsim.target"
#: ``--target``: the instances whose NeuronCore a kernel is traced and timed for (the frontend's
#: PLATFORMS say which machine each is: inf2's is trn1's NeuronCore-v2)
TARGETS = ("inf2", "trn1", "trn2", "trn3")


def kernel_options(fn: Callable) -> Callable:
    """The options every kernel-tracing command takes."""
    for option in reversed((
        click.option("--inputs", "inputs_path", metavar="IN.npz", help="Input arrays by parameter name."),
        click.option("--arg", "args", multiple=True, metavar="NAME=VALUE",
                     help="Another kernel argument (a Python literal)."),
        click.option("--grid", "grid", metavar="G0xG1", help="SPMD grid: run the kernel as kernel[G0, G1]."),
        click.option("--ranks", type=click.IntRange(1, 64), default=1, expose_value=False,
                     callback=keep_in_context(RANKS_KEY),
                     help="Launch the kernel on N ranks that meet at its nki.collectives calls (outputs of "
                          "rank r named NAME_rank{r}; an input NAME_rank{r} gives rank r its own NAME)."),
        click.option("--target", type=click.Choice(TARGETS), default=None, expose_value=False,
                     callback=keep_in_context(TARGET_KEY),
                     help="Trace and time the kernel for this instance's NeuronCore [default: the kernel's "
                          "@nki.jit(platform_target=...), else $NEURON_PLATFORM_TARGET_OVERRIDE, else trn1]."),
        click.option("--dtype", "dtypes", multiple=True, metavar="NAME=DTYPE",
                     help="Read input NAME as DTYPE (raw 2-/1-byte arrays default to bfloat16 / float8_e4m3)."),
        max_idle_option("Stop a kernel that runs this long in its own Python without an NKI call, or a pass "
                        "given by its address (--passes) that runs this long on one program (a loop that never "
                        "ends), at its line; 0: never."),
    )):
        fn = option(fn)
    return fn


def _frontend():
    # looked up when used, not imported at the top: the tests put a stand-in frontend in
    # sys.modules to drive the command with hand-built programs
    return importlib.import_module("neuronsim.machine.nki")


def trace_from_options(kernel: str, inputs_path: str | None, args: tuple[str, ...], grid: str | None,
                       dtypes: tuple[str, ...], unroll_loops: bool = False):
    """Load and trace ``kernel`` as the options say; ``(traced, kwargs)`` (``unroll_loops``:
    every loop unrolled, see :func:`neuronsim.machine.nki.trace`)."""
    require_kernel_spec(kernel)
    frontend = _frontend()
    # a kernel reading a tile's values while traced (a row picked by a loaded index) runs the
    # program so far on the inputs: the probe registers that runner, for `nki` as for `run`;
    # and a kernel file calling a kernel as it loads (a test at the bottom of a public sample)
    # runs it on the simulator, in `nki` as in `run`, so both say the same of it
    import neuronsim.verify.nki.probe  # noqa: F401
    import neuronsim.verify.nki.simulate  # noqa: F401
    named = parse_dtype_options(dtypes)
    arrays = read_npz(inputs_path, "--inputs", named) if inputs_path else {}
    if named and not inputs_path:
        raise UsageFailure("--dtype names input arrays; give them with --inputs", "--dtype")
    kwargs = _parse_args(args)
    clash = sorted(set(kwargs) & set(arrays))
    if clash:
        raise UsageFailure(f"{clash[0]} is given both in --inputs and as --arg", "--arg")
    context = click.get_current_context(silent=True)
    meta = context.meta if context is not None else {}
    idle = max_idle_seconds()
    limit = meta.get(MAX_INSTANCES_KEY, DEFAULT_MAX_INSTANCES)
    sizes = _parse_grid(grid) or (1,)
    programs = math.prod(sizes)
    if programs > limit:  # refused up front: each program is traced
        raise UsageFailure(f"a grid of {programs:,} programs is more than --max-instances ({limit:,}) allows; "
                           "raise the limit with --max-instances N", "--grid")
    # a long import or trace says how it is getting on; a kernel that loops in Python for ever
    # is stopped at its line (machine/nki/watch.py), never waited on in silence
    def say(text: str) -> None:
        click.echo(f"trace: {text} (the limit, {limit:,} instructions, is --max-instances)", err=True)

    watched = getattr(frontend, "watched", None)
    watch = watched(idle_seconds=idle, say=say) if watched else nullcontext()
    try:
        with watch:
            return _traced(frontend, kernel, arrays, kwargs, grid, meta, unroll_loops)
    except getattr(frontend, "TraceStalled", ()) as stalled:
        from neuronsim.machine.nki.watch import stopped_message

        raise frontend.NkiError(stalled.where, stopped_message("the kernel", stalled.seconds, "without an NKI call")
                                ) from None


def _traced(frontend, kernel: str, arrays: dict, kwargs: dict, grid: str | None, meta: dict, unroll_loops: bool):
    loaded = frontend.load_kernel(kernel)
    options = {"grid": _parse_grid(grid)} if grid else {}
    ranks = meta.get(RANKS_KEY, 1)
    if ranks > 1:
        options["ranks"] = ranks
    if unroll_loops:
        options["unroll_loops"] = True
    if meta.get(TARGET_KEY):  # (over the kernel's own platform_target: the command line is the author's last word)
        from neuronsim.machine.nki.frontend import PLATFORMS

        options["machine"] = PLATFORMS[meta[TARGET_KEY]]
    # a Python loop of a billion iterations is refused at the instance limit, not traced for hours
    options["max_instructions"] = meta.get(MAX_INSTANCES_KEY, DEFAULT_MAX_INSTANCES)
    options["max_memory"] = _trace_memory(meta.get(MAX_MEMORY_KEY))
    try:
        # the kernel's values that are no tensor (--arg, and a 0-d --inputs array, which the kernel
        # gets as a value: trnsparse's threshold) are the reference's to name too
        values = {**{name: array for name, array in arrays.items() if getattr(array, "ndim", None) == 0}, **kwargs}
        return frontend.trace(loaded, **arrays, **kwargs, **options), values
    except getattr(frontend, "TraceTooLarge", ()) as err:
        option = "--max-instances N" if err.kind == "instructions" else "--max-memory SIZE"
        raise type(err)(err.path, err.limit, err.kind, f"raise the limit with {option}") from None


def _trace_memory(max_memory: int | None) -> int | None:
    """What a trace may grow the process by: ``--max-memory``, else the machine's memory, and
    no more than the system can give now (a trace past it would swap, or be killed unheard)."""
    limits = [m for m in (max_memory if max_memory is not None else machine_memory(), available_memory(),
                          _address_space_left()) if m is not None]
    return min(limits) if limits else None


def _address_space_left() -> int | None:
    """What this process's address-space cap (``ulimit -v``) still allows it to map, or None
    without a cap: past it the trace would end in Python's own MemoryError, unheard."""
    import resource

    from neuronsim.verify.app.host import address_space

    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    used = address_space()
    if soft == resource.RLIM_INFINITY or used is None:
        return None
    return max(soft - used, 0)


@click.command("nki")
@click.argument("kernel", metavar="KERNEL.py::FUNC")
@kernel_options
@click.option("-o", "--output", "output", required=True, metavar="PROGRAM.json",
              help="Where to write the traced program.")
@max_instances_option
@json_option
@run_command
def nki(kernel: str, inputs_path: str | None, args: tuple[str, ...], grid: str | None, dtypes: tuple[str, ...],
        output: str, max_instances: int, as_json: bool) -> int:
    """Trace the NKI kernel FUNC of KERNEL.py into a neuronsim.program/1 file."""
    check_output(output, "-o", (kernel, inputs_path))
    stdout_for_json(as_json, {"-o": output})
    traced, _ = trace_from_options(kernel, inputs_path, args, grid, dtypes)
    check_not_imported(output, "-o")
    save_program(traced.program, output)
    count = sum(1 for _ in traced.program.instructions())
    warnings = [f"{where}: {message}" for where, _kind, message in traced.call_warnings]
    if as_json:
        emit_json({"format": "neuronsim.nki/1", "kernel": kernel, "output": output, "instructions": count,
                   "inputs": sorted(traced.inputs), "outputs": list(traced.outputs), "warnings": warnings})
        return 0
    for line in warnings:  # (standard error: the program itself may be going to standard output)
        click.echo(f"warning: {line}", err=True)
    if output != "-":
        click.echo(f"traced {kernel}: {count} instructions, {len(traced.program.tensors)} tensors "
                   f"(outputs: {', '.join(traced.outputs) or 'none'}) -> {output}")
    return 0


def load_reference(spec: str) -> Callable:
    """``MODULE:FN`` (imported from the current folder too), ``path/file.py:FN``, or
    ``path/file.py::FN`` as the kernel itself is named (a module name holds no colon); its module
    runs as it loads, so it is stopped at ``--max-idle`` as the reference itself is."""
    from neuronsim.machine.nki.watch import stopped_when_idle

    module_name, sep, attr = spec.rpartition("::" if "::" in spec else ":")
    if not sep or not module_name or not attr:
        raise UsageFailure(f"expected MODULE:FN, FILE.py:FN or FILE.py::FN, got {spec!r}", "--reference")
    try:
        # a reference beside the kernel imports nki too: the stand-ins, and its import, as for the kernel
        with (stopped_when_idle("the reference's module", max_idle_seconds()), _frontend().standins(),
              _frontend().importing(module_name)):
            return _reference_in(module_name, attr)
    except UsageFailure:
        raise
    except SystemExit as err:  # the module ends the process as it loads: no status of the command's
        from neuronsim.verify.app.scenario_runs import user_code_error

        raise user_code_error(err, "--reference", "the reference's module") from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report (a module's own, at its line)
        raise
    except BaseException as err:
        if not isinstance(err, Exception) and type(err).__module__.startswith("neuronsim."):
            raise  # neuronsim's own stop (the --max-idle watch's TraceStalled)
        # the user's module failed to load: their input, a BaseException of its own
        # too (class Stop(BaseException), GeneratorExit), as a kernel's module's; it was a traceback, exit 1
        site = user_site(err)  # (its line: a kernel's import error had one, a reference's did not)
        raise UsageFailure(f"cannot load {module_name}: {site + ': ' if site else ''}{type(err).__name__}: "
                           f"{message_of(err)}", "--reference") from None


def _reference_in(module_name: str, attr: str) -> Callable:
    """The function ``attr`` of a module file or an importable module."""
    if module_name.endswith(".py"):
        path = Path(module_name)
        kind = special_file(path)
        if kind is not None:  # (a FIFO would have the import wait for a writer)
            raise UsageFailure(f"cannot read {module_name}: it is {kind}, not a Python file", "--reference")
        if not path.is_file():
            raise UsageFailure(f"cannot read {module_name}: no such file", "--reference")
        if str(path.resolve().parent) not in sys.path:  # the modules beside it import, as a script's do
            sys.path.insert(0, str(path.resolve().parent))
        module = run_file(path, f"neuronsim_reference_{path.stem}")
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    missing = object()
    fn = getattr(module, attr, missing)
    if fn is missing:
        raise UsageFailure(f"{module_name} defines no function {attr!r}", "--reference")
    if not callable(fn):
        from neuronsim.machine.nki.errors import shown

        raise UsageFailure(f"{module_name}'s {attr!r} is {shown(fn)}, not a function", "--reference")
    return fn


def run_kernel_command(kernel: str, *, inputs_path, args, grid, dtypes, reference: str | None, out_dir: str,
                       plot_path: str | None, as_json: bool, before_work: Callable, make_folder: Callable,
                       printer: Callable, rtol: float | None = None, atol: float | None = None,
                       progress=None, extra_json: Callable | None = None, functional: bool = True,
                       report_path: str | None = None, pipeline: str | None = None) -> int:
    """``neuronsim run KERNEL.py::FUNC``: findings, then the scenario run (``report_path``:
    also its HTML page, findings included; ``pipeline``: instead of ``TRACED_PIPELINE``);
    exit 0 / 1."""
    from neuronsim.machine.sim.export import write_chrome_trace
    from neuronsim.verify.app.drawings import plot_timeline

    from neuronsim.verify.nki.run import run_traced
    from neuronsim.verify.app.progress import stage_or_nothing

    name = kernel.rsplit("::", 1)[1]
    make_folder(out_dir)
    paths = run_output_paths(out_dir, name)
    if plot_path is not None:  # (an empty one too: "the path is empty"; inside --out, once it is made)
        check_plot(plot_path)
    if report_path is not None:  # (an empty one too: "the path is empty", not no report)
        check_output(report_path, "--report", (kernel, inputs_path, reference, *pass_sources(pipeline)))
    distinct_outputs({"--out": paths["trace"], "--out ": paths["footprint"], "--plot": plot_path,
                      "--report": report_path})
    stdout_for_json(as_json, {"--report": report_path})
    user_reference = load_reference(reference) if reference is not None else None
    with stage_or_nothing(progress, "trace", None):
        traced, kwargs = trace_from_options(kernel, inputs_path, args, grid, dtypes)
    report = run_traced(traced, name, reference=user_reference, kwargs=kwargs, before_work=before_work,
                        rtol=rtol, atol=atol, progress=progress, functional=functional, pipeline=pipeline,
                        max_idle=max_idle_seconds(),
                        retrace=lambda: trace_from_options(kernel, inputs_path, args, grid, dtypes,
                                                           unroll_loops=True)[0])
    if report.unrolled:
        click.echo(f"note: {name}: a loop body's tiles overflow SBUF; traced again with every loop unrolled, "
                   "so that tiles spill to DRAM between iterations", err=True)
    with stage_or_nothing(progress, "files", None):
        write_run_outputs(paths, report.run.simulation.runs[0].trace, report.run.sync.to_json(),
                          write_trace=write_chrome_trace, plot=plot_timeline, plot_path=plot_path)
    if report_path:
        from neuronsim.verify.nki.run import write_run_report

        check_not_imported(report_path, "--report")
        try:
            write_run_report(report, report_path)
        except OSError as err:
            raise UsageFailure(f"cannot write {report_path}: {err.strerror or err}", "--report") from None
        paths["report"] = report_path
    with stage_or_nothing(progress, "compare", None):
        problems = report.problems()
    if as_json:
        emit_json({**report.to_json(), "files": paths, **(extra_json(report) if extra_json else {})})
    else:
        with text_aside(report_path):
            for line in report.finding_lines():
                click.echo(line)
            printer(report.run, paths, reference="user reference" if user_reference else None)
    return 1 if problems else 0
