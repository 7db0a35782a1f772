"""Run an NKI kernel end to end, as a shipped scenario runs: the API behind ``neuronsim run
KERNEL.py::FUNC`` and a kernel author's pytest.

:func:`run_kernel` mirrors NKI's own ``simulate_kernel(kernel, *arrays)``: it traces the kernel
(``neuronsim.machine.nki.trace``), checks the NKI-specific findings on the traced program
(:mod:`neuronsim.verify.nki.findings`), then compiles, race-checks, simulates under several interleavings
and compares as :func:`neuronsim.verify.app.scenario_runs.run_scenario` does, and returns the kernel's outputs
(in NKI's own return order) with the :class:`KernelReport`.  The outputs are compared with the
sequential reference (every interleaving against it) and, when ``reference`` is given, with
that numpy function's results::

    from neuronsim.verify.nki.run import run_kernel
    outputs, report = run_kernel(my_kernel, a, b, reference=numpy_version)
    assert report.ok, report.render()

``reference(**inputs, **kwargs)`` receives the input arrays it names by parameter name (and the
kernel's scalar arguments; the arrays given for parameters the kernel writes too; with
``**kwargs`` every array the traced program reads) and returns one array, a tuple in the order
of the outputs, or a dict by output name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import numpy as np

from neuronsim.machine.formats.pyfile import function_site, running_users_code
from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.nki.errors import shown
from neuronsim.machine.ir.program import Loop, Program
from neuronsim.machine.order.stream import stream_of
from neuronsim.passes.alloc import SbufFull

from neuronsim.verify.nki.findings import NkiFinding, call_findings, grouped_findings, nki_findings
from neuronsim.verify.nki.placement import identity_placement
from neuronsim.verify.nki.uninitialised import confirmed_findings, unwritten_outputs
from neuronsim.verify.nki.value_ranges import outside_range_findings
from neuronsim.verify.nki.simulate import simulate_kernel  # noqa: F401 - a kernel called outside a trace then runs
from neuronsim.verify.app.scenario_runs import (DEFAULT_SEEDS, ScenarioRun, array_of_numbers, compare_outputs,
                                                 run_scenario, stopped_by_watch, user_code_error)

__all__ = ["KernelReport", "run_kernel", "run_traced", "trace_kernel", "reference_outputs", "kernel_outputs",
           "write_run_report"]


@dataclass(frozen=True, slots=True)
class KernelReport:
    """Everything one end-to-end run of a traced kernel found."""

    name: str
    program: Program
    """The traced program (deps empty)."""
    findings: tuple[NkiFinding, ...]
    run: ScenarioRun
    output_names: tuple[str, ...]
    user_reference: bool
    """True when the outputs were compared with the user's numpy function."""
    unrolled: bool = False
    """True when the kernel was traced again with every loop unrolled: a loop body's tiles
    overflowed SBUF, and ``alloc`` spills only between top-level nodes (:func:`run_traced`)."""
    returned: tuple[str, ...] = ()
    """The outputs the kernel returned, in order (an argument it returns keeps its name)."""

    def problems(self) -> list[str]:
        """Every finding that is an error (alike ones on one pair of lines grouped) and failed
        check, one line each (empty: the kernel is fine; a warning fails nothing)."""
        return grouped_findings([f for f in self.findings if f.is_error]) + self.run.problems()

    def finding_lines(self) -> list[str]:
        """``finding: ...`` / ``warning: ...`` for people, alike ones on one pair of lines
        grouped with a count."""
        return grouped_findings(self.findings, NkiFinding.line)

    @property
    def ok(self) -> bool:
        return not self.problems()

    def summary(self) -> dict[str, Any]:
        return {**self.run.summary(), "nki_findings": len(self.findings), "user_reference": self.user_reference}

    def to_json(self) -> dict[str, Any]:
        return {"format": "neuronsim.nki-run/1", "kernel": self.name, "summary": self.summary(),
                "findings": [f.to_json() for f in self.findings], "problems": self.problems()}

    def render(self) -> str:
        return "\n".join([f"kernel {self.name}: {len(self.findings)} NKI finding(s)", *self.problems()])


def trace_kernel(kernel: Any, *arrays: Any, grid: tuple[int, ...] | None = None, name: str | None = None,
                 **kwargs: Any):
    """``neuronsim.machine.nki.trace`` (a kernel object, a function, or ``"path.py::func"``)."""
    from neuronsim.machine.nki import load_kernel, trace

    if isinstance(kernel, str):
        kernel = load_kernel(kernel)
    elif not callable(kernel):  # (traced, it was an internal error of neuronsim's: probe_bc)
        raise TypeError(f"the kernel must be an NKI kernel function or 'file.py::func', not "
                        f"{type(kernel).__name__} {kernel!r:.60}")
    options = {"name": name} if name else {}
    if grid is not None:
        options["grid"] = grid
    return trace(kernel, *arrays, **options, **kwargs)


def _as_outputs(value: Any, names: Sequence[str], where: str, returned: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The reference's arrays by output name.  A dict may name a returned argument by its place,
    ``return{k}``, as any returned tensor is named (an in-place kernel's ``return cache``)."""
    if isinstance(value, Mapping):
        places = {f"return{k}": name for k, name in enumerate(returned)}
        named = {(places.get(str(k), str(k)) if str(k) not in names else str(k)): v for k, v in value.items()}
        unknown = [k for k in named if k not in names]
        if unknown:  # nothing to compare it with: the reference's mistake, not a difference
            raise ProgramError(where, f"returned {unknown[0]!r}, which is not an output of the kernel (its outputs: "
                               f"{', '.join(names)})")
    elif isinstance(value, (tuple, list)):
        if len(value) != len(names):
            raise ProgramError(where, f"returned {len(value)} arrays; the kernel has {len(names)} outputs "
                               f"({', '.join(names)})")
        named = dict(zip(names, value))
    elif len(names) != 1:
        raise ProgramError(where, f"returned one array; the kernel has {len(names)} outputs ({', '.join(names)}): "
                           "return a tuple or a dict by output name")
    else:
        named = {names[0]: value}
    return {name: array_of_numbers(array, name, where) for name, array in named.items()}


def reference_outputs(reference: Callable, inputs: Mapping[str, np.ndarray], kwargs: Mapping[str, Any],
                      names: Sequence[str], returned: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The user's numpy reference called on the inputs by name; what it raises is exit 2."""
    where = f"--reference {getattr(reference, '__name__', 'reference')}"
    try:
        signature = inspect.signature(reference)
        signature.bind(**inputs, **kwargs)
    except TypeError as err:  # (its parameters are not the kernel's: said at its def, not as its own TypeError)
        raise ProgramError(function_site(reference) or where,
                           f"the reference {getattr(reference, '__name__', '')}{signature}: {err} (a reference "
                           f"receives the kernel's inputs by their parameter names)") from None
    except ValueError:  # no signature to read (a builtin): the call says
        pass
    try:
        with running_users_code():
            value = reference(**inputs, **kwargs)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report
        raise
    except BaseException as err:  # noqa: BLE001 - the user's code, not ours (sys.exit too)
        if stopped_by_watch(err):
            raise
        raise user_code_error(err, where, f"the reference {getattr(reference, '__name__', '')}".rstrip()) from None
    if value is None or not isinstance(value, (Mapping, tuple, list, np.ndarray, np.generic, int, float, bool)):
        raise ProgramError(where, f"returned {shown(value)}; expected an array, a tuple of arrays in output order "
                                  "or a dict by output name")
    return _as_outputs(value, names, where, returned)


def _named_by(reference: Callable, names: Iterable[str]) -> tuple[str, ...]:
    """Of ``names``, those ``reference`` takes by name (all of them when it takes ``**kwargs``,
    or when its signature cannot be read: a builtin)."""
    try:
        params = inspect.signature(reference).parameters
    except (TypeError, ValueError):
        return tuple(names)
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return tuple(n for n in names if takes_all or n in params)


def _scenario(name: str, traced, reference: Callable | None, kwargs: Mapping[str, Any]) -> ModuleType:
    """The traced kernel as a scenario module (:mod:`neuronsim.verify.app.scenario_runs`' contract)."""
    module = ModuleType(f"nki_kernel_{name}")
    module.__file__ = f"{name}.py"
    module.build = lambda: traced.program
    module.inputs = lambda _seed: traced.run_inputs
    names = tuple(traced.outputs)
    # the arrays the reference names: the kernel's inputs, and those given for the parameters it
    # writes (a kernel `k(a, b, out)` checked against `ref(a, b, out)`); not the tensors the
    # trace adds (`nl.shared_constant`'s, other ranks' copies) unless it takes **kwargs
    given = _named_by(reference, [*traced.inputs, *traced.initial]) if reference else ()
    # likewise the other arguments (--arg): a tile size or a variant switch the reference has
    # no use for is not forced on it
    options = {k: kwargs[k] for k in _named_by(reference, kwargs)} if reference else {}
    returned = getattr(traced, "returned", ())
    module.reference = (lambda inputs: reference_outputs(reference, {k: inputs[k] for k in given}, options, names,
                                                         returned)) if reference else (lambda _inputs: {})
    module.rtol, module.atol = (1e-2, 1e-2) if reference else (0.0, 0.0)
    return module


@collector_paused()  # the findings and the run allocate records and no cycles
def run_traced(traced, name: str, *, reference: Callable | None = None, kwargs: Mapping[str, Any] | None = None,
               seeds: Sequence[int | None] = DEFAULT_SEEDS,
               before_work: Callable[[Program], None] | None = None, rtol: float | None = None,
               atol: float | None = None, progress=None, functional: bool = True,
               retrace: Callable[[], Any] | None = None, pipeline: str | None = None,
               max_idle: float | None = None) -> KernelReport:
    """Findings and the end-to-end run of an already traced kernel (``rtol`` / ``atol``: the
    comparison with ``reference``, default 1e-2 / 1e-2; ``progress``: a
    :class:`neuronsim.verify.app.progress.Progress` showing each stage; ``pipeline``: the
    passes it compiles with, default ``TRACED_PIPELINE``).  ``retrace()``: the
    kernel traced with every loop unrolled, run instead when a loop body overflows SBUF
    (:attr:`KernelReport.unrolled`).  ``max_idle``: seconds the reference may run past the rest
    (``--max-idle``; None: no limit)."""
    if reference is not None and not callable(reference):  # (called, it failed inside neuronsim: probe_bc)
        raise TypeError(f"the reference must be a function of the kernel's inputs, not "
                        f"{type(reference).__name__} {reference!r:.60}")
    from neuronsim.verify.app.progress import stage_or_nothing

    if before_work is not None:  # the size guards before the findings too: they walk every instance
        before_work(traced.program)
    from neuronsim.machine.order.work_estimate import estimate_size

    # (sized by its instances: a big kernel's findings say when they start, as the other stages do)
    with stage_or_nothing(progress, "nki findings", None, size=estimate_size(traced.program).instances):
        # the storage NKI's compiler reasons with: one stream for the carried and the
        # uninitialised checks (placement.py)
        placed = stream_of(identity_placement(traced.program))
        findings = call_findings(traced) + tuple(nki_findings(traced.program, traced.run_inputs, placed))
        if functional:  # (it runs the kernel twice when it finds such reads: values, not timing)
            findings += tuple(confirmed_findings(traced.program, traced.run_inputs, placed))
        findings += tuple(unwritten_outputs(traced.program, traced.run_inputs.keys(), placed))
    from neuronsim.passes import TRACED_PIPELINE  # what a compiler makes of a traced kernel (issue 30)

    def run_it(traced):
        return run_scenario(_scenario(name, traced, reference, dict(kwargs or {})),
                            pipeline=pipeline or TRACED_PIPELINE, seeds=seeds, before_work=before_work,
                            rtol=rtol, atol=atol, progress=progress, functional=functional, max_idle=max_idle)

    unrolled = False
    try:
        run = run_it(traced)
    except SbufFull:
        # A loop body whose tiles overflow SBUF has no top-level gap to spill over; the compiler
        # unrolls such a loop and spills between iterations, and so does this, on a trace with
        # every loop unrolled (a tile of each iteration its own tensor).
        if retrace is None or not any(isinstance(node, Loop) for node in traced.program.body):
            raise
        with stage_or_nothing(progress, "trace", None):
            traced, unrolled = retrace(), True
        run = run_it(traced)
    if reference is None:  # judged by the interleavings against the sequential reference alone
        run = replace(run, reference=dict(run.outputs))
    findings += tuple(outside_range_findings(run.simulation))
    return KernelReport(name, traced.program, findings, run, tuple(traced.outputs), reference is not None, unrolled,
                        tuple(getattr(traced, "returned", ())))


def write_run_report(report: KernelReport, path: str, passes: str | None = None):
    """The HTML page of the run (``neuronsim run KERNEL.py::FUNC --report FILE.html``): the
    program as simulated (compiled, reduced) with the kernel's NKI findings, alike ones on one
    pair of lines shown once, as ``neuronsim report`` shows a traced program's; the shown
    :class:`~neuronsim.verify.app.html_report.Report`."""
    from neuronsim.verify.app.html_report import write_report

    views: list[dict] = []
    grouped_findings(report.findings, lambda f: views.append(f.to_json()) or "")
    return write_report(report.run.final, path, report.name, passes=passes, findings=views)


def kernel_outputs(report: KernelReport) -> Any:
    """The simulated outputs in NKI's return order: the returned tensors (``return0``, ...)
    when the kernel returns any, else the parameters it writes; one array alone, else a tuple."""
    returned = set(report.returned)
    names = [n for n in report.output_names if n.startswith("return") or n.split("_rank")[0] in returned] \
        or list(report.output_names)
    values = tuple(np.asarray(report.run.outputs[n]) for n in names if n in report.run.outputs)
    return values[0] if len(values) == 1 else values


def run_kernel(kernel: Any, *arrays: Any, grid: tuple[int, ...] | None = None, reference: Callable | None = None,
               seeds: Sequence[int | None] = DEFAULT_SEEDS, name: str | None = None, ranks: int = 1,
               **kwargs: Any) -> tuple[Any, KernelReport]:
    """Trace ``kernel`` on ``arrays`` and run it end to end; ``(outputs, report)`` (module doc).

    ``kwargs`` are the kernel's other arguments (scalars, constants); ``grid`` an SPMD grid;
    ``ranks`` the devices a kernel with ``nki.collectives`` calls is launched on.
    """
    options = {"grid": grid, **({"ranks": ranks} if ranks > 1 else {})}
    traced = trace_kernel(kernel, *arrays, **options, **kwargs)
    label = name or getattr(kernel, "__name__", None) or str(kernel).split("::")[-1]
    report = run_traced(traced, label, reference=reference, kwargs=kwargs, seeds=seeds,
                        retrace=lambda: trace_kernel(kernel, *arrays, **options, unroll_loops=True, **kwargs))
    return kernel_outputs(report), report


def outputs_differ(report: KernelReport) -> list[str]:
    """The located differences between the simulated outputs and the reference."""
    return compare_outputs(report.run.outputs, report.run.reference, report.run.rtol, report.run.atol)
