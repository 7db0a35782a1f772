"""Reference for ``build-fdeps``: the instance-by-instance walk over split interval maps.

The pass computes the same edges from one sort of access events (:mod:`neuronsim.machine.order.events`);
this is the walk it replaced, kept as the oracle the tests compare it with
(``tests/property/test_fdeps_events.py``).
"""

from __future__ import annotations

from neuronsim.machine.order.conflicts import fold_distance
from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.order.splitmap import CellSpace, cell_bins
from neuronsim.machine.order.stream import NUM_SEQUENCERS, InstanceStream

from neuronsim.passes.build_fdeps import (_GROUP_OPS, _RNG_OPS, ACCUMULATION, GROUP, RAW, REDUCTION, RNG, TRIVIAL,
                                          Edges, _loop_barriers, BARRIER)


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


def reference_flow_edges(stream: InstanceStream, *, reduction: bool = True, accumulation: bool = True, rng: bool = True,
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
    cells = CellSpace(stream.masks(), cell_bins(stream.spec), -1)
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
            if cb >= NUM_SEQUENCERS:  # rules 1-3 may already order a transfer after them
                for a in [a for a in formers if _rules_order(stream, a, b)]:
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




def _rules_order(stream: InstanceStream, a: int, b: int) -> bool:
    """Rules 1-3 alone order ``a`` before transfer ``b``'s start, found by brute force: the
    same queue, or a transfer of ``b``'s queue up to ``b`` issued by ``a``'s sequencer after
    ``a`` (a compute instruction)."""
    comp, seq = stream.comp.tolist(), stream.seq.tolist()
    if comp[a] == comp[b]:
        return True
    if comp[a] >= NUM_SEQUENCERS:
        return False
    return any(comp[t] == comp[b] and seq[t] == seq[a] for t in range(a + 1, b + 1))
