"""Fuzz a dependence pass with generated programs: :func:`check_pass` and its pytest form.

The harness runs the pipeline with *your* pass in place (appended after the default pipeline,
or replacing one of its passes), on programs drawn by :func:`neuronsim.verify.strategies.programs` with
their deps stripped, and checks every example four ways:

1. **races** (issue #3): the compiled program is race-free under its deps, and after the
   ``build-fdeps`` slot every read already waits for the last earlier write of its bytes
   through the same tensor (that pass's contract: later passes could otherwise mask a flow
   dependence it lost behind an output or reuse edge);
2. **ordering preserved**: every conflicting instance pair the unmodified pipeline orders is
   still ordered after your pass (that is (1) again, unless the program you return lost
   instructions or changed their accesses, which is reported as such);
3. **labels** (issue #6): every dep's kind is the kind its bytes give
   (:func:`neuronsim.passes.analysis.labels.verify_anti_dependence`) - a dependence the construction lost but a
   weaker edge happens to cover still shows as a mislabelled edge;
4. **simulation** (issue #4): under a few interleaving seeds the simulated final contents of
   every tensor equal the sequential reference, and the race check over each run's trace
   (:mod:`neuronsim.verify.tracecheck`) finds no rule broken and the same (empty) race set - a
   simulator that skips a wait is caught here even when the values happen to agree.

A failure is shrunk on the program itself (:mod:`neuronsim.verify.shrink`: instructions, loops and
unused tensors dropped, trip counts cut, within a deadline; hypothesis only generates), saved
as JSON with its race report, the program given to the pass and the pass's output, and the
fix line (:mod:`neuronsim.verify.fuzz_explain`: ``your pass dropped `ld_x` waits for `mm`, needed for
this WAR``), and returned as a :class:`FuzzFailure`.  Results are deterministic for a given
seed.

Examples
--------
>>> from neuronsim.passes.dep_reduction import DepReduction
>>> result = check_pass(DepReduction(), examples=5, seed=1)
>>> result.failure is None, result.examples
(True, 5)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace as replace_fields
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.ir.errors import ProgramError, message_of
from neuronsim.machine.formats.files import make_folders, write_text
from neuronsim.machine.formats.program_json import dumps_program
from neuronsim.machine.ir.program import Program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.model.geometry import footprint, overlap
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes import DEFAULT_PIPELINE, PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.pipeline import Pass, as_pass
from neuronsim.passes.spec import import_pass
from neuronsim.passes.analysis.labels import verify_anti_dependence

from neuronsim.verify.fuzz_explain import PassEffect, PassStage, explain_race, pass_effect, user_slot
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.shrink import SHRINK_SECONDS, shrink_program
from neuronsim.verify.draws import no_source_constants
from neuronsim.verify.strategies import programs, strip_deps
from neuronsim.verify.tracecheck import check_trace

__all__ = ["FuzzFailure", "FuzzResult", "check_pass", "check_one", "shrink_failure", "load_pass", "save_failure",
           "assert_pass_sound", "fuzz_strategy", "find_failure"]

#: Interleaving seeds every example is simulated under (besides the nominal schedule).
SIM_SEEDS = (None, 1, 2)


@dataclass(frozen=True, slots=True)
class FuzzFailure:
    """The minimal failing example."""

    check: str
    """``"error"``, ``"structure"``, ``"flow"``, ``"labels"``, ``"races"``, ``"outputs"`` or ``"trace"``."""
    message: str
    program: str
    """The shrunk input program (deps stripped) as JSON text."""
    compiled: str | None
    """The program the pipeline produced, as JSON text (None if the pipeline failed)."""
    report: dict | None
    saved: str | None = None
    pass_input: str | None = None
    """The program given to the pass under test (JSON; the stripped program when the whole
    pipeline is under test)."""
    pass_output: str | None = None
    """The program the pass under test returned (JSON)."""
    fix: str | None = None
    """The fix line: ``your pass dropped `ld_x` waits for `mm`, needed for this WAR``."""
    race: dict | None = None
    """The race the fix line is about (its kind, instances, bytes, waiter and dep)."""


@dataclass(frozen=True, slots=True)
class FuzzResult:
    examples: int
    """Programs generated and checked (up to and including the first failing one; the
    shrinking runs after it are not counted)."""
    failure: FuzzFailure | None
    first_failure_at: int | None = None
    """1-based number of the example that first failed (before shrinking)."""
    changed: int | None = None
    """Examples in which your pass changed its input (None: no pass of yours under test)."""
    dropped: int | None = None
    """Deps your pass dropped, over all examples (:func:`neuronsim.verify.fuzz_explain.pass_effect`)."""
    added: int | None = None
    """Deps your pass added, over all examples."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def vacuous(self) -> bool:
        """Your pass ran and never changed anything in its slot: the run tested nothing.  A run
        that found a failure tested something (a pass that raises changed nothing, and failed)."""
        return self.changed == 0 and self.examples > 0 and self.failure is None

    def effect_text(self, replace: str | None = None) -> str | None:
        """``your pass changed its input in 37 of 500 examples: 112 deps dropped, 0 added``,
        or the vacuous verdict; None without a pass of yours."""
        if self.changed is None:
            return None
        slot = f"replacing {replace}" if replace else "appended to the pipeline"
        if self.vacuous:
            return (f"vacuous: your pass ({slot}) changed nothing in {self.examples} examples, so they tested "
                    f"nothing; make sure it sees the deps it should change")
        return (f"your pass ({slot}) changed its input in {self.changed} of {self.examples} examples: "
                f"{self.dropped} deps dropped, {self.added} added")


class _Found(AssertionError):
    def __init__(self, failure: FuzzFailure) -> None:
        super().__init__(f"{failure.check}: {failure.message}")
        self.failure = failure


def load_pass(address: str) -> Any:
    """Import ``module:attribute``: a pass instance, a pass class, or ``fn(program) -> program``."""
    module, sep, attr = address.partition(":")
    if not sep or not module or not attr:
        raise ProgramError("--pass", f"expected module:function, got {address!r}")
    obj = import_pass(address, "--pass")  # the spec strings' importer: one for both
    as_pass(obj, address)  # neither a pass nor a function: refused here, before any example runs
    return obj() if isinstance(obj, type) else obj


def fuzz_strategy(**overrides: Any):
    """The program strategy the fuzzer draws from (deps are stripped before compiling)."""
    options = dict(max_instructions=10, max_trip=3, virtual=True, placed=True, deps="none")
    options.update(overrides)
    return programs(**options)


def pipeline_with(user: Any, replace: str | None, pipeline: str, parse=parse_pipeline,
                  what: str = "pipeline") -> list[Pass]:
    """The pipeline's passes (``parse(pipeline)``) with the user's pass in the slot
    ``replace`` (or appended); ``what`` names the pipeline in the error."""
    passes = parse(pipeline)
    if user is None:
        return passes
    names = [p.name for p in passes]
    if replace is None:
        return [*passes, as_pass(user, "user")]
    if replace not in names:
        raise ProgramError("--replace", f"no pass {replace!r} in the {what} {pipeline!r}")
    k = names.index(replace)
    return [*passes[:k], as_pass(user, replace), *passes[k + 1:]]


class _StageFailure(Exception):
    """Raised by the after-pass hook when a stage breaks its contract."""

    def __init__(self, failure: FuzzFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _check_stage(stage: Pass, program: Program, ctx: PassContext) -> None:
    """After the ``build-fdeps`` slot: every read ordered after the last earlier write of its
    bytes through the same tensor (its contract)."""
    if stage.name == "build-fdeps" and not program.has_virtual_tensors:
        lost = _same_tensor_raw(program)
        if lost is not None:
            text, race = lost
            raise _StageFailure(FuzzFailure("flow", f"after build-fdeps: {text}", "", dumps_program(program), None,
                                            race=race))


def _compile(program: Program, user: Any, replace: str | None, pipeline: str,
             stage_checks: bool = True, stage: PassStage | None = None) -> tuple[Program, FuzzFailure | None]:
    """Run the pipeline with the user's pass in place; stage contracts checked after each
    pass; ``stage`` captures the input and output of the user's pass."""
    def after(p: Pass, out: Program, ctx: PassContext) -> None:
        if stage is not None:
            stage.hook(p, out, ctx)
        if stage_checks:
            _check_stage(p, out, ctx)

    try:
        compiled = run_pipeline(program, pipeline_with(user, replace, pipeline), PassContext(), after_pass=after)
    except _StageFailure as found:
        return program, found.failure
    return compiled, None


def _cells(tensor, access, iteration) -> set[tuple[int, int]]:
    fp = footprint(tensor, access, iteration)
    parts = [p for p in range(fp.partitions.bit_length()) if fp.partitions >> p & 1] or [0]
    return {(p, b) for lo, hi in fp.bytes for b in range(lo, hi) for p in parts}


def _same_tensor_raw(program: Program):
    """A read not ordered after the *last* earlier write of some byte through the same
    tensor (build-fdeps' contract), described, or None.  Writes before that last one may
    still race with the read: ordering writes among themselves is the anti-dependence
    pass's job (WAW), which then orders the read transitively."""
    unrolled = unroll(program)
    tensors = program.tensors
    for race in check_program(program).races:
        if race.kind != "RAW":
            continue
        first, second = unrolled[race.first_id], unrolled[race.second_id]
        for write in first.instr.writes:
            for read in second.instr.reads:
                if write.tensor != read.tensor:
                    continue
                tensor = tensors[write.tensor]
                if not overlap(footprint(tensor, write, first.iteration), footprint(tensor, read, second.iteration)):
                    continue
                left = _cells(tensor, write, first.iteration) & _cells(tensor, read, second.iteration)
                for between in unrolled.instances[first.id + 1:second.id]:
                    for later in between.instr.writes:
                        if later.tensor == write.tensor and left:
                            left -= _cells(tensor, later, between.iteration)
                if left:
                    return (f"{race.second} reads {write.tensor} last written by {race.first} without waiting for it",
                            race)
    return None


def _signature(program: Program) -> list:
    """The program but its deps: its instructions in program order, each with its loops (names
    and trip counts).  Sorted by name, it let a pass that swapped two instructions or cut a
    loop's trip count through, the compiled program then checked against its own reference
    (a probe's wrong passes); the default pipeline's passes change deps only."""
    return [(i.name, i.engine, i.op, i.reads, i.writes, i.queue, tuple((lp.name, lp.trip_count) for lp in loops))
            for i, loops in program.instructions()]


def crash_text(err: BaseException) -> str:
    """A crash of the pipeline under test in one line.  The pipeline's errors about a pass are
    placed at ``--passes``, the option of ``compile``; the fuzzer's user gave ``--pass``, and
    the message names the pass itself (a probe), so only the message is kept there.

    >>> crash_text(ProgramError("--passes", "the pass 'p' raised KeyError: 1"))
    "the pass 'p' raised KeyError: 1"
    >>> crash_text(IndexError("list index out of range"))
    'IndexError: list index out of range'
    """
    if isinstance(err, ProgramError):
        return err.message if err.path == "--passes" else str(err)
    return f"{type(err).__name__}: {message_of(err)}"


def check_one(program: Program, user: Any = None, *, replace: str | None = None,
              pipeline: str = DEFAULT_PIPELINE, simulate_outputs: bool = True,
              simulator: Callable[..., Any] = simulate, effects: list[PassEffect] | None = None) -> FuzzFailure | None:
    """Run all the checks on one program; the failure found (explained: the pass's input and
    output, the race, the fix line), or None.  ``effects`` gets what the user's pass did to
    its input (when it ran)."""
    source = strip_deps(program)
    stage = PassStage(user_slot(parse_pipeline(pipeline), user, replace) if user is not None else None, source)
    try:
        compiled, failed = _compile(source, user, replace, pipeline, stage=stage)
    except Exception as err:  # noqa: BLE001 - any crash of the pass under test is a finding
        return FuzzFailure("error", crash_text(err), dumps_program(source), None, None)
    effect = pass_effect(stage)
    if effects is not None and effect is not None:
        effects.append(effect)
    found = _first_failure(source, compiled, failed, simulate_outputs, simulator)
    if found is None:
        return None
    return _explained(found, stage, source, compiled, user, replace, pipeline)


def _explained(found: FuzzFailure, stage: PassStage, source: Program, compiled: Program, user: Any,
               replace: str | None, pipeline: str) -> FuzzFailure:
    given, returned = (stage.given, stage.returned) if stage.returned is not None else (source, compiled)
    if user is None:
        stage.given, stage.returned = source, compiled
    race = found.race
    if race is None and found.report and found.report.get("races"):
        race = found.report["races"][0]
    fix, race_doc = None, None
    if race is not None and not isinstance(race, dict):
        target = stage.returned if stage.returned is not None else compiled
        race_doc, fix = explain_race(race, unroll(target), stage, replace, pipeline, user)
    elif found.check == "labels" and found.message:
        fix = f"{'your pass' if user is not None else 'the pipeline'} mislabels a dep: {found.message}"
    return replace_fields(found, pass_input=dumps_program(given), pass_output=dumps_program(returned), fix=fix,
                          race=race_doc)


def _first_failure(source: Program, compiled: Program, failed: FuzzFailure | None, simulate_outputs: bool,
                   simulator: Callable[..., Any]) -> FuzzFailure | None:
    if failed is not None:
        return FuzzFailure(failed.check, failed.message, dumps_program(source), failed.compiled, None,
                           race=failed.race)
    reference = run_pipeline(source, parse_pipeline("alloc")) if source.has_virtual_tensors else source
    if _signature(compiled) != _signature(reference):
        return FuzzFailure("structure", "the pass changed instructions, their order, their loops or accesses (it "
                                        "may only change deps)",
                           dumps_program(source), dumps_program(compiled), None)
    labels = verify_anti_dependence(compiled)
    if labels:
        return FuzzFailure("labels", labels[0].message, dumps_program(source), dumps_program(compiled),
                           {"labels": [f.to_json() for f in labels]})
    report = check_program(compiled)
    if report.races:
        first = report.races[0]
        return FuzzFailure("races", f"{len(report.races)} race(s), first {first.kind} {first.first} / {first.second}",
                           dumps_program(source), dumps_program(compiled), report.to_json(), race=first)
    if simulate_outputs:
        sim = simulator(compiled, seeds=SIM_SEEDS, compare="all", validate=False)
        bad = sim.first_difference
        if bad is not None:
            return FuzzFailure("outputs", f"seed {bad.seed}: {bad.diffs[0]}", dumps_program(source),
                               dumps_program(compiled), report.to_json())
        for run in sim.runs:
            traced = check_trace(compiled, run.trace)
            if traced.violations or traced.report.races:
                races = traced.report.races
                what = traced.violations[0].message if traced.violations else \
                    f"{len(races)} race(s) under the waits the run met, first {races[0].first} / {races[0].second}"
                return FuzzFailure("trace", f"seed {run.seed}: {what}", dumps_program(source), dumps_program(compiled),
                                   traced.report.to_json(), race=races[0] if races else None)
    return None


def shrink_failure(failure: FuzzFailure, user: Any = None, *, replace: str | None = None,
                   pipeline: str = DEFAULT_PIPELINE, simulate_outputs: bool = True,
                   simulator: Callable[..., Any] = simulate, seconds: float = SHRINK_SECONDS,
                   progress: Callable[[int], None] | None = None) -> FuzzFailure:
    """``failure`` on the smallest program :func:`neuronsim.verify.shrink.shrink_program` reaches that
    fails the same check, explained again on that program."""
    from neuronsim.machine.formats.program_json import loads_program

    if not failure.program:
        return failure
    last = [failure]

    def still_fails(candidate: Program) -> bool:
        found = check_one(candidate, user, replace=replace, pipeline=pipeline, simulate_outputs=simulate_outputs,
                          simulator=simulator)
        if found is not None and found.check == failure.check:
            last[0] = found
            return True
        return False

    start = loads_program(failure.program, validate=False)
    with no_source_constants():
        shrink_program(start, still_fails, seconds=seconds, progress=progress)
    return last[0]


#: Examples per chunk of a run, each chunk drawn by its own seeded hypothesis run.
CHUNK = 25


def chunk_seed(seed: int, index: int) -> int:
    """The seed of chunk ``index`` of a run seeded ``seed`` (the command's and :func:`check_pass`'s)."""
    return seed * 100_003 + index


def check_pass(user: Any = None, *, examples: int = 100, seed: int = 0, replace: str | None = None,
               pipeline: str = DEFAULT_PIPELINE, folder: str | None = None, strategy=None,
               simulate_outputs: bool = True, progress: Callable[[int], None] | None = None,
               simulator: Callable[..., Any] = simulate, shrink: bool = True, chunk: int | None = None) -> FuzzResult:
    """Fuzz ``user`` (a pass, a pass class or ``fn(program) -> program``; None: the pipeline
    itself) on ``examples`` generated programs, drawn as ``neuronsim fuzz --examples N --seed S``
    draws them (chunks of :data:`CHUNK`); the first failure, shrunk (unless ``shrink`` is
    false), or none.  ``chunk``: one chunk of a command's run, ``seed`` being its own."""
    effects: list[PassEffect] = []

    def check(program: Program) -> FuzzFailure | None:
        return check_one(program, user, replace=replace, pipeline=pipeline, simulate_outputs=simulate_outputs,
                         simulator=simulator, effects=effects)

    # hypothesis does not shrink here: ours does, on the program (neuronsim.verify.shrink).  The
    # draws are the command's (chunks of CHUNK, each seeded by chunk_seed): one hypothesis run of
    # many examples begins with its simplest programs and draws differently as the count grows
    # (a pass that changed 3 of 25 programs changed none of 200: "vacuous", a probe)
    count, first_at, failure = 0, None, None
    with no_source_constants():  # the programs depend on the seed alone, not on what is imported
        draws = [(seed, examples)] if chunk is not None else \
            [(chunk_seed(seed, k), min(CHUNK, examples - k * CHUNK)) for k in range(-(-examples // CHUNK))]
        for chunk_seeded, chunk_examples in draws:
            ran, at, failure = find_failure(strategy or fuzz_strategy(), check, examples=chunk_examples,
                                            seed=chunk_seeded,
                                            progress=None if progress is None else
                                            (lambda n, done=count: progress(done + n)))
            first_at = None if at is None else count + at
            count += ran
            if failure is not None:
                break
    tally = {} if user is None else {"changed": sum(e.changed for e in effects),
                                     "dropped": sum(e.dropped for e in effects), "added": sum(e.added for e in effects)}
    if failure is None:
        return FuzzResult(count, None, **tally)
    if shrink:
        failure = shrink_failure(failure, user, replace=replace, pipeline=pipeline, simulate_outputs=simulate_outputs,
                                 simulator=simulator)
    if folder is not None:
        failure = _save(failure, folder, seed)
    return FuzzResult(first_at or count, failure, first_at, **tally)


def find_failure(strategy: Any, check: Callable[[Any], FuzzFailure | None], *, examples: int, seed: int,
                 progress: Callable[[int], None] | None = None,
                 hypothesis_shrinks: bool = False) -> tuple[int, int | None, FuzzFailure | None]:
    """Run ``check`` on up to ``examples`` draws of ``strategy`` (hypothesis, seeded with
    ``seed``), stopping at the first failure; with ``hypothesis_shrinks`` hypothesis shrinks it
    and the last failure seen is the smallest.  ``(examples run, the example that first failed,
    the failure)``, the last two None when none failed.  The walk of both fuzzers: programs
    (:func:`check_pass`) and task programs (``check_task_pass``)."""
    failures: list[FuzzFailure] = []
    count = 0
    first_at: int | None = None

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              phases=(Phase.generate, Phase.shrink) if hypothesis_shrinks else (Phase.generate,), print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(example: Any) -> None:
        nonlocal count, first_at
        count += 1
        if progress is not None:
            progress(1)
        failure = check(example)
        if failure is not None:
            if first_at is None:
                first_at = count
            failures.append(failure)
            raise _Found(failure)

    try:
        run()
    except _Found:
        pass
    return count, first_at, (failures[-1] if failures else None)


def _save(failure: FuzzFailure, folder: str, seed: int) -> FuzzFailure:
    return save_failure(failure, folder, f"failure-seed{seed}")


def save_failure(failure: FuzzFailure, folder: str, stem: str) -> FuzzFailure:
    """Write ``FOLDER/STEM.json`` (the program), ``.report.json`` (check, message, the fix
    line, the race, the full report), ``.compiled.json`` (the pipeline's output),
    ``.pass-input.json`` and ``.pass-output.json`` (what the pass under test was given and
    returned), each atomically; the failure with ``saved`` set to the program's path."""
    make_folders(folder)
    path = os.path.join(folder, f"{stem}.json")
    stem_path = path[:-5]
    write_text(path, failure.program)
    write_text(stem_path + ".report.json",
               dumps_strict({"check": failure.check, "message": failure.message, "fix": failure.fix,
                             "race": failure.race, "report": failure.report}, indent=1))
    for suffix, text in ((".compiled.json", failure.compiled), (".pass-input.json", failure.pass_input),
                         (".pass-output.json", failure.pass_output)):
        if text is not None:
            write_text(stem_path + suffix, text)
    return replace_fields(failure, saved=path)


def assert_pass_sound(user: Any = None, *, allow_vacuous: bool = False, **options: Any) -> None:
    """pytest-friendly form of :func:`check_pass`: raise AssertionError when the pass breaks
    ordering or outputs, or (unless ``allow_vacuous``) never changed anything in its slot.

    The message leads with the fix line and the saved failure's path (``folder``, default a
    new temporary folder), then the check that failed; the program itself is in the file."""
    folder = options.pop("folder", None)
    result = check_pass(user, **options)
    if result.failure is None:
        if result.vacuous and not allow_vacuous:
            raise AssertionError(result.effect_text(options.get("replace")))
        return
    f = result.failure
    saved = save_failure(f, folder or tempfile.mkdtemp(prefix="neuronsim-fuzz-"),
                         f"failure-seed{options.get('seed', 0)}").saved
    lines = [f.fix or f"{f.check}: {f.message}",
             f"saved: {saved} (beside it .report.json: the race and full report; .pass-input.json / "
             f".pass-output.json: what your pass was given and returned)"]
    if f.fix:
        lines.append(f"{f.check}: {f.message}")
    shrunk = ", shrunk" if options.get("shrink", True) else ""
    lines.append(f"found at example {result.first_failure_at} of {options.get('examples', 100)}{shrunk}")
    raise AssertionError("\n".join(lines))
