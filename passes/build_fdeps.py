"""``build-fdeps``: the flow (RAW) graph and the structural chains (seed pass 74).

The seed builds, per logical memory location, the *read-after-last-write* chain
(``make_linear_dependencies``), refines it for SBUF reductions and PSUM accumulation groups
(the only place it tests exact overlap), adds the structural chains (loop bodies, RNG state per
engine, accumulator groups), and falls back to a trivial program-order chain when the function
has "too many spills".  Every edge is Flow.

What this reimplementation does (per instance, folded into instruction deps by
:meth:`~passes.analysis.instances.Stream.fold`):

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

from machine.edges import DepGraph, EdgeKind
from machine.ir import MemoryKind, Program

from machine.splitmap import SBUF_BIN, CellSpace
from passes.analysis.instances import Stream
from passes.pipeline import Pass, PassContext, with_graph

__all__ = ["BuildFdeps", "build_flow_edges", "RULES", "STRUCTURAL"]

RAW, REDUCTION, ACCUMULATION, RNG, GROUP, BARRIER, TRIVIAL = (1 << k for k in range(7))
#: Provenance names of the rule bits.
RULES = {RAW: "fdeps:raw", REDUCTION: "fdeps:reduction", ACCUMULATION: "fdeps:accumulation",
         RNG: "fdeps:rng", GROUP: "fdeps:group", BARRIER: "fdeps:loop-barrier", TRIVIAL: "fdeps:trivial"}
#: Rules that are orderings, not memory conflicts.
STRUCTURAL = frozenset({"fdeps:rng", "fdeps:group", "fdeps:loop-barrier", "fdeps:trivial"})

_GROUP_OPS = frozenset({"activation", "tensor_tensor", "tensor_reduce"})
_RNG_OPS = frozenset({"set_rand_state", "random"})


def _bins(stream: Stream) -> dict[str, int]:
    spec = stream.spec
    return {"sbuf": SBUF_BIN, "psum": spec.psum_bank_bytes, "dram": spec.dram_bin_bytes}


def _recipe(info, cells: CellSpace, memo: dict, reduction: bool, accumulation: bool, rng: bool, groups: bool) -> tuple:
    """Per instruction, what the walk does: ``((is_write, cut, plan, chain key, chain bit), ...)``,
    the RNG sequencer (or None) and the accumulator-group key (or None).  ``cut`` is the
    footprint's pieces when it does not move with a loop, else None (cut per instance)."""
    instr = info.instr
    out = []
    for plan in info.plans:
        is_write, t, space, memory, mask, byteset, shifts = plan[:7]
        cut = None
        if not shifts:
            cut = memo.get(id(plan))  # plans are shared by equal accesses
            if cut is None:
                cut = memo[id(plan)] = cells.pieces(t, space, mask, byteset)
        chain_key, bit = None, 0
        if is_write and reduction and memory == MemoryKind.SBUF and instr.op == "tensor_tensor" and "group" in instr.attrs:
            chain_key, bit = ("reduction", t, instr.attrs["group"]), REDUCTION
        elif is_write and accumulation and memory == MemoryKind.PSUM and instr.op == "matmul":
            chain_key, bit = ("accumulation", t, instr.attrs.get("group")), ACCUMULATION
            accumulating = instr.attrs.get("accumulate")
            if accumulating is None:  # inferred: it reads the PSUM tile it writes
                accumulating = any(not p[0] and p[1] == t for p in info.plans)
            if not accumulating:
                bit = 0  # an overwriting matmul opens a group: it only becomes the last writer
        out.append((is_write, cut, plan, chain_key, bit))
    rng_seq = info.seq if rng and instr.op in _RNG_OPS else None
    gkey = None
    if groups and instr.op in _GROUP_OPS and "group" in instr.attrs:
        gkey = (type(instr.attrs["group"]).__name__, instr.attrs["group"])
    return tuple(out), rng_seq, gkey


def build_flow_edges(stream: Stream, *, reduction: bool = True, accumulation: bool = True, rng: bool = True,
                     groups: bool = True, loop_barrier: bool = False, trivial: bool = False) -> dict[tuple[int, int, bool], int]:
    """Flow edges ``{(former, waiter, loop_carried): rule bits}`` over instruction ids."""
    edges: dict[tuple[int, int, bool], int] = {}
    inst_instr, infos, fold = stream.inst_instr, stream.infos, stream.fold

    def add(a: int, b: int, bits: int) -> None:
        key = fold(a, b)
        edges[key] = edges.get(key, 0) | bits

    if trivial:
        for b in range(1, len(stream)):
            add(b - 1, b, TRIVIAL)
        return edges
    masks = {p[4] for info in infos for p in info.plans}
    cells = CellSpace(masks, _bins(stream), -1)
    pieces = cells.pieces
    memo: dict[int, list] = {}
    recipes = [_recipe(info, cells, memo, reduction, accumulation, rng, groups) for info in infos]
    rng_last: dict[int, int] = {}
    group_last: dict[tuple[str, object], int] = {}
    has_loops = stream.has_loops
    for b in range(len(stream)):
        accesses, rng_seq, gkey = recipes[inst_instr[b]]
        formers: dict[int, int] = {}
        for is_write, cut, plan, chain_key, bit in accesses:
            if cut is None:
                byteset = stream.plan_bytes(plan, b)
                cut = pieces(plan[1], plan[2], plan[4], byteset)
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
                for smap, lo, hi in pieces(chain_key, plan[2], plan[4], stream.plan_bytes(plan, b)):
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
            if has_loops:
                for a, bits in formers.items():
                    add(a, b, bits)
            else:
                y = inst_instr[b]
                for a, bits in formers.items():
                    key = (inst_instr[a], y, False)
                    edges[key] = edges.get(key, 0) | bits
    if loop_barrier:
        _loop_barriers(stream, edges)
    return edges


def _loop_barriers(stream: Stream, edges: dict[tuple[int, int, bool], int]) -> None:
    """Iteration ``i+1`` of every loop waits for iteration ``i`` (see the module doc)."""
    members: dict[int, list[int]] = {}
    for info in stream.infos:
        for loop in info.loops:
            members.setdefault(id(loop), []).append(info.id)
    for xids in members.values():
        first_on_seq: dict[int, int] = {}
        last_on_comp: dict[int, int] = {}
        for x in xids:
            info = stream.infos[x]
            first_on_seq.setdefault(info.seq, x)
            last_on_comp[info.comp] = x
        for waiter in first_on_seq.values():
            for former in last_on_comp.values():
                key = (former, waiter, True)
                edges[key] = edges.get(key, 0) | BARRIER


@dataclass(frozen=True, slots=True)
class BuildFdeps(Pass):
    """Build the Flow graph: RAW chains, reduction / accumulation refinements, structural chains.

    Contract
        requires: a valid program (virtual tensors allowed: the analysis is logical).
        guarantees: deps are replaced (kept too with ``keep_given``) by Flow edges only; every
        read of a byte is ordered after the last earlier write of that byte *through the same
        tensor*; every non-structural edge joins two instances sharing a byte of one tensor.
    """

    name: ClassVar[str] = "build-fdeps"
    keep_given: bool = False
    reduction: bool = True
    accumulation: bool = True
    rng: bool = True
    groups: bool = True
    loop_barrier: bool = False
    trivial: bool = False

    def apply(self, program: Program, ctx: PassContext) -> Program:
        stream = ctx.stream(program)
        trivial = self.trivial or program.extras.get("x-too-many-spills") is True
        edges = build_flow_edges(stream, reduction=self.reduction, accumulation=self.accumulation, rng=self.rng,
                                 groups=self.groups, loop_barrier=self.loop_barrier, trivial=trivial)
        graph = ctx.take_graph(program) if self.keep_given else DepGraph()
        names = [info.name for info in stream.infos]
        add = graph.add_dependency
        for (x, y, lc), bits in edges.items():
            add(names[y], names[x], EdgeKind.FLOW, lc)
            if ctx.record:
                for bit, rule in RULES.items():
                    if bits & bit:
                        ctx.note(names[y], names[x], lc, rule)
        for bits, n in Counter(edges.values()).items():
            for bit, rule in RULES.items():
                if bits & bit:
                    ctx.count(self.name, rule.split(":")[1], n)
        ctx.count(self.name, "edges", len(edges))
        if trivial:
            ctx.count(self.name, "spill_guard")
        out = with_graph(program, graph, stream.by_name)
        ctx.carry_stream(program, out)
        ctx.keep_graph(out, graph)
        return out
