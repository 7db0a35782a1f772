"""Directly allocated tiles whose lifetimes overlap on common bytes: the ``clobber`` finding.

A race needs two unordered instances; a kernel can be wrong with everything ordered.  Two
tiles the kernel placed itself on common bytes, where one is written while the other is still
live (after its first write, before its last read, in program order), lose data whatever the
schedule: the later read finds the other tile's values.  The NKI direct-allocation guide warns
the compiler's lifetime checks may miss this.  Found here per cluster of byte-sharing placed
tensors by one sweep over their live ranges (sorted by first write); every witness is checked
exactly (:func:`neuronsim.machine.order.conflicts.conflicts`: the write of one and the later read of the other
share a byte).

>>> from neuronsim_tests.nki_programs import alloc_program  # the test suite's kit
>>> [f.describe()[:61] for f in clobber_findings(alloc_program(apart=False))]
['directly allocated tiles on b / a overlap while both are live']
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from neuronsim.machine.nki.alloc import ALLOC_GROUP_KEY
from neuronsim.machine.order.conflicts import conflicts, pair_kinds
from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.ir.source import instance_label
from neuronsim.machine.order.stream import InstanceStream, stream_of
from neuronsim.verify.nki.finding import NkiFinding

__all__ = ["clobber_findings", "live_ranges"]


def live_ranges(stream: InstanceStream, tensors: set[str]) -> dict[str, tuple[int, int, list[int], list[int]]]:
    """``tensor -> (first write, last read, write instances, read instances)`` in instance
    order.  A tensor only written has last read -1: its writes still wipe a live tile's bytes
    (a prefetch into a tile nothing reads), but it holds nothing.  Tensors never written are
    left out."""
    tid = {stream.tensor_id[t]: t for t in tensors}  # (a list's index per tensor was quadratic: 10 s at 45 k)
    writes: dict[str, list[int]] = defaultdict(list)
    reads: dict[str, list[int]] = defaultdict(list)
    for x, inst in enumerate(stream.instrs):
        touched = [(tid[stream.tensor_id[a.tensor]], w) for a, w in inst.accesses if stream.tensor_id[a.tensor] in tid]
        if not touched:
            continue
        ids = stream.instances_of(x).tolist()
        for name, is_write in touched:
            (writes if is_write else reads)[name].extend(ids)
    out = {}
    for name, ids in writes.items():
        ids.sort()
        read = sorted(set(reads.get(name, ())))
        out[name] = (ids[0], read[-1] if read else -1, ids, read)
    return out


def _clusters(program: Program, names: list[str]) -> list[list[str]]:
    """Groups of placed on-chip tensors linked by common partitions and bytes."""
    def extent(name: str) -> tuple:
        t = program.tensors[name]
        lo = t.byte_base
        span = t.bytes_per_partition * (t.rotate.slots if t.rotate else 1)
        return t.memory, lo, lo + span, t.partition or 0, (t.partition or 0) + t.shape[0]

    groups: list[list[str]] = []
    by_memory: dict[MemoryKind, list[tuple]] = defaultdict(list)
    for name in names:
        memory, lo, hi, plo, phi = extent(name)
        by_memory[memory].append((lo, hi, plo, phi, name))
    for items in by_memory.values():
        items.sort()
        current, reach = [], -1
        for lo, hi, _plo, _phi, name in items:  # byte-overlap chains (partitions checked exactly later)
            if current and lo >= reach:
                groups.append(current)
                current, reach = [], -1
            current.append(name)
            reach = max(reach, hi)
        if current:
            groups.append(current)
    return [g for g in groups if len(g) > 1]


def clobber_findings(program: Program) -> list:
    """Every pair of directly allocated tiles written over while the other is live (module doc)."""
    from neuronsim.passes import PassContext, run_pipeline


    kernel_placed = [n for n, t in program.tensors.items() if t.memory != MemoryKind.DRAM and not t.is_virtual]
    clusters = _clusters(program, kernel_placed)
    rotating = _rotation_groups(program)
    if not clusters and not rotating:
        return []
    placed = run_pipeline(program, "alloc", PassContext(verify=False)) if program.has_virtual_tensors else program
    stream = stream_of(placed)
    ranges = live_ranges(stream, {n for c in clusters for n in c})
    out = _rotation_clobbers(program, stream, rotating)
    for cluster in clusters:
        alive = sorted((ranges[n][0], n) for n in cluster if n in ranges)
        holder = None
        for first_write, name in alive:
            if holder is not None and first_write < ranges[holder][1] and name != holder:
                finding = _witness(stream, holder, name, ranges)
                if finding is not None:
                    out.append(NkiFinding("allocation", "clobber", *finding, tensors=(name, holder)))
            if holder is None or ranges[name][1] > ranges[holder][1]:
                holder = name
    return out


def _rotation_groups(program: Program) -> dict[str, list[str]]:
    """Kernel tensor (``x-nki-alloc``) -> its placed tensors rotating over a kept loop's
    iterations (a ``mod_alloc`` tensor indexed by the loop variable: block ``b`` in slot
    ``b % slots``; each loop that indexes it so has a rotating tensor of its own)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name, t in program.tensors.items():
        group = (t.extras or {}).get(ALLOC_GROUP_KEY)
        if t.rotate is not None and not t.is_virtual and group:
            groups[group].append(name)
    return dict(groups)


def _rotation_clobbers(program: Program, stream: InstanceStream, groups: dict[str, list[str]]) -> list:
    """A block read from its slot after another block of the same kernel tensor was written
    there: the direct-allocation guide's lifetime conflict ("only two tiles can be alive")
    between blocks that rotate over slots, which share one tensor per loop and so escape the
    check of two tensors' live ranges.  Swept over the instances in program order; one finding
    per pair of blocks."""
    owner = {stream.tensor_id[name]: (group, program.tensors[name].rotate)
             for group, names in groups.items() for name in names if name in stream.tensor_id}
    events: list[tuple[int, str, object, bool]] = []
    for x, inst in enumerate(stream.instrs):
        touched = [(owner[stream.tensor_id[a.tensor]], w) for a, w in inst.accesses
                   if stream.tensor_id[a.tensor] in owner]
        for i in (stream.instances_of(x).tolist() if touched else ()):
            events.extend((i, group, rotate, w) for (group, rotate), w in touched)
    events.sort(key=lambda e: (e[0], e[3]))  # program order; an instance reads before it writes
    holding: dict[tuple[str, int], tuple[int, int]] = {}  # (group, slot) -> (block, writing instance)
    out, seen = [], set()
    for i, group, rotate, is_write in events:
        block = stream.iteration(i).get(rotate.loop, 0)
        slot = (group, block % rotate.slots)
        if is_write:
            holding[slot] = (block, i)
            continue
        held = holding.get(slot)
        if held is not None and held[0] != block and (group, held[0], block) not in seen:
            seen.add((group, held[0], block))
            out.append(NkiFinding("allocation", "clobber", instance_label(stream, held[1]), instance_label(stream, i),
                                  tensors=(f"{group}[{held[0]}]", f"{group}[{block}]")))
    return out


#: Pairs (a write of one tile, a later read of the other) the witness search checks for one
#: pair of tiles; past it, each write is held against the reads right after it and the last one.
WITNESS_PAIRS = 200_000
#: Pairs from which the search first screens them all at once (:func:`pair_kinds`).
VECTORISED_FROM = 256


def _witness(stream: InstanceStream, live: str, writer: str, ranges) -> tuple[str, str] | None:
    """``(write of writer, later read of live)`` sharing a byte, by their kernel lines: the read
    finds the writer's bytes where the live tile's were (no write of the live tile over them
    in between).  Every read of the live tile after the write is a candidate, not only its last
    one: the last read may touch other bytes (a probe's two-column tile, its second column
    overwritten and read before the first column's last read)."""
    start, last_read, live_writes, live_reads = ranges[live]
    writes = [w for w in ranges[writer][2] if start < w < last_read]
    if not writes:
        return None
    reads = np.asarray(live_reads, np.int64)
    after = np.searchsorted(reads, np.asarray(writes, np.int64), side="right")
    each = max(1, WITNESS_PAIRS // len(writes))
    pairs = [(w, int(r)) for w, lo in zip(writes, after.tolist())
             for r in dict.fromkeys([*reads[lo:lo + each].tolist(), last_read])]
    # many pairs: one vectorised pass over the stream's access events finds the few that share
    # bytes (it sorts every event, which a handful of exact checks does not need)
    kinds = (pair_kinds(stream, np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
             if len(pairs) > VECTORISED_FROM else None)
    rewrites = np.asarray(live_writes, np.int64)
    for k, (w, r) in enumerate(pairs):
        if kinds is not None and kinds[k] != 4:  # RAW: a byte w writes is one r reads (else checked exactly below)
            continue
        between = rewrites[np.searchsorted(rewrites, w, side="right"):np.searchsorted(rewrites, r)].tolist()
        for kind, pa, pb, mask, shared in conflicts(stream, w, r):
            if kind == "RAW" and stream.tensor_names[pa.tensor] == writer and stream.tensor_names[pb.tensor] == live \
                    and not _rewritten(stream, live, between, r, mask, shared):
                return instance_label(stream, w), instance_label(stream, r)
    return None


def _rewritten(stream: InstanceStream, live: str, between: list[int], r: int, mask: int, shared) -> bool:
    """The live tile's writes ``between`` cover every byte of ``shared`` (on every partition of
    ``mask``) that read ``r`` takes: the read finds the live tile's values there, nothing lost.
    A rewrite of some of the clobbered bytes leaves the rest lost (a probe: a tile's column 0
    written again, column 1 still the clobbering tile's, and the whole tile read)."""
    covers: list[tuple[int, tuple]] = []  # (partitions, bytes) each rewrite gives the read
    for x in between:
        covers += [(m, b) for kind, qa, qb, m, b in conflicts(stream, x, r)
                   if kind == "RAW" and stream.tensor_names[qa.tensor] == stream.tensor_names[qb.tensor] == live]
    if not covers:
        return False
    left = mask
    while left:
        bit = left & -left
        left ^= bit
        merged = sorted(interval for m, b in covers if m & bit for interval in b)
        reach = None
        for lo, hi in shared:  # each shared run lies inside the union of this partition's covers
            reach = lo
            for a, b in merged:
                if a <= reach < b:
                    reach = b
            if reach < hi:
                return False
    return True
