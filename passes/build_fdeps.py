"""``build-fdeps``: the flow (RAW) graph and the structural chains (seed pass 74).

The seed builds, per logical memory location, the *read-after-last-write* chain
(``make_linear_dependencies``), refines it for SBUF reductions and PSUM accumulation groups
(the only place it tests exact overlap), adds the structural chains (loop bodies, RNG state per
engine, accumulator groups), and falls back to a trivial program-order chain when the function
has "too many spills".  Every edge is Flow.

What this reimplementation does (per instance of the instance stream, folded into
instruction deps by :func:`machine.conflicts.fold_distance`: an order between instances of
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
  (:func:`machine.geometry.overlap`) applied to the last writer of every byte, so interleaved
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
    after its last such writer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from machine.conflicts import fold_distance, iteration_boxes
from machine.deptable import with_deps
from machine.edges import EdgeKind
from machine.ir import MemoryKind, Program
from machine.splitmap import SBUF_BIN, CellSpace
from machine.stream import NUM_SEQUENCERS, InstanceStream

from passes.pipeline import Pass, PassContext, edge_table

__all__ = ["BuildFdeps", "build_flow_edges", "min_distances", "restrictions", "RULES", "STRUCTURAL"]

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


def bins_of(stream: InstanceStream) -> dict[str, int]:
    """Bin sizes of the cell space per memory (see :mod:`machine.splitmap`)."""
    spec = stream.spec
    return {"sbuf": SBUF_BIN, "psum": spec.psum_bank_bytes, "dram": spec.dram_bin_bytes}


def _recipe(stream: InstanceStream, x: int, cells: CellSpace, memo: dict, reduction: bool, accumulation: bool,
            rng: bool, groups: bool) -> tuple:
    """Per instruction, what the walk does: ``((is_write, pieces, access, chain key, chain bit),
    ...)``, the RNG sequencer (or None) and the accumulator-group key (or None).  ``pieces`` is
    the footprint cut into cells when it does not move with a loop, else None (cut per
    instance).  Cells are keyed by tensor: the chains are logical, per tensor (the seed's)."""
    instr = stream.instrs[x]
    accesses = stream.accesses(x)
    out = []
    for ca in accesses:
        cut = None
        if not ca.moves:
            cut = memo.get(id(ca))
            if cut is None:
                cut = memo[id(ca)] = cells.pieces(ca.tensor, ca.space, ca.mask, ca.bytes)
        chain_key, bit = None, 0
        if ca.is_write and reduction and ca.memory == MemoryKind.SBUF and instr.op == "tensor_tensor" \
                and "group" in instr.attrs:
            chain_key, bit = ("reduction", ca.tensor, instr.attrs["group"]), REDUCTION
        elif ca.is_write and accumulation and ca.memory == MemoryKind.PSUM and instr.op == "matmul":
            chain_key, bit = ("accumulation", ca.tensor, instr.attrs.get("group")), ACCUMULATION
            accumulating = instr.attrs.get("accumulate")
            if accumulating is None:  # inferred: it reads the PSUM tile it writes
                accumulating = any(not p.is_write and p.tensor == ca.tensor for p in accesses)
            if not accumulating:
                bit = 0  # an overwriting matmul opens a group: it only becomes the last writer
        out.append((ca.is_write, cut, ca, chain_key, bit))
    rng_seq = int(stream.seq_x[x]) if rng and instr.op in _RNG_OPS else None
    gkey = None
    if groups and instr.op in _GROUP_OPS and "group" in instr.attrs:
        gkey = (type(instr.attrs["group"]).__name__, instr.attrs["group"])
    return tuple(out), rng_seq, gkey


def build_flow_edges(stream: InstanceStream, *, reduction: bool = True, accumulation: bool = True, rng: bool = True,
                     groups: bool = True, loop_barrier: bool = False, trivial: bool = False,
                     where: dict[tuple[int, int, int], list[int]] | None = None) -> Edges:
    """Flow edges over instruction ids (see :data:`Edges`), one per instance order found.

    ``where``, when given, collects for each edge of a program with loops the waiter
    instances it was found at."""
    edges: Edges = {}
    instr = stream.instr.tolist()
    comp = stream.comp.tolist()
    has_loops = stream.has_loops

    def add(a: int, b: int, bits: int) -> None:
        key = (instr[a], instr[b], fold_distance(stream, a, b) if has_loops else 0)
        edges[key] = edges.get(key, 0) | bits
        if where is not None:
            where.setdefault(key, []).append(b)

    if trivial:
        for b in range(1, len(stream)):
            add(b - 1, b, TRIVIAL)
        return edges
    cells = CellSpace(stream.masks(), bins_of(stream), -1)
    pieces = cells.pieces
    memo: dict[int, list] = {}
    recipes = [_recipe(stream, x, cells, memo, reduction, accumulation, rng, groups) for x in range(stream.m)]
    rng_last: dict[int, int] = {}
    group_last: dict[tuple[str, object], int] = {}
    footprint_at = stream.footprint_at
    for b in range(len(stream)):
        accesses, rng_seq, gkey = recipes[instr[b]]
        formers: dict[int, int] = {}
        for is_write, cut, ca, chain_key, bit in accesses:
            if cut is None:
                mask, byteset = footprint_at(ca, b)
                cut = pieces(ca.tensor, ca.space, mask, byteset)
            if not is_write:
                for smap, lo, hi in cut:
                    i, j = smap.span(lo, hi)
                    values = smap.values
                    for k in range(i, j):
                        w = values[k]
                        if w >= 0 and w != b:
                            formers[w] = formers.get(w, 0) | RAW
                continue
            for smap, lo, hi in cut:
                i, j = smap.span(lo, hi)
                smap.values[i:j] = [b] * (j - i)
            if chain_key is not None:
                mask, byteset = footprint_at(ca, b)
                for smap, lo, hi in pieces(chain_key, ca.space, mask, byteset):
                    i, j = smap.span(lo, hi)
                    values = smap.values
                    if bit:
                        for k in range(i, j):
                            w = values[k]
                            if w >= 0 and w != b:
                                formers[w] = formers.get(w, 0) | bit
                    values[i:j] = [b] * (j - i)
        if rng_seq is not None:
            last = rng_last.get(rng_seq)
            if last is not None:
                formers[last] = formers.get(last, 0) | RNG
            rng_last[rng_seq] = b
        if gkey is not None:
            last = group_last.get(gkey)
            if last is not None:
                formers[last] = formers.get(last, 0) | GROUP
            group_last[gkey] = b
        if formers:
            cb = comp[b]
            if cb >= NUM_SEQUENCERS:  # rule 3 already orders a transfer after the earlier ones on its queue
                for a in [a for a in formers if comp[a] == cb]:
                    del formers[a]
            if has_loops:
                for a, bits in formers.items():
                    add(a, b, bits)
            else:
                y = instr[b]
                for a, bits in formers.items():
                    key = (instr[a], y, 0)
                    edges[key] = edges.get(key, 0) | bits
    if loop_barrier:
        _loop_barriers(stream, edges)
        if where is not None:  # a barrier orders every iteration
            for key, bits in edges.items():
                if bits & BARRIER:
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
        tensor*; every non-structural edge joins two instances sharing a byte of one tensor;
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

    def apply(self, program: Program, ctx: PassContext) -> Program:
        stream = ctx.stream(program)
        trivial = self.trivial or program.extras.get("x-too-many-spills") is True
        where: dict | None = {} if stream.has_loops and self.restrict and not trivial else None
        found = build_flow_edges(stream, reduction=self.reduction, accumulation=self.accumulation, rng=self.rng,
                                 groups=self.groups, loop_barrier=self.loop_barrier, trivial=trivial, where=where)
        edges = min_distances(found, where)
        names = stream.names
        if ctx.record:
            for (x, y, d), bits in edges.items():
                for bit, rule in RULES.items():
                    if bits & bit:
                        ctx.note(names[y], names[x], d > 0, rule)
        for bits, n in Counter(edges.values()).items():
            for bit, rule in RULES.items():
                if bits & bit:
                    ctx.count(self.name, rule.split(":")[1], n)
        ctx.count(self.name, "edges", len(edges))
        if trivial:
            ctx.count(self.name, "spill_guard")
        ranges = restrictions(stream, where) if where else None
        if ranges:
            ctx.count(self.name, "restricted", len(ranges))
        table = edge_table({key: EdgeKind.FLOW for key in edges}, ranges)
        if self.keep_given:
            table = ctx.deps(program).concat(table).merged()
        return with_deps(program, table, stream)
