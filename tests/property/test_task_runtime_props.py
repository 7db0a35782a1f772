"""The task passes on the simulated runtime, over generated programs of every construct.

What "zero races" means here, honestly: the all-AUTO runtime races by itself (TensorMap keeps
producers only, so a writer after readers is never ordered after them, and ``no_dep`` /
MANUAL slots are the user's), so "zero races for every program" is false of the runtime
before any pass.  The properties that hold, each checked statically and over simulated traces
under several seeds and trip counts:

* the compiled program has no race the all-AUTO program lacks (every program);
* **zero races** for the programs the analysis covers: a default-mode function
  (``auto_scope``) without user MANUAL scopes or user ``no_dep`` slots, analysed without
  fallback.  There the pass orders every conflicting pair, including the WAR pairs the
  runtime cannot see, whatever the all-AUTO program does;
* a demotion never introduces a race (undoing every demotion gives the same races);
* a region that fell back keeps runtime tracking (AUTO scopes, undemoted slots, lookups made);
* with the switch off (``analyze_auto_scopes=false``) nothing changes, down to the edges
  every run records.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings

from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.tasks.ir import ArgDirection, RuntimeScope, map_calls
from neuronsim.passes.tasks import DEFAULT_TASK_PIPELINE, analyze_dependencies, compile_tasks, derive_directions
from neuronsim.verify.tasks.task_strategies import TRIP_VALUES, task_programs
from neuronsim.verify.tasks.check import check_task_program, check_task_trace, trace_violations

SEEDS = (None, 1, 2)
EXAMPLES = 40


def _races(program, n):
    return check_task_program(program, {"n": n}, max_races=10**6).pairs()


def _covered(program) -> bool:
    if not program.function.auto_scope or any(c.no_dep for c, _ in program.calls()):
        return False
    if any(isinstance(s, RuntimeScope) and s.manual for s, _ in program.walk()):
        return False
    return not any(r.fallback for r in analyze_dependencies(derive_directions(program)).regions.values())


@settings(max_examples=EXAMPLES, deadline=None)
@given(task_programs())
def test_no_new_race_and_zero_races_where_the_analysis_covers(program):
    baseline, compiled = derive_directions(program), compile_tasks(program)[0]
    covered = _covered(program)
    for n in TRIP_VALUES:
        static = _races(compiled, n)
        assert static <= _races(baseline, n)
        if covered:
            assert static == set(), f"n={n}: a covered program races after the passes"
        for seed in SEEDS:
            trace = simulate_tasks(compiled, {"n": n}, seed=seed)
            assert trace_violations(trace) == []
            assert check_task_trace(trace, max_races=10**6).pairs() == static


@settings(max_examples=EXAMPLES, deadline=None)
@given(task_programs())
def test_a_demotion_never_introduces_a_race(program):
    baseline, compiled = derive_directions(program), compile_tasks(program)[0]
    derived = {c.name: c.directions for c, _ in baseline.calls()}
    undone = compiled.with_body(map_calls(compiled.function.body, lambda c: replace(c, directions=derived[c.name])))
    for n in TRIP_VALUES:
        assert _races(compiled, n) == _races(undone, n)


@settings(max_examples=EXAMPLES, deadline=None)
@given(task_programs())
def test_a_region_that_fell_back_keeps_runtime_tracking(program):
    baseline = derive_directions(program)
    analysis = analyze_dependencies(baseline)
    compiled = compile_tasks(program)[0]
    derived = {c.name: c.directions for c, _ in baseline.calls()}
    scopes = compiled.scopes_of_calls()
    kept = set()
    for region in analysis.regions.values():
        if region.fallback is None:
            continue
        for name in region.calls:
            call = next(c for c, _ in compiled.calls() if c.name == name)
            assert call.directions == derived[name], f"{name} was demoted in a region that fell back"
            scope = scopes[name]
            assert scope is None or not scope.manual or scope.owner == "user", f"{name} lost runtime tracking"
            if scope is None or not scope.manual:
                kept.add(name)
    trace = simulate_tasks(compiled, {"n": 1})
    for r in trace.records:
        if r.call in kept:
            slots = sum(a.direction in (ArgDirection.INPUT, ArgDirection.INOUT) for a in r.accesses)
            assert r.lookups == slots and not r.manual


@settings(max_examples=EXAMPLES, deadline=None)
@given(task_programs())
def test_with_the_switch_off_nothing_changes(program):
    off = DEFAULT_TASK_PIPELINE.replace("analyze_auto_scopes=true", "analyze_auto_scopes=false")
    baseline, compiled = derive_directions(program), compile_tasks(program, off)[0]
    assert {c.name: (c.directions, c.compiler_deps) for c, _ in compiled.calls()} == \
        {c.name: (c.directions, c.compiler_deps) for c, _ in baseline.calls()}
    for n in TRIP_VALUES:
        for seed in (None, 1):
            a, b = simulate_tasks(baseline, {"n": n}, seed=seed), simulate_tasks(compiled, {"n": n}, seed=seed)
            assert [(r.waits, r.lookups, r.inserts, r.manual, r.start) for r in a.records] == \
                [(r.waits, r.lookups, r.inserts, r.manual, r.start) for r in b.records]
