"""The whole pipeline with dep-reduction appended: race-free, labels consistent, minimal."""

from __future__ import annotations

import glob

import pytest
from hypothesis import HealthCheck, given, settings

from neuronsim.machine.formats.program_json import load_program
from neuronsim.passes import CONSTRUCTION_PIPELINE, PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.expand_scheduling_units import ExpandSchedulingUnits
from neuronsim.passes.dep_reduction import DepReduction, dep_reduction, instance_waits, redundant_waits
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs, strip_deps

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
REGISTRY = {DepReduction.name: DepReduction, ExpandSchedulingUnits.name: ExpandSchedulingUnits}
SCENARIOS = sorted(p for p in glob.glob("scenarios/*.json") if not p.endswith(".golden.json"))


def _compile(program, spec):
    from neuronsim.passes import ALL_PASSES

    ctx = PassContext()
    return run_pipeline(program, parse_pipeline(spec, {**ALL_PASSES, **REGISTRY}), ctx), ctx


def _check_compiled(program, spec=f"{CONSTRUCTION_PIPELINE},dep-reduction", expanded=False):
    """Compile with ``spec``: no race, no dep the reduction could still drop, and no more deps
    than without the reduction (unless loops were expanded: one dep per instance then).

    Labels are not asserted here: the construction passes label conservative edges (alias
    groups, DRAM bins) that share no byte, which ``verify_anti_dependence`` rightly reports;
    the label tests use a brute-force labelling instead."""
    before, _ = _compile(program, CONSTRUCTION_PIPELINE)
    after, ctx = _compile(program, spec)
    assert check_program(after).races == ()
    if not expanded:  # a split dep may become several deps, but it never waits more often
        assert len(instance_waits(after)) <= len(instance_waits(before))
    waits = instance_waits(after)
    stats = ctx.stats["dep-reduction"]
    # every dep the reduction kept is needed at some instance: nothing more can go
    assert dep_reduction(after).dropped == ()
    assert stats.get("waits-kept", 0) >= stats.get("waits-minimum", 0) == len(waits) - sum(redundant_waits(waits))
    return after


@settings(max_examples=40, **SLOW)
@given(programs(deps="none", virtual=True, max_instructions=10, max_loops=2, max_trip=3))
def test_generated_programs_compile_race_free_with_reduction(program):
    _check_compiled(program)


@settings(max_examples=25, **SLOW)
@given(programs(deps="none", max_instructions=8, max_loops=2, max_trip=3))
def test_expanding_first_lets_the_reduction_reach_the_instance_minimum(program):
    flat = _check_compiled(program, f"{CONSTRUCTION_PIPELINE},expand-scheduling-units,dep-reduction", expanded=True)
    waits = instance_waits(flat)
    assert sum(redundant_waits(waits)) == 0  # loop-free: every kept dep is one needed wait


@pytest.mark.parametrize("path", SCENARIOS)
def test_scenarios_compile_race_free_with_reduction(path):
    _check_compiled(strip_deps(load_program(path)))
