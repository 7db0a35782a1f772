"""The race checker against a brute-force oracle read straight off the spec.

Oracle: pairwise byte overlap with explicit (partition, byte) sets, and reachability in a
networkx DAG of trigger / start / end nodes built from rules 1-4 with full fan-in waits.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.order.unroll import unroll
from neuronsim_tests.oracles import brute_races
from neuronsim_tests.vacuity import nonvacuous, tally
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.race_report import add_fixes, group_races
from neuronsim.verify.strategies import programs

SMALL = dict(max_instructions=8, max_trip=3, max_loops=2, max_depth=2)


def _full(report):
    return [(r.kind, r.first, r.second, r.memory, r.partitions, r.bytes, r.alias) for r in report.races]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(deps="random", **SMALL))
def test_races_equal_brute_force_oracle(program):
    assert _full(check_program(program)) == brute_races(program)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(deps="none", **SMALL))
def test_no_deps_races_equal_oracle(program):
    assert _full(check_program(program)) == brute_races(program)


def _make_race_free(program, rounds=8):
    for _ in range(rounds):
        report = check_program(program)
        if report.race_free:
            return program
        program = add_fixes(program, group_races(report, unroll(program)))
    raise AssertionError("suggested fixes did not converge")


def _without_dep(program, name, k):
    def drop(inst):
        if inst.name != name:
            return inst
        return replace(inst, deps=inst.deps[:k] + inst.deps[k + 1:])

    return program.map_instructions(drop)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(deps="random", **SMALL), st.randoms(use_true_random=False))
def test_deleting_one_wait_reports_exactly_the_pairs_that_lost_their_order(program, rnd):
    fixed = _make_race_free(program)
    assert brute_races(fixed) == []  # the suggested fixes really order every pair
    deps = [(inst.name, k) for inst, _ in fixed.instructions() for k in range(len(inst.deps))]
    for name, k in rnd.sample(deps, min(len(deps), 4)):
        broken = _without_dep(fixed, name, k)
        # Nothing raced before the deletion, so the oracle's races on the broken program are
        # exactly the conflicting pairs that lost their order.
        assert _full(check_program(broken)) == brute_races(broken)


def test_shared_examples_match_their_race_files():
    import pathlib

    folder = pathlib.Path(__file__).resolve().parents[2] / "examples"  # the shipped examples
    paths = sorted(folder.glob("*.json"))
    assert len(paths) >= 3, "the shipped examples are missing"
    for path in paths:
        lines = path.with_suffix(".races").read_text().splitlines()
        want = sorted(tuple(line.split()) for line in lines if line.strip())
        got = sorted(check_program(load_program(str(path))).triples())
        assert got == want, path.name


@nonvacuous(race_free=15, racy=15, free_without_clocks=5, free_with_clocks=5)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(programs(deps="random", **SMALL), programs(deps="sequential", **SMALL)))
def test_fast_path_says_race_free_exactly_when_the_oracle_does(program):
    """The sorted-events fast path (neuronsim.verify.race_free) against the brute-force oracle: it answers
    race-free iff the program has no race (alias groups always defer to the walk), both when
    rules 1, 3 and direct waits settle every neighbour pair and when the clocks must."""
    from neuronsim.machine.order.events import access_events
    from neuronsim.machine.order.stream import stream_of
    from neuronsim.verify.race_free import neighbour_pairs, not_waited_on, open_pairs, race_free

    stream = stream_of(program)
    waits = stream.resolve()
    fast = race_free(stream, waits)
    has_alias = any(isinstance(ca.space, tuple) for ca in stream.templates)
    oracle_free = brute_races(program) == []
    if has_alias:
        assert not fast
    else:
        assert fast == oracle_free
        tally("race_free" if fast else "racy")
        if fast:
            ev = access_events(stream, "space")
            left, _ = not_waited_on(stream, waits, *open_pairs(stream, *neighbour_pairs(ev.seg, ev.inst, ev.write)))
            tally("free_with_clocks" if len(left) else "free_without_clocks")
