"""Unrolling and wait resolution against brute-force readings of the spec.

* Program order: an instance of an instruction at child positions ``p0 .. pk`` (inside loops
  at ``p0 .. p(k-1)``) with indices ``i0 .. i(k-1)`` sorts by ``(p0, i0, p1, i1, ..., pk)``.
* Waits ("Nodes", deps): a dep waits on the instances of B agreeing with the waiter on the
  loops enclosing both; a loop-carried one on those at the lexicographic predecessor of the
  waiter's common indices (found by enumerating the common iteration space), none in the
  very first iteration.  ``resolve_wait`` is the last of them.
"""

from __future__ import annotations

import re
from itertools import product

from hypothesis import given

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Dep, Instruction, Loop, Program
from neuronsim.machine.order.unroll import unroll
from neuronsim.verify.strategies import add_sequential_deps, programs

NAME = re.compile(r"^(?P<name>[A-Za-z_][\w]*)(\[(?P<index>\d+(,\d+)*)\])?$")


def static_positions(program: Program):
    """``(instruction, loops, positions)`` in document order."""
    out = []

    def visit(body, loops, positions):
        for i, node in enumerate(body):
            if isinstance(node, Loop):
                visit(node.body, (*loops, node), (*positions, i))
            else:
                out.append((node, loops, (*positions, i)))

    visit(program.body, (), ())
    return out


def expected_order(program: Program) -> list[tuple[str, tuple[int, ...]]]:
    keyed = []
    for inst, loops, positions in static_positions(program):
        for index in product(*(range(loop.trip_count) for loop in loops)):
            key = tuple(x for pair in zip(positions, index) for x in pair) + (positions[-1],)
            keyed.append((key, inst.name, index))
    keyed.sort()
    return [(name, index) for _, name, index in keyed]


def brute_targets(unrolled, waiter, dep: Dep) -> list[int]:
    targets = [x for x in unrolled if x.instr.name == dep.on]
    theirs = [loop.name for loop in unrolled.loops_of(dep.on)]
    mine = [loop.name for loop in waiter.loops]
    common = 0
    while common < min(len(mine), len(theirs)) and mine[common] == theirs[common]:
        common += 1
    wanted = waiter.index[:common]
    if dep.loop_carried:
        space = list(product(*(range(loop.trip_count) for loop in waiter.loops[:common])))
        position = space.index(wanted)
        if position == 0:
            return []
        wanted = space[position - 1]
    return sorted(x.id for x in targets if x.index[:common] == wanted)


@given(programs(max_loops=3, max_depth=3, deps="none"))
def test_instances_in_program_order_with_names(program):
    unrolled = unroll(program)
    expected = expected_order(program)
    assert [(inst.instr.name, inst.index) for inst in unrolled] == expected
    assert [inst.id for inst in unrolled] == list(range(len(expected)))
    for inst in unrolled:
        match = NAME.match(inst.name)
        assert match and match["name"] == inst.instr.name
        index = tuple(int(i) for i in match["index"].split(",")) if match["index"] else ()
        assert index == inst.index
        assert all(0 <= i < loop.trip_count for i, loop in zip(inst.index, inst.loops))
        assert inst.iteration == {loop.name: i for loop, i in zip(inst.loops, inst.index)}
        assert unrolled.find(inst.instr.name, inst.index) == inst.id
    assert unrolled.by_name() == {inst.name: inst.id for inst in unrolled}


@given(programs(max_loops=3, max_depth=3, max_trip=3, deps="random"))
def test_wait_resolution_matches_brute_force(program):
    unrolled = unroll(program)
    resolved = unrolled.resolve_waits()
    for inst in unrolled:
        expected_resolved = []
        for dep in inst.instr.deps:
            targets = unrolled.wait_targets(inst, dep)
            assert sorted(targets) == brute_targets(unrolled, inst, dep)
            # A valid program never waits on an instance that does not precede the waiter.
            assert all(t < inst.id for t in targets)
            last = unrolled.resolve_wait(inst, dep)
            assert last == (max(targets) if targets else None)
            if last is not None:
                expected_resolved.append((dep, last))
        assert list(resolved[inst.id]) == expected_resolved


@given(programs(max_loops=3, max_depth=3, deps="sequential"))
def test_sequential_deps_wait_on_the_immediate_predecessor(program):
    """What ``deps="sequential"`` promises: a chain through every instance in program order."""
    unrolled = unroll(program)
    for inst in unrolled:
        waited = {t for dep in inst.instr.deps for t in unrolled.wait_targets(inst, dep)}
        if inst.id == 0:
            assert waited == set()
        else:
            assert inst.id - 1 in waited
        assert all(t < inst.id for t in waited)


# -- hand cases -------------------------------------------------------------------------
def _i(name: str, *deps: Dep) -> Instruction:
    return Instruction(name, "dve", f"op_{name}", deps=deps)


def _names(unrolled, ids) -> list[str]:
    return [unrolled[i].name for i in ids]


def _waits(program: Program, waiter: str) -> dict[str, list[str]]:
    """Instance name of each ``waiter`` instance -> names of the instances it waits on."""
    unrolled = unroll(program)
    return {
        inst.name: _names(unrolled, sorted(t for dep in inst.instr.deps for t in unrolled.wait_targets(inst, dep)))
        for inst in unrolled
        if inst.instr.name == waiter
    }


def test_names_outermost_loop_first():
    program = Program({}, (_i("x"), Loop("i", 2, (Loop("j", 2, (_i("a"),)), _i("b"))), _i("c")))
    assert [inst.name for inst in unroll(program)] == [
        "x", "a[0,0]", "a[0,1]", "b[0]", "a[1,0]", "a[1,1]", "b[1]", "c"]


def test_fan_in_after_a_loop_waits_on_every_iteration():
    program = Program({}, (Loop("i", 3, (_i("a"),)), _i("b", Dep("a"))))
    assert _waits(program, "b") == {"b": ["a[0]", "a[1]", "a[2]"]}
    unrolled = unroll(program)
    assert unrolled.resolve_wait(unrolled[3], Dep("a")) == 2


def test_wait_from_inside_a_loop_on_a_single_instance():
    program = Program({}, (_i("x"), Loop("i", 3, (_i("y", Dep("x")),))))
    assert _waits(program, "y") == {"y[0]": ["x"], "y[1]": ["x"], "y[2]": ["x"]}


def test_indices_agree_on_common_loops():
    program = Program({}, (Loop("i", 2, (_i("a"), Loop("j", 2, (_i("b", Dep("a")),)), _i("c", Dep("b")))),))
    assert _waits(program, "b") == {"b[0,0]": ["a[0]"], "b[0,1]": ["a[0]"], "b[1,0]": ["a[1]"], "b[1,1]": ["a[1]"]}
    assert _waits(program, "c") == {"c[0]": ["b[0,0]", "b[0,1]"], "c[1]": ["b[1,0]", "b[1,1]"]}


def test_loop_carried_predecessor_wraps_to_previous_outer_iteration():
    program = Program({}, (Loop("i", 2, (Loop("j", 3, (_i("a", Dep("a", EdgeKind.ANTI, True)),)),)),))
    assert _waits(program, "a") == {
        "a[0,0]": [], "a[0,1]": ["a[0,0]"], "a[0,2]": ["a[0,1]"],
        "a[1,0]": ["a[0,2]"], "a[1,1]": ["a[1,0]"], "a[1,2]": ["a[1,1]"],
    }


def test_loop_carried_on_a_deeper_or_later_instruction():
    body = (Loop("i", 3, (_i("a", Dep("b", loop_carried=True), Dep("c", loop_carried=True)),
                          Loop("j", 2, (_i("b"),)), _i("c"))),)
    assert _waits(Program({}, body), "a") == {
        "a[0]": [], "a[1]": ["b[0,0]", "b[0,1]", "c[0]"], "a[2]": ["b[1,0]", "b[1,1]", "c[1]"]}


def test_loop_carried_only_over_the_common_loops():
    # a is in loop i only; b in i and j: the common nest is i, so b[i, *] waits on a[i-1].
    program = Program({}, (Loop("i", 2, (_i("a"), Loop("j", 2, (_i("b", Dep("a", loop_carried=True)),)))),))
    assert _waits(program, "b") == {"b[0,0]": [], "b[0,1]": [], "b[1,0]": ["a[0]"], "b[1,1]": ["a[0]"]}


def test_add_sequential_deps_by_hand():
    body = (_i("x"), Loop("i", 2, (Loop("j", 2, (_i("a"),)), _i("b"))), _i("c"))
    program = add_sequential_deps(Program({}, body))
    deps = {inst.name: [(d.on, d.loop_carried) for d in inst.deps] for inst, _ in program.instructions()}
    assert deps == {"x": [], "a": [("x", False), ("b", True), ("a", True)], "b": [("a", False)], "c": [("b", False)]}
    unrolled = unroll(program)
    for inst in list(unrolled)[1:]:
        assert inst.id - 1 in {t for dep in inst.instr.deps for t in unrolled.wait_targets(inst, dep)}
