"""Why does an edge exist?  The seed's "Explaining why X and Y interfere", for people.

:func:`explain` takes two instruction names and reports, for a compiled program:

* the deps between them (either direction, kind, loop-carried) and, when the pipeline ran
  with provenance on, the rules that produced them (``fdeps:raw``, ``anti:war`` ...);
* the instance pairs that conflict, each with its kind (RAW / WAW / WAR, spec order), memory,
  the two tensors, and the smallest partition and byte ranges covering the shared bytes;
* whether the engines already order them (rule 1: same sequencer, earlier not a DMA; rule 3:
  same DMA queue).

Examples
--------
>>> from neuronsim.machine.formats.program_json import load_program
>>> e = explain(load_program("examples/matmul_k_loop.json"), "mm", "ld_x")
>>> print(e.render().splitlines()[0])
Explaining why mm and ld_x interfere:
>>> p = e.pairs[0]
>>> type(p).__name__, p.first, p.second, p.kind, p.memory, p.tensors, p.partitions, p.bytes, p.alias
('ConflictPair', 'mm[0]', 'ld_x[1]', 'WAR', 'sbuf', ('xs', 'xs'), (0, 128), (0, 256), None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neuronsim.machine.order.conflicts import conflicts
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.geometry import interval_cover, mask_range
from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.ir.source import instance_source, source_text
from neuronsim.machine.order.stream import InstanceStream, stream_of

__all__ = ["explain", "Explanation", "ConflictPair", "EdgeNote"]

_KIND_RANK = {"RAW": 0, "WAW": 1, "WAR": 2}
_MEM_RANK = {MemoryKind.SBUF: 0, MemoryKind.PSUM: 1, MemoryKind.DRAM: 2}


@dataclass(frozen=True, slots=True)
class ConflictPair:
    """Two conflicting instances, ``first`` earlier in program order."""

    first: str
    second: str
    kind: str
    memory: str
    tensors: tuple[str, str]
    partitions: tuple[int, int] | None
    bytes: tuple[int, int]
    alias: str | None = None
    sources: tuple[str | None, str | None] = field(default=(None, None), repr=False)
    """The kernel locations of the two instances (``x-source``), None where unknown."""


@dataclass(frozen=True, slots=True)
class EdgeNote:
    """A dep between the two instructions and the rules that produced it."""

    waiter: str
    former: str
    kind: str
    loop_carried: bool
    rules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    a: str
    b: str
    edges: tuple[EdgeNote, ...]
    pairs: tuple[ConflictPair, ...]
    total_pairs: int
    engine_order: str | None
    sources: tuple[str | None, str | None] = field(default=(None, None), repr=False)
    """Where ``a`` and ``b`` come from in the kernel (``x-source``: call at file:line)."""

    def render(self) -> str:
        lines = [f"Explaining why {self.a} and {self.b} interfere:"]
        for name, where in zip((self.a, self.b), self.sources):
            if where:
                lines.append(f"  {name}: {where}")
        for e in self.edges:
            lc = ", loop-carried" if e.loop_carried else ""
            rules = f"; rules: {', '.join(e.rules)}" if e.rules else ""
            lines.append(f"  dep: {e.waiter} waits for {e.former} ({e.kind}{lc}){rules}")
        if not self.edges:
            lines.append("  no dep between them")
        if self.engine_order:
            lines.append(f"  engine order: {self.engine_order}")
        if not self.pairs:
            lines.append("  they touch no common byte that one of them writes: no memory dependence")
        for p in self.pairs:
            where = f"partitions [{p.partitions[0]},{p.partitions[1]}) " if p.partitions else ""
            alias = f" (alias group {p.alias})" if p.alias else ""
            located = f" [{p.sources[0] or p.first} / {p.sources[1] or p.second}]" if any(p.sources) else ""
            lines.append(f"  {p.kind} {p.first} -> {p.second}: {p.memory}{alias} {where}"
                         f"bytes [{p.bytes[0]},{p.bytes[1]}) ({p.tensors[0]} / {p.tensors[1]}){located}")
        if self.total_pairs > len(self.pairs):
            lines.append(f"  ... {self.total_pairs} conflicting instance pairs in all")
        return "\n".join(lines)

    def to_json(self) -> dict:
        located = {k: v for k, v in zip(("a_source", "b_source"), self.sources) if v}
        return {
            "a": self.a, "b": self.b, **located,
            "deps": [{"waiter": e.waiter, "on": e.former, "kind": e.kind, "loop_carried": e.loop_carried,
                      "rules": list(e.rules)} for e in self.edges],
            "engine_order": self.engine_order,
            "conflicts": [{"kind": p.kind, "first": p.first, "second": p.second, "memory": p.memory,
                           "tensors": list(p.tensors), "partitions": list(p.partitions) if p.partitions else None,
                           "bytes": list(p.bytes), "alias": p.alias,
                           **{k: v for k, v in zip(("first_source", "second_source"), p.sources) if v}}
                          for p in self.pairs],
            "total_conflicts": self.total_pairs,
        }


def _pair(stream: InstanceStream, first: int, second: int) -> ConflictPair | None:
    found = conflicts(stream, first, second)
    if not found:
        return None
    kind, fa, fb, mask, shared = min(found, key=lambda c: (_KIND_RANK[c[0]], _MEM_RANK[c[1].memory]))
    alias = fa.space[1] if isinstance(fa.space, tuple) else None
    return ConflictPair(stream.instance_name(first), stream.instance_name(second), kind, fa.memory.name.lower(),
                        (fa.access.tensor, fb.access.tensor), mask_range(mask) if mask else None,
                        interval_cover(shared), alias,
                        (instance_source(stream, first), instance_source(stream, second)))


def explain(program: Program, a: str, b: str, provenance: Mapping | None = None, limit: int = 8,
            max_checks: int = 200_000) -> Explanation:
    """Explain the deps and conflicts between instructions ``a`` and ``b``."""
    stream = stream_of(program)
    for name in (a, b):
        if name not in stream.id_of:
            raise ProgramError("--explain", f"unknown instruction {name!r}")
    xa, xb = stream.id_of[a], stream.id_of[b]
    instrs = {inst.name: inst for inst, _ in program.instructions()}
    edges = []
    for waiter, former in ((a, b), (b, a)):
        for dep in instrs[waiter].deps:
            if dep.on == former:
                rules = tuple(sorted((provenance or {}).get((waiter, former, dep.loop_carried), ())))
                edges.append(EdgeNote(waiter, former, dep.kind.name.lower(), dep.loop_carried, rules))
    pairs, total, checks = [], 0, 0
    for ia in stream.instances_of(xa).tolist():
        for ib in stream.instances_of(xb).tolist():
            if (ib <= ia if xa == xb else ia == ib) or checks >= max_checks:
                continue
            checks += 1
            pair = _pair(stream, min(ia, ib), max(ia, ib))
            if pair is not None:
                total += 1
                if len(pairs) < limit:
                    pairs.append(pair)
    pairs.sort(key=lambda p: (stream.id_of[p.first.split("[")[0]] != xa, p.first, p.second))
    order = None
    seq_a, seq_b = int(stream.seq_x[xa]), int(stream.seq_x[xb])
    dma_a, dma_b = bool(stream.dma_x[xa]), bool(stream.dma_x[xb])
    if seq_a == seq_b and not dma_a and not dma_b:
        order = f"both on {instrs[a].engine}, which runs them in program order (rule 1)"
    elif dma_a and dma_b and int(stream.comp_x[xa]) == int(stream.comp_x[xb]):
        order = f"both on DMA queue {instrs[a].queue}, which runs them in program order (rule 3)"
    return Explanation(a, b, tuple(edges), tuple(pairs), total, order, (source_text(instrs[a]), source_text(instrs[b])))
