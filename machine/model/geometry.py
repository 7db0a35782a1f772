"""Exact footprint geometry: which partitions and bytes an access instance touches.

An access instance becomes a :class:`Footprint`: the memory space it lives in, the set of
absolute partitions (an ``int`` bit mask, bit ``p`` for partition ``p``) and the byte set
inside each of those partitions (SBUF / PSUM) or of the address space (DRAM), kept as a
sorted tuple of disjoint half-open ``(lo, hi)`` byte intervals.  SBUF and PSUM footprints are
the product *partitions x bytes*, because a pattern repeats the same free-dimension footprint
in every listed partition (spec, "Accesses").

DRAM tensors of an alias group live in the space ``("alias", GROUP)`` with bytes counted from
the tensor's own start; two *different* tensors of one group always overlap (spec,
"Happens-before").

:func:`overlap` is the exact test; it returns the shared partitions and bytes.  For people and
for the interval-set algebra elsewhere, :func:`to_portion` converts a byte set to a
``portion`` interval.

Examples
--------
>>> from neuronsim.machine.ir.program import Tensor, Access, MemoryKind
>>> t = Tensor("t", MemoryKind.SBUF, "float32", (128, 64), partition=0, offset=0)
>>> a = footprint(t, Access("t", partitions=(0, 64, 1), pattern=((2, 32),)), {})
>>> b = footprint(t, Access("t", offset=1, pattern=((2, 32),)), {})
>>> overlap(a, b) is None          # interleaved strides share no byte
True
>>> c = footprint(t, Access("t", partitions=(32, 64, 1)), {})
>>> o = overlap(a, c)
>>> o.partition_range, o.byte_range
((32, 64), (0, 252))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import portion

from neuronsim.machine.ir.program import Access, MemoryKind, Tensor

__all__ = [
    "Footprint",
    "Overlap",
    "footprint",
    "base_footprint",
    "shifted",
    "sorted_distinct",
    "iteration_shift",
    "access_shape",
    "overlap",
    "element_runs",
    "merged_runs",
    "partition_mask",
    "mask_range",
    "intersect_intervals",
    "interval_cover",
    "to_portion",
    "access_extent",
    "ByteSet",
]

ByteSet = tuple[tuple[int, int], ...]

# Above this many run starts the enumeration is done with numpy.
_NUMPY_THRESHOLD = 256


class Footprint(NamedTuple):
    """The bytes one access instance touches.

    A named tuple (immutable, and cheap to build: the checker and the passes make one per
    access instance)."""

    memory: MemoryKind
    space: object
    """``"sbuf"``, ``"psum"``, ``"dram"`` or ``("alias", group)``: footprints in different
    spaces never overlap."""
    tensor: str
    partitions: int
    """Bit mask of absolute partitions; 0 for DRAM."""
    bytes: ByteSet

    @property
    def partition_range(self) -> tuple[int, int] | None:
        return mask_range(self.partitions) if self.partitions else None

    @property
    def byte_range(self) -> tuple[int, int]:
        return interval_cover(self.bytes)


@dataclass(frozen=True, slots=True)
class Overlap:
    """What two footprints share."""

    memory: MemoryKind
    partitions: int
    bytes: ByteSet
    alias: str | None = None

    @property
    def partition_range(self) -> tuple[int, int] | None:
        """Smallest half-open range of absolute partitions covering the shared ones."""
        return mask_range(self.partitions) if self.partitions else None

    @property
    def byte_range(self) -> tuple[int, int]:
        """Smallest half-open byte range covering the shared bytes."""
        return interval_cover(self.bytes)


def mask_range(mask: int) -> tuple[int, int]:
    """``[lowest, highest + 1)`` of a non-zero bit mask.

    >>> mask_range(0b0110)
    (1, 3)
    """
    low = (mask & -mask).bit_length() - 1
    return low, mask.bit_length()


def interval_cover(intervals: ByteSet) -> tuple[int, int]:
    """Smallest half-open range covering sorted intervals."""
    return intervals[0][0], intervals[-1][1]


def partition_mask(first: int, start: int, count: int, step: int) -> int:
    """Mask of partitions ``first + start + i * step`` for ``0 <= i < count``.

    >>> bin(partition_mask(0, 1, 3, 2))
    '0b101010'
    """
    base = first + start
    if step == 1:
        return ((1 << count) - 1) << base
    mask = 0
    for i in range(count):
        mask |= 1 << (base + i * step)
    return mask


def _canonical_dims(pattern: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Drop dims that add no element and fuse dims that continue each other."""
    dims = [(s, c) for s, c in pattern if c > 1 and s > 0]
    fused: list[tuple[int, int]] = []
    for stride, count in reversed(dims):  # innermost first
        if fused and stride == fused[-1][0] * fused[-1][1]:
            inner_stride, inner_count = fused[-1]
            fused[-1] = (inner_stride, inner_count * count)
        else:
            fused.append((stride, count))
    return tuple(reversed(fused))


@lru_cache(maxsize=65536)
def element_runs(pattern: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Sorted disjoint half-open element ranges of a pattern at offset 0 (a negative stride
    walks down from it: the ranges then start below 0).

    >>> element_runs(((512, 128), (1, 512)))
    ((0, 65536),)
    >>> element_runs(((2, 3),))
    ((0, 1), (2, 3), (4, 5))
    >>> element_runs(((1, 4), (1, 4)))      # overlapping dims
    ((0, 7),)
    >>> element_runs(((8, 2), (-1, 4)))     # each row reversed: elements -3..0 and 5..8
    ((-3, 1), (5, 9))
    """
    low = sum(stride * (count - 1) for stride, count in pattern if stride < 0)
    if low:  # the same elements walked upwards from the lowest one
        upward = tuple((abs(stride), count) for stride, count in pattern)
        return tuple((lo + low, hi + low) for lo, hi in element_runs(upward))
    dims = _canonical_dims(pattern)
    if not dims:
        return ((0, 1),)
    run = 1
    if dims[-1][0] == 1:
        run = dims[-1][1]
        dims = dims[:-1]
    nstarts = 1
    for _, count in dims:
        nstarts *= count
    if nstarts == 1:
        return ((0, run),)
    if nstarts <= _NUMPY_THRESHOLD:
        starts = [0]
        for stride, count in dims:
            starts = [s + i * stride for s in starts for i in range(count)]
        starts.sort()
    else:
        grid = np.zeros(1, dtype=np.int64)
        for stride, count in dims:
            grid = (grid[:, None] + np.arange(count, dtype=np.int64)[None, :] * stride).ravel()
        starts = sorted_distinct(grid).tolist()
    runs: list[tuple[int, int]] = []
    lo, hi = starts[0], starts[0] + run
    for s in starts[1:]:
        if s <= hi:
            hi = max(hi, s + run)
        else:
            runs.append((lo, hi))
            lo, hi = s, s + run
    runs.append((lo, hi))
    return tuple(runs)


def merged_runs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The half-open ranges ``[lo, hi)`` (empty ones ignored) as sorted disjoint runs covering
    their union: sorted by start, a range opens a run when it starts past the furthest end
    before it.  Linear in the ranges after the sort, whatever bytes they span.

    >>> merged_runs(np.array([4, 0, 2, 9]), np.array([6, 3, 5, 9]))
    (array([0]), array([6]))
    >>> merged_runs(np.array([0, 4]), np.array([2, 8]))
    (array([0, 4]), array([2, 8]))
    """
    keep = hi > lo
    lo, hi = np.asarray(lo)[keep], np.asarray(hi)[keep]
    if not len(lo):
        return lo, hi
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    starts = np.flatnonzero(np.r_[True, lo[1:] > reach[:-1]])
    ends = np.r_[starts[1:] - 1, len(lo) - 1]
    return lo[starts], reach[ends]


def sorted_distinct(values) -> np.ndarray:
    """``np.unique(values)`` (its sorted distinct values, flattened), by a sort: numpy 2.4's
    ``np.unique`` goes through a hash table, which took 3.3 s for a million int64 here against
    0.14 s for a sort, and the race check's segment bounds are millions at production shapes.

    >>> sorted_distinct(np.array([5, 1, 5, 3, 1]))
    array([1, 3, 5])
    """
    values = np.sort(np.asarray(values).ravel())
    if len(values) < 2:
        return values
    keep = np.empty(len(values), bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def access_extent(tensor: Tensor, access: Access) -> tuple[int, tuple[tuple[int, int], ...]]:
    """``(offset, pattern)`` of an access with the format's defaults filled in."""
    offset = access.offset or 0
    pattern = access.pattern
    if pattern is None:
        pattern = ((1, max(tensor.free_elements - offset, 1)),)
    return offset, pattern


def footprint(tensor: Tensor, access: Access, iteration: Mapping[str, int]) -> Footprint:
    """The footprint of ``access`` (to the placed ``tensor``) at loop indices ``iteration``."""
    base = base_footprint(tensor, access)
    delta, pdelta = iteration_shift(tensor, access, iteration)
    if not delta and not pdelta:
        return base
    return shifted(base, delta, pdelta)


def iteration_shift(tensor: Tensor, access: Access, iteration: Mapping[str, int]) -> tuple[int, int]:
    """``(bytes, partitions)`` the footprint of ``access`` moves by at loop indices
    ``iteration``: its ``per_iteration`` and ``x-partitions_per_iteration`` shifts and the
    tensor's rotating slot (:class:`~neuronsim.machine.ir.program.Rotation`)."""
    delta = 0
    for loop, shift in access.per_iteration:
        delta += shift * iteration.get(loop, 0)
    delta *= tensor.itemsize
    if tensor.rotate is not None:
        delta += tensor.rotate.delta(iteration.get(tensor.rotate.loop, 0))
    pdelta = 0
    for loop, shift in access.partitions_per_iteration:
        pdelta += shift * iteration.get(loop, 0)
    return delta, pdelta


def shifted(fp: Footprint, delta: int, pdelta: int = 0) -> Footprint:
    """``fp`` moved by ``delta`` bytes (and ``pdelta`` partitions)."""
    mask = fp.partitions
    if pdelta:
        mask = mask << pdelta if pdelta > 0 else mask >> -pdelta
    return Footprint(fp.memory, fp.space, fp.tensor, mask, tuple((lo + delta, hi + delta) for lo, hi in fp.bytes))


@lru_cache(maxsize=1 << 16)
def base_footprint(tensor: Tensor, access: Access) -> Footprint:
    """The footprint of ``access`` at iteration 0 (every loop index 0); cached."""
    offset, pattern = access_extent(tensor, access)
    size = tensor.itemsize
    base = tensor.byte_base + offset * size
    runs = element_runs(pattern)
    if len(runs) == 1:
        byteset = ((base + runs[0][0] * size, base + runs[0][1] * size),)
    else:
        byteset = tuple((base + lo * size, base + hi * size) for lo, hi in runs)
    if tensor.memory == MemoryKind.DRAM:
        space = ("alias", tensor.alias) if tensor.alias is not None else "dram"
        return Footprint(tensor.memory, space, tensor.name, 0, byteset)
    start, count, step = access.partitions or (0, tensor.shape[0], 1)
    mask = partition_mask(tensor.partition or 0, start, count, step)
    space = "sbuf" if tensor.memory == MemoryKind.SBUF else "psum"
    return Footprint(tensor.memory, space, tensor.name, mask, byteset)


def intersect_intervals(a: ByteSet, b: ByteSet) -> ByteSet:
    """Intersection of two sorted disjoint interval tuples.

    >>> intersect_intervals(((0, 4), (8, 12)), ((2, 9),))
    ((2, 4), (8, 9))
    """
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = a[i][0] if a[i][0] > b[j][0] else b[j][0]
        hi = a[i][1] if a[i][1] < b[j][1] else b[j][1]
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def overlap(a: Footprint, b: Footprint) -> Overlap | None:
    """Exact overlap of two footprints, or None when they share no byte.

    For two different tensors of one alias group the whole of ``a`` is shared (their
    addresses are unknown, so they may coincide anywhere); the bytes are ``a``'s offsets.
    """
    if a.space != b.space:
        return None
    if a.memory == MemoryKind.DRAM:
        if isinstance(a.space, tuple):
            group = a.space[1]
            if a.tensor != b.tensor:
                return Overlap(a.memory, 0, a.bytes, group)
            shared = intersect_intervals(a.bytes, b.bytes)
            return Overlap(a.memory, 0, shared, group) if shared else None
        shared = intersect_intervals(a.bytes, b.bytes)
        return Overlap(a.memory, 0, shared) if shared else None
    mask = a.partitions & b.partitions
    if not mask:
        return None
    shared = intersect_intervals(a.bytes, b.bytes)
    return Overlap(a.memory, mask, shared) if shared else None


def to_portion(intervals: ByteSet) -> portion.Interval:
    """The byte set as a ``portion`` interval union of closed-open atoms."""
    result = portion.empty()
    for lo, hi in intervals:
        result |= portion.closedopen(lo, hi)
    return result


def access_shape(tensor: Tensor, access: Access) -> tuple[int, ...]:
    """Element shape of an access (the same in every instance).

    >>> from neuronsim.machine.ir.program import Tensor, Access, MemoryKind
    >>> t = Tensor("t", MemoryKind.SBUF, "bfloat16", (128, 64), partition=0, offset=0)
    >>> access_shape(t, Access("t")), access_shape(t, Access("t", partitions=(0, 32, 1), pattern=((8, 4), (1, 2))))
    ((128, 64), (32, 4, 2))
    """
    offset, pattern = access_extent(tensor, access)
    counts = tuple(count for _stride, count in pattern)
    if tensor.memory == MemoryKind.DRAM:
        return counts
    partitions = access.partitions[1] if access.partitions is not None else tensor.shape[0]
    return (partitions, *counts)
