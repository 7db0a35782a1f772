"""Brute-force oracles read straight off the spec, for small programs only.

* :func:`hb_graph` builds the happens-before DAG of the spec's rules 1-4 over trigger /
  start / end nodes of every instance, with full fan-in waits (every target instance, not
  just the last one);
* :func:`brute_races` compares every pair of instances byte by byte (explicit sets of
  ``(partition, byte)``) and asks networkx whether ``E(first)`` reaches ``S(second)``.
"""

from __future__ import annotations

import networkx as nx

from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Program
from neuronsim.machine.order.unroll import Unrolled, unroll

KIND_RANK = {"RAW": 0, "WAW": 1, "WAR": 2}
MEM_RANK = {"sbuf": 0, "psum": 1, "dram": 2}


def hb_graph(program: Program, unrolled: Unrolled | None = None, waits=None) -> nx.DiGraph:
    """Nodes ``(id, "T"|"S"|"E")``; an edge ``u -> v`` means ``u <= v`` by one rule.

    ``waits`` overrides the deps: per instance an iterable of target ids.
    """
    unrolled = unrolled or unroll(program)
    graph = nx.DiGraph()
    last_on_seq: dict[str, int] = {}
    last_on_queue: dict[str, int] = {}
    for inst in unrolled:
        i = inst.id
        graph.add_edge((i, "T"), (i, "S"))
        graph.add_edge((i, "S"), (i, "E"))
        seq = inst.instr.engine
        if seq in last_on_seq:
            prev = unrolled[last_on_seq[seq]]
            graph.add_edge((prev.id, "T" if prev.instr.is_dma else "E"), (i, "T"))  # rules 2 / 1
        last_on_seq[seq] = i
        if inst.instr.is_dma:
            q = inst.instr.queue
            if q in last_on_queue:
                graph.add_edge((last_on_queue[q], "E"), (i, "S"))  # rule 3
            last_on_queue[q] = i
        if waits is None:
            targets = [t for dep in inst.instr.deps for t in unrolled.wait_targets(inst, dep)]
        else:
            targets = list(waits[i])
        for t in targets:
            graph.add_edge((t, "E"), (i, "T"))  # rule 4
    return graph


def _cells(tensor, access, iteration) -> tuple[str, set]:
    fp = footprint(tensor, access, iteration)
    cells = set()
    parts = [p for p in range(128) if fp.partitions >> p & 1] if fp.partitions else [None]
    for lo, hi in fp.bytes:
        for b in range(lo, hi):
            for p in parts:
                cells.add((p, b))
    return fp, cells


def conflicts(program: Program, a, b, cache: dict | None = None) -> dict[tuple[int, int], list]:
    """``{(kind rank, memory rank): [plo, phi, blo, bhi, alias]}`` for instances a < b."""
    tensors = program.tensors
    cache = {} if cache is None else cache

    def cells(inst, k, access):
        key = (inst.id, k)
        if key not in cache:
            cache[key] = _cells(tensors[access.tensor], access, inst.iteration)
        return cache[key]

    out: dict[tuple[int, int], list] = {}
    for ka, (acc_a, wa) in enumerate(a.instr.accesses):
        for kb, (acc_b, wb) in enumerate(b.instr.accesses):
            if not (wa or wb):
                continue
            fa, ca = cells(a, ka, acc_a)
            fb, cb = cells(b, kb, acc_b)
            if fa.space != fb.space:
                continue
            alias = fa.space[1] if isinstance(fa.space, tuple) else None
            if alias is not None and fa.tensor != fb.tensor:
                shared = ca  # two tensors of one alias group always share: report first's bytes
            else:
                shared = ca & cb
            if not shared:
                continue
            kind = 0 if (wa and not wb) else (1 if wa else 2)  # RAW, WAW, WAR
            mem = MEM_RANK[fa.space if isinstance(fa.space, str) else "dram"]
            parts = [p for p, _ in shared if p is not None]
            bytes_ = [byte for _, byte in shared]
            entry = [min(parts) if parts else 0, max(parts) + 1 if parts else 0, min(bytes_), max(bytes_) + 1, alias]
            old = out.get((kind, mem))
            if old is None:
                out[(kind, mem)] = entry
            else:
                out[(kind, mem)] = [min(old[0], entry[0]), max(old[1], entry[1]), min(old[2], entry[2]),
                                    max(old[3], entry[3]), alias]
    return out


def brute_races(program: Program, waits=None) -> list[tuple]:
    """``(kind, first, second, memory, partitions, bytes, alias)`` of every race, spec order."""
    unrolled = unroll(program)
    graph = hb_graph(program, unrolled, waits)
    reach = {i.id: nx.descendants(graph, (i.id, "E")) for i in unrolled}
    races = []
    cache: dict = {}
    kinds = ("RAW", "WAW", "WAR")
    mems = ("sbuf", "psum", "dram")
    for a in unrolled:
        for b in unrolled:
            if b.id <= a.id:
                continue
            found = conflicts(program, a, b, cache)
            if not found or (b.id, "S") in reach[a.id]:
                continue
            kind, mem = min(found)
            plo, phi, blo, bhi, alias = found[(kind, mem)]
            races.append((kinds[kind], a.name, b.name, mems[mem], (plo, phi) if mem < 2 else None, (blo, bhi), alias))
    return races
