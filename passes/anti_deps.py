"""``anti-deps``: the anti (WAR) and output (WAW) graph over physical storage (seed pass 76).

Anti and output dependences exist only because storage is reused, so this pass works on
*physical* bytes after allocation.  As the seed, it buckets every access into split interval
maps (:mod:`machine.splitmap`): SBUF by partition x byte, PSUM per bank, DRAM per bin of
``dram_bin_bytes``, and one batch per DRAM alias group; two accesses conflict iff they share a
cell.  Here DRAM is cut by bytes and alias groups are exact by default (``alias=exact``: one
tensor's accesses by their bytes, different tensors of a group always, as the spec and the race
checker have it; :func:`alias_candidates`); ``alias=batch`` and ``dram=bins`` are the seed's.  Per cell it keeps what the seed's reverse program-order walk visits: the last write
and the reads since it.  For each instance, in program order, the walk over its cells gives:

* a write: Output (3) to the cell's last write, Anti (2) to every read since it (reads
  before that write are ordered before it already, by induction);
* a read of a byte last written through a *different* tensor sharing the storage:
  Flow (4).  The seed leaves this read-after-write-through-reuse to neither builder
  (``build-fdeps`` links by logical tensor, this pass only does WAR/WAW); issue #5 item 6.
  Same-tensor RAW is ``build-fdeps``'s (``analyses`` ``raw`` adds it here too).

The **early stop** of the reverse walk: the seed stops at the first same-kind dep of the
matmul family (``matmul``/``transpose`` on PE), because PE completes them in order.  With
``early_stop=component`` (default) that is applied to every completion component: among
reads since the last write only the latest per sequencer (non-DMA) or per queue (DMA) is
kept, which orders the earlier ones too (rules 1 and 3).  ``early_stop=matmul`` is the seed's.
Reads by several engines between two writes are *not* ordered among themselves, so a write
waits for the latest read of every component, not only the nearest read.

**Edge direction**: later waits for earlier ("A waits for B", :mod:`machine.edges`).
**Loop-carried branch**: an instance order is folded into a dep
(:func:`machine.conflicts.fold_distance`); when the earlier instance is in an earlier
iteration of the loops enclosing both (the common-loop-nest test), the dep is loop-carried,
``d`` iterations back (``x-distance``), ``d`` being the nearest conflicting iteration: with a
buffer rotating over ``n`` slots (``x-rotate``) a slot is rewritten ``n`` iterations later, and
the dep waits exactly that far back.  The seed adds loop-carried deps only between different
memory locations; here every such conflict gets one, since nothing else orders a buffer
reused across iterations.
**Max-merge**: kinds merge into the one edge per pair by max (:class:`~machine.edges.DepGraph`),
so a WAR pair already linked by Flow stays Flow.  **Labels**: an added Anti / Output dep is
labelled with the strongest kind over *every* instance pair it orders (:func:`dep_label`), as
``verifyAntiDependence`` recomputes it: inside loops, or when bytes were rewritten in between,
the pair the walk found is not the only one the dep orders.  A conservative-only dep (see
below) whose pairs share no byte is labelled ``ordered``.

``skip_ordered`` (default on): vector clocks (:mod:`machine.hb`) over the deps present so far
skip a candidate already ordered before the instance by the rules and existing deps, so an edge
is added only when needed.  With it off, every candidate the walk finds gets an edge.

Filters (constructor options, the seed's four sets): ``memories`` (sbuf, psum, dram),
``roles`` of DRAM tensors, ``spaces`` (``local``; ``shared`` = alias groups and DRAM placed by
``alloc-shared-dram``), ``analyses`` (war, waw, raw-reuse, raw).  Accesses filtered out are not
bucketed.  The seed's second registration runs after shared-DRAM allocation:
``anti-deps{spaces=local},alloc-shared-dram,anti-deps{spaces=shared}``.

Conservative edges: ``dram=bins`` buckets a DRAM access by the bins of its whole tensor (the
seed), and with ``alias=batch`` (the seed, and always in the seed's modes ``early_stop=matmul``
/ ``dram=bins``) an alias group is one batch, so two accesses there may share a cell without
sharing a byte: the seed's batch orders accesses of one alias tensor that share no byte,
which cost up to one wait above the minimum on 4 of 1,000 generated loop programs.  Edges added only for such pairs are counted as ``conservative_bin`` /
``conservative_alias``; every other memory edge joins a pair that truly conflicts.

Contract
    requires: no virtual tensors; same-tensor RAW already ordered (``build-fdeps``) unless
    ``analyses`` has ``raw``.
    guarantees (all analyses, no filter): every pair of conflicting instances is ordered
    under the resulting deps; existing deps are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from machine.conflicts import conflict_kind, conflicts, fold_distance, pair_kinds
import numpy as np

from machine.deptable import DepTable, with_deps
from machine.edges import EdgeKind
from machine.errors import ProgramError
from machine.events import access_events, merge_pairs
from machine.hb import HappensBefore
from machine.ir import Dep, MemoryKind, Program
from machine.splitmap import CellSpace
from machine.stream import InstanceStream

from passes.build_fdeps import bins_of, restrictions
from passes.pipeline import Pass, PassContext

__all__ = ["AntiDeps", "anti_dependency_edges", "dep_label", "event_candidates", "walk_candidates", "alias_candidates"]

FLOW_REUSE, FLOW_SAME, ANTI, OUTPUT, EXACT, BIN, ALIAS = (1 << k for k in range(7))
_EMPTY = (-1, -1, ())
_MEM = {MemoryKind.SBUF: "sbuf", MemoryKind.PSUM: "psum", MemoryKind.DRAM: "dram"}
_MM_OPS = frozenset({"matmul", "transpose"})
RULES = {FLOW_REUSE: "anti:raw-reuse", FLOW_SAME: "anti:raw", ANTI: "anti:war", OUTPUT: "anti:waw",
         BIN: "anti:dram-bin", ALIAS: "anti:alias"}
_FORGET_EVERY = 4096

#: ``{(former, waiter, distance): (kind, rule bits)}`` over instruction ids.
AntiEdges = dict[tuple[int, int, int], tuple[EdgeKind, int]]


def _kept(stream: InstanceStream, ca, memories, roles, spaces) -> bool:
    """Whether the filters keep the compiled access (the seed's four sets)."""
    if _MEM[ca.memory] not in memories:
        return False
    if ca.memory != MemoryKind.DRAM:
        return "local" in spaces
    tensor = stream.program.tensors[stream.tensor_names[ca.tensor]]
    return ("shared" if stream.is_shared(ca.tensor) else "local") in spaces and tensor.role in roles


def _cell_plans(stream: InstanceStream, cells: CellSpace, memories, roles, spaces, dram: str) -> list[tuple]:
    """Per instruction: ``(is_write, tensor, pieces|None, key, source bit, access)`` per access
    the filters keep; ``pieces`` is the cut into cells unless the access moves with a loop."""
    out = []
    memo: dict[int, tuple] = {}  # compiled accesses are shared by equal accesses
    for x in range(stream.m):
        mine = []
        for ca in stream.accesses(x):
            found = memo.get(id(ca))
            if found is None:
                found = memo[id(ca)] = _cell_plan(stream, cells, ca, dram) \
                    if _kept(stream, ca, memories, roles, spaces) else ()
            if found:
                mine.append(found)
        out.append(tuple(mine))
    return out


def _cell_plan(stream: InstanceStream, cells: CellSpace, ca, dram: str) -> tuple:
    tensor = stream.program.tensors[stream.tensor_names[ca.tensor]]
    if tensor.alias is not None:  # one batch per alias group, as the seed
        key = ("alias", tensor.alias)
        return (ca.is_write, ca.tensor, cells.pieces(key, "dram", 0, ((0, 1),)), key, ALIAS, ca)
    if ca.memory == MemoryKind.DRAM and dram == "bins":  # whole bins of the whole tensor, as the seed
        size = stream.spec.dram_bin_bytes
        slots = (tensor.rotate.slots - 1) * tensor.rotate.stride if tensor.rotate is not None else 0
        lo, hi = tensor.address, tensor.address + slots + tensor.bytes_per_partition
        whole = ((lo // size * size, -(-hi // size) * size),)
        return (ca.is_write, ca.tensor, cells.pieces("dram-bins", "dram", 0, whole), "dram-bins", BIN, ca)
    cut = None if ca.moves else cells.pieces(ca.space, ca.space, ca.mask, ca.bytes)
    return (ca.is_write, ca.tensor, cut, ca.space, EXACT, ca)


#: Candidates of every instance: ``former[ptr[b]:ptr[b + 1]]`` (latest first) with their rule bits.
Candidates = tuple[np.ndarray, np.ndarray, np.ndarray]


def _csr(b: np.ndarray, a: np.ndarray, bits: np.ndarray, n: int) -> Candidates:
    """Pairs merged per ``(b, a)`` (bits or-ed), by ``b`` then ``a`` descending."""
    key, bits = merge_pairs(b.astype(np.int64) * n + (n - 1 - a.astype(np.int64)), bits)
    waiter = key // n
    return np.searchsorted(waiter, np.arange(n + 1)), n - 1 - key % n, bits


def event_candidates(stream: InstanceStream, *, memories=frozenset({"sbuf", "psum", "dram"}),
                     roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                     analyses=frozenset({"war", "waw", "raw-reuse"}), alias: str = "exact") -> Candidates:
    """The walk's candidates (``early_stop=component``, ``dram=bytes``) from one sort of the
    physical access events (:mod:`machine.events`): per segment, a write's candidates are the
    previous write (WAW) and the latest read of every other component since it (WAR); a read's
    the previous write when through another tensor (RAW-reuse; any, with ``raw``).

    DRAM alias groups: ``alias="batch"`` makes each group one segment, as the seed;
    ``"exact"`` (default) takes their candidates from :func:`alias_candidates`."""
    temps = stream.templates
    kept = np.fromiter((_kept(stream, ca, memories, roles, spaces) for ca in temps), bool, len(temps))
    extra = None
    if alias == "exact":
        aliased = kept & np.fromiter((isinstance(ca.space, tuple) for ca in temps), bool, len(temps))
        if aliased.any():
            extra = alias_candidates(stream, aliased, analyses)
            kept &= ~aliased
    ev = access_events(stream, "space", templates=kept, per_tensor=True)
    n = len(ev)
    if not n:
        if extra is not None:
            return _csr(extra[1], extra[0], extra[2], len(stream))
        return np.zeros(len(stream) + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    inst = ev.inst.astype(np.int64)
    tensor = np.fromiter((ca.tensor for ca in temps), np.int64, len(temps))[ev.template]
    alias = np.fromiter((isinstance(key, tuple) and key[0] == "alias" for key, _ in ev.groups), bool, len(ev.groups))
    source = np.where(alias[ev.seg_group[ev.seg]], ALIAS, EXACT)
    idx = np.arange(n)
    starts = np.ones(n, bool)
    starts[1:] = ev.seg[1:] != ev.seg[:-1]
    seg_first = np.maximum.accumulate(np.where(starts, idx, 0))
    prev_w = np.maximum.accumulate(np.where(ev.write, idx, -1))
    prev_w[ev.write] = np.concatenate([[-1], prev_w[:-1]])[ev.write]  # strictly before a write
    has_prev = prev_w >= seg_first
    parts_a, parts_b, parts_bits = [], [], []
    if "waw" in analyses:
        w = np.flatnonzero(ev.write & has_prev)
        w = w[inst[prev_w[w]] != inst[w]]  # an instance's second write to a segment
        parts_a.append(inst[prev_w[w]]), parts_b.append(inst[w]), parts_bits.append(OUTPUT | source[w])
    if "raw-reuse" in analyses or "raw" in analyses:
        r = np.flatnonzero(~ev.write & has_prev)
        other = tensor[prev_w[r]] != tensor[r]
        r, other = (r, other) if "raw" in analyses else (r[other], other[other])
        parts_a.append(inst[prev_w[r]]), parts_b.append(inst[r])
        parts_bits.append(np.where(other, FLOW_REUSE, FLOW_SAME) | source[r])
    if "war" in analyses:
        ends = np.append(np.flatnonzero(starts)[1:], n)
        seg_end = np.repeat(ends, np.diff(np.append(np.flatnonzero(starts), n)))
        next_w = np.minimum.accumulate(np.where(ev.write, idx, n)[::-1])[::-1]
        r = np.flatnonzero(~ev.write & (next_w < seg_end))
        # the latest read of each component before the write (rules 1 and 3 order the others)
        key = next_w[r] * stream.width + stream.comp[inst[r]]
        order = np.lexsort((r, key))
        key, r = key[order], r[order]
        r = r[np.append(key[1:] != key[:-1], True)] if len(r) else r  # the last read of each (write, component)
        w = next_w[r]
        mine = inst[r] != inst[w]
        r, w = r[mine], w[mine]
        parts_a.append(inst[r]), parts_b.append(inst[w]), parts_bits.append(ANTI | source[w])
    if extra is not None:
        parts_a.append(extra[0]), parts_b.append(extra[1]), parts_bits.append(extra[2])
    if not parts_a:
        return np.zeros(len(stream) + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _csr(np.concatenate(parts_b), np.concatenate(parts_a), np.concatenate(parts_bits).astype(np.int64),
                len(stream))


def alias_candidates(stream: InstanceStream, templates: np.ndarray, analyses=frozenset({"war", "waw", "raw-reuse"})
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(earlier, later, rule bits)``: exact candidates among the accesses of DRAM alias
    groups (``templates``: which compiled accesses to take), by the spec's rule for them: two
    accesses of one tensor conflict by their bytes, two of different tensors of a group always.

    Per tensor, byte cells keep the last write and the latest read of each component since it
    (as for any memory).  An access of tensor ``T`` is, besides, a candidate after the latest
    write of each component to every other tensor ``U`` of its group and, for a write, the
    latest read of each component: every earlier access of ``U`` completes on some component no
    later than the latest one of its kind there (rules 1 and 3), so the candidates are complete
    (at most two per component and other tensor), and each joins a truly conflicting pair (no
    batch of the whole group, which orders accesses of one tensor that share no byte).  Python
    per alias access instance: alias groups are shared DRAM, few.
    """
    temps = stream.templates
    want = np.flatnonzero(np.asarray(templates, bool)[stream.slot_t])
    if not len(want):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids, order = [], []
    for k in want.tolist():  # every instance of every wanted slot, in program order then slot order
        inst = stream.instances_of(int(stream.slot_x[k]))
        ids.append(inst)
        order.append(np.full(len(inst), k, np.int64))
    inst, slot = np.concatenate(ids), np.concatenate(order)
    by = np.lexsort((slot, inst))
    cells = CellSpace((), {"dram": 1 << 62}, _EMPTY)
    war, waw = "war" in analyses, "waw" in analyses
    raw_same, raw_reuse = "raw" in analyses, "raw-reuse" in analyses or "raw" in analyses
    comp = stream.comp.tolist()
    slot_t = stream.slot_t
    # per group, per tensor: the latest write and the latest read of each component (rules 1
    # and 3 order the earlier ones of a component before them)
    latest: dict[str, dict[int, tuple[dict[int, int], dict[int, int]]]] = {}
    out_a: list[int] = []
    out_b: list[int] = []
    out_bits: list[int] = []
    for b, k in zip(inst[by].tolist(), slot[by].tolist()):
        ca = temps[int(slot_t[k])]
        tensors = latest.setdefault(ca.space[1], {})
        for other, (their_writes, their_reads) in tensors.items():  # other tensors of the group: always shared
            if other == ca.tensor:
                continue
            if (ca.is_write and waw) or (not ca.is_write and raw_reuse):
                bits = (OUTPUT if ca.is_write else FLOW_REUSE) | EXACT
                for w in their_writes.values():
                    if w != b:
                        out_a.append(w), out_b.append(b), out_bits.append(bits)
            if ca.is_write and war:
                for r in their_reads.values():
                    if r != b:
                        out_a.append(r), out_b.append(b), out_bits.append(ANTI | EXACT)
        mine = tensors.setdefault(ca.tensor, ({}, {}))
        mine[0 if ca.is_write else 1][comp[b]] = b
        t = ca.tensor
        cut = cells.pieces(("alias", t), "dram", 0, stream.footprint_at(ca, b)[1])
        # its own tensor: by bytes
        for smap, lo, hi in cut:
            i, j = smap.span(lo, hi)
            values = smap.values
            for c in range(i, j):
                w, wt, reads = values[c]
                if not ca.is_write:
                    if w >= 0 and w != b and raw_same:
                        out_a.append(w), out_b.append(b), out_bits.append(FLOW_SAME | EXACT)
                    if not (reads and reads[-1] == b):
                        values[c] = (w, wt, tuple([r for r in reads if comp[r] != comp[b]]) + (b,))
                    continue
                if waw and w >= 0 and w != b:
                    out_a.append(w), out_b.append(b), out_bits.append(OUTPUT | EXACT)
                if war:
                    for r in reads:
                        if r != b:
                            out_a.append(r), out_b.append(b), out_bits.append(ANTI | EXACT)
            if ca.is_write:
                values[i:j] = [(b, t, ())] * (j - i)
    return np.asarray(out_a, np.int64), np.asarray(out_b, np.int64), np.asarray(out_bits, np.int64)


def walk_candidates(stream: InstanceStream, *, memories=frozenset({"sbuf", "psum", "dram"}),
                    roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                    analyses=frozenset({"war", "waw", "raw-reuse"}), early_stop: str = "component",
                    dram: str = "bytes") -> Candidates:
    """The candidates of every instance from the seed's walk over split interval maps, in
    every mode (see the module doc)."""
    cells = CellSpace(stream.masks(), bins_of(stream), _EMPTY)
    pieces = cells.pieces
    plans_of = _cell_plans(stream, cells, memories, roles, spaces, dram)
    war, waw = "war" in analyses, "waw" in analyses
    raw_same, raw_reuse = "raw" in analyses, "raw-reuse" in analyses or "raw" in analyses
    instr, comp = stream.instr.tolist(), stream.comp.tolist()
    matmul_x = [int(stream.seq_x[x]) == 0 and stream.instrs[x].op in _MM_OPS for x in range(stream.m)]
    component_stop = early_stop == "component"
    footprint_at = stream.footprint_at
    out_a: list[int] = []
    out_b: list[int] = []
    out_bits: list[int] = []
    for b in range(len(stream)):
        y = instr[b]
        cand: dict[int, int] = {}
        cb = comp[b]
        b_mm = matmul_x[y]
        for is_write, t, cut, key, source, ca in plans_of[y]:
            if cut is None:
                mask, byteset = footprint_at(ca, b)
                cut = pieces(key, ca.space, mask, byteset)
            if not is_write:
                for smap, lo, hi in cut:
                    i, j = smap.span(lo, hi)
                    values = smap.values
                    for k in range(i, j):
                        w, wt, reads = values[k]
                        if w >= 0 and w != b and raw_reuse and (wt != t or raw_same):
                            cand[w] = cand.get(w, 0) | (FLOW_REUSE if wt != t else FLOW_SAME) | source
                        if reads and reads[-1] == b:
                            continue
                        if not reads:
                            reads = (b,)
                        elif component_stop:
                            reads = tuple([r for r in reads if comp[r] != cb]) + (b,)
                        elif b_mm:
                            reads = tuple([r for r in reads if not matmul_x[instr[r]]]) + (b,)
                        else:
                            reads = reads + (b,)
                        values[k] = (w, wt, reads)
                continue
            for smap, lo, hi in cut:
                i, j = smap.span(lo, hi)
                values = smap.values
                for k in range(i, j):
                    w, wt, reads = values[k]
                    if waw and w >= 0 and w != b:
                        cand[w] = cand.get(w, 0) | OUTPUT | source
                    if war:
                        for r in reads:
                            if r != b:
                                cand[r] = cand.get(r, 0) | ANTI | source
                values[i:j] = [(b, t, ())] * (j - i)
        for a, bits in cand.items():
            out_a.append(a)
            out_b.append(b)
            out_bits.append(bits)
    return _csr(np.asarray(out_b, np.int64), np.asarray(out_a, np.int64), np.asarray(out_bits, np.int64), len(stream))


def anti_dependency_edges(stream: InstanceStream, table, *, memories=frozenset({"sbuf", "psum", "dram"}),
                          roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                          analyses=frozenset({"war", "waw", "raw-reuse"}), early_stop: str = "component",
                          skip_ordered: bool = True, dram: str = "bytes", stats: dict[str, int] | None = None,
                          where: dict[tuple[int, int, int], list[int]] | None = None, alias: str = "exact") -> AntiEdges:
    """New edges over instruction ids (see :data:`AntiEdges`); rule bits without
    :data:`EXACT` mark conservative-only edges.

    ``table`` (a :class:`~machine.deptable.DepTable`) holds the deps already present: they order
    instances for ``skip_ordered``.  With ``where`` (a dict), each edge is recorded with the
    waiter instances it was added at, for deps restricted to those iterations: an edge then
    orders nothing at the other instances of its waiter (the walk does not count on it there).
    Without it, an edge applies at every later instance of its waiter (the walk counts on it).

    The candidates come from :func:`event_candidates` in the default mode, from
    :func:`walk_candidates` otherwise (the same answer where both apply; tested).  ``alias``
    (``"exact"`` or the seed's ``"batch"``) says how DRAM alias groups are bucketed in the
    default mode; the seed's modes batch them as the seed.
    """
    stats = {} if stats is None else stats
    filters = dict(memories=memories, roles=roles, spaces=spaces, analyses=analyses)
    if early_stop == "component" and dram == "bytes":
        c_ptr, c_former, c_bits = event_candidates(stream, alias=alias, **filters)
    else:
        c_ptr, c_former, c_bits = walk_candidates(stream, early_stop=early_stop, dram=dram, **filters)
    c_ptr, c_former, c_bits = c_ptr.tolist(), c_former.tolist(), c_bits.tolist()
    given = stream.resolve(table)
    g_ptr, g_target = given.ptr.tolist(), given.target.tolist()
    instr, seq, comp, pos = stream.instr.tolist(), stream.seq.tolist(), stream.comp.tolist(), stream.pos.tolist()
    has_loops = stream.has_loops
    hb = HappensBefore(stream.spec.dma_queues)
    trigger_of, complete, join, start_of = hb.trigger, hb.complete, hb.join, hb.start_of
    added: AntiEdges = {}
    nearest: dict[tuple[int, int, bool], int] = {}  # (x, y, carried) -> distance of the dep added
    extra: list[list[tuple[int, int]]] = [[] for _ in range(stream.m)]  # deps added so far, per waiter
    skipped = 0
    for b in range(len(stream)):
        y = instr[b]
        s = seq[b]
        trigger = trigger_of(s, g_target[g_ptr[b]:g_ptr[b + 1]])
        if extra[y] and where is None:
            for x, d in extra[y]:
                t = stream.target_of(b, x, d) if has_loops else x
                if t >= 0:
                    trigger = trigger_of(s, (t,)) if trigger is hb.seq_clock[s] else join(trigger, hb.end.get(t, trigger))
        cb = comp[b]
        lo, hi = c_ptr[b], c_ptr[b + 1]
        if lo < hi:
            start = start_of(cb, trigger)
            for k in range(lo, hi):
                a = c_former[k]
                if skip_ordered and start[comp[a]] >= pos[a]:
                    skipped += 1
                    continue
                bits = c_bits[k]
                if not bits & EXACT and conflicts(stream, a, b):
                    bits |= EXACT  # a conservative cell, but the pair does conflict
                x = instr[a]
                d = fold_distance(stream, a, b) if has_loops else 0
                kind = EdgeKind.FLOW if bits & (FLOW_REUSE | FLOW_SAME) else (EdgeKind.OUTPUT if bits & OUTPUT else EdgeKind.ANTI)
                slot = (x, y, d > 0)
                old_d = nearest.get(slot)
                if where is not None:
                    where.setdefault((x, y, d), []).append(b)
                elif old_d is not None and old_d <= d:
                    d = old_d  # the dep there already waits at least as near
                else:
                    if old_d is not None:  # nearer than the dep added before: it replaces it
                        kind0, bits0 = added.pop((x, y, old_d))
                        kind, bits = max(kind, kind0), bits | bits0
                        extra[y].remove((x, old_d))
                    nearest[slot] = d
                    extra[y].append((x, d))
                old = added.get((x, y, d))
                added[(x, y, d)] = (kind, bits) if old is None else (max(old[0], kind), old[1] | bits)
                target = stream.target_of(b, x, d) if has_loops else x
                end = hb.end.get(target)  # None: below the horizon, already known
                if end is not None:
                    trigger = join(trigger, end)
                    start = join(start, end)
        complete(b, s, cb, trigger)
        if not b % _FORGET_EVERY:
            hb.forget(hb.horizon(), comp, pos)
    stats["candidates"] = stats.get("candidates", 0) + len(c_former)
    stats["skipped_ordered"] = stats.get("skipped_ordered", 0) + skipped
    return added


def dep_label(stream: InstanceStream, x: int, y: int, distance: int, floor: int = 0, iterations: tuple = ()) -> int:
    """The strongest conflict kind over every instance pair the dep "``y`` waits for ``x``"
    (``distance`` iterations back, 0 for an ordinary dep) orders (each instance of ``y`` with
    each instance of ``x`` it waits on), at least ``floor``: the label ``verifyAntiDependence``
    expects of a memory dep.

    The walk finds a pair through one cell; the dep also orders other pairs (other
    iterations, other bytes) whose footprints may give a stronger kind.
    """
    best = floor
    dep = Dep(stream.names[x], loop_carried=distance > 0, distance=distance or 1, iterations=iterations)
    for b in stream.instances_of(y).tolist():
        for a in stream.targets_one(b, dep) if not iterations or stream.resolve_one(b, dep) >= 0 else ():
            best = conflict_kind(stream, a, b, best)
            if best == EdgeKind.FLOW:
                return best
    return best


@dataclass(frozen=True, slots=True)
class AntiDeps(Pass):
    """Add the anti (WAR), output (WAW) and read-after-write-through-reuse (Flow) deps.

    Contract
        requires: no virtual tensor; same-tensor RAW already ordered (``build-fdeps``) unless
        ``analyses`` has ``raw``.
        guarantees: existing deps kept; with every analysis and no filter, every pair of
        conflicting instances is ordered; edges point from later to earlier and are merged by
        max; a loop-carried edge waits as many iterations back as the nearest pair it orders;
        an edge added only for a conservative bucket (DRAM bins, ``alias=batch``) is counted in
        ``conservative_bin`` / ``conservative_alias``, every other one joins a pair that
        shares a byte one of them writes.
    """

    name: ClassVar[str] = "anti-deps"
    memories: frozenset[str] = field(default=frozenset({"sbuf", "psum", "dram"}))
    roles: frozenset[str] = field(default=frozenset({"input", "output", "internal"}))
    spaces: frozenset[str] = field(default=frozenset({"local", "shared"}))
    analyses: frozenset[str] = field(default=frozenset({"war", "waw", "raw-reuse"}))
    early_stop: str = "component"
    skip_ordered: bool = True
    dram: str = "bytes"
    restrict: bool = True
    """Restrict each added dep to the iterations where it was needed (``x-iterations``)."""
    alias: str = "exact"
    """DRAM alias groups: ``exact`` (one tensor's accesses by their bytes, different tensors of a
    group always; :func:`alias_candidates`) or ``batch`` (one cell per group, as the seed; the
    seed's modes ``early_stop=matmul`` / ``dram=bins`` always batch)."""

    def __post_init__(self) -> None:
        for option, allowed in (("memories", {"sbuf", "psum", "dram"}), ("roles", {"input", "output", "internal"}),
                                ("spaces", {"local", "shared"}), ("analyses", {"war", "waw", "raw-reuse", "raw"})):
            bad = set(getattr(self, option)) - allowed
            if bad:
                raise ValueError(f"{option}: unknown {sorted(bad)}; expected a subset of {sorted(allowed)}")
        if self.early_stop not in ("component", "matmul"):
            raise ValueError(f"early_stop must be 'component' or 'matmul', got {self.early_stop!r}")
        if self.dram not in ("bytes", "bins"):
            raise ValueError(f"dram must be 'bytes' or 'bins', got {self.dram!r}")
        if self.alias not in ("exact", "batch"):
            raise ValueError(f"alias must be 'exact' or 'batch', got {self.alias!r}")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        for tname, tensor in program.tensors.items():
            if tensor.is_virtual:
                raise ProgramError(f"tensors.{tname}", "anti-deps needs placed tensors; run the 'alloc' pass first")
        stream = ctx.stream(program)
        table = ctx.deps(program)
        stats = ctx.stats.setdefault(self.name, {})
        where: dict | None = {} if stream.has_loops and self.restrict else None
        added = anti_dependency_edges(stream, table, memories=self.memories, roles=self.roles, spaces=self.spaces,
                                      analyses=self.analyses, early_stop=self.early_stop,
                                      skip_ordered=self.skip_ordered, dram=self.dram, stats=stats, where=where,
                                      alias=self.alias)
        names = stream.names
        boxes = restrictions(stream, where) if where else {}
        relabel = [key for key, (kind, bits) in added.items() if kind < EdgeKind.FLOW or not bits & EXACT]
        existing = _existing_kinds(table, stream.m, relabel)
        # a flat program's dep orders one pair: its label is that pair's kind, for all at once
        flat_kinds = None if stream.has_loops else pair_kinds(stream, np.asarray([k[0] for k in relabel], np.int64),
                                                                  np.asarray([k[1] for k in relabel], np.int64))
        if flat_kinds is not None:
            flat_kinds = dict(zip(relabel, flat_kinds.tolist()))
        rows = []
        for (x, y, d), (kind, bits) in added.items():
            for box in boxes.get((x, y, d), ((),)):
                label = kind
                if kind < EdgeKind.FLOW or not bits & EXACT:
                    # label from the bytes of every pair the dep orders; none (a conservative
                    # bucket): an order, not a dependence
                    pairs = flat_kinds[(x, y, d)] if flat_kinds is not None else \
                        dep_label(stream, x, y, d, iterations=box)
                    label = EdgeKind(max(existing.get((x, y, d), 0), pairs, EdgeKind.ORDERED))
                    if label != kind:
                        ctx.count(self.name, "relabelled")
                rows.append((y, x, int(label), d, box))
                ctx.count(self.name, {EdgeKind.FLOW: "added_flow", EdgeKind.OUTPUT: "added_output",
                                      EdgeKind.ANTI: "added_anti", EdgeKind.ORDERED: "added_ordered"}[label])
                if box:
                    ctx.count(self.name, "restricted")
            if d:
                ctx.count(self.name, "added_loop_carried")
            if not bits & EXACT:
                ctx.count(self.name, "conservative_bin" if bits & BIN else "conservative_alias")
            if ctx.record:
                for bit, rule in RULES.items():
                    if bits & bit and not (bit in (BIN, ALIAS) and bits & EXACT):
                        ctx.note(names[y], names[x], d > 0, rule)
        rows.sort(key=lambda r: (r[0], r[3] > 0, r[1], r[3]))
        merged = table.concat(DepTable.build(rows)).merged() if rows else table
        return with_deps(program, merged, stream)


def _existing_kinds(table, m: int, keys: list[tuple[int, int, int]]) -> dict[tuple[int, int, int], int]:
    """The strongest kind among ``table``'s deps without iteration ranges for each
    ``(former, waiter, distance)`` of ``keys`` that has one (one sort, no walk of the table)."""
    if not keys or not len(table):
        return {}
    plain = table.when < 0
    span = int(table.distance.max()) + 1 if len(table) else 1
    have = ((table.waiter[plain].astype(np.int64) * m + table.former[plain]) * span + table.distance[plain])
    kinds = table.kind[plain].astype(np.int64)
    if not len(have):
        return {}
    order = np.lexsort((kinds, have))
    have, kinds = have[order], kinds[order]
    x, y, d = (np.asarray(col, np.int64) for col in zip(*keys))
    want = (y * m + x) * span + np.minimum(d, span - 1)
    at = np.searchsorted(have, want, side="right") - 1  # the last row of the key: the strongest kind
    found = (at >= 0) & (have[np.maximum(at, 0)] == want) & (d < span)
    return {key: int(k) for key, k, ok in zip(keys, kinds[np.maximum(at, 0)].tolist(), found.tolist()) if ok}
