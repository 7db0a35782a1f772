"""Candidate formers of ``anti-deps``: for every instance, the earlier instances it may have
to wait for (latest first, with the rule bits that found them), before vector clocks drop
those already ordered (:func:`neuronsim.passes.anti_deps.anti_dependency_edges`).

Three generators, pure functions over an :class:`~neuronsim.machine.order.stream.InstanceStream`:

* :func:`event_candidates` - the default mode, from one sort of the physical access events;
* :func:`walk_candidates` - the seed's reverse walk over split interval maps, every mode
  (``early_stop=pe-order`` / ``matmul``, ``dram=bins``, one batch per alias group or ``alias=exact``); the
  default mode takes the accesses of DRAM alias groups from it in its exact alias mode.

Rule bits: :data:`FLOW_REUSE`, :data:`FLOW_SAME`, :data:`ANTI`, :data:`OUTPUT` name the
analysis; :data:`EXACT` marks a pair found through a true byte conflict, :data:`BIN` /
:data:`ALIAS` one found only through a conservative bucket.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.order.events import access_events, latest_first_keys, merge_pairs
from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.model.opcodes import MATMUL_FAMILY, opcode_of
from neuronsim.machine.order.splitmap import CellSpace, cell_bins
from neuronsim.machine.order.stream import InstanceStream


__all__ = ["Candidates", "event_candidates", "walk_candidates",
           "FLOW_REUSE", "FLOW_SAME", "ANTI", "OUTPUT", "EXACT", "BIN", "ALIAS"]

FLOW_REUSE, FLOW_SAME, ANTI, OUTPUT, EXACT, BIN, ALIAS = (1 << k for k in range(7))
_EMPTY = (-1, -1, ())
_MEM = {MemoryKind.SBUF: "sbuf", MemoryKind.PSUM: "psum", MemoryKind.DRAM: "dram"}
_MM_OPS = frozenset({"matmul", "transpose"})


def _kept(stream: InstanceStream, ca, memories, roles, spaces) -> bool:
    """Whether the filters keep the compiled access (the seed's four sets)."""
    if _MEM[ca.memory] not in memories:
        return False
    if ca.memory != MemoryKind.DRAM:
        return "local" in spaces
    tensor = stream.program.tensors[stream.tensor_names[ca.tensor]]
    return ("shared" if stream.is_shared(ca.tensor) else "local") in spaces and tensor.role in roles


def _cell_plans(stream: InstanceStream, cells: CellSpace, memories, roles, spaces, dram: str, alias: str,
                templates: np.ndarray | None) -> list[tuple]:
    """Per instruction: ``(is_write, tensor, pieces|None, key, source bit, access, alias group)``
    per access the filters (and ``templates``, a mask over compiled accesses) keep; ``pieces``
    is the cut into cells unless the access moves with a loop; the group is set for an access
    of an alias group bucketed exactly."""
    wanted = None if templates is None else {id(stream.templates[t]) for t in np.flatnonzero(templates).tolist()}
    out = []
    memo: dict[int, tuple] = {}  # compiled accesses are shared by equal accesses
    for x in range(stream.m):
        mine = []
        for ca in stream.accesses(x):
            found = memo.get(id(ca))
            if found is None:
                keep = _kept(stream, ca, memories, roles, spaces) and (wanted is None or id(ca) in wanted)
                found = memo[id(ca)] = _cell_plan(stream, cells, ca, dram, alias) if keep else ()
            if found:
                mine.append(found)
        out.append(tuple(mine))
    return out


def _cell_plan(stream: InstanceStream, cells: CellSpace, ca, dram: str, alias: str) -> tuple:
    tensor = stream.program.tensors[stream.tensor_names[ca.tensor]]
    if tensor.alias is not None and alias == "batch":  # one batch per alias group, as the seed
        key = ("alias", tensor.alias)
        return (ca.is_write, ca.tensor, cells.pieces(key, "dram", 0, ((0, 1),)), key, ALIAS, ca, None)
    if tensor.alias is not None:  # exact: the tensor's own bytes; other tensors of the group in the walk
        key = ("alias-tensor", ca.tensor)
        cut = None if ca.moves else cells.pieces(key, ca.space, 0, ca.bytes)
        return (ca.is_write, ca.tensor, cut, key, EXACT, ca, tensor.alias)
    if ca.memory == MemoryKind.DRAM and dram == "bins":  # whole bins of the whole tensor, as the seed
        size = stream.spec.dram_bin_bytes
        slots = (tensor.rotate.slots - 1) * tensor.rotate.stride if tensor.rotate is not None else 0
        lo, hi = tensor.address, tensor.address + slots + tensor.bytes_per_partition
        whole = ((lo // size * size, -(-hi // size) * size),)
        return (ca.is_write, ca.tensor, cells.pieces("dram-bins", "dram", 0, whole), "dram-bins", BIN, ca, None)
    cut = None if ca.moves else cells.pieces(ca.space, ca.space, ca.mask, ca.bytes)
    return (ca.is_write, ca.tensor, cut, ca.space, EXACT, ca, None)


#: Candidates of every instance: ``former[ptr[b]:ptr[b + 1]]`` (latest first) with their rule bits.
Candidates = tuple[np.ndarray, np.ndarray, np.ndarray]


def _csr(pairs: list, n: int) -> Candidates:
    """Pairs ``[b, a, bits]`` merged per ``(b, a)`` (bits or-ed), by ``b`` then ``a`` descending.
    The list is emptied as the key is made: the caller keeps no column alive (at a million
    instances each is megabytes, and this is the pass's peak)."""
    bits = pairs.pop()
    key, bits = merge_pairs(latest_first_keys(pairs, n), bits)
    waiter = key // n
    return np.searchsorted(waiter, np.arange(n + 1)), n - 1 - key % n, bits


def event_candidates(stream: InstanceStream, *, memories=frozenset({"sbuf", "psum", "dram"}),
                     roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                     analyses=frozenset({"war", "waw", "raw-reuse"}), alias: str = "exact") -> Candidates:
    """The walk's candidates (``early_stop=component``, ``dram=bytes``) from one sort of the
    physical access events (:mod:`neuronsim.machine.order.events`): per segment, a write's candidates are the
    previous write (WAW) and the latest read of every other component since it (WAR); a read's
    the previous write when through another tensor (RAW-reuse; any, with ``raw``).

    DRAM alias groups: ``alias="batch"`` makes each group one segment, as the seed;
    ``"exact"`` (default) takes their candidates from :func:`walk_candidates` in its exact
    alias mode (shared DRAM: few accesses)."""
    temps = stream.templates
    kept = np.fromiter((_kept(stream, ca, memories, roles, spaces) for ca in temps), bool, len(temps))
    extra = None
    if alias == "exact":
        aliased = kept & np.fromiter((isinstance(ca.space, tuple) for ca in temps), bool, len(temps))
        if aliased.any():
            ptr, former, bits = walk_candidates(stream, memories=memories, roles=roles, spaces=spaces,
                                                analyses=analyses, alias="exact", templates=aliased)
            extra = (former, np.repeat(np.arange(len(stream), dtype=np.int64), np.diff(ptr)), bits)
            kept &= ~aliased
    ev = access_events(stream, "space", templates=kept, per_tensor=True)
    # its per-event columns are gone once it returns; the events stay in the stream's cache
    # when they are all of them
    pairs = _event_pairs(stream, ev, analyses, extra) if len(ev) else \
        [] if extra is None else [extra[1], extra[0], extra[2]]
    del ev, extra
    if not pairs:
        return np.zeros(len(stream) + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _csr(pairs, len(stream))


def _event_pairs(stream: InstanceStream, ev, analyses: frozenset, extra: tuple | None) -> list:
    """``[b, a, bits]``: the candidate pairs of the sorted events ``ev`` (instance ``b``
    after ``a``, rule bits), and ``extra``'s; empty when there are none.

    Every per-event column is let go once the pairs it finds are made, and the pairs are
    gathered into their three columns a part at a time: at 1e7 instructions this is the
    pass's peak (performance notes 2.9)."""
    n = len(ev)
    # per-event columns in int32 (event and instance ids below 2**31), widened where keys combine
    inst, write = ev.inst, ev.write
    alias = np.fromiter((isinstance(key, tuple) and key[0] == "alias" for key, _ in ev.groups), bool, len(ev.groups))

    def source(e: np.ndarray) -> np.ndarray | int:  # how events ``e``'s segments were bucketed
        return np.where(alias[ev.seg_group[ev.seg[e]]], np.int32(ALIAS), np.int32(EXACT)) if alias.any() else EXACT

    idx = np.arange(n, dtype=np.int32)
    starts = np.ones(n, bool)
    starts[1:] = ev.seg[1:] != ev.seg[:-1]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (b, a, bits)
    if {"waw", "raw-reuse", "raw"} & analyses:
        prev_w = np.maximum.accumulate(np.where(write, idx, -1))
        prev_w[write] = np.concatenate([[-1], prev_w[:-1]])[write]  # strictly before a write
        has_prev = prev_w >= np.maximum.accumulate(np.where(starts, idx, 0))  # inside the segment
        if "waw" in analyses:
            w = np.flatnonzero(write & has_prev)
            w = w[inst[prev_w[w]] != inst[w]]  # an instance's second write to a segment
            parts.append((inst[w], inst[prev_w[w]], OUTPUT | source(w)))
            del w
        if "raw-reuse" in analyses or "raw" in analyses:
            r = np.flatnonzero(~write & has_prev)
            tensor = np.fromiter((ca.tensor for ca in stream.templates), np.int32, len(stream.templates))
            other = tensor[ev.template[prev_w[r]]] != tensor[ev.template[r]]
            r, other = (r, other) if "raw" in analyses else (r[other], other[other])
            parts.append((inst[r], inst[prev_w[r]], np.where(other, FLOW_REUSE, FLOW_SAME) | source(r)))
            del r, other
        del prev_w, has_prev
    if "war" in analyses:
        first = np.flatnonzero(starts)
        del starts
        seg_end = np.repeat(np.append(first[1:], n).astype(np.int32), np.diff(np.append(first, n)))
        del first
        next_w = np.minimum.accumulate(np.where(write, idx, n)[::-1])[::-1]
        del idx
        r = np.flatnonzero(~write & (next_w < seg_end))
        del seg_end
        # the latest read of each component before the write (rules 1 and 3 order the others)
        key = next_w[r].astype(np.int64)
        key *= stream.width
        key += stream.comp[inst[r]]
        order = np.lexsort((r, key))
        key, r = key[order], r[order]
        del order
        r = r[np.append(key[1:] != key[:-1], True)] if len(r) else r  # the last read of each (write, component)
        del key
        w = next_w[r]
        del next_w
        mine = inst[r] != inst[w]
        r, w = r[mine], w[mine]
        parts.append((inst[w], inst[r], ANTI | source(w)))
        del r, w, mine
    if extra is not None:
        parts.append((extra[1], extra[0], extra[2]))
    if not parts:
        return []
    # one column at a time, each part dropped once copied; the rule bits fit a byte (seven of
    # them): merged and sorted as bytes, not int64
    sizes = [len(b) for b, _a, _bits in parts]  # (a part's bits may be one value for all its pairs)
    out = []
    for k, dtype in ((0, np.result_type(*(p[0] for p in parts))), (1, np.result_type(*(p[1] for p in parts))),
                     (2, np.uint8)):
        column, at = np.empty(sum(sizes), dtype), 0
        for m, (part, size) in enumerate(zip(parts, sizes)):
            column[at:at + size] = part[k]
            at += size
            parts[m] = part[:k] + (None,) + part[k + 1:]
        out.append(column)
    return out


def walk_candidates(stream: InstanceStream, *, memories=frozenset({"sbuf", "psum", "dram"}),
                    roles=frozenset({"input", "output", "internal"}), spaces=frozenset({"local", "shared"}),
                    analyses=frozenset({"war", "waw", "raw-reuse"}), early_stop: str = "component",
                    dram: str = "bytes", alias: str = "batch", templates: np.ndarray | None = None) -> Candidates:
    """The candidates of every instance from the seed's walk over split interval maps, in
    every mode (see the module doc); only of the compiled accesses ``templates`` (a mask)
    says, when given.

    DRAM alias groups: ``alias="batch"`` makes each group one cell, as the seed.  With
    ``"exact"`` (the spec's rule: two accesses of one tensor conflict by their bytes, of two
    tensors of a group always) each tensor has cells of its own bytes, and an access of tensor
    ``T`` is, besides, a candidate after the latest write of each component to every other
    tensor of its group and, for a write, the latest read of each component: every earlier
    access there completes on some component no later than the latest one of its kind (rules 1
    and 3), so the candidates are complete, and each joins a truly conflicting pair.

    Early stop of a write's walk over the reads since the cell's last write: ``component``
    keeps the latest read of each completion component; ``pe-order`` drops a PE matmul /
    transpose read once a later one comes (PE completes them in order), keeping every other;
    ``matmul`` is the seed's literal walk: latest read first, each one a candidate, stopping
    *after* the first read of the ``Matmult`` family (opcodes 7, 9, 95,
    :mod:`neuronsim.machine.model.opcodes`), and then without the last write.  Unsound: a read by another
    engine before that matmul read is left unordered (tested)."""
    bins = cell_bins(stream.spec)
    if dram == "bins":  # every DRAM access covers whole bins of the seed's size: cut no finer
        bins["dram"] = stream.spec.dram_bin_bytes
    cells = CellSpace(stream.masks(), bins, _EMPTY)
    pieces = cells.pieces
    plans_of = _cell_plans(stream, cells, memories, roles, spaces, dram, alias, templates)
    # alias group -> tensor -> (latest write, latest read) per component
    latest: dict[str, dict[int, tuple[dict[int, int], dict[int, int]]]] = {}
    war, waw = "war" in analyses, "waw" in analyses
    raw_same, raw_reuse = "raw" in analyses, "raw-reuse" in analyses or "raw" in analyses
    instr, comp = stream.instr.tolist(), stream.comp.tolist()
    matmul_x = [int(stream.seq_x[x]) == 0 and stream.instrs[x].op in _MM_OPS for x in range(stream.m)]
    family_x = [opcode_of(stream.instrs[x]) in MATMUL_FAMILY for x in range(stream.m)]
    component_stop = early_stop == "component"
    pe_order = early_stop == "pe-order"
    literal = early_stop == "matmul"
    footprint_at = stream.footprint_at
    out_a: list[int] = []
    out_b: list[int] = []
    out_bits: list[int] = []
    for b in range(len(stream)):
        y = instr[b]
        if not plans_of[y]:
            continue
        cand: dict[int, int] = {}
        cb = comp[b]
        b_mm = matmul_x[y]
        for is_write, t, cut, key, source, ca, group in plans_of[y]:
            if group is not None:  # the other tensors of its alias group: always shared
                tensors = latest.setdefault(group, {})
                for other, (their_writes, their_reads) in tensors.items():
                    if other == t:
                        continue
                    if (waw if is_write else raw_reuse):
                        bit = OUTPUT if is_write else FLOW_REUSE
                        for w in their_writes.values():
                            if w != b:
                                cand[w] = cand.get(w, 0) | bit | EXACT
                    if is_write and war:
                        for r in their_reads.values():
                            if r != b:
                                cand[r] = cand.get(r, 0) | ANTI | EXACT
                tensors.setdefault(t, ({}, {}))[0 if is_write else 1][cb] = b
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
                        elif b_mm and pe_order:
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
                    if literal:  # the seed's walk: latest first, stop after a Matmult-family read
                        stopped = False
                        for r in reversed(reads):
                            if r != b and war:
                                cand[r] = cand.get(r, 0) | ANTI | source
                            if family_x[instr[r]]:
                                stopped = True
                                break
                        if waw and not stopped and w >= 0 and w != b:
                            cand[w] = cand.get(w, 0) | OUTPUT | source
                        continue
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
    return _csr([np.asarray(out_b, np.int64), np.asarray(out_a, np.int64), np.asarray(out_bits, np.int64)], len(stream))
