"""Exact conflicts between two instances, and folding an instance order into a dep.

The passes reason about instances exactly and write instruction-level deps; the checkers and
reports need the bytes two instances share.  Both live here, over the instance stream.

Conflict kinds follow the spec ("Happens-before"): for instance ``a`` before ``b``, ``RAW``
when a byte ``a`` writes is one ``b`` reads, else ``WAW`` when a byte both write, else
``WAR``; two tensors of one DRAM alias group always share.  As edge kinds (the seed's
numbering, :class:`~machine.edges.EdgeKind`): Flow 4, Output 3, Anti 2.

Folding: the order "instance ``b`` waits for the earlier instance ``a``" becomes the dep of
``b``'s instruction on ``a``'s whose distance is the number of iterations of the loops
enclosing both that lie between them: 0 (an ordinary dep) when they share their iteration
there, ``d >= 1`` (loop-carried, ``x-distance`` d) otherwise.  The dep then makes ``b`` wait on
the last instance of ``a``'s instruction in that iteration, which completes after ``a`` (one
instruction's instances complete in order: rules 1 and 3).
"""

from __future__ import annotations

from machine.geometry import ByteSet, intersect_intervals
from machine.ir import MemoryKind
from machine.stream import CompiledAccess, InstanceStream

__all__ = ["conflict_kind", "conflicts", "fold_distance", "Conflict"]

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

    >>> from machine.ir import Instruction, Loop, Program
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
