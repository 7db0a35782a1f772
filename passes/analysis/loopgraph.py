"""Per-loop dependence graphs with direction vectors and the SAP x SAP distance cache.

Reimplements ``constructLoopDependenceGraph`` and its two-pass driver
``constructPolyhedralDependenceGraphWithDistance`` (seed ``dependence-distance.txt`` sections
2-3).  In the seed both graphs it builds are debug scaffolding and the only persistent
product is the integer distance cache per loop; here every product is returned as a value
(:class:`LoopGraph`), and ``neuronsim loops`` prints it like the seed's debug dump.

Per loop ``L`` (every loop of the program, in program order):

* defs = the writes, uses = the reads of every instruction inside ``L`` (nested loops
  included);
* candidate pairs: a def and a use of the **same tensor name** (the builder's gate; the
  storage gate of :func:`neuronsim.passes.analysis.distance.same_location` is the kernel's, and for one name it
  always passes);
* ``distance`` = :func:`neuronsim.passes.analysis.distance.get_def_use_distance` with ``niters = trip(L) x
  product of the trips of L's parents`` (the fusion formula with ``L1 = L2 = L``), stored in
  the cache symmetrically (``cache[d][u] == cache[u][d]``);
* direction vectors, one element per loop enclosing both instructions (outermost first):
  ``+1`` when the def instance's index there is larger than the use's (def after use, ``>``),
  ``-1`` when smaller (``<``), ``0`` when equal; the distinct vectors over every instance pair
  whose footprints meet, sorted.  Exact: instances are grouped by their indices on the common
  loops, and two groups' byte unions meet iff some pair of their instances does.

>>> from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
>>> t = {"t": Tensor("t", MemoryKind.SBUF, "float32", (32, 16), partition=0, offset=0)}
>>> w = Instruction("w", "dve", "memset", writes=(Access("t", offset=4, pattern=((1, 4),), per_iteration=(("i", 4),)),))
>>> r = Instruction("r", "act", "tensor_copy", reads=(Access("t", pattern=((1, 4),), per_iteration=(("i", 4),)),),
...                 writes=(Access("t", pattern=((1, 4),)),))
>>> g = loop_dependence_graph(Program(t, (Loop("i", 3, (w, r)),)), "i")
>>> [(p.defn.label, p.use.label, p.directions, p.result.distance) for p in g.pairs if p.result.dependent]
[('w.writes[0]', 'r.reads[0]', ((-1,),), 0), ('r.writes[0]', 'r.reads[0]', ((0,), (1,)), 2)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from math import prod

import numpy as np

from neuronsim.machine.ir.program import MemoryKind, Program

from neuronsim.passes.analysis.distance import (AccessSite, DefUseDistance, GroupSets, evaluate_groups,
                                                get_def_use_distance)
from neuronsim.passes.analysis.program_index import ProgramIndex, index_of

__all__ = ["LoopPair", "LoopGraph", "loop_dependence_graph", "loop_dependence_graphs", "instructions_by_level",
           "MAX_PAIRS", "direction_vectors"]

#: Instance-group pairs visited per (def, use) pair before the direction vectors are cut short.
MAX_PAIRS = 1_000_000


@dataclass(frozen=True, slots=True)
class LoopPair:
    """One name-gated (def, use) pair of a loop: its distance and direction vectors."""

    defn: AccessSite
    use: AccessSite
    result: DefUseDistance
    common: tuple[str, ...]
    """Loops enclosing both instructions, outermost first (one vector element each)."""
    directions: tuple[tuple[int, ...], ...]
    complete: bool
    """False when :data:`MAX_PAIRS` cut the direction search short."""

    def to_json(self) -> dict:
        out = {"def": self.defn.label, "use": self.use.label, "tensor": self.defn.access.tensor,
               "dependent": self.result.dependent, "distance": self.result.distance,
               "last_def_group": self.result.last_def_group, "common_loops": list(self.common),
               "directions": [list(v) for v in self.directions], "complete": self.complete}
        if self.result.witness is not None:
            out["witness"] = self.result.witness.to_json()
        return out


@dataclass(frozen=True, slots=True)
class LoopGraph:
    """The dependence graph of one loop and its SAP x SAP distance cache."""

    loop: str
    trip_count: int
    parents: tuple[str, ...]
    niters: int
    defs: tuple[AccessSite, ...]
    uses: tuple[AccessSite, ...]
    pairs: tuple[LoopPair, ...]
    """Every name-gated (def, use) pair, defs outer, in program order."""

    @property
    def depth(self) -> int:
        return len(self.parents)

    @property
    def cache(self) -> Mapping[AccessSite, Mapping[AccessSite, int]]:
        """``cache[d][u] == cache[u][d]`` = distance, for every name-gated pair."""
        out: dict[AccessSite, dict[AccessSite, int]] = {}
        for pair in self.pairs:
            out.setdefault(pair.defn, {})[pair.use] = pair.result.distance
            out.setdefault(pair.use, {})[pair.defn] = pair.result.distance
        return out

    def distance(self, a: AccessSite, b: AccessSite) -> int | None:
        """The cached distance of two sites (either order), None when they were not paired."""
        return self.cache.get(a, {}).get(b)

    def ddg(self) -> dict[tuple[str, str], tuple[tuple[int, ...], ...]]:
        """The seed's ``DDGTy``: (def instruction, use instruction) -> distinct direction
        vectors, over the dependent pairs."""
        out: dict[tuple[str, str], set[tuple[int, ...]]] = {}
        for pair in self.pairs:
            if pair.result.dependent:
                out.setdefault((pair.defn.instruction, pair.use.instruction), set()).update(pair.directions)
        return {key: tuple(sorted(vectors)) for key, vectors in out.items()}

    def to_json(self) -> dict:
        cache: dict[str, dict[str, int]] = {}
        for site, row in self.cache.items():
            cache[site.label] = {other.label: d for other, d in row.items()}
        return {"loop": self.loop, "trip_count": self.trip_count, "depth": self.depth, "parents": list(self.parents),
                "niters": self.niters,
                "defs": [{"access": s.label, "tensor": s.access.tensor, "path": s.path} for s in self.defs],
                "uses": [{"access": s.label, "tensor": s.access.tensor, "path": s.path} for s in self.uses],
                "pairs": [p.to_json() for p in self.pairs], "cache": cache,
                "ddg": [{"def": d, "use": u, "directions": [list(v) for v in vs]} for (d, u), vs in self.ddg().items()]}


def _common(a: AccessSite, b: AccessSite) -> tuple[tuple[str, int], ...]:
    common = []
    for x, y in zip(a.nest, b.nest):
        if x[0] != y[0]:
            break
        common.append(x)
    return tuple(common)


def _meeting_pairs(a: GroupSets, b: GroupSets, limit: int) -> tuple[set[tuple[int, int]], bool]:
    """Group pairs ``(ga, gb)`` whose byte unions meet, by a sweep over their atoms."""
    events = []
    for side, sets in ((0, a), (1, b)):
        for g, iv in enumerate(sets.groups):
            for atom in iv:
                events.append((atom.lower, 1, side, g))
                events.append((atom.upper, 0, side, g))
    events.sort()
    active: tuple[dict[int, int], dict[int, int]] = ({}, {})
    pairs: set[tuple[int, int]] = set()
    visits = 0
    for _, starts, side, g in events:
        if not starts:
            active[side][g] -= 1
            if not active[side][g]:
                del active[side][g]
            continue
        for other in active[1 - side]:
            pairs.add((g, other) if side == 0 else (other, g))
        visits += len(active[1 - side])
        if visits > limit:
            return pairs, False
        active[side][g] = active[side].get(g, 0) + 1
    return pairs, True


def _directions(program: Program, defn: AccessSite, use: AccessSite,
                limit: int) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...], bool]:
    common = _common(defn, use)
    trips = [t for _, t in common]
    groups = prod(trips)
    td, tu = program.tensors[defn.access.tensor], program.tensors[use.access.tensor]
    a, b = evaluate_groups(td, defn, groups), evaluate_groups(tu, use, groups)
    names = tuple(n for n, _ in common)
    if td.alias is not None and td.alias == tu.alias and td.name != tu.name:
        # Two tensors of one alias group may share any byte: every index pair meets, so a
        # level allows every sign its trip count can give.
        return names, tuple(product(*(((-1, 0, 1) if t > 1 else (0,)) for t in trips))), True
    if a.base.memory != MemoryKind.DRAM and not a.base.partitions & b.base.partitions:
        return names, (), True
    pairs, complete = _meeting_pairs(a, b, limit)
    vectors = set()
    if pairs:
        ga, gb = (np.array(x, dtype=np.int64) for x in zip(*sorted(pairs)))
        ia = np.array(np.unravel_index(ga, trips)).T if trips else np.zeros((len(ga), 0), dtype=np.int64)
        ib = np.array(np.unravel_index(gb, trips)).T if trips else np.zeros((len(gb), 0), dtype=np.int64)
        vectors = {tuple(int(s) for s in row) for row in np.sign(ia - ib)}
    return names, tuple(sorted(vectors)), complete


def direction_vectors(program: Program, a: AccessSite, b: AccessSite,
                      limit: int = MAX_PAIRS) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...], bool]:
    """``(common loops, distinct vectors, complete)`` over the instance pairs of sites ``a``
    and ``b`` whose bytes meet: ``sign(index of a - index of b)`` per common loop (any two
    sites on one location; the caller checks the location)."""
    return _directions(program, a, b, limit)


def loop_dependence_graph(program: Program, name: str, *, max_pairs: int = MAX_PAIRS,
                          index: ProgramIndex | None = None) -> LoopGraph:
    """``constructLoopDependenceGraph(L)`` for the loop called ``name`` (see module doc).

    Requires: a valid program (virtual tensors allowed: footprints are then logical).
    Guarantees: one :class:`LoopPair` per (def, use) of one tensor name inside the loop, in
    program order (defs outer); ``distance`` as the kernel defines it; direction vectors exact
    unless ``complete`` is False.
    """
    index = index_of(program, index)
    place = index.loop(name)
    niters = place.loop.trip_count * prod(p.trip_count for p in place.parents)
    defs, uses = index.node_sites(name)
    pairs = []
    for defn in defs:
        for use in uses:
            if defn.access.tensor != use.access.tensor:  # the builder's tensor-name gate
                continue
            result = get_def_use_distance(program.tensors, defn, use, niters)
            common, directions, complete = tuple(n for n, _ in _common(defn, use)), (), True
            if result.dependent:
                common, directions, complete = _directions(program, defn, use, max_pairs)
            pairs.append(LoopPair(defn, use, result, common, directions, complete))
    parents = tuple(p.name for p in place.parents)
    return LoopGraph(name, place.loop.trip_count, parents, niters, defs, uses, tuple(pairs))


def instructions_by_level(program: Program) -> dict[int, tuple[str, ...]]:
    """Pass 1 of the driver (``collectInstructionsByNestingLevel``): instruction names by the
    number of loops around them, in program order.

    >>> from neuronsim.machine.ir.program import Instruction, Loop, Program
    >>> body = (Instruction("a", "dve", "nop"), Loop("i", 2, (Instruction("b", "dve", "nop"),)))
    >>> instructions_by_level(Program({}, body))
    {0: ('a',), 1: ('b',)}
    """
    levels: dict[int, list[str]] = {}
    for inst, loops in program.instructions():
        levels.setdefault(len(loops), []).append(inst.name)
    return {level: tuple(names) for level, names in sorted(levels.items())}


def loop_dependence_graphs(program: Program, *, max_pairs: int = MAX_PAIRS,
                           index: ProgramIndex | None = None) -> tuple[LoopGraph, ...]:
    """Pass 2 of the driver: the graph of every loop (opcode 105), in program order (one
    :class:`ProgramIndex` for all: linear in the loops, not quadratic)."""
    index = index_of(program, index)
    return tuple(loop_dependence_graph(program, name, max_pairs=max_pairs, index=index) for name in index.loops)
