"""The instance stream (flat arrays), folding and split maps against independent oracles.

The oracles: brute-force conflicts by byte sets (:mod:`tests.oracles`), per-instance wait
resolution (:meth:`InstanceStream.resolve_one`, scalar) against the vectorised one
(:meth:`InstanceStream.resolve`), ``neuronsim.machine.model.geometry.footprint`` against the compiled accesses,
and a byte array against the split map."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from neuronsim.machine.order.conflicts import conflicts as stream_conflicts
from neuronsim.machine.order.conflicts import fold_distance
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Dep
from neuronsim.machine.order.splitmap import CellSpace, SplitMap, atoms_of
from neuronsim.machine.order.stream import InstanceStream
from neuronsim.machine.order.unroll import unroll
from neuronsim_tests.oracles import conflicts
from neuronsim.verify.strategies import programs

SMALL = dict(max_instructions=8, max_trip=3, max_loops=3, max_depth=3)


@given(programs(deps="random", virtual=True, **SMALL))
def test_stream_matches_unroll_and_scalar_resolution(program):
    stream, unrolled = InstanceStream(program), unroll(program)
    assert len(stream) == len(unrolled) == len(list(program_instances(program)))
    for inst, (instr, index) in zip(unrolled, program_instances(program)):
        assert inst.instr is instr and stream.index_of(inst.id) == index
        assert stream.instance_name(inst.id) == inst.name
    waits = stream.resolve()
    expected = [sorted({t for dep in inst.instr.deps for t in [stream.resolve_one(inst.id, dep)] if t >= 0},
                       reverse=True) for inst in unrolled]
    assert [sorted(set(waits.targets(i)), reverse=True) for i in range(len(stream))] == expected


def program_instances(program):
    """``(instruction, index)`` of every instance, by plain recursion over the loops."""
    from neuronsim.machine.ir.program import Loop

    def visit(nodes, index):
        for node in nodes:
            if isinstance(node, Loop):
                for i in range(node.trip_count):
                    yield from visit(node.body, (*index, i))
            else:
                yield node, index

    return list(visit(program.body, ()))


@given(programs(deps="none", **SMALL), st.data())
def test_fold_makes_the_later_instance_wait_after_the_earlier(program, data):
    stream, unrolled = InstanceStream(program), unroll(program)
    assume(len(stream) >= 2)
    b = data.draw(st.integers(1, len(stream) - 1))
    a = data.draw(st.integers(0, b - 1))
    x, y = int(stream.instr[a]), int(stream.instr[b])
    d = fold_distance(stream, a, b)
    c = stream.common(x, y)
    assert (d > 0) == (unrolled[a].index[:c] != unrolled[b].index[:c])
    assume(d > 0 or x < y)  # an ordinary dep on a later instruction does not exist
    dep = Dep(stream.names[x], loop_carried=d > 0, distance=d or 1)
    targets = unrolled.wait_targets(unrolled[b], dep)
    # the dep waits on an instance of a's instruction at or after a, and before b
    assert targets and all(t < b for t in targets) and max(targets) >= a
    if d > 1:  # and one iteration nearer would wait on a later instance than needed
        nearer = unrolled.wait_targets(unrolled[b], Dep(stream.names[x], loop_carried=True, distance=d - 1))
        assert min(nearer) > max(targets)


@given(programs(deps="none", **SMALL))
def test_compiled_accesses_equal_geometry_footprints(program):
    stream, unrolled = InstanceStream(program), unroll(program)
    for inst in unrolled:
        got = sorted((ca.is_write, ca.access.tensor, b) for ca, _, b in stream.instance_footprints(inst.id))
        want = sorted((w, a.tensor, footprint(program.tensors[a.tensor], a, inst.iteration).bytes)
                      for a, w in inst.instr.accesses)
        assert got == want


@given(programs(deps="none", max_instructions=6, max_trip=2))
def test_conflicts_agree_with_the_brute_force_oracle(program):
    stream, unrolled = InstanceStream(program), unroll(program)
    for b in range(len(stream)):
        for a in range(b):
            assert bool(stream_conflicts(stream, a, b)) == bool(conflicts(program, unrolled[a], unrolled[b]))


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 12), st.integers(0, 9)), max_size=30))
def test_split_map_equals_a_byte_array(ops):
    smap, ref = SplitMap(0, 64, -1), [-1] * 64
    for lo, length, value in ops:
        hi = min(64, lo + length)
        i, j = smap.span(lo, hi)
        assert (smap.bounds[i], smap.bounds[j]) == (lo, hi)
        smap.values[i:j] = [value] * (j - i)
        ref[lo:hi] = [value] * (hi - lo)
    got = [v for lo, hi, v in smap.cells() for _ in range(lo, hi)]
    assert got == ref


@given(st.lists(st.integers(1, (1 << 16) - 1), min_size=1, max_size=8))
def test_atoms_partition_every_mask_exactly(masks):
    of, atoms = atoms_of(masks)
    union = 0
    for m in masks:
        union |= m
    assert sum(bin(a).count("1") for a in atoms) == bin(union).count("1")  # disjoint, covering
    for m in masks:
        rebuilt = 0
        for a in of[m]:
            rebuilt |= atoms[a]
        assert rebuilt == m


def test_cell_space_cuts_at_bins_and_atoms():
    cells = CellSpace([0b11, 0b01], {"sbuf": 100, "psum": 100, "dram": 100}, None)
    pieces = cells.pieces("k", "sbuf", 0b11, ((50, 250),))
    assert [(lo, hi) for _, lo, hi in pieces] == [(50, 100), (50, 100), (100, 200), (100, 200), (200, 250), (200, 250)]
    assert len({id(m) for m, _, _ in pieces}) == 6  # two atoms x three bins
