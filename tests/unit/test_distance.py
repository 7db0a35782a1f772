"""Loop dependence distance (seed ``dependence-distance.txt``): the kernel, the two existence
gates, the niters formula, the sign rule, the def/use polarity and the per-loop graphs.

Oracles: explicit ``(space, partition, byte)`` cell sets per instance, enumerated straight
from the format's definition of a footprint (no :mod:`neuronsim.machine.model.geometry`), and every instance
pair compared.
"""

from __future__ import annotations

from itertools import product
from math import prod

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes.analysis.distance import (evaluate_groups, fusion_niters, get_def_use_distance,
                                                has_negative_distance, loop_sites, same_location)
from neuronsim.passes.fuse_loops import fusion_hazards
from neuronsim_tests.vacuity import nonvacuous, tally
from neuronsim.passes.analysis.loopgraph import instructions_by_level, loop_dependence_graph, loop_dependence_graphs


def sbuf(name: str, shape=(64, 32), **placement) -> Tensor:
    return Tensor(name, MemoryKind.SBUF, "float32", shape, **placement)


TENSORS = {"t": sbuf("t", partition=0, offset=0), "u": sbuf("u", partition=0, offset=256)}


def tile(tensor: str, loop: str | None, offset: int, width: int = 4, shift: int = 4, partitions=None) -> Access:
    per = ((loop, shift),) if loop and shift else ()
    return Access(tensor, partitions=partitions, offset=offset, pattern=((1, width),), per_iteration=per)


def write(name: str, access: Access, engine: str = "dve") -> Instruction:
    return Instruction(name, engine, "memset", writes=(access,))


def copy(name: str, src: Access, dst: Access, engine: str = "act") -> Instruction:
    return Instruction(name, engine, "tensor_copy", reads=(src,), writes=(dst,))


def producer_consumer(shift: int, trips=(4, 4), tensors=TENSORS, src="t") -> Program:
    """Loop a writes t[i]; loop b copies ``src``[i + shift] to u[i] (tiles of 4 elements)."""
    w = write("w", tile("t", "a", 4 * max(-shift, 0)))
    r = copy("r", tile(src, "b", 4 * max(shift, 0)), tile("u", "b", 0))
    program = Program(tensors, (Loop("a", trips[0], (w,)), Loop("b", trips[1], (r,))))
    validate_program(program)
    return program


def kernel(program: Program, first: str, second: str, niters: int, def_index=0, use_index=0):
    defs, _ = loop_sites(program, first)
    _, uses = loop_sites(program, second)
    return get_def_use_distance(program.tensors, defs[def_index], uses[use_index], niters)


# -- the kernel ------------------------------------------------------------------------------
@pytest.mark.parametrize("shift, distance", [(0, 0), (1, 1), (2, 2), (3, 3), (-1, 0), (-2, 0)])
def test_distance_is_how_far_the_def_runs_ahead_and_never_negative(shift, distance):
    result = kernel(producer_consumer(shift), "a", "b", 4)
    assert result.dependent and result.same_location
    assert result.distance == distance
    assert result.last_def_group == 3 - max(-shift, 0)  # the seed's literal max gi
    w = result.witness
    assert w.first_group - w.second_group == (distance if shift >= 0 else shift)


def test_witness_names_two_instances_that_share_the_bytes():
    result = kernel(producer_consumer(2), "a", "b", 4)
    w = result.witness
    assert (w.first_instance, w.second_instance) == ("w[2]", "r[0]")
    assert (w.memory, w.partitions, w.bytes) == ("sbuf", (0, 64), (32, 48))


def test_no_shared_byte_is_not_dependent():
    program = Program(TENSORS, (Loop("a", 4, (write("w", tile("t", "a", 0, width=2)),)),
                                Loop("b", 4, (copy("r", tile("t", "b", 2, width=2), tile("u", "b", 0)),))))
    result = kernel(program, "a", "b", 4)
    assert (result.dependent, result.distance, result.last_def_group, result.witness) == (False, 0, None, None)


def test_disjoint_partitions_share_nothing():
    w = write("w", tile("t", "a", 0, partitions=(0, 32, 1)))
    r = copy("r", tile("t", "b", 4, partitions=(32, 32, 1)), tile("u", "b", 0))
    program = Program(TENSORS, (Loop("a", 2, (w,)), Loop("b", 2, (r,))))
    validate_program(program)
    assert not kernel(program, "a", "b", 2).dependent


def test_groups_are_iterations_of_the_shared_nest():
    inner = Loop("ai", 2, (write("w", Access("t", pattern=((1, 2),), per_iteration=(("a", 4), ("ai", 2)))),))
    program = Program(TENSORS, (Loop("a", 3, (inner,)),))
    (site,), _ = loop_sites(program, "a")
    sets = evaluate_groups(program.tensors["t"], site, 3)
    assert [list(sets.members(g)) for g in range(3)] == [[0, 1], [2, 3], [4, 5]]
    assert [[(a.lower, a.upper) for a in iv] for iv in sets.groups] == [[(0, 16)], [(16, 32)], [(32, 48)]]
    uneven = evaluate_groups(program.tensors["t"], site, 4)  # 6 instances into 4 groups: 2, 1, 2, 1
    assert [len(uneven.members(g)) for g in range(4)] == [2, 1, 2, 1]


@pytest.mark.parametrize("niters", [0, 5])
def test_niters_outside_the_footprint_is_a_located_error(niters):
    program = producer_consumer(0)
    with pytest.raises(ProgramError) as err:
        kernel(program, "a", "b", niters)
    assert err.value.path == "body[0].body[0].writes[0]"
    assert "niters1 / niters != 0" in err.value.message


# -- the two existence gates -----------------------------------------------------------------
def test_storage_gate_pairs_different_tensors_that_share_storage():
    tensors = {**TENSORS, "v": sbuf("v", (32, 32), partition=0, offset=64)}  # v's bytes 0.. are t's 64..
    assert same_location(tensors["t"], tensors["v"]) and not same_location(tensors["u"], tensors["v"])
    program = producer_consumer(0, tensors=tensors, src="v")
    result = kernel(program, "a", "b", 4)
    # v[4j..4j+4) is t[16 + 4j..], which loop a (writing t[0..16)) never writes
    assert result.same_location and not result.dependent
    r = copy("r", tile("v", "b", 4, partitions=(0, 32, 1)), tile("u", "b", 0))
    program = Program(tensors, (Loop("a", 4, (write("w", tile("t", "a", 16)),)), Loop("b", 4, (r,))))
    validate_program(program)
    result = kernel(program, "a", "b", 4)  # v[4 + 4j] = t[20 + 4j] is written by w[j + 1]
    assert result.dependent and result.distance == 1
    assert result.witness.partitions == (0, 32)


def test_storage_gate_short_circuits_before_any_bytes_are_compared():
    # Virtual tensors have no storage: footprints are logical, so t and v's bytes coincide,
    # yet two virtual tensors are different locations and the kernel stops at the gate.
    tensors = {"t": sbuf("t"), "u": sbuf("u"), "v": sbuf("v")}
    assert not same_location(tensors["t"], tensors["v"])
    result = kernel(producer_consumer(1, tensors=tensors, src="v"), "a", "b", 4)
    assert (result.same_location, result.dependent, result.distance) == (False, False, 0)
    assert kernel(producer_consumer(1, tensors=tensors), "a", "b", 4).distance == 1


def test_alias_group_tensors_may_share_any_byte():
    def dram(name, **kw):
        return Tensor(name, MemoryKind.DRAM, "float32", (64,), **kw)
    tensors = {"x": dram("x", alias="g"), "y": dram("y", alias="g"), "z": dram("z", alias="h"),
               "d": dram("d", address=0),
               "s": sbuf("s", partition=0, offset=0)}
    assert same_location(tensors["x"], tensors["y"])
    assert not same_location(tensors["x"], tensors["z"]) and not same_location(tensors["x"], tensors["d"])
    load = Instruction("ld", "sp", "dma_copy", reads=(Access("s", partitions=(0, 1, 1), pattern=((1, 4),)),),
                       writes=(Access("x", offset=0, pattern=((1, 4),), per_iteration=(("a", 4),)),), queue="dma0")
    store = Instruction("st", "sp", "dma_copy", reads=(Access("y", offset=60, pattern=((1, 4),)),),
                        writes=(Access("s", partitions=(0, 1, 1), pattern=((1, 4),)),), queue="dma0")
    program = Program(tensors, (Loop("a", 3, (load,)), Loop("b", 3, (store,))))
    validate_program(program)
    result = kernel(program, "a", "b", 3)
    assert (result.dependent, result.distance, result.witness.alias) == (True, 2, "g")


def test_name_gate_of_the_loop_graph_and_storage_gate_of_the_fusion_check_differ():
    tensors = {**TENSORS, "v": sbuf("v", (32, 32), partition=0, offset=0)}  # v is t's first half, by storage
    w = write("w", tile("t", "i", 0))
    r = copy("r", tile("v", "i", 4, partitions=(0, 32, 1)), tile("u", "i", 0))
    one_loop = Program(tensors, (Loop("i", 4, (w, r)),))
    validate_program(one_loop)
    graph = loop_dependence_graph(one_loop, "i")
    assert [(p.defn.label, p.use.label) for p in graph.pairs] == []  # t and v: different names
    r = copy("r", tile("v", "b", 4, partitions=(0, 32, 1)), tile("u", "b", 0))
    two_loops = Program(tensors, (Loop("a", 4, (write("w", tile("t", "a", 0)),)), Loop("b", 4, (r,))))
    found = has_negative_distance(two_loops, "a", "b")
    assert found is not None and found.tensors == ("t", "v") and found.distance == 1


# -- niters, sign, polarity, pair order ----------------------------------------------------
def _nest(*shape) -> Program:
    """Loops named by their trip counts: ``_nest(("p", 3, ("a", 4), ("b", 6)))``."""
    def build(spec):
        name, trip, *children = spec
        body = tuple(build(c) for c in children) or (Instruction(f"x_{name}", "dve", "memset",
                                                                 writes=(Access("t", pattern=((1, 1),)),)),)
        return Loop(name, trip, body)
    return Program(TENSORS, tuple(build(s) for s in shape))


def test_niters_is_gcd_times_the_shared_parent_trip_counts():
    assert fusion_niters(_nest(("p", 3, ("a", 4), ("b", 6))), "a", "b") == 2 * 3
    assert fusion_niters(_nest(("q", 2, ("p", 3, ("a", 4), ("b", 4)))), "a", "b") == 4 * 3 * 2
    assert fusion_niters(_nest(("a", 9), ("b", 6)), "a", "b") == 3


def test_niters_parent_walk_stops_at_the_first_difference():
    # a's parent is p, b's is q: the lock-step walk stops at once although both sit in r.
    program = _nest(("r", 5, ("p", 3, ("a", 4)), ("q", 3, ("b", 4))))
    assert fusion_niters(program, "a", "b") == 4


@pytest.mark.parametrize("shift", [-2, -1, 0, 1, 2, 3])
def test_a_positive_distance_is_the_illegal_case(shift):
    found = has_negative_distance(producer_consumer(shift), "a", "b")
    assert (found is not None) == (shift > 0)
    if found:
        assert found.distance == shift and found.niters == 4
        assert found.message.startswith("[STOP FUSION] negative distance dep in def-use: ")
        for part in ("loop a", "loop b", "writes t", "bytes [", f"distance {shift}"):
            assert part in found.message
        doc = found.to_json()
        assert doc["loops"] == ["a", "b"] and doc["first"]["tensor"] == "t" and doc["witness"]["bytes"]


def test_literal_gate_rejects_any_dependence_past_group_zero():
    found = has_negative_distance(producer_consumer(0), "a", "b", literal=True)
    assert found is not None and found.distance == 3
    assert has_negative_distance(producer_consumer(0, trips=(1, 1)), "a", "b", literal=True) is None


def test_polarity_defs_of_the_first_loop_against_uses_of_the_second():
    # a reads t[i]; b overwrites t[j + 1]: fused, b[j] would overwrite what a[j + 1] has yet
    # to read (a WAR swapped).  The seed's check (defs of a, uses of b) does not see it; the
    # fusion hazards do.
    a = copy("ra", tile("t", "a", 0), tile("u", "a", 0))
    b = write("wb", tile("t", "b", 4))
    program = Program(TENSORS, (Loop("a", 3, (a,)), Loop("b", 3, (b,))))
    validate_program(program)
    assert has_negative_distance(program, "a", "b") is None
    (found,) = fusion_hazards(program, "a", "b")
    assert (found.kind, found.first.label, found.second.label) == ("use-def", "ra.reads[0]", "wb.writes[0]")
    assert found.distance == 1


def test_pairs_are_visited_uses_outer_defs_inner():
    # Both reads of r1 consume a later iteration's write; the seed returns at the first pair
    # in (use, def) order: r1's first read with w2 (w1 writes t, another location).
    w1, w2 = write("w1", tile("t", "a", 0)), write("w2", tile("u", "a", 0))
    r1 = Instruction("r1", "dve", "tensor_tensor", reads=(tile("u", "b", 4), tile("t", "b", 4)),
                     writes=(tile("u", "b", 16, shift=0),), attrs={"op": "add"})
    program = Program(TENSORS, (Loop("a", 3, (w1, w2)), Loop("b", 3, (r1,))))
    validate_program(program)
    found = has_negative_distance(program, "a", "b")
    assert (found.first.label, found.second.label) == ("w2.writes[0]", "r1.reads[0]")


def test_unknown_loop_is_a_program_error():
    with pytest.raises(ProgramError, match="no loop named 'zz'"):
        has_negative_distance(producer_consumer(0), "a", "zz")


# -- per-loop graphs ---------------------------------------------------------------------------
def test_direction_vectors_and_symmetric_cache():
    w = write("w", tile("t", "i", 4))                       # w[i] writes t[i + 1]
    r = copy("r", tile("t", "i", 0), tile("t", "i", 0, shift=0))  # r[j] reads t[j], writes t[0]
    program = Program(TENSORS, (Loop("i", 3, (w, r)),))
    validate_program(program)
    graph = loop_dependence_graph(program, "i")
    got = {(p.defn.label, p.use.label): (p.result.dependent, p.result.distance, p.directions) for p in graph.pairs}
    assert got == {("w.writes[0]", "r.reads[0]"): (True, 0, ((-1,),)),       # read one iteration later
                   ("r.writes[0]", "r.reads[0]"): (True, 2, ((0,), (1,)))}   # t[0]: read by r[0]
    d, u = graph.pairs[0].defn, graph.pairs[0].use
    assert graph.distance(d, u) == graph.distance(u, d) == 0
    assert graph.cache[graph.pairs[1].use] == {d: 0, graph.pairs[1].defn: 2}
    assert graph.ddg() == {("w", "r"): ((-1,),), ("r", "r"): ((0,), (1,))}
    assert graph.to_json()["cache"]["r.reads[0]"] == {"w.writes[0]": 0, "r.writes[0]": 2}


def test_driver_visits_every_loop_in_program_order():
    program = _nest(("p", 2, ("a", 4), ("b", 6)), ("c", 3))
    graphs = loop_dependence_graphs(program)
    assert [(g.loop, g.depth, g.niters) for g in graphs] == [("p", 0, 2), ("a", 1, 8), ("b", 1, 12), ("c", 0, 3)]
    assert instructions_by_level(program) == {1: ("x_c",), 2: ("x_a", "x_b")}


def test_direction_search_reports_when_it_is_cut_short():
    same_bytes = (write("w", tile("t", None, 0)), copy("r", tile("t", None, 0), tile("u", None, 0)))
    program = Program(TENSORS, (Loop("i", 4, same_bytes),))
    full = loop_dependence_graph(program, "i").pairs[0]
    assert full.complete and full.directions == ((-1,), (0,), (1,))
    cut = loop_dependence_graph(program, "i", max_pairs=2).pairs[0]
    assert not cut.complete and set(cut.directions) < set(full.directions)


# -- oracles --------------------------------------------------------------------------------
def cells(tensor: Tensor, access: Access, iteration: dict[str, int]) -> set:
    """Every ``(space, partition, byte)`` of one access instance, from the format's text."""
    size = tensor.itemsize
    offset = (access.offset or 0) + sum(s * iteration.get(loop, 0) for loop, s in access.per_iteration)
    pattern = access.pattern or ((1, tensor.free_elements - (access.offset or 0)),)
    elements = {offset + sum(i * s for i, (s, _) in zip(idx, pattern))
                for idx in product(*(range(c) for _, c in pattern))}
    start, count, step = access.partitions or (0, tensor.shape[0], 1)
    parts = [(tensor.partition or 0) + start + k * step for k in range(count)]
    base = tensor.byte_base
    return {(tensor.memory, p, base + e * size + b) for p in parts for e in elements for b in range(size)}


def instances(site, tensor):
    trips = [t for _, t in site.nest]
    for flat, idx in enumerate(product(*(range(t) for t in trips))):
        yield flat, idx, cells(tensor, site.access, {name: i for (name, _), i in zip(site.nest, idx)})


@st.composite
def kernel_cases(draw):
    """Two loops, each with an optional inner loop around one instruction; ``t`` and ``v`` may
    share storage.  Returns the program and an ``niters`` in range."""
    v_offset = draw(st.sampled_from([0, 64, 128]))
    tensors = {"t": sbuf("t", partition=0, offset=0), "u": sbuf("u", partition=0, offset=256),
               "v": sbuf("v", (64, 16), partition=0, offset=v_offset)}

    def side(loop: str, tensor: str):
        trip = draw(st.integers(1, 4))
        inner = draw(st.sampled_from([0, 0, 1, 2, 3]))
        loops = [(loop, trip)] + ([(loop + "i", inner)] if inner else [])
        size = tensors[tensor].free_elements
        width = draw(st.integers(1, 4))
        shifts = tuple((name, draw(st.integers(-3, 4))) for name, _ in loops)
        span_lo = sum(min(0, s * (t - 1)) for (_, t), (_, s) in zip(loops, shifts))
        span_hi = sum(max(0, s * (t - 1)) for (_, t), (_, s) in zip(loops, shifts))
        if width + span_hi - span_lo > size:
            shifts = tuple((name, 0) for name, _ in loops)
            span_lo = span_hi = 0
        offset = draw(st.integers(-span_lo, size - width - span_hi))
        parts = draw(st.sampled_from([None, (0, 32, 1), (32, 32, 1), (0, 32, 2)]))
        return loops, Access(tensor, partitions=parts, offset=offset, pattern=((1, width),), per_iteration=shifts)

    def wrap(loops, inst):
        for name, trip in reversed(loops):
            inst = Loop(name, trip, (inst,))
        return inst

    la, wa = side("a", "t")
    lb, rb = side("b", draw(st.sampled_from(["t", "v"])))
    program = Program(tensors, (wrap(la, write("w", wa)), wrap(lb, copy("r", rb, Access("u", pattern=((1, 1),))))))
    validate_program(program)
    niters = draw(st.integers(1, min(prod(t for _, t in la), prod(t for _, t in lb))))
    return program, niters


@nonvacuous(dependent=10, independent=5)
@given(kernel_cases())
def test_kernel_matches_instance_pair_brute_force(case):
    program, niters = case
    (defn,), _ = loop_sites(program, "a")
    _, (use,) = loop_sites(program, "b")
    td, tu = program.tensors[defn.access.tensor], program.tensors[use.access.tensor]
    result = get_def_use_distance(program.tensors, defn, use, niters)
    d_inst, u_inst = list(instances(defn, td)), list(instances(use, tu))
    meets = [(k * niters // len(d_inst), j * niters // len(u_inst), idx_d, idx_u)
             for k, idx_d, cd in d_inst for j, idx_u, cu in u_inst if cd & cu]
    assert result.dependent == bool(meets)
    if not meets:
        assert result.distance == 0 and result.last_def_group is None
        tally("independent")
        return
    best = max(gi - gj for gi, gj, _, _ in meets)
    assert result.distance == max(0, best)
    assert result.last_def_group == max(gi for gi, _, _, _ in meets)
    w = result.witness
    assert w.first_group - w.second_group == best
    assert any((gi, gj) == (w.first_group, w.second_group) and f"w[{','.join(map(str, a))}]" == w.first_instance
               and f"r[{','.join(map(str, b))}]" == w.second_instance for gi, gj, a, b in meets)
    tally("dependent")


@st.composite
def loop_bodies(draw):
    """One loop ``o`` holding a writer and a reader of ``t``, each maybe in its own inner loop."""
    trip = draw(st.integers(1, 3))

    def placed(name: str, make):
        inner = draw(st.sampled_from([None, 2, 3]))
        loops = [("o", trip)] + ([(name + "_l", inner)] if inner else [])
        shifts = tuple((n, draw(st.integers(0, 3))) for n, _ in loops)
        span = sum(s * (t - 1) for (_, t), (_, s) in zip(loops, shifts))
        width = draw(st.integers(1, 3))
        offset = draw(st.integers(0, 32 - width - span))
        inst = make(Access("t", offset=offset, pattern=((1, width),), per_iteration=shifts))
        return Loop(name + "_l", inner, (inst,)) if inner else inst

    w = placed("w", lambda a: write("w", a))
    r = placed("r", lambda a: copy("r", a, Access("u", pattern=((1, 1),))))
    program = Program(TENSORS, (Loop("o", trip, tuple(draw(st.permutations([w, r])))),))
    validate_program(program)
    return program


@given(loop_bodies())
def test_direction_vectors_match_instance_pair_brute_force(program):
    graph = loop_dependence_graph(program, "o")
    (pair,) = [p for p in graph.pairs if p.use.instruction == "r"]
    t = program.tensors["t"]
    common = [n for (n, _), (m, _) in zip(pair.defn.nest, pair.use.nest) if n == m]
    expected = set()
    for _, idx_d, cd in instances(pair.defn, t):
        for _, idx_u, cu in instances(pair.use, t):
            if cd & cu:
                expected.add(tuple((a > b) - (a < b) for a, b in zip(idx_d[:len(common)], idx_u[:len(common)])))
    assert pair.common == tuple(common)
    assert pair.complete and set(pair.directions) == expected
    assert pair.result.dependent == bool(expected)
