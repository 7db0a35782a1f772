"""The passes' instance stream and split maps against ``machine.unroll`` / ``machine.geometry``."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from machine.geometry import footprint
from machine.ir import Dep
from machine.unroll import unroll
from passes.analysis.bytemap import CellSpace, SplitMap, atoms_of
from passes.analysis.instances import Stream
from tests.oracles import conflicts
from tests.vacuity import nonvacuous, tally
from verify.strategies import programs

SMALL = dict(max_instructions=8, max_trip=3, max_loops=3, max_depth=3)


@given(programs(deps="random", virtual=True, **SMALL))
def test_stream_matches_unroll(program):
    stream, unrolled = Stream(program), unroll(program)
    assert len(stream) == len(unrolled)
    for inst in unrolled:
        assert stream.infos[stream.inst_instr[inst.id]].instr is inst.instr
        assert stream.index_of(inst.id) == inst.index
        assert stream.instance_name(inst.id) == inst.name
        info = stream.infos[stream.inst_instr[inst.id]]
        assert info.first == unrolled.ids_of(info.name)[0] and info.last == unrolled.ids_of(info.name)[-1]
        for dep in inst.instr.deps:
            expected = unrolled.resolve_wait(inst, dep)
            got = stream.resolve(inst.id, info.id, stream.by_name[dep.on], dep.loop_carried)
            assert got == (-1 if expected is None else expected)


@nonvacuous(checked=30)
@given(programs(deps="none", **SMALL), st.data())
def test_fold_makes_the_later_instance_wait_after_the_earlier(program, data):
    stream, unrolled = Stream(program), unroll(program)
    assume(len(stream) >= 2)
    b = data.draw(st.integers(1, len(stream) - 1))
    a = data.draw(st.integers(0, b - 1))
    x, y, lc = stream.fold(a, b)
    assert (x, y) == (stream.inst_instr[a], stream.inst_instr[b])
    if x == y or unrolled[a].index[:stream.common(x, y)] != unrolled[b].index[:stream.common(x, y)]:
        assert lc
    dep = Dep(stream.infos[x].name, loop_carried=lc)
    targets = unrolled.wait_targets(unrolled[b], dep)
    # the dep waits on an instance of a's instruction at or after a, and before b
    assert targets and all(t < b for t in targets) and max(targets) >= a
    tally("checked")


@given(programs(deps="none", **SMALL))
def test_plan_bytes_equal_geometry_footprints(program):
    stream, unrolled = Stream(program), unroll(program)
    for inst in unrolled:
        got = sorted((p[0], p[7].tensor, b) for p, b in stream.accesses(inst.id))
        want = sorted((w, a.tensor, footprint(program.tensors[a.tensor], a, inst.iteration).bytes)
                      for a, w in inst.instr.accesses)
        assert got == want


@given(programs(deps="none", max_instructions=6, max_trip=2))
def test_conflicts_agree_with_the_brute_force_oracle(program):
    stream, unrolled = Stream(program), unroll(program)
    for b in range(len(stream)):
        for a in range(b):
            assert bool(stream.conflicts(a, b)) == bool(conflicts(program, unrolled[a], unrolled[b]))


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
