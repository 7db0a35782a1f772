"""The race checker over simulator traces agrees with the static one and catches a trace
that runs an instruction before its wait was met."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs
from neuronsim.verify.tracecheck import check_trace

EXAMPLES = "examples"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(deps="random", max_instructions=8, max_trip=3))
def test_trace_check_agrees_with_static_check(program):
    static = check_program(program)
    for seed in (None, 7):
        result = check_trace(program, simulate(program, seed=seed, functional=False).trace)
        assert result.violations == ()
        assert result.report.races == static.races


def test_a_trace_that_starts_before_its_wait_is_flagged():
    program = load_program(f"{EXAMPLES}/matmul_k_loop.json")
    trace = simulate(program, seed=3, functional=False).trace
    assert check_trace(program, trace).ok
    # ld_x[1] waits for mm[0] (loop-carried): pretend it was triggered the moment mm[0] started.
    victim = next(r for r in trace.records if r.name == "ld_x[1]")
    producer = next(r for r in trace.records if r.name == "mm[0]")
    early = replace(victim, trigger=producer.start, start=producer.start)
    records = tuple(early if r.id == victim.id else r for r in trace.records)
    result = check_trace(program, replace(trace, records=records))
    assert any(v.instance == "ld_x[1]" and v.other == "mm[0]" and v.rule == "rule 4" for v in result.violations)
    # The wait was not honoured, so the WAR it protected is a race of this run.
    assert ("WAR", "mm[0]", "ld_x[1]") in result.report.triples()
