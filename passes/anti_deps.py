"""``anti-deps``: the anti (WAR) and output (WAW) graph over physical storage (seed pass 76).

Anti and output dependences exist only because storage is reused, so this pass works on
*physical* bytes after allocation.  As the seed, it buckets every access into split interval
maps (:mod:`neuronsim.machine.order.splitmap`): SBUF by partition x byte, PSUM per bank, DRAM per bin of
``dram_bin_bytes``, and one batch per DRAM alias group; two accesses conflict iff they share a
cell.  Here DRAM is cut by bytes and alias groups are exact by default (``alias=exact``: one
tensor's accesses by their bytes, different tensors of a group always, as the spec and the race
checker have it; :func:`neuronsim.passes.anti_candidates.walk_candidates`); ``alias=batch`` and
``dram=bins`` are the seed's.  Per cell it keeps what the seed's reverse program-order walk visits: the last write
and the reads since it.  For each instance, in program order, the walk over its cells gives:

* a write: Output (3) to the cell's last write, Anti (2) to every read since it (reads
  before that write are ordered before it already, by induction);
* a read of a byte last written through a *different* tensor sharing the storage:
  Flow (4).  The seed leaves this read-after-write-through-reuse to neither builder
  (``build-fdeps`` links by logical tensor, this pass only does WAR/WAW); issue #5 item 6.
  Same-tensor RAW is ``build-fdeps``'s (``analyses`` ``raw`` adds it here too).

The **early stop** of the reverse walk: the seed stops at the first dep on the ``Matmult``
family (opcodes 7, 9, 95: ``matmul``, PE ``transpose``, or an ``x-opcode``), because PE
completes them in order.  Three modes:

* ``early_stop=component`` (default): applied to every completion component: among reads
  since the last write only the latest per sequencer (non-DMA) or per queue (DMA) is kept,
  which orders the earlier ones too (rules 1 and 3);
* ``early_stop=pe-order``: what PE order proves of the seed's stop: a PE matmul / transpose
  read replaces the earlier ones, every other read is kept (a write waits for the latest
  matmul read *and* for the reads of the other engines);
* ``early_stop=matmul``: the seed's literal walk (latest read first, stop after the first
  Matmult-family read, and then no Output dep on the last write).  **Unsound**: reads by
  several engines between two writes are not ordered among themselves, so a write ordered
  after a matmul read is left racing with an ACT read of the same bucket before it (tested).
  For comparison with the seed only.

**Edge direction**: later waits for earlier ("A waits for B", :mod:`neuronsim.machine.ir.edges`).
**Loop-carried branch**: an instance order is folded into a dep
(:func:`neuronsim.machine.order.conflicts.fold_distance`); when the earlier instance is in an earlier
iteration of the loops enclosing both (the common-loop-nest test), the dep is loop-carried,
``d`` iterations back (``x-distance``), ``d`` being the nearest conflicting iteration: with a
buffer rotating over ``n`` slots (``x-rotate``) a slot is rewritten ``n`` iterations later, and
the dep waits exactly that far back.  The seed adds loop-carried deps only between different
memory locations; here every such conflict gets one, since nothing else orders a buffer
reused across iterations.
**Max-merge**: kinds merge into the one edge per pair by max (:class:`~neuronsim.machine.ir.edges.DepGraph`),
so a WAR pair already linked by Flow stays Flow.  **Labels**: an added Anti / Output dep is
labelled with the strongest kind over *every* instance pair it orders (:func:`dep_label`), as
``verifyAntiDependence`` recomputes it: inside loops, or when bytes were rewritten in between,
the pair the walk found is not the only one the dep orders.  A conservative-only dep (see
below) whose pairs share no byte is labelled ``ordered``.

``skip_ordered`` (default on): vector clocks (:mod:`neuronsim.machine.order.hb`) over the deps present so far
skip a candidate already ordered before the instance by the rules and existing deps, so an edge
is added only when needed.  With it off, every candidate the walk finds gets an edge.

Filters (constructor options, the seed's four sets): ``memories`` (sbuf, psum, dram),
``roles`` of DRAM tensors, ``spaces`` (``local``; ``shared`` = alias groups and DRAM placed by
``alloc-shared-dram``), ``analyses`` (war, waw, raw-reuse, raw).  Accesses filtered out are not
bucketed.  The seed's second registration runs after shared-DRAM allocation:
``anti-deps{spaces=local},alloc-shared-dram,anti-deps{spaces=shared}``.

Conservative edges: ``dram=bins`` buckets a DRAM access by the bins of its whole tensor (the
seed), and with ``alias=batch`` (the seed, and always in the walk modes ``early_stop=pe-order``
/ ``matmul`` / ``dram=bins``) an alias group is one batch, so two accesses there may share a
cell without sharing a byte: the seed's batch orders accesses of one alias tensor that share no
byte, which cost up to one wait above the minimum on 4 of 1,000 generated loop programs.  Edges
added only for such pairs are counted as ``conservative_bin`` / ``conservative_alias``; every
other memory edge joins a pair that truly conflicts.

The candidate formers of every instance come from :mod:`neuronsim.passes.anti_candidates` (pure
functions: the access events in the default mode, the seed's walk in its modes and for the
accesses of alias groups); this module keeps the ones vector clocks say are needed, labels and counts them.

Contract
    requires: no virtual tensors; same-tensor RAW already ordered (``build-fdeps``) unless
    ``analyses`` has ``raw``.
    guarantees (all analyses, no filter): every pair of conflicting instances is ordered
    under the resulting deps; existing deps are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from neuronsim.machine.order.conflicts import conflict_kind, conflicts, fold_distance, pair_kinds
from neuronsim.machine.order.deptable import DepTable
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.order.hb import HappensBefore, active_sequencers
from neuronsim.machine.ir.program import Dep
from neuronsim.machine.order.stream import InstanceStream

from neuronsim.passes.anti_candidates import ALIAS, ANTI, BIN, EXACT, FLOW_REUSE, FLOW_SAME, OUTPUT, event_candidates, \
    walk_candidates
from neuronsim.passes.build_fdeps import restrictions
from neuronsim.passes.pipeline import Pass, PassContext, PipelineState

__all__ = ["AntiDeps", "anti_dependency_edges", "dep_label", "EARLY_STOPS", "validate_options"]

#: ``early_stop`` modes: the default, what PE order proves, the seed's literal (unsound) walk.
EARLY_STOPS = ("component", "pe-order", "matmul")

RULES = {FLOW_REUSE: "anti:raw-reuse", FLOW_SAME: "anti:raw", ANTI: "anti:war", OUTPUT: "anti:waw",
         BIN: "anti:dram-bin", ALIAS: "anti:alias"}
_FORGET_EVERY = 4096
_CHUNK = 1 << 16  # instances walked per chunk of candidate and wait lists

#: Each option's values: a set option takes a subset, the others one value.
SET_OPTIONS = {"memories": ("sbuf", "psum", "dram"), "roles": ("input", "output", "internal"),
               "spaces": ("local", "shared"), "analyses": ("war", "waw", "raw-reuse", "raw")}
CHOICES = {"early_stop": EARLY_STOPS, "dram": ("bytes", "bins"), "alias": ("exact", "batch")}


def validate_options(**options) -> None:
    """The one check of the pass's options and variants (the pass and
    :func:`anti_dependency_edges` call it).

    >>> validate_options(early_stop="pe-order", memories={"sbuf"})
    >>> validate_options(dram="cells")
    Traceback (most recent call last):
    ValueError: dram must be one of bytes|bins, got 'cells'
    """
    for option, value in options.items():
        if option in SET_OPTIONS:
            bad = set(value) - set(SET_OPTIONS[option])
            if bad:
                raise ValueError(f"{option}: unknown {sorted(bad)}; expected a subset of {sorted(SET_OPTIONS[option])}")
        elif value not in CHOICES[option]:
            raise ValueError(f"{option} must be one of {'|'.join(CHOICES[option])}, got {value!r}")


#: ``{(former, waiter, distance): (kind, rule bits)}`` over instruction ids.
AntiEdges = dict[tuple[int, int, int], tuple[EdgeKind, int]]


def anti_dependency_edges(stream: InstanceStream, table, *, memories=frozenset({"sbuf", "psum", "dram"}),
                          roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                          analyses=frozenset({"war", "waw", "raw-reuse"}), early_stop: str = "component",
                          skip_ordered: bool = True, dram: str = "bytes", stats: dict[str, int] | None = None,
                          where: dict[tuple[int, int, int], list[int]] | None = None,
                          alias: str = "exact") -> AntiEdges:
    """New edges over instruction ids (see :data:`AntiEdges`); rule bits without
    :data:`EXACT` mark conservative-only edges.

    ``table`` (a :class:`~neuronsim.machine.order.deptable.DepTable`) holds the deps already present: they order
    instances for ``skip_ordered``.  With ``where`` (a dict), each edge is recorded with the
    waiter instances it was added at, for deps restricted to those iterations: an edge then
    orders nothing at the other instances of its waiter (the walk does not count on it there).
    Without it, an edge applies at every later instance of its waiter (the walk counts on it).

    The candidates come from :func:`event_candidates` in the default mode, from
    :func:`walk_candidates` otherwise (the same answer where both apply; tested).  ``alias``
    (``"exact"`` or the seed's ``"batch"``) says how DRAM alias groups are bucketed in the
    default mode; the seed's modes batch them as the seed.
    """
    validate_options(memories=memories, roles=roles, spaces=spaces, analyses=analyses, early_stop=early_stop,
                     dram=dram, alias=alias)
    stats = {} if stats is None else stats
    filters = dict(memories=memories, roles=roles, spaces=spaces, analyses=analyses)
    if early_stop == "component" and dram == "bytes":
        c_ptr, c_former, c_bits = event_candidates(stream, alias=alias, **filters)
    else:
        # the seed's modes batch alias groups, as the seed
        c_ptr, c_former, c_bits = walk_candidates(stream, early_stop=early_stop, dram=dram, alias="batch", **filters)
    given = stream.resolve(table)
    has_loops = stream.has_loops
    # The stream's per-instance columns read in place (a memoryview indexes about as fast as a
    # list and holds nothing: as lists they were ~50 B an instance, this pass's peak, section
    # 2.9 of the performance notes); candidates and waits go to lists a chunk at a time.
    instr = stream.columns("instr")[0] if has_loops else range(len(stream))  # flat: instance = instruction
    seq, comp, pos = stream.columns("seq", "comp", "pos")
    hb = HappensBefore(stream.spec.dma_queues)
    added: AntiEdges = {}
    nearest: dict[tuple[int, int, bool], int] = {}  # (x, y, carried) -> distance of the dep added
    # deps added so far, per waiter that has some (a dict: a list per instruction costs 64 B each)
    extra: dict[int, list[tuple[int, int]]] = {}
    walk = _Walk(stream=stream, instr=instr, seq=seq, comp=comp, pos=pos, hb=hb, added=added, nearest=nearest,
                 extra=extra, where=where, skip_ordered=skip_ordered, active=active_sequencers(stream.seq))
    skipped = 0
    n = len(stream)
    for b0 in range(0, n, _CHUNK):
        b1 = min(n, b0 + _CHUNK)
        cp, gp = c_ptr[b0:b1 + 1].tolist(), given.ptr[b0:b1 + 1].tolist()
        c_base, g_base = cp[0], gp[0]
        c_former_, c_bits_ = c_former[c_base:cp[-1]].tolist(), c_bits[c_base:cp[-1]].tolist()
        g_target = given.target[g_base:gp[-1]].tolist()
        skipped += _walk_chunk(walk, b0, b1, cp, c_former_, c_bits_, gp, g_target)
    stats["candidates"] = stats.get("candidates", 0) + len(c_former)
    stats["skipped_ordered"] = stats.get("skipped_ordered", 0) + skipped
    return added


@dataclass(frozen=True, slots=True)
class _Walk:
    """What the walk of :func:`anti_dependency_edges` carries from chunk to chunk: the stream's
    per-instance lists, the happens-before state, and the deps added so far (filled in place)."""

    stream: InstanceStream
    instr: Sequence[int]
    seq: Sequence[int]
    comp: Sequence[int]
    pos: Sequence[int]
    hb: HappensBefore
    added: AntiEdges
    nearest: dict[tuple[int, int, bool], int]
    extra: dict[int, list[tuple[int, int]]]
    where: dict[tuple[int, int, int], list[int]] | None
    skip_ordered: bool
    active: Callable[[int], list[int]]  # the sequencers still to issue at an instance (hb.active_sequencers)


def _walk_chunk(walk: _Walk, b0: int, b1: int, cp: list[int], c_former: list[int], c_bits: list[int], gp: list[int],
                g_target: list[int]) -> int:
    """The walk over instances ``b0 .. b1 - 1``: ``cp`` / ``gp`` their candidate and wait
    pointers, ``c_former`` / ``c_bits`` / ``g_target`` the rows between (indices relative to the
    chunk's first).  Returns the pairs it skipped as already ordered."""
    stream, instr, seq, comp, pos, hb = walk.stream, walk.instr, walk.seq, walk.comp, walk.pos, walk.hb
    added, nearest, extra, where, skip_ordered = walk.added, walk.nearest, walk.extra, walk.where, walk.skip_ordered
    skipped = 0
    has_loops = stream.has_loops
    trigger_of, complete, start_of, after = hb.trigger, hb.complete, hb.start_of, hb.after
    c_base, g_base = cp[0], gp[0]
    for b in range(b0, b1):
        y = instr[b]
        s = seq[b]
        j = b - b0
        trigger = trigger_of(s, g_target[gp[j] - g_base:gp[j + 1] - g_base])
        if y in extra and where is None:
            for x, d in extra[y]:
                t = stream.target_of(b, x, d) if has_loops else x
                if t >= 0:
                    trigger = after(trigger, t)
        cb = comp[b]
        lo, hi = cp[j] - c_base, cp[j + 1] - c_base
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
                kind = (EdgeKind.FLOW if bits & (FLOW_REUSE | FLOW_SAME)
                        else EdgeKind.OUTPUT if bits & OUTPUT else EdgeKind.ANTI)
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
                    extra.setdefault(y, []).append((x, d))
                old = added.get((x, y, d))
                added[(x, y, d)] = (kind, bits) if old is None else (max(old[0], kind), old[1] | bits)
                target = stream.target_of(b, x, d) if has_loops else x
                trigger, start = after(trigger, target), after(start, target)
        complete(b, s, cb, trigger)
        if not b % _FORGET_EVERY:
            hb.forget(hb.horizon(walk.active(b)), comp, pos)
    return skipped


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
    group always) or ``batch`` (one cell per group, as the seed; the walk modes
    ``early_stop=pe-order|matmul`` / ``dram=bins`` always batch)."""

    def __post_init__(self) -> None:
        validate_options(memories=self.memories, roles=self.roles, spaces=self.spaces, analyses=self.analyses,
                         early_stop=self.early_stop, dram=self.dram, alias=self.alias)

    def run(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        for tname, tensor in state.structure.tensors.items():
            if tensor.is_virtual:
                raise ProgramError(f"tensors.{tname}", "anti-deps needs placed tensors; run the 'alloc' pass first")
        stream, table = state.stream, state.deps
        stats = ctx.stats.setdefault(self.name, {})
        where: dict | None = {} if stream.has_loops and self.restrict else None
        added = anti_dependency_edges(stream, table, memories=self.memories, roles=self.roles, spaces=self.spaces,
                                      analyses=self.analyses, early_stop=self.early_stop,
                                      skip_ordered=self.skip_ordered, dram=self.dram, stats=stats, where=where,
                                      alias=self.alias)
        names = stream.names
        boxes = restrictions(stream, where) if where else {}
        # A Flow pair found through a true byte conflict gives its dep its label, unless the dep
        # is split into iteration boxes: then each box is labelled by the pairs inside it.
        def relabelled(key: tuple[int, int, int], kind: EdgeKind, bits: int) -> bool:
            return kind < EdgeKind.FLOW or not bits & EXACT or len(boxes.get(key, ())) > 1

        relabel = [key for key, (kind, bits) in added.items() if relabelled(key, kind, bits)]
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
                if relabelled((x, y, d), kind, bits):
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
        return state.with_deps(merged)


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
