"""verifyAntiDependence: labels recomputed from the bytes, against a brute-force oracle."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.ir.program import Dep
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes.analysis.labels import verify_anti_dependence
from neuronsim.passes.dep_reduction import dep_reduction
from neuronsim_tests.oracles import conflicts
from neuronsim_tests.vacuity import nonvacuous, tally
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs, strip_deps

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
_RANK_KIND = {0: EdgeKind.FLOW, 1: EdgeKind.OUTPUT, 2: EdgeKind.ANTI}  # RAW, WAW, WAR


def labelled_by_brute_force(program):
    """Loop-free: every conflicting pair gets a dep of the max kind of its shared bytes."""
    unrolled = unroll(program)
    cache: dict = {}
    deps: dict[str, list[Dep]] = {inst.name: [] for inst in unrolled}
    for a in unrolled:
        for b in unrolled.instances[a.id + 1:]:
            found = conflicts(program, a, b, cache)
            if found:
                kind = max(_RANK_KIND[rank] for rank, _ in found)
                deps[b.name].append(Dep(a.name, kind))
    return program.map_instructions(lambda i: replace(i, deps=tuple(deps[i.name])))


@settings(max_examples=60, **SLOW)
@given(programs(max_instructions=10, max_loops=0, deps="none"))
def test_correct_labels_give_no_finding_and_reduction_keeps_them_consistent(program):
    labelled = labelled_by_brute_force(program)
    assert verify_anti_dependence(labelled) == ()
    assert check_program(labelled).races == ()
    assert verify_anti_dependence(dep_reduction(labelled).program) == ()


@nonvacuous(checked=30)
@settings(max_examples=60, **SLOW)
@given(programs(max_instructions=10, max_loops=0, deps="none"), st.data())
def test_a_planted_mislabel_is_reported_with_both_kinds(program, data):
    labelled = labelled_by_brute_force(program)
    edges = [(i.name, k, d) for i, _ in labelled.instructions() for k, d in enumerate(i.deps)]
    assume(edges)
    waiter, k, dep = data.draw(st.sampled_from(edges))
    wrong = data.draw(st.sampled_from([kind for kind in list(EdgeKind)[1:] if kind != dep.kind]))

    def plant(instr):
        if instr.name != waiter:
            return instr
        deps = list(instr.deps)
        deps[k] = replace(dep, kind=wrong)
        return replace(instr, deps=tuple(deps))

    (finding,) = verify_anti_dependence(labelled.map_instructions(plant))
    assert (finding.former, finding.waiter, finding.computed, finding.labeled) == (dep.on, waiter, dep.kind, wrong)
    assert finding.message == (f"Inconsistent dependence labeling on: {dep.on} -> {waiter} "
                               f"computed: {dep.kind.name.lower()} labeled: {wrong.name.lower()}")
    assert finding.first == dep.on and finding.second == waiter and finding.bytes is not None
    tally("checked")


def test_labels_of_the_k_loop_example_including_loop_carried_ones():
    """The example labels every dep ``ordered`` (the default); the bytes say otherwise."""
    program = load_program("examples/matmul_k_loop.json")
    found = {(f.former, f.waiter, f.loop_carried): f.computed for f in verify_anti_dependence(program)}
    F, A = EdgeKind.FLOW, EdgeKind.ANTI
    assert found == {
        ("ld_x0", "mm0", False): F, ("ld_w0", "mm0", False): F,
        ("mm0", "ld_x", False): A, ("mm", "ld_x", True): A, ("mm0", "ld_w", False): A, ("mm", "ld_w", True): A,
        ("ld_x", "mm", False): F, ("ld_w", "mm", False): F, ("mm", "drain", False): F, ("drain", "store", False): F,
    }
    relabelled = program.map_instructions(lambda i: replace(i, deps=tuple(
        replace(d, kind=found[(d.on, i.name, d.loop_carried)]) for d in i.deps)))
    assert verify_anti_dependence(relabelled) == ()


def test_unconflicting_ordered_dep_is_consistent_and_conflicting_one_is_not():
    program = load_program("examples/async_load_then_fill.json")
    stripped = strip_deps(program)
    ordered = stripped.map_instructions(
        lambda i: replace(i, deps=(Dep("load"),)) if i.name == "store" else i)
    (finding,) = verify_anti_dependence(ordered)
    assert (finding.computed, finding.labeled, finding.memory) == (EdgeKind.FLOW, EdgeKind.ORDERED, "sbuf")
    assert finding.partitions == (0, 128) and finding.bytes == (0, 256)
    fill = ordered.map_instructions(
        lambda i: replace(i, deps=(Dep("load", EdgeKind.OUTPUT),)) if i.name == "fill" else i)
    assert [f.waiter for f in verify_anti_dependence(fill)] == ["store"]
