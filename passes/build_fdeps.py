"""``build-fdeps``: the flow (RAW) graph and the structural chains (seed pass 74).

The seed builds, per logical memory location, the *read-after-last-write* chain
(``make_linear_dependencies``), refines it for SBUF reductions and PSUM accumulation groups
(the only place it tests exact overlap), adds the structural chains (loop bodies, RNG state per
engine, accumulator groups), and falls back to a trivial program-order chain when the function
has "too many spills".  Every edge is Flow.

What this reimplementation does (per instance of the instance stream, folded into
instruction deps by :func:`neuronsim.machine.order.conflicts.fold_distance`: an order between instances of
different iterations becomes a loop-carried dep whose ``x-distance`` is the exact number of
iterations between them, the smallest one over every pair the dep orders):

* **RAW chain** - for every byte an instance reads, a Flow edge to the last earlier instance
  that wrote that byte *of the same tensor* (logical identity, as the seed).  Unlike the seed's
  tensor-granular chain it is exact per byte, so a read of one tile never links to a writer of
  another tile of the same tensor (precision) and never misses the writer it reads from
  (the seed links only the most recent writer of the whole location).
* **reduction sequence** (SBUF) - a ``tensor_tensor`` write with attr ``group`` links to the
  last earlier write of the same group to each byte it writes.  The seed links consecutive
  same-group writes that are superset-or-overlapping; the byte map is that exact overlap test
  (:func:`neuronsim.machine.model.geometry.overlap`) applied to the last writer of every byte, so interleaved
  streams sharing no byte stay apart *and* a stream interrupted by another still chains.
* **accumulation sequence** (PSUM) - an accumulating ``matmul`` (``accumulate`` true, or
  absent while it reads the PSUM tile it writes) links to the last earlier matmul write of
  each byte it writes, per ``group`` attr when given.
* **RNG state** - ``set_rand_state`` / ``random`` chain per engine (the state is per engine).
* **accumulator groups** - ``activation`` / ``tensor_tensor`` / ``tensor_reduce`` instances
  with the same ``group`` attr chain in program order (engines may differ).
* **loop barrier** (option ``loop_barrier``, off by default) - the loop-body ordering: for
  every loop, the first instruction of each sequencer in the body waits, loop-carried, for
  the last instruction of each engine in the body: iteration ``i+1`` starts after ``i`` ends.
  Off by default because it orders pairs that do not conflict.
* **opcode gates** (option ``opcodes``, on by default as in the seed; :mod:`neuronsim.machine.model.opcodes`) -
  a read by an instruction of opcode 41 ("not a real flow consumer", ``x-opcode``) gets no RAW
  edge (``make_linear_dependencies`` skips it), and an SBUF tensor whose first accessor in
  program order has opcode 10 or 23 gets no reduction sequence (``make_reduction_sequence``
  returns).  No op name maps to 10, 23 or 41, so only an ``x-opcode`` brings them into play.
  The first is unsound in our model (the read is real: the race checker reports it unless
  another dep orders it), the second is sound after ``anti-deps`` (which orders the writes
  WAW); ``opcodes=false`` turns both off.
* **dependencies among scheduling units** (option ``units``, off by default) - the seed's
  ``addDependenciesAmongSchedulingUnits``: a loop (scheduling unit) is written to wait for
  every sibling loop of its block (``x-unit-deps``, their names) that holds the former of a
  dep of one of its instructions, not loop-carried at that level.  Information for a
  scheduler of units as atoms (``list-schedule`` derives the same itself): it orders nothing
  the instruction deps do not.
* **spill guard** - when the program carries ``"x-too-many-spills": true`` (or option
  ``trivial``), nothing above is built: every instance waits for its program-order
  predecessor (a total order, trivially sound).
* **register deps** - the IR has no registers, so there are none to add.

Given deps are *replaced* (the seed rebuilds the graph) unless ``keep_given``.

Contract
    requires: a valid program (virtual tensors allowed: the analysis is logical).
    guarantees: only Flow edges; every non-structural edge joins two instances that touch a
    common byte of one tensor, the later reading it (RAW) or both writing it in a reduction /
    accumulation chain; every read of a byte written earlier *by the same tensor* is ordered
    after its last such writer (but for reads of an ``x-opcode`` 41 instruction while
    ``opcodes`` is on: the seed's quirk).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from neuronsim.machine.order.conflicts import iteration_boxes
from neuronsim.machine.order.deptable import DepTable
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.order.events import access_events, merge_pairs
from neuronsim.machine.ir.program import Loop, MemoryKind, Node, Program, frozen_mapping
from neuronsim.machine.model.opcodes import NOT_FLOW_CONSUMER, NOT_REDUCTION, opcode_of
from neuronsim.machine.order.splitmap import CellSpace, cell_bins
from neuronsim.machine.order.stream import NUM_SEQUENCERS, InstanceStream

from neuronsim.passes.pipeline import Pass, PassContext, PipelineState, edge_table

__all__ = ["BuildFdeps", "build_flow_edges", "min_distances", "restrictions", "RULES", "STRUCTURAL",
           "unit_dependencies", "with_unit_dependencies"]

RAW, REDUCTION, ACCUMULATION, RNG, GROUP, BARRIER, TRIVIAL = (1 << k for k in range(7))
#: Provenance names of the rule bits.
RULES = {RAW: "fdeps:raw", REDUCTION: "fdeps:reduction", ACCUMULATION: "fdeps:accumulation",
         RNG: "fdeps:rng", GROUP: "fdeps:group", BARRIER: "fdeps:loop-barrier", TRIVIAL: "fdeps:trivial"}
#: Rules that are orderings, not memory conflicts.
STRUCTURAL = frozenset({"fdeps:rng", "fdeps:group", "fdeps:loop-barrier", "fdeps:trivial"})

_GROUP_OPS = frozenset({"activation", "tensor_tensor", "tensor_reduce"})
_RNG_OPS = frozenset({"set_rand_state", "random"})

#: ``{(former instruction, waiter instruction, distance): rule bits}``; distance 0 is an
#: ordinary dep, ``d >= 1`` loop-carried ``d`` iterations back.
Edges = dict[tuple[int, int, int], int]


def _not_reductions(stream: InstanceStream) -> frozenset[int]:
    """Tensor ids whose first accessor (program order) has opcode 10 or 23: the seed's
    ``make_reduction_sequence`` builds nothing for them."""
    # the first instance of the first instruction comes first: per tensor, its first access slot
    # (slots are in document order), found with one sort instead of a walk of every access
    temps = stream.templates
    tensor = np.fromiter((ca.tensor for ca in temps), np.int64, len(temps))[stream.slot_t]
    tensors, first = np.unique(tensor, return_index=True)
    xs = stream.slot_x[first].tolist()
    return frozenset(t for t, x in zip(tensors.tolist(), xs) if opcode_of(stream.instrs[x]) in NOT_REDUCTION)


def _chain_recipes(stream: InstanceStream, reduction: bool, accumulation: bool, rng: bool,
                   groups: bool, opcodes: bool = True) -> dict[int, tuple]:
    """Per instruction that takes part in a chain: ``(writes, rng sequencer | None, group key |
    None)``, ``writes`` being ``((access, chain key, chain bit), ...)``.  A chain whose members
    all carry bit 0 (overwriting matmuls only) links nothing and is left out."""
    out: dict[int, tuple] = {}
    linking: set = set()
    gated = _not_reductions(stream) if reduction and opcodes else frozenset()
    for x, instr in enumerate(stream.instrs):
        op = instr.op
        writes = []
        if (reduction and op == "tensor_tensor" and "group" in instr.attrs) or (accumulation and op == "matmul"):
            accesses = stream.accesses(x)
            for ca in accesses:
                if not ca.is_write:
                    continue
                if op == "tensor_tensor" and ca.memory == MemoryKind.SBUF and ca.tensor not in gated:
                    writes.append((ca, ("reduction", ca.tensor, instr.attrs["group"]), REDUCTION))
                elif op == "matmul" and ca.memory == MemoryKind.PSUM:
                    accumulating = instr.attrs.get("accumulate")
                    if accumulating is None:  # inferred: it reads the PSUM tile it writes
                        accumulating = any(not p.is_write and p.tensor == ca.tensor for p in accesses)
                    # an overwriting matmul opens a group: it only becomes the last writer
                    writes.append((ca, ("accumulation", ca.tensor, instr.attrs.get("group")),
                                   ACCUMULATION if accumulating else 0))
            linking.update(key for _, key, bit in writes if bit)
        rng_seq = int(stream.seq_x[x]) if rng and op in _RNG_OPS else None
        gkey = None
        if groups and op in _GROUP_OPS and "group" in instr.attrs:
            gkey = (type(instr.attrs["group"]).__name__, instr.attrs["group"])
        if writes or rng_seq is not None or gkey is not None:
            out[x] = (writes, rng_seq, gkey)
    for x, (writes, rng_seq, gkey) in list(out.items()):
        writes = tuple(w for w in writes if w[1] in linking)
        if writes or rng_seq is not None or gkey is not None:
            out[x] = (writes, rng_seq, gkey)
        else:
            del out[x]
    return out


def _raw_pairs(stream: InstanceStream, opcodes: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``: instance ``b`` reads a byte whose last earlier writer *through the same
    tensor* is ``a`` (one sort of the access events by tensor, :mod:`neuronsim.machine.order.events`); with
    ``opcodes``, no ``b`` of opcode 41 (the seed's ``make_linear_dependencies``)."""
    ev = access_events(stream, "tensor", keep=False)  # asked for once: not cached on the stream
    n = len(ev)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    idx = np.arange(n)
    last_write = np.maximum.accumulate(np.where(ev.write, idx, -1))
    starts = np.ones(n, bool)
    starts[1:] = ev.seg[1:] != ev.seg[:-1]
    seg_first = np.maximum.accumulate(np.where(starts, idx, 0))
    # events of one segment are in program order, an instance's read before its write
    reads = np.flatnonzero(~ev.write & (last_write >= seg_first))
    if opcodes:
        skipped = np.fromiter((opcode_of(i) == NOT_FLOW_CONSUMER for i in stream.instrs), bool, stream.m)
        if skipped.any():
            reads = reads[~skipped[stream.instr[ev.inst[reads]]]]
    return ev.inst[last_write[reads]].astype(np.int64), ev.inst[reads].astype(np.int64)


def _chain_pairs(stream: InstanceStream, recipes: dict[int, tuple]) -> list[tuple[int, int, int]]:
    """``(a, b, bit)`` of the reduction / accumulation / RNG / group chains: a walk over the
    instances of the instructions that take part in one (few, in real kernels)."""
    if not recipes:
        return []
    ids = np.sort(np.concatenate([stream.instances_of(x) for x in recipes])).tolist()
    instr = stream.instr
    cells = CellSpace(stream.masks(), cell_bins(stream.spec), -1)
    pieces, footprint_at = cells.pieces, stream.footprint_at
    rng_last: dict[int, int] = {}
    group_last: dict[tuple[str, object], int] = {}
    out: list[tuple[int, int, int]] = []
    for b in ids:
        writes, rng_seq, gkey = recipes[int(instr[b])]
        for ca, chain_key, bit in writes:
            mask, byteset = footprint_at(ca, b)
            for smap, lo, hi in pieces(chain_key, ca.space, mask, byteset):
                i, j = smap.span(lo, hi)
                values = smap.values
                if bit:
                    out.extend((w, b, bit) for w in set(values[i:j]) if w >= 0 and w != b)
                values[i:j] = [b] * (j - i)
        if rng_seq is not None:
            last = rng_last.get(rng_seq)
            if last is not None:
                out.append((last, b, RNG))
            rng_last[rng_seq] = b
        if gkey is not None:
            last = group_last.get(gkey)
            if last is not None:
                out.append((last, b, GROUP))
            group_last[gkey] = b
    return out


def queue_ordered(stream: InstanceStream, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair (``a`` before ``b``): do rules 1-3 alone order ``a``'s completion before the
    start of ``b``'s transfer?  Only a transfer ``b`` can be ordered so after an instance of
    another component: ``a``, a compute instruction of sequencer ``s``, completes before ``s``
    issues any later transfer ``t`` (rule 1), and a transfer starts after the earlier ones of
    its queue complete (rule 3); so ``a`` is ordered iff some transfer of ``b``'s queue up to
    ``b`` was issued by ``s`` after ``a``.  (Same-queue pairs are ordered by rule 3 itself.)"""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    out = np.zeros(len(a), bool)
    comp = stream.comp
    dma = np.flatnonzero(comp >= NUM_SEQUENCERS)
    if not len(dma) or not len(a):
        return out
    same = comp[a] == comp[b]
    out |= same & (comp[b] >= NUM_SEQUENCERS)
    # latest[k, s]: the last transfer issued by sequencer s on the queue of dma[k], up to dma[k]
    order = np.lexsort((dma, comp[dma]))
    queue_of, seq_of = comp[dma][order], stream.seq[dma][order]
    latest = np.full((len(dma), NUM_SEQUENCERS), -1, np.int64)
    starts = np.ones(len(dma), bool)
    starts[1:] = queue_of[1:] != queue_of[:-1]
    group = np.cumsum(starts) - 1
    for s in range(NUM_SEQUENCERS):
        mine = np.where(seq_of == s, dma[order], -1)
        # running maximum within each queue: offset by the queue so earlier queues never leak in
        shifted = np.where(mine >= 0, mine + group * len(stream), -1)
        running = np.maximum.accumulate(shifted)
        latest[:, s] = np.where(running >= group * len(stream), running - group * len(stream), -1)
    row_of = np.full(len(stream), -1, np.int64)
    row_of[dma[order]] = np.arange(len(dma))
    rows = row_of[b]
    check = (rows >= 0) & (comp[a] < NUM_SEQUENCERS) & ~same
    k = np.flatnonzero(check)
    out[k] = a[k] < latest[rows[k], stream.seq[a[k]]]
    return out


def flow_pairs(stream: InstanceStream, *, reduction: bool = True, accumulation: bool = True, rng: bool = True,
               groups: bool = True, opcodes: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Instance pairs ``(a, b, rule bits)``, ``a`` before ``b``, each pair once, sorted by
    ``(b, a)``: every order the flow rules give (see the module doc), but none that rules 1-3
    already give (:func:`queue_ordered`: two transfers of one queue, or a transfer whose queue
    is behind a transfer its former's sequencer issued after the former)."""
    a, b = _raw_pairs(stream, opcodes)
    bits = np.full(len(a), RAW, np.int64)
    chained = _chain_pairs(stream, _chain_recipes(stream, reduction, accumulation, rng, groups, opcodes))
    if chained:
        ca, cb, cbits = (np.asarray(col, np.int64) for col in zip(*chained))
        a, b, bits = np.concatenate([a, ca]), np.concatenate([b, cb]), np.concatenate([bits, cbits])
    keep = ~queue_ordered(stream, a, b)
    a, b, bits = a[keep], b[keep], bits[keep]
    key, merged = merge_pairs(b * len(stream) + a, bits)
    return key % len(stream), key // len(stream), merged


def fold_distances(stream: InstanceStream, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`neuronsim.machine.order.conflicts.fold_distance` of every pair, vectorised."""
    if not stream.has_loops or not len(a):
        return np.zeros(len(a), np.int64)
    depth = max(len(t) for t in stream.trips)
    flat = np.zeros((len(stream), depth + 1), np.int64)  # flat[i, c]: index over i's first c loops
    for x, trips in enumerate(stream.trips):
        if trips:
            ids, digits = stream.instances_of(x), stream.digits_of(x)
            for c, trip in enumerate(trips, 1):
                flat[ids, c] = flat[ids, c - 1] * trip + digits[:, c - 1]
    x, y = stream.instr[a].astype(np.int64), stream.instr[b].astype(np.int64)
    pair, inverse = np.unique(x * stream.m + y, return_inverse=True)
    common = np.fromiter((stream.common(p // stream.m, p % stream.m) for p in pair.tolist()), np.int64, len(pair))
    c = common[inverse]
    return flat[b, c] - flat[a, c]


def build_flow_edges(stream: InstanceStream, *, reduction: bool = True, accumulation: bool = True, rng: bool = True,
                     groups: bool = True, loop_barrier: bool = False, trivial: bool = False,
                     where: dict[tuple[int, int, int], list[int]] | None = None, opcodes: bool = True) -> Edges:
    """Flow edges over instruction ids (see :data:`Edges`), one per instance order found.

    ``where``, when given, collects for each edge of a program with loops the waiter
    instances it was found at."""
    if trivial:
        a = np.arange(len(stream) - 1, dtype=np.int64)
        b, bits = a + 1, np.full(len(a), TRIVIAL, np.int64)
    else:
        a, b, bits = flow_pairs(stream, reduction=reduction, accumulation=accumulation, rng=rng, groups=groups,
                                opcodes=opcodes)
    d = fold_distances(stream, a, b)
    x, y = stream.instr[a].astype(np.int64), stream.instr[b].astype(np.int64)
    edges: Edges = {}
    for key, bit in zip(zip(x.tolist(), y.tolist(), d.tolist()), bits.tolist()):
        edges[key] = edges.get(key, 0) | bit
    if where is not None and stream.has_loops:
        for key, waiter in zip(zip(x.tolist(), y.tolist(), d.tolist()), b.tolist()):
            where.setdefault(key, []).append(waiter)
    if loop_barrier:
        _loop_barriers(stream, edges)
        if where is not None:  # a barrier orders every iteration
            for key, bits_ in edges.items():
                if bits_ & BARRIER:
                    where.pop(key, None)
    return edges


def min_distances(edges: Edges, where: dict[tuple[int, int, int], list[int]] | None = None) -> Edges:
    """Loop-carried edges of one instruction pair merged by distance.

    Without ``where`` (a program without loops, or no restriction): one edge per pair at the
    smallest distance found, which orders the pairs further back too (one instruction's
    instances complete in order).  With ``where`` (waiter instances per edge): one edge per
    distance, each kept only at the waiter instances that no nearer edge of the pair already
    covers, so that every wait is on the very instance a conflict names (``where`` is updated
    in place)."""
    out: Edges = {}
    if where is not None:
        covered: dict[tuple[int, int], set[int]] = {}
        for key in sorted(edges, key=lambda k: (k[0], k[1], k[2])):
            x, y, d = key
            if not d:
                out[key] = edges[key]
                continue
            if key not in where:  # a structural edge (loop barrier): every iteration
                out[key] = edges[key]
                continue
            seen = covered.setdefault((x, y), set())
            mine = [b for b in where[key] if b not in seen]
            if not mine:
                del where[key]
                continue
            seen.update(mine)
            where[key] = mine
            out[key] = edges[key]
        return out
    nearest: dict[tuple[int, int], int] = {}
    for (x, y, d), bits in edges.items():
        if not d:
            out[(x, y, 0)] = out.get((x, y, 0), 0) | bits
        elif d < nearest.get((x, y), 1 << 62):
            nearest[(x, y)] = d
    carried_bits: dict[tuple[int, int], int] = {}
    for (x, y, d), bits in edges.items():
        if d:
            carried_bits[(x, y)] = carried_bits.get((x, y), 0) | bits
    for (x, y), d in nearest.items():
        out[(x, y, d)] = carried_bits[(x, y)]
    return out


def restrictions(stream: InstanceStream, where: dict[tuple[int, int, int], list[int]]) -> dict:
    """``{edge: [x-iterations ranges, ...]}``: each edge restricted to the iteration boxes of
    the waiter instances it was found at (a dep that applied everywhere would order pairs
    that do not conflict, and the reduction could not tell)."""
    out = {}
    for key, instances in where.items():
        if stream.loops_of[key[1]]:
            boxes = iteration_boxes(stream, key[1], instances)
            if boxes is not None and boxes != [()]:
                out[key] = boxes
    return out


def _loop_barriers(stream: InstanceStream, edges: Edges) -> None:
    """Iteration ``i+1`` of every loop waits for iteration ``i`` (see the module doc)."""
    members: dict[int, list[int]] = {}
    for x, loops in enumerate(stream.loops_of):
        for loop in loops:
            members.setdefault(id(loop), []).append(x)
    for xids in members.values():
        first_on_seq: dict[int, int] = {}
        last_on_comp: dict[int, int] = {}
        for x in xids:
            first_on_seq.setdefault(int(stream.seq_x[x]), x)
            last_on_comp[int(stream.comp_x[x])] = x
        for waiter in first_on_seq.values():
            for former in last_on_comp.values():
                key = (former, waiter, 1)
                edges[key] = edges.get(key, 0) | BARRIER


@dataclass(frozen=True, slots=True)
class BuildFdeps(Pass):
    """Build the Flow graph: RAW chains, reduction / accumulation refinements, structural chains.

    Contract
        requires: a valid program (virtual tensors allowed: the analysis is logical).
        guarantees: deps are replaced (kept too with ``keep_given``) by Flow edges only; every
        read of a byte is ordered after the last earlier write of that byte *through the same
        tensor* (with ``opcodes``, not a read of an ``x-opcode`` 41 instruction: the seed's
        quirk); every non-structural edge joins two instances sharing a byte of one tensor;
        a loop-carried edge waits exactly as many iterations back as the nearest pair it
        orders.
    """

    name: ClassVar[str] = "build-fdeps"
    keep_given: bool = False
    reduction: bool = True
    accumulation: bool = True
    rng: bool = True
    groups: bool = True
    loop_barrier: bool = False
    trivial: bool = False
    restrict: bool = True
    """Restrict each dep to the iterations where its pairs were found (``x-iterations``)."""
    opcodes: bool = True
    """The seed's opcode gates (op-41 readers skipped, op-10/23 first accessors)."""
    units: bool = False
    """Write the order among scheduling units (``x-unit-deps`` on loops)."""

    def run(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        built = self._build(state, ctx)
        if not self.units:
            return built
        program = built.program
        ctx.count(self.name, "unit-deps", sum(len(v) for v in unit_dependencies(program).values()))
        return built.with_structure(with_unit_dependencies(program))

    def _build(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        stream = state.stream
        trivial = self.trivial or state.structure.extras.get("x-too-many-spills") is True
        if stream.has_loops:
            table = self._loop_table(stream, trivial, ctx)
        else:  # instance = instruction: the table straight from the pair arrays
            if trivial:
                a = np.arange(len(stream) - 1, dtype=np.int64)
                b, bits = a + 1, np.full(len(a), TRIVIAL, np.int64)
            else:
                a, b, bits = flow_pairs(stream, reduction=self.reduction, accumulation=self.accumulation,
                                        rng=self.rng, groups=self.groups, opcodes=self.opcodes)
            self._note(ctx, stream, zip(a.tolist(), b.tolist(), [0] * len(a), bits.tolist()) if ctx.record else (),
                       *np.unique(bits, return_counts=True))
            table = DepTable(b.astype(np.int32), a.astype(np.int32), np.full(len(a), int(EdgeKind.FLOW), np.int8),
                             np.zeros(len(a), np.int32), np.full(len(a), -1, np.int32))
        if trivial:
            ctx.count(self.name, "spill_guard")
        if self.keep_given:
            table = state.deps.concat(table).merged()
        return state.with_deps(table)

    def _loop_table(self, stream: InstanceStream, trivial: bool, ctx: PassContext) -> DepTable:
        where: dict | None = {} if self.restrict and not trivial else None
        found = build_flow_edges(stream, reduction=self.reduction, accumulation=self.accumulation, rng=self.rng,
                                 groups=self.groups, loop_barrier=self.loop_barrier, trivial=trivial, where=where,
                                 opcodes=self.opcodes)
        edges = min_distances(found, where)
        counts = Counter(edges.values())
        self._note(ctx, stream, ((x, y, d, bits) for (x, y, d), bits in edges.items()) if ctx.record else (),
                   list(counts), list(counts.values()))
        ranges = restrictions(stream, where) if where else None
        if ranges:
            ctx.count(self.name, "restricted", len(ranges))
        return edge_table({key: EdgeKind.FLOW for key in edges}, ranges)

    def _note(self, ctx: PassContext, stream: InstanceStream, edges, bit_values, bit_counts) -> None:
        """Provenance of every edge (when recorded) and the counts per rule."""
        names = stream.names
        for x, y, d, bits in edges:
            for bit, rule in RULES.items():
                if bits & bit:
                    ctx.note(names[y], names[x], d > 0, rule)
        total = 0
        for bits, n in zip(list(bit_values), list(bit_counts)):
            total += int(n)
            for bit, rule in RULES.items():
                if int(bits) & bit:
                    ctx.count(self.name, rule.split(":")[1], int(n))
        ctx.count(self.name, "edges", total)


def _names_in(node: Node) -> frozenset[str]:
    if isinstance(node, Loop):
        return frozenset(name for n in node.body for name in _names_in(n))
    return frozenset({node.name})


def unit_dependencies(program: Program) -> dict[str, tuple[str, ...]]:
    """``{loop: sibling loops it waits for}``: the seed's ``addDependenciesAmongSchedulingUnits``.

    In every block (the body, a loop body), loop ``U`` waits for a sibling loop ``V`` when an
    instruction inside ``U`` has a dep on one inside ``V`` that is not loop-carried at this
    level (a loop-carried dep between two siblings names the previous iteration of a loop
    around both, which the order of the siblings does not decide).  Earlier siblings only, in
    block order; loops with none are left out.

    >>> from neuronsim.machine.ir.program import Dep, Instruction, Loop, Program
    >>> a = Loop("a", 2, (Instruction("w", "dve", "memset"),))
    >>> b = Loop("b", 2, (Instruction("r", "act", "op", deps=(Dep("w"),)),))
    >>> unit_dependencies(Program({}, (a, b, Loop("c", 1, (Instruction("z", "pe", "op"),)))))
    {'b': ('a',)}
    """
    out: dict[str, tuple[str, ...]] = {}
    blocks = [program.body] + [node.body for node, _ in program.walk() if isinstance(node, Loop)]
    for block in blocks:
        owner: dict[str, int] = {}
        for k, node in enumerate(block):
            for name in _names_in(node):
                owner[name] = k
        for k, node in enumerate(block):
            if not isinstance(node, Loop):
                continue
            waits: set[int] = set()
            for inst, _ in Program({}, (node,)).instructions():
                for dep in inst.deps:
                    j = owner.get(dep.on)
                    if j is not None and j < k and isinstance(block[j], Loop) and not dep.loop_carried:
                        waits.add(j)
            if waits:
                out[node.name] = tuple(block[j].name for j in sorted(waits))
    return out


def with_unit_dependencies(program: Program) -> Program:
    """The program with :func:`unit_dependencies` written as ``x-unit-deps`` on its loops
    (replacing any given)."""
    units = unit_dependencies(program)

    def rebuild(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
        out: list[Node] = []
        for node in nodes:
            if isinstance(node, Loop):
                extras = {k: v for k, v in node.extras.items() if k != "x-unit-deps"}
                if node.name in units:
                    extras["x-unit-deps"] = list(units[node.name])
                node = Loop(node.name, node.trip_count, rebuild(node.body), frozen_mapping(extras))
            out.append(node)
        return tuple(out)

    return program.with_body(rebuild(program.body))
