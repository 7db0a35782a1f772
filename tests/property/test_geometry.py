"""The exact overlap test against brute force: every (partition, byte) as Python sets.

The oracle reads the spec ("Tensors", "Accesses", "Happens-before") directly: an access
instance touches elements ``offset + sum(i_k * stride_k)`` (offset moved by ``per_iteration``),
each ``itemsize`` bytes from the tensor's first byte (PSUM: ``bank * 2048 + offset``), in
every listed partition; DRAM bytes are addresses; two different tensors of one alias group
always share, and share by their bytes when they are the same tensor; different memories,
different groups and addressed-vs-alias never share.
"""

from __future__ import annotations

from itertools import product

from hypothesis import given, settings

from neuronsim.machine.model.geometry import element_runs, footprint, overlap
from neuronsim.machine.ir.program import Access, MemoryKind, Tensor
from neuronsim_tests.vacuity import nonvacuous, tally
from neuronsim.verify.strategies import access_pairs

Cell = tuple[object, int | None, int]  # (space, partition or None, byte)


def brute_cells(tensor: Tensor, access: Access, iteration: dict[str, int]) -> set[Cell]:
    """Every (space, partition, byte) the access instance touches, enumerated one by one."""
    offset = access.offset or 0
    pattern = access.pattern or ((1, tensor.free_elements - offset),)
    for loop, shift in access.per_iteration:
        offset += shift * iteration.get(loop, 0)
    elements = {
        offset + sum(i * stride for i, (stride, _) in zip(index, pattern))
        for index in product(*(range(count) for _, count in pattern))
    }
    size = tensor.itemsize
    if tensor.memory == MemoryKind.DRAM:
        space = ("alias", tensor.alias) if tensor.alias is not None else "dram"
        base = tensor.address or 0
        partitions: list[int | None] = [None]
    else:
        space = tensor.memory.name.lower()
        base = tensor.offset or 0
        if tensor.memory == MemoryKind.PSUM:
            base += tensor.bank * 2048
        start, count, step = access.partitions or (0, tensor.shape[0], 1)
        partitions = [tensor.partition + start + i * step for i in range(count)]
    return {(space, p, base + e * size + k) for p in partitions for e in elements for k in range(size)}


def footprint_cells(fp) -> set[Cell]:
    partitions = [p for p in range(fp.partitions.bit_length()) if fp.partitions >> p & 1] or [None]
    return {(fp.space, p, b) for p in partitions for lo, hi in fp.bytes for b in range(lo, hi)}


def overlap_cells(shared, space) -> set[Cell]:
    partitions = [p for p in range(shared.partitions.bit_length()) if shared.partitions >> p & 1] or [None]
    return {(space, p, b) for p in partitions for lo, hi in shared.bytes for b in range(lo, hi)}


def _check_pair(ta, aa, ia, tb, ab, ib) -> None:
    fa, fb = footprint(ta, aa, ia), footprint(tb, ab, ib)
    cells_a, cells_b = brute_cells(ta, aa, ia), brute_cells(tb, ab, ib)
    assert footprint_cells(fa) == cells_a
    assert footprint_cells(fb) == cells_b
    # Byte intervals are sorted, disjoint and not touching (canonical).
    for fp in (fa, fb):
        assert all(lo < hi for lo, hi in fp.bytes)
        assert all(fp.bytes[i][1] < fp.bytes[i + 1][0] for i in range(len(fp.bytes) - 1))
    got = overlap(fa, fb)
    alias_group = ta.alias if ta.memory == MemoryKind.DRAM else None
    if alias_group is not None and tb.memory == MemoryKind.DRAM and tb.alias == alias_group and ta.name != tb.name:
        # Two tensors of one alias group may coincide anywhere: always a conflict, on a's bytes.
        assert got is not None and got.alias == alias_group
        assert overlap_cells(got, fa.space) == cells_a
        tally("alias group")
        return
    shared = cells_a & cells_b
    if not shared:
        assert got is None
        tally("disjoint")
        return
    assert got is not None
    assert got.memory == ta.memory
    assert got.alias == alias_group
    assert overlap_cells(got, fa.space) == shared
    assert overlap_cells(overlap(fb, fa), fa.space) == shared  # symmetric
    tally("overlapping")


@nonvacuous(overlapping=100, disjoint=100, **{"alias group": 10})
@settings(max_examples=max(1000, settings().max_examples))
@given(access_pairs())
def test_overlap_equals_brute_force(pair):
    _check_pair(*pair)


# -- hand cases -------------------------------------------------------------------------
SB = Tensor("sb", MemoryKind.SBUF, "float32", (8, 16), partition=0, offset=0)
SB2 = Tensor("sb2", MemoryKind.SBUF, "bfloat16", (4, 32), partition=4, offset=32)


def test_adjacent_bytes_do_not_overlap():
    a = footprint(SB, Access("sb", pattern=((1, 4),)), {})
    b = footprint(SB, Access("sb", offset=4, pattern=((1, 4),)), {})
    assert a.bytes == ((0, 16),) and b.bytes == ((16, 32),)
    assert overlap(a, b) is None
    c = footprint(SB, Access("sb", offset=3, pattern=((1, 4),)), {})
    assert overlap(a, c).bytes == ((12, 16),)


def test_disjoint_partitions_do_not_overlap():
    a = footprint(SB, Access("sb", partitions=(0, 2, 1)), {})
    b = footprint(SB, Access("sb", partitions=(2, 2, 1)), {})
    assert overlap(a, b) is None
    evens = footprint(SB, Access("sb", partitions=(0, 4, 2)), {})
    odds = footprint(SB, Access("sb", partitions=(1, 4, 2)), {})
    assert overlap(evens, odds) is None
    shifted = footprint(SB, Access("sb", partitions=(2, 3, 2)), {})
    assert overlap(evens, shifted).partitions == 0b1010100


def test_interleaved_strides_do_not_overlap():
    even = footprint(SB, Access("sb", pattern=((2, 8),)), {})
    odd = footprint(SB, Access("sb", offset=1, pattern=((2, 8),)), {})
    assert len(even.bytes) == 8
    assert overlap(even, odd) is None
    rows = footprint(SB, Access("sb", pattern=((8, 2), (1, 2))), {})  # elements 0,1,8,9
    assert overlap(even, rows).bytes == ((0, 4), (32, 36))


def test_different_tensors_share_placed_bytes():
    # sb covers bytes [0, 64) of partitions 0-7; sb2 covers bytes [32, 96) of partitions 4-7.
    shared = overlap(footprint(SB, Access("sb"), {}), footprint(SB2, Access("sb2"), {}))
    assert shared.partition_range == (4, 8)
    assert shared.byte_range == (32, 64)


def test_per_iteration_moves_the_footprint():
    access = Access("sb", offset=2, pattern=((1, 2),), per_iteration=(("i", 4), ("j", -1)))
    assert footprint(SB, access, {"i": 2, "j": 1}).bytes == ((36, 44),)
    assert footprint(SB, access, {}).bytes == ((8, 16),)


def test_disjoint_psum_banks_do_not_overlap():
    p0 = Tensor("p0", MemoryKind.PSUM, "float32", (128, 8), partition=0, offset=0, bank=0)
    p1 = Tensor("p1", MemoryKind.PSUM, "float32", (128, 8), partition=0, offset=0, bank=1)
    p1b = Tensor("p1b", MemoryKind.PSUM, "float32", (128, 8), partition=0, offset=16, bank=1)
    f0, f1, f1b = (footprint(t, Access(t.name), {}) for t in (p0, p1, p1b))
    assert f1.bytes == ((2048, 2080),)
    assert overlap(f0, f1) is None
    assert overlap(f1, f1b).bytes == ((2064, 2080),)


def test_sbuf_and_psum_never_overlap():
    psum = Tensor("p", MemoryKind.PSUM, "float32", (8, 16), partition=0, offset=0, bank=0)
    assert overlap(footprint(SB, Access("sb"), {}), footprint(psum, Access("p"), {})) is None


def test_addressed_dram_overlaps_by_address():
    a = Tensor("a", MemoryKind.DRAM, "float32", (16,), address=0)
    b = Tensor("b", MemoryKind.DRAM, "uint8", (64,), address=32)
    shared = overlap(footprint(a, Access("a"), {}), footprint(b, Access("b"), {}))
    assert shared.bytes == ((32, 64),) and shared.partitions == 0 and shared.alias is None
    assert overlap(footprint(a, Access("a", pattern=((1, 8),)), {}), footprint(b, Access("b"), {})) is None


def test_two_tensors_of_one_alias_group_always_overlap():
    a = Tensor("a", MemoryKind.DRAM, "float32", (16,), alias="g")
    b = Tensor("b", MemoryKind.DRAM, "float32", (16,), alias="g")
    fa = footprint(a, Access("a", pattern=((1, 2),)), {})
    fb = footprint(b, Access("b", offset=8, pattern=((1, 2),)), {})
    shared = overlap(fa, fb)
    assert shared.alias == "g" and shared.bytes == ((0, 8),)
    assert overlap(fb, fa).bytes == ((32, 40),)  # offsets within the first tensor
    # The same alias tensor shares by its bytes.
    assert overlap(fa, footprint(a, Access("a", offset=2, pattern=((1, 2),)), {})) is None
    assert overlap(fa, footprint(a, Access("a", offset=1, pattern=((1, 2),)), {})).bytes == ((4, 8),)


def test_addressed_dram_and_alias_groups_never_overlap():
    addressed = Tensor("d", MemoryKind.DRAM, "float32", (16,), address=0)
    g = Tensor("a", MemoryKind.DRAM, "float32", (16,), alias="g")
    h = Tensor("b", MemoryKind.DRAM, "float32", (16,), alias="h")
    fd, fg, fh = (footprint(t, Access(t.name), {}) for t in (addressed, g, h))
    assert overlap(fd, fg) is None and overlap(fg, fd) is None
    assert overlap(fg, fh) is None


def test_element_runs_match_enumeration():
    for pattern in (((3, 4), (1, 2)), ((0, 3), (2, 2)), ((5, 3), (2, 4), (1, 2)), ((1, 1),)):
        elements = {sum(i * s for i, (s, _) in zip(ix, pattern)) for ix in product(*(range(c) for _, c in pattern))}
        runs = element_runs(pattern)
        assert {e for lo, hi in runs for e in range(lo, hi)} == elements
