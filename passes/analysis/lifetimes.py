"""Lifetimes of tensors on the instance stream, for the allocator.

Instance ids are positions in program order (:class:`neuronsim.machine.order.stream.InstanceStream`).

* The **hull** of a tensor is ``[first, last]``, the first and last instance touching it
  (``input`` DRAM tensors: the whole program and before, ``output`` ones: to the end).
* A **window** of a loop ``L`` is one iteration of it at given outer indices: a contiguous
  run of ids.  Distinct windows of ``L`` are disjoint, and every window runs the same
  instructions with the same inner trip counts, so an instruction's instances sit at the
  same *offsets* in every window.
* A tensor is **iteration-private** over ``L`` when every instruction touching it is inside
  ``L`` and every byte any instance reads from it was written by an earlier instance of the
  same window (an instruction reads before it writes): no value flows from one iteration of
  ``L`` to another, or from before the loop.  :func:`iteration_private` decides this exactly
  from the footprints (partition x byte sets), one window per distinct footprint sequence.
* Its **relative range** over ``L`` is ``[a, b]``, the offsets (ids in ``L``'s first window)
  of its first and last access in a window, the same for every window.

A :class:`Life` is what the allocator needs of a tensor: its hull; when it rotates over
``n`` slots of loop ``L`` (a *ring*, slot ``k mod n`` in iteration ``k``), the loop, ``n``
and the relative range; and the relative range over every loop it is iteration-private over
(its *scopes*: ``L`` and the loops around it).  :func:`may_share` is the one sharing rule of the allocator; its
proof is in :mod:`neuronsim.passes.alloc`.

Examples
--------
>>> from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
>>> t = Tensor("t", MemoryKind.SBUF, "float32", (128, 4))
>>> w = Instruction("w", "dve", "memset", writes=(Access("t"),))
>>> r = Instruction("r", "act", "copy", reads=(Access("t"),))
>>> from neuronsim.machine.order.stream import InstanceStream
>>> lives = lifetimes(InstanceStream(Program({"t": t}, (Loop("i", 4, (w, r)),))), {MemoryKind.SBUF: 2})
>>> lives["t"]
Life(lo=0, hi=7, loop='i', slots=2, rel=(0, 1), scopes=(('i', 0, 1),))
>>> lives = lifetimes(InstanceStream(Program({"t": t}, (Loop("i", 4, (r, w)),))), {MemoryKind.SBUF: 2})
>>> lives["t"].loop is None                # read before written: a value crosses iterations
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain, product
from operator import add, attrgetter

import numpy as np

from neuronsim.machine.model.geometry import ByteSet
from neuronsim.machine.ir.program import Access, MemoryKind, Tensor
from neuronsim.machine.order.stream import InstanceStream

__all__ = ["Life", "lifetimes", "live_ranges", "may_share", "iteration_private", "tensor_users", "TensorUsers",
           "union", "merge", "contains", "WINDOW_BUDGET"]

#: Access instances :func:`iteration_private` examines per tensor and loop at most; above
#: it the answer is "not private" (conservative: the tensor keeps one placement).
WINDOW_BUDGET = 1 << 18


@dataclass(frozen=True, slots=True)
class Life:
    """Hull ``[lo, hi]`` of a tensor and, for a ring, its loop, slot count and relative range;
    ``scopes``: every loop the tensor is iteration-private over, ``(loop, a, b)`` with its
    relative range over that loop (a ring's loop and the loops around it)."""

    lo: int
    hi: int
    loop: str | None = None
    slots: int = 1
    rel: tuple[int, int] = (0, -1)
    scopes: tuple[tuple[str, int, int], ...] = ()

    @property
    def plain(self) -> Life:
        """The same tensor with one fixed placement (still private where it was)."""
        return Life(self.lo, self.hi, scopes=self.scopes)


def may_share(a: Life, slot_a: int, b: Life, slot_b: int, scoped: bool = True) -> bool:
    """May slot ``slot_a`` of ``a`` and slot ``slot_b`` of ``b`` hold the same byte?

    Yes when the hulls are disjoint; or when both rotate over the same loop with the same
    slot count and either the slots differ (they are used in different windows) or the
    relative ranges are disjoint (within a window one is dead before the other is born); or
    when both are iteration-private over one loop and their relative ranges over it are
    disjoint, whatever their slots (each holds its bytes only inside its range of every
    window: two tiles of one kept loop's body, each in an inner loop of its own); ``scoped=False``
    leaves that last case out (a placement that prefers storage no other stretch of the loop uses).

    >>> ring = lambda lo, hi: Life(0, 99, "i", 2, (lo, hi))
    >>> may_share(ring(0, 3), 0, ring(4, 6), 0), may_share(ring(0, 3), 0, ring(2, 6), 0)
    (True, False)
    >>> may_share(ring(0, 3), 0, ring(2, 6), 1)      # other slot: other iterations
    True
    >>> may_share(Life(0, 5), 0, Life(6, 9), 0), may_share(Life(0, 5), 0, ring(0, 1), 0)
    (True, False)
    >>> inner = lambda lo, hi: Life(0, 99, "j" + str(lo), 2, (lo, lo + 1), (("i", lo, hi),))
    >>> may_share(inner(0, 3), 1, inner(4, 6), 0), may_share(inner(0, 3), 1, inner(2, 6), 0)
    (True, False)
    """
    if a.hi < b.lo or b.hi < a.lo:
        return True
    if scoped and a.scopes and b.scopes and _apart_in_a_common_scope(a.scopes, b.scopes):
        return True
    if a.loop is None or a.loop != b.loop or a.slots != b.slots:
        return False
    if slot_a != slot_b:
        return True
    return a.rel[1] < b.rel[0] or b.rel[1] < a.rel[0]


def _apart_in_a_common_scope(mine: tuple[tuple[str, int, int], ...], theirs: tuple[tuple[str, int, int], ...]) -> bool:
    """Is there a loop both are iteration-private over where their relative ranges are disjoint?"""
    ranges = {loop: (lo, hi) for loop, lo, hi in theirs}
    for loop, lo, hi in mine:
        other = ranges.get(loop)
        if other is not None and (hi < other[0] or other[1] < lo):
            return True
    return False


@dataclass(frozen=True, slots=True)
class TensorUsers:
    """Who touches what, on flat arrays: built once per stream by :func:`tensor_users`.

    ``access_instr[k]``, ``access_tensor[k]`` and ``accesses[k]`` are the instruction, the
    tensor id and the :class:`~neuronsim.machine.ir.program.Access` of the ``k``-th access of the program
    (instructions in document order, each one's reads then writes).  The instructions
    touching tensor ``tid``, each once and in document order, are
    ``instr[ptr[tid]:ptr[tid + 1]]`` (:meth:`of`).
    """

    access_instr: np.ndarray
    access_tensor: np.ndarray
    accesses: list[Access]
    ptr: np.ndarray
    instr: np.ndarray

    def of(self, tid: int) -> list[int]:
        """The instructions touching tensor ``tid``, in document order."""
        return self.instr[self.ptr[tid]:self.ptr[tid + 1]].tolist()

    def span(self, values: np.ndarray, reduce: np.ufunc, empty: int) -> np.ndarray:
        """Per tensor, ``reduce`` of ``values[x]`` over its users ``x`` (``empty`` when none)."""
        out = np.full(len(self.ptr) - 1, empty, np.int64)
        used = self.ptr[:-1] < self.ptr[1:]
        if self.instr.size:
            out[used] = reduce.reduceat(values[self.instr], self.ptr[:-1][used])
        return out


_READS, _WRITES, _TENSOR = attrgetter("reads"), attrgetter("writes"), attrgetter("tensor")


def tensor_users(stream: InstanceStream) -> TensorUsers:
    """Every access of the stream's instructions and, per tensor, the instructions touching it.

    One pass over the instructions' accesses at C speed (no compiled footprints are needed
    for this), then a sort of the ``(tensor, instruction)`` pairs.

    >>> from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Program, Tensor
    >>> ts = {n: Tensor(n, MemoryKind.SBUF, "float32", (128, 4)) for n in "ab"}
    >>> body = (Instruction("w", "dve", "memset", writes=(Access("b"),)),
    ...         Instruction("c", "act", "copy", reads=(Access("b"), Access("b")), writes=(Access("a"),)))
    >>> users = tensor_users(InstanceStream(Program(ts, body)))
    >>> users.of(0), users.of(1), users.access_tensor.tolist()
    ([1], [0, 1], [1, 1, 1, 0])
    """
    instrs = stream.instrs
    per_instr = list(map(add, map(_READS, instrs), map(_WRITES, instrs)))
    counts = np.fromiter(map(len, per_instr), np.int64, len(per_instr))
    accesses = list(chain.from_iterable(per_instr))
    access_tensor = np.fromiter(map(stream.tensor_id.__getitem__, map(_TENSOR, accesses)), np.int64, len(accesses))
    access_instr = np.repeat(np.arange(len(instrs), dtype=np.int64), counts)
    width = max(len(instrs), 1)
    pairs = _distinct(access_tensor * width + access_instr)  # by tensor, then instruction
    tensor = pairs // width
    ptr = np.searchsorted(tensor, np.arange(len(stream.tensor_names) + 1))
    return TensorUsers(access_instr, access_tensor, accesses, ptr, pairs % width)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort: faster here than numpy's hashing ``unique``)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def _hulls(stream: InstanceStream, users: TensorUsers) -> dict[str, tuple[int, int]]:
    n = len(stream)
    lo = users.span(np.asarray(stream.first, np.int64), np.minimum, n).tolist()
    hi = users.span(np.asarray(stream.last, np.int64), np.maximum, -1).tolist()
    live = {}
    for tid, (name, tensor) in enumerate(stream.program.tensors.items()):
        if tensor.memory == MemoryKind.DRAM and tensor.role == "input":
            live[name] = (-1, n)
        elif tensor.memory == MemoryKind.DRAM and tensor.role == "output":
            live[name] = (lo[tid], n)
        else:
            live[name] = (lo[tid], hi[tid])
    return live


def live_ranges(stream: InstanceStream) -> dict[str, tuple[int, int]]:
    """``name -> (first instance, last instance)`` touching the tensor (the hull).

    Tensors nobody touches get ``(n, -1)``: disjoint from everything.  ``input`` DRAM
    tensors live from ``-1`` to ``n`` (the caller's data), ``output`` ones to ``n``.
    """
    return _hulls(stream, tensor_users(stream))


def lifetimes(stream: InstanceStream, slots: Mapping[MemoryKind, int],
              users: TensorUsers | None = None) -> dict[str, Life]:
    """The :class:`Life` of every tensor; virtual ones of a memory with ``slots[memory] >= 2``
    become rings over the innermost loop (of trip count 2 or more) they are iteration-private
    over, with ``min(slots, trip count)`` slots.  Placed tensors, alias groups and ``input`` /
    ``output`` DRAM tensors never rotate.  ``users``: :func:`tensor_users` of ``stream``, when
    the caller has it already."""
    users = tensor_users(stream) if users is None else users
    # A tensor touched outside every loop has no loop in common to its users: no ring.
    depth = np.fromiter(map(len, stream.loops_of), np.int64, len(stream.loops_of))
    in_loops = (users.span(depth, np.minimum, 0) > 0).tolist()
    out = {}
    for tid, (name, (lo, hi)) in enumerate(_hulls(stream, users).items()):
        life = Life(lo, hi)
        if in_loops[tid]:
            tensor = stream.program.tensors[name]
            if _may_rotate(tensor):
                life = _private_life(stream, tid, users.of(tid), slots.get(tensor.memory, 1), life)
        out[name] = life
    return out


def _may_rotate(tensor: Tensor) -> bool:
    internal = tensor.memory != MemoryKind.DRAM or tensor.role == "internal"
    return tensor.is_virtual and tensor.alias is None and internal


def _private_life(stream: InstanceStream, tid: int, xs: list[int], slots: int, hull: Life) -> Life:
    """``hull`` with the loops the tensor is iteration-private over (``scopes``) and, with
    ``slots >= 2``, the ring over the innermost of them of trip count 2 or more.  Private over a
    loop means private over every loop around it (a window of the inner loop lies in one of
    the outer's), so the innermost private loop found names them all."""
    common = stream.loops_of[xs[0]]
    for x in xs[1:]:
        mine = stream.loops_of[x]
        depth = 0
        while depth < len(common) and depth < len(mine) and common[depth] is mine[depth]:
            depth += 1
        common = common[:depth]
    private = next((depth for depth in range(len(common) - 1, -1, -1)
                    if (slots >= 2 and common[depth].trip_count >= 2 or depth == 0)
                    and iteration_private(stream, tid, xs, depth)), None)
    if private is None:
        return hull
    scopes = tuple((common[d].name, *_relative_range(stream, xs, d)) for d in range(private + 1))
    if slots >= 2:
        for depth in range(private, -1, -1):
            if common[depth].trip_count >= 2:
                loop = common[depth]
                return Life(hull.lo, hull.hi, loop.name, min(slots, loop.trip_count),
                            _relative_range(stream, xs, depth), scopes)
    return Life(hull.lo, hull.hi, scopes=scopes)


def _relative_range(stream: InstanceStream, xs: list[int], depth: int) -> tuple[int, int]:
    """Ids of the tensor's first and last access in the first window of the loop at ``depth``."""
    return min(stream.first[x] for x in xs), max(stream.first[x] + stream.tail[x][depth + 1] for x in xs)


def iteration_private(stream: InstanceStream, tid: int, xs: list[int], depth: int) -> bool:
    """Is tensor ``tid`` (touched by the instructions ``xs``, all inside the loop at position
    ``depth`` of their nests) iteration-private over that loop?

    Exact: every window whose footprint sequence differs is replayed in program order,
    keeping per partition mask the bytes written so far, and each read must be covered.
    Windows differ only in the indices of the loops at or outside ``depth`` that some access
    moves with; the others are fixed at 0.  Above :data:`WINDOW_BUDGET` access instances
    the answer is False (unsure, hence conservative).
    """
    uses = [(x, [ca for ca in stream.accesses(x) if ca.tensor == tid]) for x in xs]
    moving = sorted({k for _, cas in uses for ca in cas for k, _ in (*ca.shifts, *ca.pshifts) if k <= depth})
    trips = stream.trips[xs[0]]
    windows = int(np.prod([trips[k] for k in moving])) if moving else 1
    per_window = sum(len(cas) * int(np.prod(stream.trips[x][depth + 1:])) for x, cas in uses)
    if windows * per_window > WINDOW_BUDGET:
        return False
    for outer in product(*(range(trips[k]) for k in moving)):
        digits = dict(zip(moving, outer))
        written: dict[int, ByteSet] = {}
        for _, is_write, mask, byteset in _window_events(stream, uses, depth, digits):
            if is_write:
                written[mask] = union(written.get(mask, ()), byteset)
            elif not _covered(written, mask, byteset):
                return False
    return True


def _window_events(stream: InstanceStream, uses, depth: int, outer: dict[int, int]):
    """``(offset, is_write, partition mask, bytes)`` of every access instance in one window,
    in program order (reads of an instance before its writes)."""
    events = []
    for x, cas in uses:
        inner_trips = stream.trips[x][depth + 1:]
        inner = np.indices(inner_trips, dtype=np.int64).reshape(len(inner_trips), -1).T if inner_trips \
            else np.zeros((1, 0), np.int64)
        offsets = (stream.first[x] + inner @ np.asarray(stream.spans[x][depth + 1:], np.int64)).tolist()
        for ca in cas:
            shift = _shift_column(ca.shifts, inner, depth, outer)
            pshift = _shift_column(ca.pshifts, inner, depth, outer)
            base_mask = ca.mask or 1  # DRAM has no partitions: one pseudo-partition
            for offset, delta, pdelta in zip(offsets, shift, pshift):
                mask = base_mask << pdelta if pdelta >= 0 else base_mask >> -pdelta
                byteset = tuple((lo + delta, hi + delta) for lo, hi in ca.bytes) if delta else ca.bytes
                events.append((offset, ca.is_write, mask, byteset))
    events.sort(key=lambda e: (e[0], e[1]))  # stable: accesses keep their order inside an instance
    return events


def _shift_column(shifts: tuple[tuple[int, int], ...], inner: np.ndarray, depth: int,
                  outer: dict[int, int]) -> list[int]:
    """Per inner instance, what ``shifts`` move it by in the window ``outer``."""
    fixed = sum(step * outer.get(k, 0) for k, step in shifts if k <= depth)
    column = np.full(len(inner), fixed, np.int64)
    for k, step in shifts:
        if k > depth:
            column += inner[:, k - depth - 1] * step
    return column.tolist()


def union(a: ByteSet, b: ByteSet) -> ByteSet:
    """Union of two sorted disjoint interval tuples.

    >>> union(((0, 4), (10, 12)), ((3, 6), (12, 13)))
    ((0, 6), (10, 13))
    """
    if not a:
        return b
    if not b:
        return a
    return merge((*a, *b))


def merge(intervals) -> ByteSet:
    """Any half-open intervals as a sorted disjoint tuple (empty ones dropped).

    >>> merge([(5, 8), (0, 2), (1, 3), (4, 4)])
    ((0, 3), (5, 8))
    """
    merged: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if lo >= hi:
            continue
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def contains(outer: ByteSet, inner: ByteSet) -> bool:
    """Does ``outer`` cover every byte of ``inner`` (both sorted, disjoint)?

    >>> contains(((0, 8), (10, 20)), ((2, 4), (12, 20))), contains(((0, 8),), ((6, 10),))
    (True, False)
    """
    k = 0
    for lo, hi in inner:
        while k < len(outer) and outer[k][1] <= lo:
            k += 1
        if k == len(outer) or outer[k][0] > lo or outer[k][1] < hi:
            return False
    return True


def _covered(written: dict[int, ByteSet], mask: int, byteset: ByteSet) -> bool:
    """Do the bytes written (per partition mask) cover ``byteset`` in every partition of
    ``mask``?  Partitions are split into atoms by which written masks hold them."""
    atoms: list[tuple[int, ByteSet]] = [(mask, ())]
    for wmask, wbytes in written.items():
        if not wmask & mask:
            continue
        split = []
        for amask, have in atoms:
            inside, outside = amask & wmask, amask & ~wmask
            if inside:
                split.append((inside, union(have, wbytes)))
            if outside:
                split.append((outside, have))
        atoms = split
    return all(contains(have, byteset) for _, have in atoms)
