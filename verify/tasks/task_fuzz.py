"""Fuzz a task pass with generated task programs (``neuronsim fuzz --tasks``).

The harness runs the task pipeline (:data:`neuronsim.passes.tasks.DEFAULT_TASK_PIPELINE`) with *your*
pass in a slot (``replace``) or appended, on programs drawn by
:func:`neuronsim.verify.tasks.task_strategies.task_programs`, and checks each against the *all-AUTO* program
(``derive-call-directions`` only: every call under the runtime's TensorMap tracking), for
every value of the runtime scalar in :data:`neuronsim.verify.tasks.task_strategies.TRIP_VALUES`:

1. **error**: the pipeline ran (a crash of the pass is a finding);
2. **structure**: the same task instances touch the same bytes (a task pass may change deps,
   directions and scopes only);
3. **races**: statically (:func:`neuronsim.verify.tasks.check.check_task_program`) the compiled program has
   no race the all-AUTO program lacks;
4. **coverage**: where the reference analysis covers every hazard (a default-mode function
   with no user MANUAL scope and no user ``no_dep``, analysed without fallback), the compiled
   program has no race at all: the pass must order what the runtime does not (its WAR edges);
5. **trace**: simulated runs (nominal and seeded) keep every edge and race exactly as the
   static check says.

A failure is shrunk by hypothesis (unless ``shrink=False``) and returned as a
:class:`neuronsim.verify.fuzz.FuzzFailure` (program and compiled program as ``neuronsim.tasks/1``
JSON, the race report).  Deterministic for a given seed.

Examples
--------
>>> check_task_pass(None, examples=3, seed=1).failure is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.tasks.ir import RuntimeScope, TaskProgram
from neuronsim.machine.tasks.serialize import dumps_tasks
from neuronsim.machine.tasks.orchestrator import unroll_task_program
from neuronsim.passes.pipeline import Pass, PassContext
from neuronsim.passes.tasks import (
    DEFAULT_TASK_PIPELINE, TASK_PASSES, analyze_dependencies, derive_directions, parse_task_pipeline, run_task_pipeline,
)

from neuronsim.verify.fuzz import FuzzFailure, FuzzResult, crash_text, find_failure, pipeline_with
from neuronsim.verify.draws import no_source_constants
from neuronsim.verify.tasks.task_strategies import TRIP_VALUES, task_programs
from neuronsim.verify.tasks.check import check_task_program, check_task_trace, trace_violations

__all__ = ["check_task_pass", "check_task_program_once", "task_pipeline_with", "is_task_pass", "SIM_SEEDS",
           "TASK_CHECKS"]

#: Interleaving seeds each example is simulated under (None: nominal durations).
SIM_SEEDS = (None, 1)
TASK_CHECKS = ("error", "structure", "races", "coverage", "trace")


def is_task_pass(user: Any) -> bool:
    """Is ``user`` (a pass object or class) one of the task passes, or derived from one?"""
    cls = user if isinstance(user, type) else type(user)
    return any(isinstance(cls, type) and issubclass(cls, t) for t in TASK_PASSES.values())


def task_pipeline_with(user: Any, replace: str | None, pipeline: str = DEFAULT_TASK_PIPELINE) -> list[Pass]:
    """The task pipeline's passes with the user's pass in the slot ``replace`` (or appended)."""
    return pipeline_with(user, replace, pipeline, parse_task_pipeline, "task pipeline")


def _covered_by_reference(program: TaskProgram) -> bool:
    """A default-mode function without user MANUAL scopes or ``no_dep`` that the reference
    analysis covers without any fallback (the programs the pass must make race-free)."""
    if not program.function.auto_scope:
        return False
    if any(isinstance(s, RuntimeScope) and s.manual for s, _ in program.walk()):
        return False
    if any(c.no_dep for c, _ in program.calls()):
        return False
    analysis = analyze_dependencies(derive_directions(program))
    return not any(r.fallback is not None for r in analysis.regions.values())


def _shape(program: TaskProgram, n: int) -> list:
    return [(t.call, t.kernel, tuple((a.arg, a.region, a.mode) for a in t.accesses))
            for t in unroll_task_program(program, {"n": n})]


def check_task_program_once(program: TaskProgram, user: Any = None, *, replace: str | None = None,
                            pipeline: str = DEFAULT_TASK_PIPELINE) -> FuzzFailure | None:
    """All the checks on one program; the failure found, or None."""
    source = dumps_tasks(program)
    baseline = derive_directions(program)
    try:
        compiled = run_task_pipeline(program, task_pipeline_with(user, replace, pipeline), PassContext())
    except Exception as err:  # noqa: BLE001 - any crash of the pass under test is a finding
        return FuzzFailure("error", crash_text(err), source, None, None)
    text = dumps_tasks(compiled)
    covered = _covered_by_reference(program)
    for n in TRIP_VALUES:
        try:
            same = _shape(compiled, n) == _shape(baseline, n)
        except ProgramError as err:
            return FuzzFailure("structure", f"n={n}: the compiled program does not run: {err}", source, text, None)
        if not same:
            return FuzzFailure("structure", f"n={n}: the pass changed task instances or their accesses (a task pass "
                                            "may change deps, directions and scopes only)", source, text, None)
        before = check_task_program(baseline, {"n": n}, max_races=10**6).pairs()
        report = check_task_program(compiled, {"n": n}, max_races=10**6)
        extra = [r for r in report.races if (r.first, r.second) not in before]
        if extra:
            return FuzzFailure("races", f"n={n}: {len(extra)} race(s) the all-AUTO program does not have, first "
                                        f"{extra[0].describe()}", source, text, report.to_json())
        if covered and report.races:
            return FuzzFailure("coverage", f"n={n}: the reference analysis orders every conflicting pair, yet "
                                           f"{report.total_races} race(s) remain, first {report.races[0].describe()}",
                               source, text, report.to_json())
        for seed in SIM_SEEDS:
            trace = simulate_tasks(compiled, {"n": n}, seed=seed)
            broken = trace_violations(trace)
            traced = check_task_trace(trace, max_races=10**6)
            if broken or traced.pairs() != report.pairs():
                what = broken[0] if broken else (f"{len(traced.pairs() ^ report.pairs())} race(s) differ between the "
                                                 "trace and the static check")
                return FuzzFailure("trace", f"n={n} seed {seed}: {what}", source, text, traced.to_json())
    return None


def check_task_pass(user: Any = None, *, examples: int = 100, seed: int = 0, replace: str | None = None,
                    pipeline: str = DEFAULT_TASK_PIPELINE, strategy=None,
                    progress: Callable[[int], None] | None = None, shrink: bool = True) -> FuzzResult:
    """Fuzz ``user`` (a task pass, a pass class or ``fn(program) -> program``; None: the task
    pipeline itself) on ``examples`` generated task programs; the first failure, shrunk unless
    ``shrink`` is false, or none."""
    with no_source_constants():  # (the user's module's constants, cached in ./.hypothesis: a probe)
        count, first_at, failure = find_failure(
            strategy or task_programs(),
            lambda program: check_task_program_once(program, user, replace=replace, pipeline=pipeline),
            examples=examples, seed=seed, progress=progress, hypothesis_shrinks=shrink)
    if failure is None:
        return FuzzResult(count, None)
    return FuzzResult(first_at or count, failure, first_at)
