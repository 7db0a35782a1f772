"""``fuse-loops`` as the seed walks it: the ``distanceThreshold`` window over non-adjacent
candidates, unequal trip counts fused by the niters groups, ``collect_illegal_common_ap``,
and a soundness property inside a shared parent that sees the parents' trip counts."""

from __future__ import annotations

import dataclasses
from math import gcd

from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.ir.program import Access, Dep, Instruction, Loop, Program
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes.analysis.distance import collect_illegal_common_ap, fusion_niters
from neuronsim.passes.fuse_loops import check_fusion, fuse_loops, placement
from neuronsim_tests.fusion_kit import RNG_OPS, TENSORS, cells, check_fused, copy, sbuf, tile, write
from neuronsim_tests.vacuity import nonvacuous, tally

TENSORS3 = {**TENSORS, "v": sbuf("v", partition=0, offset=512)}


def swapped_by_groups(program: Program, first: str = "a", second: str = "b") -> list[tuple[str, str]]:
    """Brute force: instance pairs (x of ``first`` at iteration i, y of ``second`` at iteration
    j, same parent iteration) in groups ``i // (T1 / g) > j // (T2 / g)``, ``g`` the gcd of the
    trip counts, that conflict on a byte or on an engine's random generator: the pairs fusing
    by niters groups would run in the other order."""
    unrolled = unroll(program)

    def members(loop: str):
        for inst in unrolled:
            names = [lp.name for lp in inst.loops]
            if loop in names:
                k = names.index(loop)
                trip = inst.loops[k].trip_count
                yield inst, inst.index[:k], inst.index[k], trip

    def touches(inst):
        return [(w, cells(program.tensors[a.tensor], a, inst.iteration)) for a, w in inst.instr.accesses]

    xs, ys = list(members(first)), list(members(second))
    g = gcd(xs[0][3], ys[0][3]) if xs and ys else 1
    found = []
    for x, px, ix, tx in xs:
        for y, py, iy, ty in ys:
            if px != py or ix // (tx // g) <= iy // (ty // g):
                continue
            rng = x.instr.op in RNG_OPS and y.instr.op in RNG_OPS and x.instr.engine == y.instr.engine
            if rng or any((wx or wy) and cx & cy for wx, cx in touches(x) for wy, cy in touches(y)):
                found.append((x.name, y.name))
    return found


# -- unequal trip counts ---------------------------------------------------------------------------
def test_trip_counts_4_and_6_fuse_by_their_two_niters_groups():
    # a writes t[i] (4 iterations), b copies t[j * 2 / 3 ...]: each b group reads what the same a
    # group wrote.  The seed's niters is 2: F runs a twice then b three times, per iteration.
    a = Loop("a", 4, (write("w", tile("t", "a", 0, width=3, shift=3)),))
    b = Loop("b", 6, (copy("r", tile("t", "b", 0, width=2, shift=2), tile("u", "b", 0, width=2, shift=2)),))
    program = Program(TENSORS, (a, b))
    validate_program(program)
    assert fusion_niters(program, "a", "b") == 2 and not swapped_by_groups(program)
    result = fuse_loops(program)
    (verdict,) = result.verdicts
    assert (verdict.status, verdict.fused) == ("fused", "a+b")
    (fused,) = result.program.body
    assert (fused.trip_count, [(n.name, n.trip_count) for n in fused.body]) == (2, [("a", 2), ("b", 3)])
    (w,) = fused.body[0].body
    assert w.writes[0].per_iteration == (("a+b", 6), ("a", 3))
    check_fused(program, result.program)


def test_trip_counts_without_a_common_factor_are_not_candidates():
    program = Program(TENSORS, (Loop("a", 4, (write("w", tile("t", "a", 0)),)),
                                Loop("b", 3, (write("x", tile("u", "b", 0)),))))
    assert fuse_loops(program).verdicts == ()
    assert check_fusion(program, "a", "b").message == "a + b: not fused, trip counts 4 and 3 share no factor"


def test_unequal_trip_counts_with_a_restricted_or_rotating_loop_index_refuse():
    r = dataclasses.replace(write("x", tile("u", "b", 0, shift=2)), deps=(Dep("w", iterations=(("b", 0, 1),)),))
    program = Program(TENSORS, (Loop("a", 2, (write("w", tile("t", "a", 0)),)), Loop("b", 4, (r,))))
    validate_program(program)
    (finding,) = check_fusion(program, "a", "b").findings
    assert finding.kind == "loop-index" and "x-iterations" in finding.message


@st.composite
def unequal_loops(draw, nested: bool = False):
    """Loops ``a`` and ``b`` with trip counts sharing a factor (often unequal), one or two
    instructions each over ``t``, ``u``, ``v`` with tiles moving per iteration (and per
    parent iteration inside ``p``); ``b`` often reads what ``a`` writes a few elements on."""
    t1, t2 = draw(st.sampled_from([(2, 4), (4, 2), (4, 6), (6, 4), (2, 2), (3, 6), (6, 3), (4, 4)]))
    parent = draw(st.integers(2, 3)) if nested else 1
    base = {"a": t1, "b": t2}

    def access(loop: str, tensor: str | None = None) -> Access:
        width = draw(st.integers(1, 3))
        shift = draw(st.integers(0, 3))
        per = [(loop, shift)] if shift else []
        span = shift * (base[loop] - 1) + width
        if nested and span * parent <= 32 and draw(st.booleans()):  # parent-dependent bytes (see below)
            per.append(("p", span))
            span *= parent
        offset = draw(st.integers(0, max(0, 32 - span)))
        return Access(tensor or draw(st.sampled_from(sorted(TENSORS3))), offset=offset, pattern=((1, width),),
                      per_iteration=tuple(per))

    def instruction(name: str, loop: str) -> Instruction:
        if draw(st.booleans()):
            return write(name, access(loop))
        return copy(name, access(loop), access(loop))

    first = [instruction(f"a{k}", "a") for k in range(draw(st.integers(1, 2)))]
    second = [instruction(f"b{k}", "b") for k in range(draw(st.integers(1, 2)))]
    if draw(st.booleans()):  # b reads a's first write's tensor
        second[0] = copy("b0", access("b", first[0].writes[0].tensor), access("b", "u"))
    body = (Loop("a", t1, tuple(first)), Loop("b", t2, tuple(second)))
    if nested:
        body = (Loop("p", parent, body),)
    program = Program(TENSORS3, body)
    validate_program(program)
    return program


@nonvacuous(fused=5, refused=5)
@settings(max_examples=80)
@given(unequal_loops())
def test_group_fusion_is_exact_for_top_level_loops(program):
    swapped = swapped_by_groups(program)
    verdict = check_fusion(program, "a", "b")
    assert verdict.legal == (not swapped), (swapped, verdict.message)
    if verdict.legal:
        check_fused(program, fuse_loops(program).program)
        tally("fused")
    else:
        tally("refused")


@nonvacuous(swapped=5, fused=3)
@settings(max_examples=80)
@given(unequal_loops(nested=True))
def test_fusion_inside_a_parent_loop_sees_the_parents_trip_counts(program):
    """Sound inside a shared parent: a pair that would swap is never fused.  Tiles that move
    with the parent index make a conflict inside one parent iteration look like one between
    parent iterations unless niters counts the parent's trips (the seed's formula): with the
    parents dropped from ``fusion_niters`` this property fails."""
    swapped = swapped_by_groups(program)
    verdict = check_fusion(program, "a", "b")
    if swapped:
        assert not verdict.legal, (swapped, verdict.message)
        tally("swapped")
    if verdict.legal:
        check_fused(program, fuse_loops(program).program)
        tally("fused")


# -- the window --------------------------------------------------------------------------------------
def test_a_loop_is_hoisted_or_sunk_over_what_it_does_not_touch():
    mid = Instruction("mid", "pool", "memset", writes=(Access("v", pattern=((1, 1),)),))
    a = Loop("a", 3, (write("w", tile("t", "a", 0)),))
    b = Loop("b", 3, (copy("r", tile("t", "b", 0), tile("u", "b", 0)),))
    program = Program(TENSORS3, (a, mid, b))
    assert placement(program, "a", "b") == ("hoist", None)
    result = fuse_loops(program)
    assert [n.name for n in result.program.body] == ["a+b", "mid"] and result.verdicts[0].placement == "hoist"
    check_fused(program, result.program)
    # b reads what mid writes: b cannot move up, a moves down
    reads_mid = Loop("b", 3, (copy("r", tile("v", "b", 0, width=1, shift=0), tile("u", "b", 0)),))
    sunk = Program(TENSORS3, (a, mid, reads_mid))
    assert placement(sunk, "a", "b") == ("sink", None)
    result = fuse_loops(sunk)
    assert [n.name for n in result.program.body] == ["mid", "a+b"]
    check_fused(sunk, result.program)
    # out of the window: not a candidate
    far = Program(TENSORS3, (a, mid, b))
    assert fuse_loops(far, window=1).verdicts == ()


def test_a_dep_between_a_loop_and_a_node_between_keeps_them_apart():
    mid = Instruction("mid", "pool", "memset", writes=(Access("v", pattern=((1, 1),)),), deps=(Dep("w"),))
    a = Loop("a", 3, (write("w", tile("t", "a", 0)),))
    b = Loop("b", 3, (write("x", tile("u", "b", 0)),), )
    b = Loop("b", 3, (dataclasses.replace(write("x", tile("u", "b", 0)), deps=(Dep("mid"),)),))
    how, finding = placement(Program(TENSORS3, (a, mid, b)), "a", "b")
    assert how == "blocked" and "x waits for mid" in finding.message and "mid waits for w" in finding.message


# -- collect_illegal_common_ap ---------------------------------------------------------------------------
def test_collect_illegal_common_ap_lists_every_reordered_pair():
    a = Loop("a", 3, (write("w", tile("t", "a", 0)), write("wu", tile("u", "a", 0))))
    b = Loop("b", 3,
             (copy("r", tile("t", "b", 4), tile("v", "b", 0)), copy("s", tile("u", "b", 4), tile("v", "b", 16))))
    program = Program(TENSORS3, (a, b))
    validate_program(program)
    found = collect_illegal_common_ap(program, "a", "b")
    assert [(f.kind, f.first.label, f.second.label, f.distance) for f in found] == [
        ("def-use", "w.writes[0]", "r.reads[0]", 1), ("def-use", "wu.writes[0]", "s.reads[0]", 1)]
    assert [f.kind for f in check_fusion(program, "a", "b").findings] == ["def-use", "def-use"]
    legal = Program(TENSORS3, (a, Loop("b", 3, (copy("r", tile("t", "b", 0), tile("v", "b", 0)),))))
    assert collect_illegal_common_ap(legal, "a", "b") == ()


# -- unequal=peel ------------------------------------------------------------------------------------------
def swapped_when_peeled(program: Program) -> list[tuple[str, str]]:
    """Brute force for ``unequal=peel``: instance pairs (x of ``a`` at i, y of ``b`` at j) that
    both fall in the fused ``m = min`` iterations (``a``'s last m, ``b``'s first m) and whose
    fused indices put x after y, and that conflict."""
    unrolled = unroll(program)
    t1, t2 = (next(n for n in program.body if n.name == name).trip_count for name in ("a", "b"))
    m = min(t1, t2)

    def touches(inst):
        return [(w, cells(program.tensors[a.tensor], a, inst.iteration)) for a, w in inst.instr.accesses]

    xs = [(inst, inst.iteration["a"] - (t1 - m)) for inst in unrolled if "a" in inst.iteration]
    ys = [(inst, inst.iteration["b"]) for inst in unrolled if "b" in inst.iteration]
    found = []
    for x, i in xs:
        for y, j in ys:
            if i < 0 or j >= m or i <= j:
                continue
            rng = x.instr.op in RNG_OPS and y.instr.op in RNG_OPS and x.instr.engine == y.instr.engine
            if rng or any((wx or wy) and cx & cy for wx, cx in touches(x) for wy, cy in touches(y)):
                found.append((x.name, y.name))
    return found


def test_peel_fuses_coprime_trip_counts_and_keeps_every_byte():
    a = Loop("a", 2, (write("w", tile("t", "a", 0, width=2, shift=2)),))
    b = Loop("b", 5, (copy("r", tile("t", "b", 0, width=2, shift=2), tile("u", "b", 0, width=2, shift=2)),))
    program = Program(TENSORS, (a, b))
    validate_program(program)
    assert fuse_loops(program).verdicts == ()  # gcd 1: the niters groups cannot fuse them
    result = fuse_loops(program, unequal="peel")
    (verdict,) = result.verdicts
    assert (verdict.fused, verdict.peeled) == ("a+b", "b~rest")
    assert [(n.name, n.trip_count) for n in result.program.body] == [("a+b", 2), ("b~rest", 3)]
    assert result.program.body[1].body[0].name == "r~rest"
    check_fused(program, result.program)
    # the longer first loop: its head is peeled before
    head = fuse_loops(Program(TENSORS, (Loop("a", 5, a.body), Loop("b", 2, b.body))), unequal="peel")
    assert [(n.name, n.trip_count) for n in head.program.body] == [("a~rest", 3), ("a+b", 2)]


def test_peel_refuses_a_loop_whose_instructions_deps_name():
    r = dataclasses.replace(copy("r", tile("t", "b", 0), tile("u", "b", 0)), deps=(Dep("w"),))
    program = Program(TENSORS, (Loop("a", 2, (write("w", tile("t", "a", 0)),)), Loop("b", 3, (r,))))
    validate_program(program)
    (verdict,) = fuse_loops(program, unequal="peel").verdicts
    assert verdict.status == "refused" and verdict.findings[0].kind == "peel"
    assert "peeling b would copy r" in verdict.message


@st.composite
def peel_loops(draw):
    t1, t2 = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    trips = {"a": t1, "b": t2}

    def access(loop: str, tensor: str | None = None) -> Access:
        width, shift = draw(st.integers(1, 3)), draw(st.integers(0, 3))
        span = shift * (trips[loop] - 1) + width
        return Access(tensor or draw(st.sampled_from(sorted(TENSORS3))), offset=draw(st.integers(0, 32 - span)),
                      pattern=((1, width),), per_iteration=((loop, shift),) if shift else ())

    def instruction(name: str, loop: str) -> Instruction:
        kind = draw(st.sampled_from(["write", "copy", "random"]))
        if kind == "write":
            return write(name, access(loop))
        if kind == "random":
            return Instruction(name, "pool", "random", writes=(access(loop),))
        return copy(name, access(loop), access(loop))

    first = tuple(instruction(f"a{k}", "a") for k in range(draw(st.integers(1, 2))))
    second = tuple(instruction(f"b{k}", "b") for k in range(draw(st.integers(1, 2))))
    program = Program(TENSORS3, (Loop("a", t1, first), Loop("b", t2, second)))
    validate_program(program)
    return program


@nonvacuous(fused=5, refused=5)
@settings(max_examples=80)
@given(peel_loops())
def test_peel_fusion_is_exact_for_top_level_loops(program):
    swapped = swapped_when_peeled(program)
    result = fuse_loops(program, unequal="peel")
    (verdict,) = [v for v in result.verdicts if (v.first, v.second) == ("a", "b")]
    assert verdict.legal == (not swapped), (swapped, verdict.message)
    if verdict.legal:
        check_fused(program, result.program)
        tally("fused")
    else:
        tally("refused")
