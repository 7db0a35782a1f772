"""dep_reduction against networkx's transitive reduction and the race checker.

Exactness: on generated programs the waits the reduction keeps (instance level) are exactly
the wait edges of ``networkx.transitive_reduction`` over the happens-before graph of rules
1-4.  Soundness: the order on conflicting instance pairs is the same before and after.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Dep, Instruction, Loop, Program
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes.dep_reduction import (
    LATEST_FIRST, PROGRAM_ORDER, apply_anti_dependence_reduction, apply_reorder_reduction, dep_reduction,
    instance_waits, redundant_waits,
)
from neuronsim.testing.reduction import redundant_waits_syncstate
from neuronsim_tests.oracles import conflicts
from neuronsim_tests.reduction_kit import chain_program, hb_digraph, kept_pairs, nx_kept_waits, random_program
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs

FLAT = dict(max_instructions=14, max_loops=0, deps="random", machine=None)
LOOPS = dict(max_instructions=8, max_loops=2, max_depth=2, max_trip=3, deps="random")
SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=120, **SLOW)
@given(programs(**FLAT))
def test_kept_waits_equal_networkx_on_loop_free_programs(program):
    waits = instance_waits(program)
    assert kept_pairs(waits, redundant_waits(waits)) == nx_kept_waits(program)


@settings(max_examples=80, **SLOW)
@given(programs(**LOOPS))
def test_instance_minimum_equals_networkx_with_loops(program):
    """With loops every dep target instance is a wait edge of the oracle graph."""
    waits = instance_waits(program)
    assert kept_pairs(waits, redundant_waits(waits)) == nx_kept_waits(program)


@settings(max_examples=60, **SLOW)
@given(programs(**LOOPS))
def test_syncstate_banks_agree_with_frontier_clocks(program):
    waits = instance_waits(program)
    for fold in (LATEST_FIRST, PROGRAM_ORDER):
        redundant, _ = redundant_waits_syncstate(waits, fold)
        assert redundant == redundant_waits(waits, fold)


@settings(max_examples=80, **SLOW)
@given(programs(**LOOPS))
def test_program_order_fold_is_sound_but_a_subset(program):
    waits = instance_waits(program)
    exact = redundant_waits(waits, LATEST_FIRST)
    seed = redundant_waits(waits, PROGRAM_ORDER)
    assert all(e >= s for e, s in zip(exact, seed))  # every seed drop is an exact drop


def test_program_order_fold_misses_a_reduction_the_exact_fold_finds():
    program = chain_program()
    exact = dep_reduction(program)
    seed = dep_reduction(program, fold=PROGRAM_ORDER)
    assert [ref.describe() for ref, _ in exact.dropped] == ["a -> c [ordered]"]
    assert seed.dropped == ()
    assert seed.instance_waits_kept == 3 and exact.instance_waits_kept == 2
    assert check_program(seed.program).races == check_program(exact.program).races == ()


@settings(max_examples=40, **SLOW)
@given(programs(max_instructions=40, max_loops=0, deps="random"))
def test_program_order_fold_misses_reductions_on_generated_programs(program):
    """Counted, not assumed: the exact fold drops at least as many, and both are sound."""
    exact = dep_reduction(program)
    seed = dep_reduction(program, fold=PROGRAM_ORDER)
    assert len(exact.dropped) >= len(seed.dropped)
    assert _races(exact.program) == _races(seed.program) == _races(program)


def test_exact_fold_beats_program_order_on_seeded_programs():
    """Over a fixed batch of seeded programs the seed's fold keeps strictly more waits, the
    exact fold matches networkx, and both leave the races unchanged."""
    more = 0
    for seed in range(12):
        program = random_program(60, seed)
        waits = instance_waits(program)
        exact, seed_fold = redundant_waits(waits), redundant_waits(waits, PROGRAM_ORDER)
        assert kept_pairs(waits, exact) == nx_kept_waits(program)
        assert all(e >= s for e, s in zip(exact, seed_fold))
        more += sum(exact) > sum(seed_fold)
        orders = {_closure(p) for p in (program, dep_reduction(program).program,
                                         dep_reduction(program, fold=PROGRAM_ORDER).program)}
        assert len(orders) == 1
    assert more >= 10


def _closure(program):
    """Every ``E(x) -> S(y)`` order of the program (frozen), from networkx."""
    import networkx as nx

    graph, _, _ = hb_digraph(program)
    closure = nx.transitive_closure_dag(graph)
    return frozenset((u[0], v[0]) for u, v in closure.edges if u[1] == "E" and v[1] == "S")


def _races(program):
    return {(r.kind, r.first, r.second) for r in check_program(program).races}


def _ordered_conflicting_pairs(program):
    """``(first, second) -> ordered?`` for every conflicting instance pair (networkx)."""
    unrolled = unroll(program)
    graph, _, _ = hb_digraph(program, unrolled)
    out = {}
    cache: dict = {}
    for a in unrolled:
        reach = None
        for b in unrolled.instances[a.id + 1:]:
            if conflicts(program, a, b, cache):
                if reach is None:
                    reach = __import__("networkx").descendants(graph, (a.id, "E"))
                out[(a.name, b.name)] = (b.id, "S") in reach
    return out


@settings(max_examples=60, **SLOW)
@given(programs(max_instructions=7, max_loops=2, max_trip=2, deps="random"))
def test_order_on_conflicting_pairs_is_preserved(program):
    reduced = dep_reduction(program).program
    assert _ordered_conflicting_pairs(reduced) == _ordered_conflicting_pairs(program)


@settings(max_examples=60, **SLOW)
@given(programs(**LOOPS))
def test_race_checker_sees_no_difference(program):
    result = dep_reduction(program)
    assert _races(result.program) == _races(program)
    assert result.instance_waits_minimum <= result.instance_waits_kept <= result.instance_waits_before


@settings(max_examples=40, **SLOW)
@given(programs(**LOOPS))
def test_phases_commute_and_compose_to_the_full_reduction(program):
    full = dep_reduction(program, split=False).program  # the phases drop deps, never split them
    one = apply_anti_dependence_reduction(apply_reorder_reduction(program))
    other = apply_reorder_reduction(apply_anti_dependence_reduction(program))
    assert one == other == full


def test_anti_gate_keeps_anti_and_output_deps():
    body = (Instruction("a", "pe", "x"), Instruction("b", "act", "y", deps=(Dep("a"),)),
            Instruction("c", "dve", "z", deps=(Dep("a", kind=EdgeKind.ANTI), Dep("b"))))
    program = Program({}, body)
    assert [ref.dep.on for ref, _ in dep_reduction(program).dropped] == ["a"]
    assert dep_reduction(program, anti=False).dropped == ()


def test_loop_dep_needed_only_at_first_iteration_is_restricted_to_it():
    """``mm`` waits on ``ld0`` (before the loop) at every k, but from k=1 on ``mm[k-1]``, its
    predecessor on PE, already waited: the reduction restricts the dep to k=0
    (``x-iterations``); without splitting (the seed's deps) it is kept whole and reported."""
    body = (Instruction("ld0", "sp", "x0"), Loop("k", 3, (Instruction("mm", "pe", "m", deps=(Dep("ld0"),)),)))
    result = dep_reduction(Program({}, body))
    assert not result.dropped and result.split == 1
    (partial,) = result.partial
    assert partial.dep.dep.on == "ld0" and partial.needed_at == ("mm[0]",)
    assert partial.redundant_at == ("mm[1]", "mm[2]")
    assert (result.instance_waits_kept, result.instance_waits_minimum) == (1, 1)
    (mm,) = [i for i, _ in result.program.instructions() if i.name == "mm"]
    assert mm.deps == (Dep("ld0", EdgeKind.ORDERED, iterations=(("k", 0, 1),)),)
    whole = dep_reduction(Program({}, body), split=False)
    assert (whole.instance_waits_kept, whole.instance_waits_minimum, whole.split) == (3, 1, 0)
