"""``anti-deps``: the anti (WAR) and output (WAW) graph over physical storage (seed pass 76).

Anti and output dependences exist only because storage is reused, so this pass works on
*physical* bytes after allocation.  As the seed, it buckets every access into split interval
maps (:mod:`passes.analysis.bytemap`): SBUF by partition x byte, PSUM per bank, DRAM per bin of
``dram_bin_bytes``, and one batch per DRAM alias group; two accesses conflict iff they share a
cell.  Per cell it keeps what the seed's reverse program-order walk visits: the last write
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
(:meth:`~passes.analysis.instances.Stream.fold`); when the earlier instance is in an earlier iteration
of the loops enclosing both (the common-loop-nest test), the dep is loop-carried.  The seed
adds it only between different memory locations; here every such conflict gets one, since
nothing else orders a buffer reused across iterations.
**Max-merge**: kinds merge into the one edge per pair by max (:class:`~machine.edges.DepGraph`),
so a WAR pair already linked by Flow stays Flow.  **Labels**: an added Anti / Output dep is
labelled with the strongest kind over *every* instance pair it orders (:func:`dep_label`), as
``verifyAntiDependence`` recomputes it: inside loops, or when bytes were rewritten in between,
the pair the walk found is not the only one the dep orders.  A conservative-only dep (see
below) whose pairs share no byte is labelled ``ordered``.

``skip_ordered`` (default on): vector clocks (:mod:`passes.analysis.clocks`) over the deps present so far
skip a candidate already ordered before the instance by the rules and existing deps, so an edge
is added only when needed.  With it off, every candidate the walk finds gets an edge.

Filters (constructor options, the seed's four sets): ``memories`` (sbuf, psum, dram),
``roles`` of DRAM tensors, ``spaces`` (``local``; ``shared`` = alias groups and DRAM placed by
``alloc-shared-dram``), ``analyses`` (war, waw, raw-reuse, raw).  Accesses filtered out are not
bucketed.  The seed's second registration runs after shared-DRAM allocation:
``anti-deps{spaces=local},alloc-shared-dram,anti-deps{spaces=shared}``.

Conservative edges: ``dram=bins`` buckets a DRAM access by the bins of its whole tensor (the
seed), and an alias group is one batch, so two accesses there may share a cell without sharing
a byte.  Edges added only for such pairs are counted as ``conservative_bin`` /
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

from machine.edges import DepGraph, EdgeKind
from machine.errors import ProgramError
from machine.ir import MemoryKind, Program

from machine.splitmap import SBUF_BIN, CellSpace
from passes.analysis.clocks import Clocks
from passes.analysis.instances import Stream
from passes.pipeline import Pass, PassContext, graph_rows, with_graph

__all__ = ["AntiDeps", "anti_dependency_edges"]

FLOW_REUSE, FLOW_SAME, ANTI, OUTPUT, EXACT, BIN, ALIAS = (1 << k for k in range(7))
_EMPTY = (-1, -1, ())
_MEM = {MemoryKind.SBUF: "sbuf", MemoryKind.PSUM: "psum", MemoryKind.DRAM: "dram"}
_MM_OPS = frozenset({"matmul", "transpose"})
RULES = {FLOW_REUSE: "anti:raw-reuse", FLOW_SAME: "anti:raw", ANTI: "anti:war", OUTPUT: "anti:waw",
         BIN: "anti:dram-bin", ALIAS: "anti:alias"}


def _cell_plans(stream: Stream, cells: CellSpace, memories, roles, spaces, dram: str) -> list[tuple]:
    """Per instruction: ``(is_write, tensor, cut|None, key, space, mask, source bit, plan)``.

    ``cut`` is the access's pieces (:meth:`CellSpace.pieces`) unless it moves with a loop.
    """
    out = []
    memo: dict[int, tuple] = {}  # plans are shared by equal accesses
    for info in stream.infos:
        mine = []
        for plan in info.plans:
            found = memo.get(id(plan))
            if found is None:
                found = memo[id(plan)] = _cell_plan(stream, cells, plan, memories, roles, spaces, dram)
            if found:
                mine.append(found)
        out.append(tuple(mine))
    return out


def _cell_plan(stream: Stream, cells: CellSpace, plan: tuple, memories, roles, spaces, dram: str) -> tuple:
    is_write, t, space, memory, mask, byteset, shifts = plan[:7]
    if _MEM[memory] not in memories:
        return ()
    tensor = stream.tensors[t]
    shared = memory == MemoryKind.DRAM and stream.is_shared(t)
    if ("shared" if shared else "local") not in spaces:
        return ()
    if memory == MemoryKind.DRAM and tensor.role not in roles:
        return ()
    if tensor.alias is not None:  # one batch per alias group, as the seed
        key = ("alias", tensor.alias)
        return (is_write, t, cells.pieces(key, "dram", 0, ((0, 1),)), key, "dram", 0, ALIAS, plan)
    if memory == MemoryKind.DRAM and dram == "bins":  # whole bins of the whole tensor, as the seed
        size = stream.spec.dram_bin_bytes
        lo, hi = tensor.address, tensor.address + tensor.bytes_per_partition
        whole = ((lo // size * size, -(-hi // size) * size),)
        return (is_write, t, cells.pieces("dram-bins", "dram", 0, whole), "dram-bins", "dram", 0, BIN, plan)
    cut = None if shifts else cells.pieces(space, space, mask, byteset)
    return (is_write, t, cut, space, space, mask, EXACT, plan)


def anti_dependency_edges(stream: Stream, graph: DepGraph, *, memories=frozenset({"sbuf", "psum", "dram"}),
                          roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                          analyses=frozenset({"war", "waw", "raw-reuse"}), early_stop: str = "component",
                          skip_ordered: bool = True, dram: str = "bytes",
                          stats: dict[str, int] | None = None) -> dict[tuple[int, int, bool], tuple[EdgeKind, int]]:
    """New edges ``{(former, waiter, loop_carried): (kind, rule bits)}`` over instruction ids.

    ``graph`` holds the deps already present (they order instances for ``skip_ordered``);
    it is not modified.  Rule bits without :data:`EXACT` mark conservative-only edges.
    """
    stats = {} if stats is None else stats
    infos, inst_instr, n = stream.infos, stream.inst_instr, len(stream)
    cells = CellSpace({p[4] for info in infos for p in info.plans},
                      {"sbuf": SBUF_BIN, "psum": stream.spec.psum_bank_bytes, "dram": stream.spec.dram_bin_bytes}, _EMPTY)
    pieces = cells.pieces
    plans_of = _cell_plans(stream, cells, memories, roles, spaces, dram)
    war, waw = "war" in analyses, "waw" in analyses
    raw_same, raw_reuse = "raw" in analyses, "raw-reuse" in analyses or "raw" in analyses
    by_name = stream.by_name
    deps_of: list[list[tuple[int, bool]]] = [[] for _ in infos]
    known: set[tuple[int, int, bool]] = set()
    for flag, rows in enumerate(graph_rows(graph)):
        for waiter, row in rows.items():
            y = by_name[waiter]
            for former in row:
                x = by_name[former]
                deps_of[y].append((x, bool(flag)))
                known.add((x, y, bool(flag)))
    comp_x = [info.comp for info in infos]
    comp = [comp_x[x] for x in inst_instr]
    first_of = [info.first for info in infos]
    matmul_x = [info.seq == 0 and info.instr.op in _MM_OPS for info in infos]
    component_stop = early_stop == "component"
    has_loops = stream.has_loops
    clocks = Clocks(stream.spec.dma_queues, n)
    end, pos, join, resolve, fold = clocks.end, clocks.pos, clocks.join, stream.resolve, stream.fold
    seq_clock = clocks.seq
    added: dict[tuple[int, int, bool], tuple[EdgeKind, int]] = {}
    skipped = candidates = 0
    for b in range(n):
        y = inst_instr[b]
        info = infos[y]
        trigger = seq_clock[info.seq]
        for x, lc in deps_of[y]:
            t = resolve(b, y, x, lc) if has_loops else first_of[x]
            if t >= 0 and pos[t] > trigger[comp[t]]:
                trigger = join(trigger, end[t])
        cand: dict[int, int] = {}
        cb = comp[b]
        b_mm = matmul_x[y]
        for is_write, t, cut, key, space, mask, source, plan in plans_of[y]:
            if cut is None:
                cut = pieces(key, space, mask, stream.plan_bytes(plan, b))
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
                            reads = tuple([r for r in reads if not (matmul_x[inst_instr[r]])]) + (b,)
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
        if cand:
            candidates += len(cand)
            start = clocks.start_of(info.comp, info.is_dma, trigger)
            for a in sorted(cand, reverse=True):
                if skip_ordered and start[comp[a]] >= pos[a]:
                    skipped += 1
                    continue
                bits = cand[a]
                if not bits & EXACT and stream.conflicts(a, b):
                    bits |= EXACT  # a conservative cell, but the pair does conflict
                key = fold(a, b)
                kind = EdgeKind.FLOW if bits & (FLOW_REUSE | FLOW_SAME) else (EdgeKind.OUTPUT if bits & OUTPUT else EdgeKind.ANTI)
                old = added.get(key)
                if old is None:
                    added[key] = (kind, bits)
                else:
                    added[key] = (max(old[0], kind), old[1] | bits)
                if key not in known:
                    known.add(key)
                    deps_of[y].append((key[0], key[2]))
                target = resolve(b, y, key[0], key[2])
                trigger = join(trigger, end[target])
                start = join(start, end[target])
        clocks.finish(b, info.seq, info.comp, info.is_dma, trigger)
    stats["candidates"] = stats.get("candidates", 0) + candidates
    stats["skipped_ordered"] = stats.get("skipped_ordered", 0) + skipped
    return added


def dep_label(stream: Stream, x: int, y: int, loop_carried: bool, floor: int = 0) -> int:
    """The strongest conflict kind over every instance pair the dep ``y`` waits for ``x``
    orders (each instance of ``y`` with each instance of ``x`` it waits on), at least
    ``floor``: the label ``verifyAntiDependence`` expects of a memory dep.

    The walk finds a pair through one cell; the dep also orders other pairs (other
    iterations, other bytes) whose footprints may give a stronger kind.
    """
    best = floor
    conflict_kind = stream.conflict_kind
    for b in stream.instances_of(y):
        for a in stream.wait_targets(b, y, x, loop_carried):
            best = conflict_kind(a, b, best)
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
        max; an edge added only for a conservative bucket (DRAM bins, alias batch) is counted
        in ``conservative_bin`` / ``conservative_alias``, every other one joins a pair that
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

    def apply(self, program: Program, ctx: PassContext) -> Program:
        for tname, tensor in program.tensors.items():
            if tensor.is_virtual:
                raise ProgramError(f"tensors.{tname}", "anti-deps needs placed tensors; run the 'alloc' pass first")
        stream = ctx.stream(program)
        graph = ctx.take_graph(program)
        stats = ctx.stats.setdefault(self.name, {})
        added = anti_dependency_edges(stream, graph, memories=self.memories, roles=self.roles, spaces=self.spaces,
                                      analyses=self.analyses, early_stop=self.early_stop,
                                      skip_ordered=self.skip_ordered, dram=self.dram, stats=stats)
        names = [info.name for info in stream.infos]
        for (x, y, lc), (kind, bits) in added.items():
            if kind < EdgeKind.FLOW or not bits & EXACT:
                # label from the bytes of every pair the dep orders; none (a conservative
                # bucket): an order, not a dependence
                label = EdgeKind(max(graph.kind(names[y], names[x], lc), dep_label(stream, x, y, lc), EdgeKind.ORDERED))
                if label != kind:
                    ctx.count(self.name, "relabelled")
                    kind = label
            graph.add_dependency(names[y], names[x], kind, lc)
            label = {EdgeKind.FLOW: "added_flow", EdgeKind.OUTPUT: "added_output", EdgeKind.ANTI: "added_anti",
                     EdgeKind.ORDERED: "added_ordered"}[kind]
            ctx.count(self.name, label)
            if lc:
                ctx.count(self.name, "added_loop_carried")
            if not bits & EXACT:
                ctx.count(self.name, "conservative_bin" if bits & BIN else "conservative_alias")
            if ctx.record:
                for bit, rule in RULES.items():
                    if bits & bit and not (bit in (BIN, ALIAS) and bits & EXACT):
                        ctx.note(names[y], names[x], lc, rule)
        out = with_graph(program, graph, stream.by_name, {names[y] for _, y, _ in added})
        ctx.carry_stream(program, out)
        ctx.keep_graph(out, graph)
        return out
