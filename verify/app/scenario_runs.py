"""Shipped scenarios: find them, run one end to end, and (re)write their shipped files.

A *scenario* is a Python file in the ``scenarios/`` folder (or any file a user names) that
defines ``build() -> Program``, ``inputs(seed) -> {name: array}`` (its input DRAM tensors) and
``reference(inputs) -> {name: array}`` (numpy values of every output tensor), plus ``rtol`` /
``atol`` for the comparison (exact when absent).  Scenarios are *content*, like a user's
program: they are loaded from their files (:func:`load_scenario`), never imported as a
dependency of this package, so ``verify`` does not depend on ``scenarios`` and the kernels
may use anything ``machine`` offers (the NKI-like builder in ``machine/build/builder.py``).

:func:`all_scenarios` loads every file of the folder that defines the three callables, so a
new scenario is found as soon as its file exists (never a hand-kept list); a file that fails
to load fails the collection loudly.  Each shipped scenario ships two files beside it:
``NAME.json``, the program its ``build()`` returns (canonical text of
:func:`neuronsim.machine.formats.program_json.save_program`), and ``NAME.golden.json``, its end-to-end summary
(:meth:`ScenarioRun.summary`).  ``python -m neuronsim.verify.app.scenario_runs`` rewrites both for every
scenario; the tests check they are current.

Contract (:func:`run_scenario`, what ``neuronsim run SCENARIO`` does)
    requires: a scenario whose ``build()`` validates.
    guarantees: the returned :class:`ScenarioRun` holds the compiled program (the given pass
    pipeline: allocation and dependence construction), the final program (the compiled one
    after ``dep-reduction``, what is simulated), the race reports of both under their deps,
    the simulation of the final program under every interleaving seed when its race check
    found races (each run's final contents of *every* tensor compared byte for byte with the
    sequential reference, a finer race witness than the outputs alone), else under the first
    seed alone (race-free by the check, every legal order computes the sequential bytes), the
    output tensors of the last run, the scenario's
    numpy reference, and the sync counts of both programs (:mod:`neuronsim.verify.sync_counts`).
    Nothing is judged here: :meth:`ScenarioRun.problems` lists what is wrong, located (race
    pair and bytes, tensor and element), and is empty for a correct scenario.

>>> "softmax" in [scenario_name(m) for m in all_scenarios()]
True
>>> scenario_name(load_scenario("softmax"))
'softmax'
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.formats.pyfile import exit_call, running_users_code, run_file, user_site
from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.ir.errors import ProgramError, message_of
from neuronsim.machine.ir.program import Program
from neuronsim.machine.sim.blas import blas_limited, blas_threads
from neuronsim.machine.sim.simulator import Simulation, simulate
from neuronsim.machine.sim.tolerance import NO_ERROR, LargestErrors, beyond, largest_errors, plain_number
from neuronsim.passes import CONSTRUCTION_PIPELINE, PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.dep_reduction import DepReduction
from neuronsim.machine.order.stream import stream_of
from neuronsim.machine.order.work_estimate import estimate_size
from neuronsim.verify.app.progress import Progress, pass_progress, stage_or_nothing
from neuronsim.verify.racecheck import RaceReport, check_program
from neuronsim.verify.sync_counts import SyncReport, sync_report

__all__ = ["SCENARIO_DIR", "REQUIRED", "DEFAULT_SEEDS", "ScenarioRun", "all_scenarios", "get_scenario",
           "load_scenario", "is_scenario", "scenario_name", "json_path", "golden_path", "golden_text",
           "write_all", "run_scenario", "compare_outputs", "unlike_outputs", "output_errors"]

#: The shipped scenarios: the ``scenarios`` folder beside ``verify`` (this file is
#: ``verify/app/scenario_runs.py``), in a source checkout and in an installed wheel alike.
SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"

#: What a module must define to be a scenario.
REQUIRED = ("build", "inputs", "reference")

#: The largest inputs ``run_scenario`` copies to compute the user's reference on a thread of
#: its own while it simulates; larger ones are not copied and it runs after the simulation.
BACKGROUND_REFERENCE_INPUT_BYTES = 1 << 30

#: Interleavings simulated by default: the nominal schedule and three jittered ones.
DEFAULT_SEEDS: tuple[int | None, ...] = (None, 0, 1, 2)

_LOADED: dict[Path, ModuleType] = {}


def is_scenario(module: ModuleType) -> bool:
    """True when ``module`` defines every callable of :data:`REQUIRED`."""
    return all(callable(getattr(module, attr, None)) for attr in REQUIRED)


def _load_file(path: Path) -> ModuleType:
    """Execute a scenario file once (by its resolved path) and return the module."""
    path = path.resolve()
    module = _LOADED.get(path)
    if module is None:
        module = _LOADED[path] = run_file(path, f"neuronsim_scenario_{path.stem}")
    return module


def all_scenarios(folder: Path = SCENARIO_DIR) -> list[ModuleType]:
    """Every scenario file of ``folder``, sorted by name (load errors propagate)."""
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = _load_file(path)
        if is_scenario(module):
            found.append(module)
    return found


def scenario_name(module: ModuleType) -> str:
    """The short name, its file's stem: ``scenarios/softmax.py`` -> ``softmax``."""
    return Path(module.__file__).stem


def get_scenario(name: str) -> ModuleType:
    """The shipped scenario called ``name``; a located ProgramError lists the known ones."""
    scenarios = all_scenarios()
    for module in scenarios:
        if scenario_name(module) == name:
            return module
    known = ", ".join(scenario_name(m) for m in scenarios)
    if name.lower().endswith(".json") or name == "-":  # a program where run takes a scenario or a kernel (a probe)
        raise ProgramError("SCENARIO", f"{name!r} is no scenario: run takes a shipped scenario's name or a kernel "
                                       f"FILE.py::FUNC; a program JSON runs with `neuronsim simulate {name}` (or "
                                       f"check, compile, report)")
    raise ProgramError("SCENARIO", f"no scenario {name!r}; the scenarios are: {known}")


def load_scenario(spec: str) -> ModuleType:
    """A shipped scenario by name, or a user's scenario file by path (``.py``).

    This is what ``neuronsim run SCENARIO`` resolves its argument with; every failure is a
    :class:`~neuronsim.machine.ir.errors.ProgramError` (exit status 2), never a traceback.
    """
    if not spec.endswith(".py"):
        return get_scenario(spec)
    path = Path(spec)
    if not path.is_file():
        raise ProgramError("SCENARIO", f"cannot read {spec}: no such file")
    try:
        module = _load_file(path)
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's file failed to run: their input
        raise scenario_load_error(spec, err) from None
    if not is_scenario(module):
        missing = [attr for attr in REQUIRED if not callable(getattr(module, attr, None))]
        raise ProgramError("SCENARIO", f"{spec} is not a scenario: it defines no {', '.join(missing)}")
    return module


def json_path(module: ModuleType) -> Path:
    """``scenarios/NAME.json``: the shipped program."""
    return Path(module.__file__).with_suffix(".json")


def golden_path(module: ModuleType) -> Path:
    """``scenarios/NAME.golden.json``: the shipped end-to-end summary."""
    return Path(module.__file__).with_suffix(".golden.json")


def golden_text(summary: dict) -> str:
    """Canonical text of a golden summary."""
    return dumps_strict(summary, indent=1, sort_keys=True) + "\n"


#: How the two sides of an output comparison are named: the run's outputs and the reference's
#: (``compare`` names its variants ``("B", "A")``).
SIDES = ("simulated", "reference")


def unlike_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                   sides: tuple[str, str] = SIDES) -> list[str]:
    """The outputs that cannot be compared element by element: missing on one side, or of
    another shape (the largest error leaves them out)."""
    problems = []
    for name in sorted(set(actual) | set(expected)):
        if name not in actual or name not in expected:
            where = ("the program" if name not in actual else "the reference") if sides == SIDES else \
                sides[0 if name not in actual else 1]
            problems.append(f"{name}: output missing from {where}")
        elif np.shape(actual[name]) != np.shape(expected[name]):
            problems.append(f"{name}: {sides[0]} shape {np.shape(actual[name])}, {sides[1]} shape "
                            f"{np.shape(expected[name])}")
    return problems


def compare_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], rtol: float,
                    atol: float, sides: tuple[str, str] = SIDES) -> list[str]:
    """Located differences between simulated outputs and the reference (empty: they agree);
    ``sides`` names the two in the lines."""
    problems = unlike_outputs(actual, expected, sides)
    for name in sorted(set(actual) & set(expected)):
        got, want = np.asarray(actual[name]), np.asarray(expected[name])
        if got.shape != want.shape:
            continue
        bad = np.argwhere(beyond(got, want, rtol=rtol, atol=atol))
        if not len(bad):
            continue
        first = tuple(int(i) for i in bad[0])
        problems.append(f"{name}: {len(bad)} of {got.size} elements beyond rtol={rtol}, atol={atol}; first at "
                        f"{list(first)}: {sides[0]} {plain_number(got[first])}, "
                        f"{sides[1]} {plain_number(want[first])}; "
                        f"{largest_errors(got, want).text()}")
    return problems


def output_errors(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> LargestErrors:
    """The largest error of the outputs both sides have, shapes alike (0 / 0: none to compare)."""
    worst = NO_ERROR
    for name in sorted(set(actual) & set(expected)):
        if np.shape(actual[name]) == np.shape(expected[name]):
            worst = worst.worst(largest_errors(actual[name], expected[name]))
    return worst


@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """Everything one end-to-end run of a scenario produced (see the module doc)."""

    name: str
    program: Program
    compiled: Program
    final: Program
    """The compiled program after ``dep-reduction``: what is simulated."""
    pipeline: str
    final_pipeline: str
    """The passes that made :attr:`final` (``pipeline``, plus ``dep-reduction`` unless in it)."""
    compiled_report: RaceReport
    report: RaceReport
    """Races of the final program."""
    simulation: Simulation
    seeds: tuple[int | None, ...]
    """The interleavings asked for: all simulated when they compute values, else the first
    alone (:attr:`Simulation.runs`; a race-free program's other orders are covered by the check)."""
    inputs: Mapping[str, np.ndarray]
    outputs: Mapping[str, np.ndarray]
    """Output tensors of the timed run under the last seed."""
    reference: Mapping[str, np.ndarray]
    sync: SyncReport
    """Sync counts of stages ``compiled`` and ``final``."""
    rtol: float
    atol: float
    memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    """Comparisons already made: the output, summary and verdict each ask for them, and one
    costs a pass over every output element (issue 31)."""

    def _off_reference(self) -> list[str]:
        if "off" not in self.memo:
            self.memo["off"] = compare_outputs(self.outputs, self.reference, self.rtol, self.atol)
        return self.memo["off"]

    @property
    def timing_only(self) -> bool:
        """The runs computed no value (``run --timing-only``): nothing was compared."""
        return not self.simulation.functional

    def problems(self) -> list[str]:
        """What is wrong, located: races, interleavings that disagree, outputs off the reference."""
        found = [f"{stage} program: race {r.kind} {r.first} -> {r.second} in {r.memory} bytes {list(r.bytes)}"
                 + _located(program, r)
                 for stage, program, report in (("compiled", self.compiled, self.compiled_report),
                                                ("final", self.final, self.report))
                 for r in report.races]
        for run in self.simulation.runs:
            found += [f"interleaving seed {run.seed}: {diff}" for diff in run.diffs]
        return found + self._off_reference()

    def reference_errors(self) -> LargestErrors:
        """The largest error of the outputs against the reference, equal or not."""
        if "errors" not in self.memo:
            self.memo["errors"] = output_errors(self.outputs, self.reference)
        return self.memo["errors"]

    def summary(self) -> dict[str, Any]:
        """The golden summary (plain JSON values, deterministic)."""
        compiled, final = self.sync.stages
        return {
            "scenario": self.name,
            "pipeline": self.final_pipeline,
            "instances": self.report.instances,
            "races": {"compiled": len(self.compiled_report.races), "final": len(self.report.races)},
            "deps": {"before": compiled.deps, "after": final.deps},
            "waits": {"before": compiled.figures.waits, "after": final.figures.waits,
                      "minimum": final.minimum.figures.waits if final.minimum else None},
            "makespan_ns": round(self.simulation.trace.makespan, 1),
            "interleavings": len(self.seeds),
            "interleavings_agree": not self.simulation.differs,
            "outputs_match": not self._off_reference(),
        }


def _located(program: Program, race) -> str:
    """`` (CALL at FILE:LINE [i=0] / ...)`` for a traced kernel's race (``x-source``), else empty."""
    from neuronsim.machine.ir.source import instance_source
    from neuronsim.machine.order.stream import stream_of

    if not any(inst.extras.get("x-source") for inst, _ in program.instructions()):
        return ""
    stream = stream_of(program)
    first, second = instance_source(stream, race.first_id), instance_source(stream, race.second_id)
    return f" ({first or race.first} / {second or race.second})"


def _writable(values: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as a user's reference receives them: arrays it may write (numpy code often
    works in place, ``x -= x.max()``), a copy of each read-only one (the command line's)."""
    return {k: np.array(v) if isinstance(v, np.ndarray) and not v.flags.writeable else v for k, v in values.items()}


def scenario_call(scenario: ModuleType, attr: str, *args: Any) -> Any:
    """Call one of the scenario's own functions; what it raises is an error of the scenario
    (a located :class:`ProgramError`, exit 2), not of neuronsim."""
    try:
        with running_users_code():
            return getattr(scenario, attr)(*args)
    except ProgramError:
        raise
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report
        raise
    except BaseException as err:  # noqa: BLE001 - the scenario's code, not ours (sys.exit too)
        if stopped_by_watch(err):
            raise
        raise user_code_error(err, "SCENARIO", f"{scenario_name(scenario)}.{attr}()") from None


def stopped_by_watch(err: BaseException) -> bool:
    """Whether ``err`` is the ``--max-idle`` watch stopping the user's code, for the watch's
    block to report (where it stopped and after how long), not an error of the user's code."""
    watch = sys.modules.get("neuronsim.machine.nki.watch")  # (loaded by whoever set a watch)
    return watch is not None and isinstance(err, watch.TraceStalled)


def array_of_numbers(value: Any, name: str, where: str) -> np.ndarray:
    """``value`` as an array of numbers (bool, integer or real: what a tensor holds); a string,
    an object or a complex number is the user's mistake, said as one."""
    from neuronsim.machine.nki.errors import shown

    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:  # ragged lists and the like
        raise ProgramError(where, f"{name}: {shown(value)} is not an array ({err})") from None
    kind = array.dtype.kind  # (ml_dtypes' bfloat16 and fp8 are "V", without fields)
    if kind not in "biuf" and not (kind == "V" and array.dtype.names is None and array.dtype.subdtype is None):
        raise ProgramError(where, f"{name}: an array of {array.dtype} ({shown(value)}); a tensor holds numbers "
                                  "(bool, integer or real)")
    return array


def _named_arrays(scenario: ModuleType, attr: str, value: Any) -> dict[str, np.ndarray]:
    """What a scenario's ``inputs()`` or ``reference()`` returned, as ``{tensor: array}``."""
    from neuronsim.machine.nki.errors import shown

    where, what = "SCENARIO", f"{scenario_name(scenario)}.{attr}()"
    if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
        raise ProgramError(where, f"{what} returned {shown(value)}; expected a dict of arrays by tensor name")
    return {name: array_of_numbers(array, f"{what}[{name!r}]", where) for name, array in value.items()}


def _tolerance(scenario: ModuleType, attr: str, given: float | None) -> float:
    """The command line's ``--rtol`` / ``--atol``, else the scenario's own, a finite number >= 0."""
    if given is not None:
        return given
    value = getattr(scenario, attr, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
        raise ProgramError("SCENARIO", f"{scenario_name(scenario)}.{attr} is {value!r}; a tolerance is a finite "
                                       "number, 0 or more")
    return float(value)


def scenario_load_error(spec: str, err: BaseException) -> ProgramError:
    """What running a user's scenario file raised, as one located line: its exit (``sys.exit``,
    ``os._exit``) at its line; an NKI kernel file named without its kernel said so."""
    if isinstance(err, SystemExit):  # no exit status of the command's
        return user_code_error(err, "SCENARIO", "the scenario file")
    if isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] in ("nki", "neuronxcc"):
        return ProgramError("SCENARIO", f"{spec} imports {err.name}: it holds NKI kernels, not a scenario; run one "
                                        f"of its kernels as {spec}::FUNCTION")
    return ProgramError("SCENARIO", f"cannot load {spec}: {type(err).__name__}: {err}")


def user_code_error(err: BaseException, where: str, what: str) -> ProgramError:
    """What a user's own function (a scenario's, a ``--reference``) raised or exited with, as a
    located error: at its innermost line outside neuronsim and the installed libraries, else at
    ``where``.  A ``sys.exit`` there is no exit status of the command (it would end the run as
    a pass, with nothing printed)."""
    site = user_site(err) or where
    if isinstance(err, SystemExit):
        return ProgramError(site, f"{what} exits ({exit_call(err)})")
    said = message_of(err)  # (an empty message left a trailing ": ": a probe)
    return ProgramError(site, f"{what} raised {type(err).__name__}{': ' + said if said else ''}")


def _reference(scenario: ModuleType, call: Future | None, values: Mapping[str, Any],
               max_idle: float | None) -> Mapping[str, Any]:
    """The reference's outputs: from its thread (``call``), or computed here; never waited on
    for ever: it may run ``max_idle`` seconds more than the rest of the run (None: no limit),
    then it is reported at the line it is at."""
    from concurrent.futures import TimeoutError as NotYet

    from neuronsim.machine.nki.watch import stopped_message, stopped_when_idle, thread_line

    if call is None:
        with stopped_when_idle("the reference", max_idle):
            return _named_arrays(scenario, "reference", scenario_call(scenario, "reference", _writable(values)))
    try:
        return _named_arrays(scenario, "reference", call.result(timeout=max_idle or None))
    except NotYet:
        where = thread_line(getattr(call, "thread", None))
        raise ProgramError(str(where) if where is not None else "--reference",
                           stopped_message("the reference", max_idle)) from None


def _reference_on_copies(scenario: ModuleType, values: Mapping[str, Any]) -> Any:
    """The user's reference on its own copy of the inputs, copied on the reference's thread: the
    run only reads ``values`` meanwhile, and the copy (64 MB for a 4096^2 bf16 matmul's two
    inputs, each page touched afresh) leaves the run's thread (issue 31)."""
    return scenario_call(scenario, "reference", {k: np.array(v) for k, v in values.items()})


def in_background(fn: Callable[..., Any], *args: Any) -> Future:
    """``fn(*args)`` on a daemon thread (an interrupted run exits without waiting for it); the
    future's result is its value, or raises what it raised; ``future.seconds`` the wall seconds
    the call took, once done."""
    future: Future = Future()

    def call() -> None:
        started = time.perf_counter()
        try:
            value = fn(*args)
        except BaseException as err:  # noqa: BLE001 - handed to whoever waits for the result
            future.seconds = time.perf_counter() - started  # type: ignore[attr-defined]
            future.set_exception(err)
        else:
            future.seconds = time.perf_counter() - started  # type: ignore[attr-defined]
            future.set_result(value)

    future.thread = threading.Thread(target=call, name="neuronsim-background", daemon=True)  # type: ignore[attr-defined]
    future.thread.start()  # type: ignore[attr-defined]
    return future


@collector_paused()  # every stage allocates records and no cycles (performance notes, section 0)
@blas_limited()  # one BLAS pool size for the user's reference and the runs (one thread by default)
def run_scenario(scenario: ModuleType, *, pipeline: str = CONSTRUCTION_PIPELINE,
                 seeds: Sequence[int | None] = DEFAULT_SEEDS, data_seed: int = 0,
                 before_work: Callable[[Program], None] | None = None, rtol: float | None = None,
                 atol: float | None = None, progress: Progress | None = None, functional: bool = True,
                 timed_values: bool | None = None, max_idle: float | None = None) -> ScenarioRun:
    """Build, compile, race-check and simulate ``scenario``; see the module doc.

    ``before_work(program)`` sees the built program before anything runs on it (the command
    line validates it and guards its size there).  ``rtol`` / ``atol`` replace the scenario's
    own; ``progress`` shows each stage (:mod:`neuronsim.verify.app.progress`).  ``functional=False``
    simulates the schedules alone: no value is computed, the outputs and the reference are
    empty (nothing compared), and :attr:`ScenarioRun.timing_only` says so.  ``timed_values``:
    whether the interleavings compute values and are compared with the sequential run (None:
    only when the final program's race check found races, see :func:`simulate`); when they do
    not, the first seed alone is simulated (its makespan is the one reported, and the other
    orders would compare nothing).  ``max_idle``: seconds the reference may run past the rest
    (None: no limit; ``--max-idle``)."""
    from neuronsim.machine.nki.watch import stopped_when_idle

    seeds = tuple(seeds)
    with stopped_when_idle(f"{scenario_name(scenario)}.build()", max_idle):
        program = scenario_call(scenario, "build")
    if not isinstance(program, Program):
        raise ProgramError("SCENARIO", f"{scenario_name(scenario)}.build() returned a {type(program).__name__}, "
                           "not a Program")
    if before_work is not None:
        before_work(program)
    size = estimate_size(program).instances if progress is not None else None
    passes = parse_pipeline(pipeline)
    rtol, atol = _tolerance(scenario, "rtol", rtol), _tolerance(scenario, "atol", atol)
    with stopped_when_idle(f"{scenario_name(scenario)}.inputs()", max_idle):
        values = _named_arrays(scenario, "inputs", scenario_call(scenario, "inputs", data_seed))
    # The user's numpy runs meanwhile on another thread, on its own copy of the inputs: numpy's
    # kernels release the GIL, so on a second core it costs little wall time.  Not with BLAS
    # pools of several threads (two at once would take more cores than there are), nor when
    # the copy would be large (the run holds the inputs already; the overlap saves seconds).
    overlap = functional and blas_threads() == 1 and sum(np.asarray(v).nbytes for v in values.values()) \
        <= BACKGROUND_REFERENCE_INPUT_BYTES
    reference_call = in_background(_reference_on_copies, scenario, values) if overlap else None
    # The pipeline's built-in passes checked together after the last (a user's after itself): the
    # program the run goes on with is checked as fully, at a third of the cost (issue 31)
    ctx = PassContext(verify_each=False)
    reduces = any(isinstance(p, DepReduction) for p in passes)
    with stage_or_nothing(progress, "compile", len(passes), unit="pass", size=size) as update:
        compiled = run_pipeline(program, passes, ctx, after_pass=pass_progress(update, passes))
        # Through the pipeline, so that the final program is verified as every pass's result
        # is (and the simulation need not validate it again).
        final = compiled if reduces else run_pipeline(compiled, (DepReduction(),), ctx)
    unplaced = [name for name, tensor in compiled.tensors.items() if tensor.is_virtual]
    if unplaced:  # (the race check's "tensors.add_7: has no placement ... run neuronsim compile" named our tensor)
        raise ProgramError("--passes", f"the pipeline {pipeline!r} leaves {len(unplaced)} tensor(s) without a place "
                                       f"({', '.join(unplaced[:3])}): the alloc pass places them; put it first")
    reports = []
    # One instance stream per program, the final one sharing the compiled one's accesses
    # (the reduction changed deps only), for the race checks and the sync counts alike.
    streams = [stream_of(compiled)]
    streams.append(stream_of(final, like=streams[0]) if final is not compiled else streams[0])
    for stage, checked, stream in (("check compiled", compiled, streams[0]), ("check final", final, streams[1])):
        with stage_or_nothing(progress, stage, size, unit="instance") as update:
            reports.append(check_program(checked, progress=lambda done, _total: update(done), stream=stream))
    # A race-free final program computes the sequential bytes in every legal order: only the
    # reference computes values; with races the runs compute them too, as witnesses.
    timed_values = bool(reports[1].races) if timed_values is None else timed_values
    # Interleavings that compute no values compare nothing and their makespans are not reported:
    # the first seed (the nominal order, whose makespan is) is simulated alone (issue 31).
    simulated = seeds if functional and timed_values else seeds[:1]
    with stage_or_nothing(progress, "simulate", len(simulated) + functional, unit="run",
                          size=None if size is None else size * len(simulated)) as update:
        simulation = simulate(final, seeds=simulated, inputs=values, data_seed=data_seed, compare="all",
                              functional=functional, progress=lambda done, _total: update(done),
                              validate=not ctx.verify,  # the pipeline verified what it made
                              timed_values=timed_values)
    with stage_or_nothing(progress, "reference", None):  # waiting for the user's numpy: said when slow
        reference = _reference(scenario, reference_call, values, max_idle) if functional else {}
    if reference_call is not None and progress is not None and reference_call.seconds >= 0.05:
        progress.beside["reference"] = reference_call.seconds  # (inside compile .. simulate's seconds: said apart)
    with stage_or_nothing(progress, "sync footprint", None):
        sync = sync_report([("compiled", compiled), ("final", final)], simulate=False, streams=streams)
    return ScenarioRun(
        name=scenario_name(scenario), program=program, compiled=compiled, final=final, pipeline=pipeline,
        final_pipeline=pipeline if reduces else f"{pipeline},{DepReduction.name}",
        compiled_report=reports[0], report=reports[1], simulation=simulation, seeds=seeds,
        inputs=values, outputs=simulation.runs[-1].outputs, reference=reference,
        sync=sync,
        rtol=rtol, atol=atol)


def write_all(*, golden: bool = True) -> list[Path]:
    """Rewrite ``NAME.json`` (and ``NAME.golden.json``) of every scenario; the paths written."""
    from neuronsim.machine.formats.program_json import save_program

    written = []
    for module in all_scenarios():
        path = json_path(module)
        save_program(module.build(), str(path))
        written.append(path)
        if golden:
            path = golden_path(module)
            path.write_text(golden_text(run_scenario(module).summary()))
            written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - the regeneration script
    for written_path in write_all():
        print(written_path)
