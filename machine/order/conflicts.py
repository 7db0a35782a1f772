"""Exact conflicts between two instances, and folding an instance order into a dep.

The passes reason about instances exactly and write instruction-level deps; the checkers and
reports need the bytes two instances share.  Both live here, over the instance stream.

Conflict kinds follow the spec ("Happens-before"): for instance ``a`` before ``b``, ``RAW``
when a byte ``a`` writes is one ``b`` reads, else ``WAW`` when a byte both write, else
``WAR``; two tensors of one DRAM alias group always share.  As edge kinds (the seed's
numbering, :class:`~neuronsim.machine.ir.edges.EdgeKind`): Flow 4, Output 3, Anti 2.

Folding: the order "instance ``b`` waits for the earlier instance ``a``" becomes the dep of
``b``'s instruction on ``a``'s whose distance is the number of iterations of the loops
enclosing both that lie between them: 0 (an ordinary dep) when they share their iteration
there, ``d >= 1`` (loop-carried, ``x-distance`` d) otherwise.  The dep then makes ``b`` wait on
the last instance of ``a``'s instruction in that iteration, which completes after ``a`` (one
instruction's instances complete in order: rules 1 and 3).
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.model.geometry import ByteSet, intersect_intervals, sorted_distinct
from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.order.stream import CompiledAccess, InstanceStream

__all__ = ["conflict_kind", "conflicts", "fold_distance", "Conflict", "needed_boxes", "iteration_boxes", "MAX_BOXES"]

#: Iteration boxes one dep may become (``x-iterations`` ranges); beyond, it applies at every
#: instance (sound: it waits more).
MAX_BOXES = 8

Conflict = tuple[str, CompiledAccess, CompiledAccess, int, ByteSet]


def _intersects(a: ByteSet, b: ByteSet) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] < b[j][1] and b[j][0] < a[i][1]:
            return True
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return False


def _shared(pa: CompiledAccess, ma: int, ba: ByteSet, pb: CompiledAccess, mb: int, bb: ByteSet) -> bool:
    if pa.space != pb.space:
        return False
    if pa.memory != MemoryKind.DRAM and not ma & mb:
        return False
    if isinstance(pa.space, tuple) and pa.tensor != pb.tensor:
        return True  # two tensors of one alias group may sit anywhere
    return _intersects(ba, bb)


def conflict_kind(stream: InstanceStream, a: int, b: int, floor: int = 0) -> int:
    """Strongest kind the footprints of instances ``a`` (earlier) and ``b`` give: 4 RAW, 3 WAW,
    2 WAR; ``floor`` if none is stronger."""
    best = floor
    later = list(stream.instance_footprints(b))
    for pa, ma, ba in stream.instance_footprints(a):
        wa = pa.is_write
        for pb, mb, bb in later:
            wb = pb.is_write
            kind = 4 if wa and not wb else 3 if wa else 2 if wb else 0
            if kind > best and _shared(pa, ma, ba, pb, mb, bb):
                best = kind
                if best == 4:
                    return best
    return best


def pair_kinds(stream: InstanceStream, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """:func:`conflict_kind` of every pair ``(a[k], b[k])`` (``a[k]`` earlier), vectorised over
    the physical access events (:mod:`neuronsim.machine.order.events`); None when the program has DRAM alias
    groups (their events over-approximate sharing: ask :func:`conflict_kind`)."""
    from neuronsim.machine.order.events import access_events

    if any(isinstance(ca.space, tuple) for ca in stream.templates):
        return None
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if not len(a):
        return np.zeros(0, np.int64)
    ev = access_events(stream, "space")
    n = len(stream)
    key = ev.seg.astype(np.int64)  # seg * n + inst, in place; sorted: events are by segment, then instance
    key *= n
    key += ev.inst
    flag = np.where(ev.write, np.int8(2), np.int8(1))
    first = np.ones(len(key), bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    keys, flags = key[starts], np.bitwise_or.reduceat(flag, starts)
    del key, flag, first, starts  # per event: freed before the per-pair columns below
    # the segments of each b: its events, grouped by instance
    inst = keys % n
    if n * len(keys) < 2 ** 62:  # a stable argsort as one sort of (instance, position): SIMD, 4x faster
        by_inst = inst * len(keys)  # made and sorted in place: one int64 column per event, not four
        by_inst += np.arange(len(keys))
        by_inst.sort()
        by_inst %= len(keys)
    else:
        by_inst = np.argsort(inst, kind="stable")
    inst_sorted = inst[by_inst]
    del inst
    lo, hi = np.searchsorted(inst_sorted, b), np.searchsorted(inst_sorted, b, side="right")
    del inst_sorted
    count = hi - lo
    pair = np.repeat(np.arange(len(a)), count)
    # lo[k] + j for the j-th event of pair k: each pair's offset repeated, plus a running index
    lo -= np.cumsum(count) - count
    row = np.repeat(lo, count)
    del lo, hi
    row += np.arange(len(row))
    row = by_inst[row]
    del by_inst, count
    wanted = keys[row]  # (the segment of b's event, a): seg * n + a, made in place
    b_flag = flags[row]
    del row
    wanted //= n
    wanted *= n
    wanted += a[pair]
    # Looked up in sorted order: each search starts where the last one ended and walks memory
    # forwards (random needles cost a cache miss a step: 4x the time at 1e6).
    order = np.argsort(wanted)
    wanted = wanted[order]
    at = np.searchsorted(keys, wanted)
    np.minimum(at, len(keys) - 1, out=at)
    found = np.where(keys[at] == wanted, flags[at], np.int8(0))
    del wanted, at
    a_flag = np.empty(len(found), np.int8)
    a_flag[order] = found
    del order, found
    a_writes, a_reads = (a_flag & 2) > 0, (a_flag & 1) > 0
    b_writes, b_reads = (b_flag & 2) > 0, (b_flag & 1) > 0
    kind = np.zeros(len(a_flag), np.int8)  # the strongest kind wins: assigned weakest first
    kind[a_reads & b_writes] = 2
    kind[a_writes & b_writes] = 3
    kind[a_writes & b_reads] = 4
    out = np.zeros(len(a), np.int64)
    np.maximum.at(out, pair, kind)
    return out


def conflicts(stream: InstanceStream, a: int, b: int) -> list[Conflict]:
    """Every access pair of instances ``a`` (earlier) and ``b`` sharing a byte one of them
    writes: ``(kind, access of a, access of b, shared partition mask, shared bytes)``."""
    out = []
    later = list(stream.instance_footprints(b))
    for pa, ma, ba in stream.instance_footprints(a):
        for pb, mb, bb in later:
            if not (pa.is_write or pb.is_write) or not _shared(pa, ma, ba, pb, mb, bb):
                continue
            kind = "RAW" if pa.is_write and not pb.is_write else ("WAW" if pa.is_write else "WAR")
            if isinstance(pa.space, tuple) and pa.tensor != pb.tensor:
                bytes_ = ba
            else:
                bytes_ = intersect_intervals(ba, bb)
            out.append((kind, pa, pb, ma & mb, bytes_))
    return out


def fold_distance(stream: InstanceStream, a: int, b: int) -> int:
    """Iterations of the loops enclosing both instances' instructions between earlier
    instance ``a`` and instance ``b``: 0 when they share their iteration there.

    >>> from neuronsim.machine.ir.program import Instruction, Loop, Program
    >>> s = InstanceStream(Program({}, (Loop("i", 4, (Instruction("a", "dve", "x"), Instruction("b", "act", "y"))),)))
    >>> fold_distance(s, 0, 1), fold_distance(s, 0, 5), fold_distance(s, 2, 7)
    (0, 2, 2)
    """
    x, y = int(stream.instr[a]), int(stream.instr[b])
    c = stream.common(x, y)
    if not c:
        return 0
    ia, ib = stream.index_of(a), stream.index_of(b)
    trips = stream.trips[x]
    fa = fb = 0
    for k in range(c):
        fa = fa * trips[k] + ia[k]
        fb = fb * trips[k] + ib[k]
    return fb - fa


def needed_boxes(digits: np.ndarray, trips: tuple[int, ...],
                 limit: int = MAX_BOXES) -> list[tuple[tuple[int, int], ...]] | None:
    """Disjoint boxes (one ``[lo, hi)`` per loop) whose union is exactly the set of loop-index
    rows ``digits``, or None when more than ``limit`` are needed.

    Consecutive outer indices whose inner sets are equal share a box (recursively), so "first
    iteration", "all but the first" or "the last of each row" are one box each.

    >>> needed_boxes(np.array([[1], [2], [3]]), (4,))
    [((1, 4),)]
    >>> needed_boxes(np.array([[0, 0], [1, 0], [2, 0]]), (3, 2))
    [((0, 3), (0, 1))]
    """
    if not len(trips):
        return [()]
    # rows grouped by their outer index, in its order: cut where the sorted column changes (a
    # comparison of the whole column per distinct value was quadratic: 1e6 iterations of one
    # loop took minutes in anti-deps, a probe)
    order = np.argsort(digits[:, 0], kind="stable")
    col = digits[order, 0]
    cuts = [0, *(np.flatnonzero(col[1:] != col[:-1]) + 1).tolist(), len(col)]
    by_outer = {int(col[lo]): digits[order[lo:hi], 1:] for lo, hi in zip(cuts, cuts[1:])}
    out: list[tuple[tuple[int, int], ...]] = []
    run_lo = run_hi = None
    run_key = None
    inner_boxes: list = []

    def flush() -> bool:
        if run_key is None:
            return True
        for box in inner_boxes:
            out.append(((run_lo, run_hi), *box))
        return len(out) <= limit

    for v in sorted(by_outer):
        rows = by_outer[v]
        key = tuple(map(tuple, np.unique(rows, axis=0).tolist())) if rows.shape[1] else ()
        if key == run_key and v == run_hi:
            run_hi = v + 1
            continue
        if not flush():
            return None
        boxes = needed_boxes(rows, trips[1:], limit) if rows.shape[1] else [()]
        if boxes is None:
            return None
        run_lo, run_hi, run_key, inner_boxes = v, v + 1, key, boxes
    if not flush():
        return None
    return out


def iteration_boxes(stream: InstanceStream, y: int, instances, limit: int = MAX_BOXES) -> list[tuple] | None:
    """Instances of instruction ``y`` as ``x-iterations`` restrictions: a list of
    ``((loop, lo, hi), ...)`` (one per box; ``()`` means every instance), or None when more
    than ``limit`` boxes would be needed."""
    ids = stream.instances_of(y)
    chosen = sorted_distinct(np.asarray(instances, np.int64))
    if len(chosen) == len(ids):
        return [()]
    digits = stream.digits_of(y)[np.searchsorted(ids, chosen)]
    loops = stream.loops_of[y]
    boxes = needed_boxes(digits, stream.trips[y], limit)
    if boxes is None:
        return None
    return [tuple((loop.name, lo, hi) for loop, (lo, hi) in zip(loops, box) if (lo, hi) != (0, loop.trip_count))
            for box in boxes]
