"""Loop dependence distance (seed ``dependence-distance.txt``): ``getDefUseDistance`` and
``has_negative_distance``, the fusion-legality gate.

The seed answers one question for loop fusion: *if these two loops are merged, does a read
end up consuming a value its producer writes at a later relative iteration?*  It does not
subtract base offsets; it tiles each access's instances into ``niters`` iteration groups,
builds the exact byte interval set of every group and tests the groups pairwise for overlap.

How the seed's IR maps onto ours
    * **SAP** (symbolic access pattern, an instruction argument) -> :class:`AccessSite`: one
      entry of an instruction's ``writes`` (a DEF, ``ArgumentKind == 2``) or ``reads`` (a USE,
      ``ArgumentKind == 1``) with the loop nest around it and its JSON path.
    * **evaluated APs** -> the site's instances in program order (row-major over its loops,
      outermost first) and their footprints (:mod:`neuronsim.machine.model.geometry`).
    * **interval_set<u64, right_open_interval> per group** -> a ``portion`` union of the
      group's bytes.  An access repeats one byte set in every partition it lists and moving
      it between iterations changes bytes, not partitions, so a group's footprint is *its
      partition mask x that union*: two groups intersect iff masks and byte unions do.
    * **MemoryLocationSet identity** (the kernel's and ``has_negative_distance``'s gate) ->
      :func:`same_location`: the same tensor, or two *placed* tensors whose storage overlaps
      (same memory, shared partitions and bytes of their whole extents), or two tensors of one
      DRAM alias group.  A virtual tensor has no storage yet, so it only matches itself.
    * **tensor-name memcmp** (the per-loop builder's gate, :mod:`neuronsim.passes.analysis.loopgraph`) -> the
      same tensor name.  The two gates are separate code paths, as in the seed.

Iteration groups
    Instance ``k`` of ``n`` (program order) falls in group ``k * niters // n``: consecutive
    runs of instances.  With the site in ``parents x L x inner`` and ``niters = parents x
    gcd(trip counts)`` (:func:`fusion_niters`), a group is one iteration of the nest the fused
    loop would share (``gcd`` groups of ``trip(L) / gcd`` iterations of L).  The seed bins with
    ``elemIdx % niters`` over its own evaluated order; we bin by position so that inner loops
    stay inside their group whatever their order.  ``niters`` outside ``[1, n]`` for either
    site is the seed's assertion ``niters1 / niters != 0 && niters2 / niters != 0``: here a
    :class:`~neuronsim.machine.ir.errors.ProgramError` located at the access.

Which number the kernel returns
    The seed's pseudo-code maxes ``gi`` (the def group) over intersecting pairs, while its text
    says the value is the def iteration *relative to* the use ("a read consumes a value L1
    writes at a later relative iteration").  Taken literally, a producer writing ``t[i]`` and
    a consumer reading ``t[i]`` would get distance ``niters - 1`` and never fuse.  We return
    the relative reading, ``max(0, max{gi - gj : def[gi] meets use[gj]})``, and keep the
    literal ``max{gi}`` as :attr:`DefUseDistance.last_def_group` (the fusion pass can gate on
    it with ``gate=literal``).  The running max starts at 0, so no negative value is produced.

Why a *positive* distance means a *negative* dependence
    A positive value means some use in group ``gj`` reads bytes a def writes in a later group
    ``gi > gj``.  With the loops apart that is harmless (L1 finishes first); fused, iteration
    ``gj`` runs its use before iteration ``gi`` runs the def: a backward (negative)
    loop-carried dependence.  ``distance > 0`` is the illegal case; ``<= 0`` is legal.

>>> from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
>>> t = {"t": Tensor("t", MemoryKind.SBUF, "float32", (32, 16), partition=0, offset=0),
...      "u": Tensor("u", MemoryKind.SBUF, "float32", (32, 16), partition=0, offset=64)}
>>> def tile(tensor, loop, offset):      # 4 elements a partition, moving on by 4 per iteration
...     return Access(tensor, offset=offset, pattern=((1, 4),), per_iteration=((loop, 4),))
>>> def program(shift):                  # loop a writes t[i]; loop b copies t[i + shift] to u[i]
...     w = Instruction("w", "dve", "memset", writes=(tile("t", "a", 0),))
...     r = Instruction("r", "act", "tensor_copy", reads=(tile("t", "b", 4 * shift),), writes=(tile("u", "b", 0),))
...     return Program(t, (Loop("a", 3, (w,)), Loop("b", 3, (r,))))
>>> has_negative_distance(program(0), "a", "b") is None   # r[i] reads t[i] after w[i] wrote it
True
>>> found = has_negative_distance(program(1), "a", "b")   # r[0] reads t[1], which w[1] writes
>>> found.message[:47], found.distance, found.witness.first_instance, found.witness.second_instance
('[STOP FUSION] negative distance dep in def-use:', 1, 'w[1]', 'r[0]')
>>> found.witness.where()
'sbuf partitions [0, 32) bytes [16, 32)'
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from math import gcd

import numpy as np
import portion

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.geometry import Footprint, base_footprint, overlap, shifted, sorted_distinct
from neuronsim.machine.ir.program import MemoryKind, Program, Tensor
from neuronsim.passes.analysis.program_index import (AccessSite, LoopPlace, NodePlace, ProgramIndex, find_loop,
                                                     index_of, loop_sites, node_sites)

__all__ = [
    "AccessSite", "DefUseDistance", "Witness", "DistanceFinding", "GroupSets", "LoopPlace", "NodePlace",
    "ProgramIndex",
    "same_location", "loop_sites", "find_loop", "evaluate_groups", "get_def_use_distance",
    "fusion_niters", "has_negative_distance", "pair_distance_finding", "node_sites", "collect_illegal_common_ap",
    "sites_conflict",
]

_MEMORY = {MemoryKind.DRAM: "dram", MemoryKind.SBUF: "sbuf", MemoryKind.PSUM: "psum"}


def sites_conflict(tensors: Mapping[str, Tensor], a: AccessSite, b: AccessSite) -> bool:
    """Does some instance of ``a`` share a byte with some instance of ``b`` (one of them a
    write)?  The kernel with one iteration group: every instance in it."""
    if not (a.is_write or b.is_write) or not same_location(tensors[a.access.tensor], tensors[b.access.tensor]):
        return False
    return get_def_use_distance(tensors, a, b, 1).dependent


def _extent(t: Tensor) -> tuple[int, int]:
    return t.byte_base, t.byte_base + t.bytes_per_partition


def same_location(a: Tensor, b: Tensor) -> bool:
    """The kernel's existence gate (the seed's MemoryLocationSet identity), see module doc.

    >>> from neuronsim.machine.ir.program import MemoryKind, Tensor
    >>> x = Tensor("x", MemoryKind.SBUF, "float32", (64, 8), partition=0, offset=0)
    >>> y = Tensor("y", MemoryKind.SBUF, "float32", (32, 8), partition=32, offset=16)
    >>> z = Tensor("z", MemoryKind.SBUF, "float32", (64, 8), partition=0, offset=32)
    >>> same_location(x, y), same_location(x, z), same_location(x, x)
    (True, False, True)
    """
    if a.name == b.name:
        return True
    if a.memory != b.memory or a.is_virtual or b.is_virtual:
        return False
    if a.memory == MemoryKind.DRAM:
        if a.alias is not None or b.alias is not None:
            return a.alias == b.alias
    else:
        first_a, first_b = a.partition or 0, b.partition or 0
        if first_a >= first_b + b.shape[0] or first_b >= first_a + a.shape[0]:
            return False
    (lo_a, hi_a), (lo_b, hi_b) = _extent(a), _extent(b)
    return lo_a < hi_b and lo_b < hi_a


@dataclass(frozen=True, slots=True)
class GroupSets:
    """One access tiled into ``niters`` iteration groups: group ``g`` holds the instances
    with flat index ``k`` such that ``k * niters // instances == g`` (consecutive runs; with
    the nest ``parents x L x inner`` and ``niters = parents x gcd-groups`` a group is one
    iteration of the shared nest), and ``groups[g]`` is the union of their bytes."""

    site: AccessSite
    niters: int
    base: Footprint
    step: tuple[int, ...]
    """Byte shift per index of each loop of the nest."""
    groups: tuple[portion.Interval, ...]

    def members(self, g: int) -> range:
        total = self.site.instances
        return range(-(-g * total // self.niters), -(-(g + 1) * total // self.niters))

    def footprint(self, flat: int) -> Footprint:
        index = np.unravel_index(flat, [t for _, t in self.site.nest]) if self.site.nest else ()
        delta = sum(int(i) * s for i, s in zip(index, self.step))
        return shifted(self.base, delta) if delta else self.base


def _deltas(site: AccessSite, step: tuple[int, ...]) -> np.ndarray:
    deltas = np.zeros(1, dtype=np.int64)
    for (_, trip), s in zip(site.nest, step):
        deltas = (deltas[:, None] + np.arange(trip, dtype=np.int64)[None, :] * s).ravel()
    return deltas


def evaluate_groups(tensor: Tensor, site: AccessSite, niters: int) -> GroupSets:
    """Tile ``site``'s instances into ``niters`` groups (``getEvaluatedAps`` + binning).

    Raises a ProgramError located at the access when ``niters`` is not in
    ``[1, instances]``: the seed's ``assert(niters1 / niters != 0 && niters2 / niters != 0)``.
    """
    total = site.instances
    if not 1 <= niters <= total:
        raise ProgramError(site.path, f"cannot tile {site.label} into {niters} iteration groups: it has {total} "
                           f"instance(s), and niters must be between 1 and that (the seed asserts "
                           f"niters1 / niters != 0 && niters2 / niters != 0)")
    shifts = dict(site.access.per_iteration)
    step = tuple(shifts.get(loop, 0) * tensor.itemsize for loop, _ in site.nest)
    base = base_footprint(tensor, site.access)
    deltas = _deltas(site, step)
    atoms = base.bytes
    groups = []
    for g in range(niters):
        lo, hi = -(-g * total // niters), -(-(g + 1) * total // niters)
        moved = sorted_distinct(deltas[lo:hi]).tolist()
        groups.append(portion.Interval(*(portion.closedopen(a + d, b + d) for d in moved for a, b in atoms)))
    return GroupSets(site, niters, base, step, tuple(groups))


@dataclass(frozen=True, slots=True)
class Witness:
    """Two instances whose bytes meet, from the group pair that gives the distance."""

    first_group: int
    second_group: int
    first_instance: str
    second_instance: str
    memory: str
    partitions: tuple[int, int] | None
    bytes: tuple[int, int]
    alias: str | None = None

    def where(self) -> str:
        parts = f" partitions [{self.partitions[0]}, {self.partitions[1]})" if self.partitions else ""
        space = f"dram alias group {self.alias}" if self.alias else self.memory
        return f"{space}{parts} bytes [{self.bytes[0]}, {self.bytes[1]})"

    def to_json(self) -> dict:
        out = {"groups": [self.first_group, self.second_group],
               "instances": [self.first_instance, self.second_instance], "memory": self.memory,
               "bytes": list(self.bytes)}
        if self.partitions is not None:
            out["partitions"] = list(self.partitions)
        if self.alias is not None:
            out["alias"] = self.alias
        return out


@dataclass(frozen=True, slots=True)
class DefUseDistance:
    """What :func:`get_def_use_distance` finds for one (def, use) pair."""

    distance: int
    """``max(0, max{gi - gj})`` over intersecting (def group gi, use group gj): > 0 is illegal."""
    niters: int
    same_location: bool
    """The existence gate passed (when False nothing else was computed)."""
    dependent: bool
    """Some def group meets some use group (the seed's ``bir::intersecting``)."""
    last_def_group: int | None
    """The seed's literal ``max{gi}`` over intersecting pairs (None when not dependent)."""
    witness: Witness | None
    """Instances of the group pair that maximises ``gi - gj`` (None when not dependent)."""


def _sweep(first: GroupSets, second: GroupSets, universal: bool) -> tuple[int, int, int, int] | None:
    """``(gi, gj, byte, literal)``: the intersecting group pair with the largest ``gi - gj``,
    a byte both cover, and the largest intersecting ``gi``; None when nothing intersects.

    A sweep over the groups' atoms: on each elementary segment the active pairs all meet,
    and the best pair there is (largest active first group, smallest active second group).
    """
    if universal:  # two tensors of one alias group: every pair may share a byte
        return first.niters - 1, 0, 0, first.niters - 1
    events: list[tuple[int, int, int, int]] = []
    for side, sets in ((0, first), (1, second)):
        for g, iv in enumerate(sets.groups):
            for atom in iv:
                events.append((atom.lower, 1, side, g))
                events.append((atom.upper, 0, side, g))
    events.sort()
    counts: tuple[dict[int, int], dict[int, int]] = ({}, {})
    heaps: tuple[list[int], list[int]] = ([], [])  # first: max-heap (negated); second: min-heap
    best = None
    literal = -1
    k = 0
    while k < len(events):
        x = events[k][0]
        while k < len(events) and events[k][0] == x:
            _, starts, side, g = events[k]
            counts[side][g] = counts[side].get(g, 0) + (1 if starts else -1)
            if starts:
                heapq.heappush(heaps[side], -g if side == 0 else g)
            k += 1
        for side in (0, 1):
            heap = heaps[side]
            while heap and counts[side].get(-heap[0] if side == 0 else heap[0], 0) <= 0:
                heapq.heappop(heap)
        if heaps[0] and heaps[1]:
            gi, gj = -heaps[0][0], heaps[1][0]
            literal = max(literal, gi)
            if best is None or gi - gj > best[0] - best[1]:
                best = (gi, gj, x)
    return None if best is None else (*best, literal)


def _instance_at(sets: GroupSets, g: int, byte: int, universal: bool) -> int:
    members = sets.members(g)
    if universal:
        return members[0]
    for flat in members:
        if any(lo <= byte < hi for lo, hi in sets.footprint(flat).bytes):
            return flat
    raise AssertionError("a group covers a byte none of its instances covers")  # pragma: no cover


def get_def_use_distance(tensors: Mapping[str, Tensor], defn: AccessSite, use: AccessSite,
                         niters: int) -> DefUseDistance:
    """``bir::getDefUseDistance``: how many iteration groups ``defn`` runs ahead of ``use``.

    Requires: ``1 <= niters <= instances`` of both sites (else a located ProgramError).
    Guarantees: ``distance > 0`` iff some instance of ``use`` in group ``gj`` shares a byte
    with some instance of ``defn`` in a group ``gi > gj`` (exact: a group's footprint is the
    union of its instances'); ``distance >= 0``; different locations give 0 untouched.

    The kernel does not look at which one writes: :mod:`neuronsim.passes.fuse_loops` also calls it with a
    use of the first loop against a def of the second (WAR) and with two defs (WAW).
    """
    td, tu = tensors[defn.access.tensor], tensors[use.access.tensor]
    if not same_location(td, tu):
        return DefUseDistance(0, niters, False, False, None, None)
    d_sets, u_sets = evaluate_groups(td, defn, niters), evaluate_groups(tu, use, niters)
    universal = td.alias is not None and td.alias == tu.alias and td.name != tu.name
    if not universal:
        if d_sets.base.space != u_sets.base.space:
            return DefUseDistance(0, niters, True, False, None, None)
        if d_sets.base.memory != MemoryKind.DRAM and not d_sets.base.partitions & u_sets.base.partitions:
            return DefUseDistance(0, niters, True, False, None, None)
    found = _sweep(d_sets, u_sets, universal)
    if found is None:
        return DefUseDistance(0, niters, True, False, None, None)
    gi, gj, byte, literal = found
    fi, fj = _instance_at(d_sets, gi, byte, universal), _instance_at(u_sets, gj, byte, universal)
    shared = overlap(d_sets.footprint(fi), u_sets.footprint(fj))
    assert shared is not None
    lo, hi = shared.byte_range
    witness = Witness(gi, gj, defn.instance(fi), use.instance(fj), _MEMORY[shared.memory], shared.partition_range,
                      (lo, hi), shared.alias)
    return DefUseDistance(max(0, gi - gj), niters, True, True, literal, witness)


def fusion_niters(program: Program, first: str, second: str, *, index: ProgramIndex | None = None) -> int:
    """``gcd(trip counts) x product of the trip counts of the shared parent loops``.

    The parents are compared in lock-step from the innermost outwards, as the seed's
    ``getParentLoop`` walk does: it stops at the first level where they differ.
    """
    index = index_of(program, index)
    a, b = index.loop(first), index.loop(second)
    niters = gcd(a.loop.trip_count, b.loop.trip_count)
    for pa, pb in zip(reversed(a.parents), reversed(b.parents)):
        if pa is not pb:
            break
        niters *= pa.trip_count
    return niters


@dataclass(frozen=True, slots=True)
class DistanceFinding:
    """A pair of accesses that fusing ``first_loop`` with ``second_loop`` would reorder.

    ``kind`` is ``def-use`` (the seed's check: a def of the first loop read by the second),
    ``use-def`` (a use of the first loop that the second overwrites) or ``def-def``.
    """

    kind: str
    first_loop: str
    second_loop: str
    first: AccessSite
    second: AccessSite
    distance: int
    niters: int
    witness: Witness

    @property
    def tensors(self) -> tuple[str, str]:
        return self.first.access.tensor, self.second.access.tensor

    @property
    def message(self) -> str:
        w = self.witness
        verbs = {"def": "writes", "use": "reads"}
        a, b = self.tensors
        second_tensor = "it" if a == b else b
        return (f"[STOP FUSION] negative distance dep in {self.kind}: {w.first_instance} (loop {self.first_loop}, "
                f"{self.first.label}) {verbs[self.first.role]} {a}, {w.second_instance} (loop {self.second_loop}, "
                f"{self.second.label}) {verbs[self.second.role]} {second_tensor}: {w.where()}, "
                f"distance {self.distance} over {self.niters} iteration groups")

    def to_json(self) -> dict:
        return {"message": self.message, "kind": self.kind, "loops": [self.first_loop, self.second_loop],
                "first": {"access": self.first.label, "path": self.first.path, "tensor": self.tensors[0]},
                "second": {"access": self.second.label, "path": self.second.path, "tensor": self.tensors[1]},
                "distance": self.distance, "niters": self.niters, "witness": self.witness.to_json()}


def pair_distance_finding(program: Program, kind: str, first_loop: str, second_loop: str, first: AccessSite,
                          second: AccessSite, niters: int, *, literal: bool = False) -> DistanceFinding | None:
    """Run the kernel on one pair; a finding when it rejects (``distance > 0``, or with
    ``literal`` the seed's literal ``last_def_group > 0``)."""
    result = get_def_use_distance(program.tensors, first, second, niters)
    value = (result.last_def_group or 0) if literal else result.distance
    if value <= 0:
        return None
    assert result.witness is not None
    return DistanceFinding(kind, first_loop, second_loop, first, second, value, niters, result.witness)


def has_negative_distance(program: Program, first: str, second: str, *, literal: bool = False,
                          index: ProgramIndex | None = None) -> DistanceFinding | None:
    """The seed's ``has_negative_distance(L1, L2)``: the first (def of ``first``, use of
    ``second``) pair on one location whose distance is positive, or None when fusing them
    is legal for this check.  Truthy exactly when the seed returns 1.

    Pairs are visited as the seed does (uses outer, defs inner); ``niters`` is
    :func:`fusion_niters`.  Only def-use pairs are checked, as in the seed: see
    :func:`neuronsim.passes.fuse_loops.fusion_hazards` for the use-def and def-def orders fusion also needs.
    """
    index = index_of(program, index)
    niters = fusion_niters(program, first, second, index=index)
    defs, _ = loop_sites(program, first, index=index)
    _, uses = loop_sites(program, second, index=index)
    tensors = program.tensors
    for use in uses:
        for defn in defs:
            if same_location(tensors[defn.access.tensor], tensors[use.access.tensor]):
                found = pair_distance_finding(program, "def-use", first, second, defn, use, niters, literal=literal)
                if found is not None:
                    return found
    return None


def collect_illegal_common_ap(program: Program, first: str, second: str, *, literal: bool = False,
                              index: ProgramIndex | None = None) -> tuple[DistanceFinding, ...]:
    """Every pair of access patterns on a location common to loops ``first`` and ``second``
    that fusing them would reorder (the seed's ``collect_illegal_common_ap``, which the fusion
    code consults beside ``has_negative_distance``): def-use (a def of ``first`` read by
    ``second``, the seed's polarity), use-def and def-def, each pair with a positive
    distance over :func:`fusion_niters` groups, in that order (uses, then defs, outer).
    Empty when fusing is legal for the byte checks.

    >>> from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
    >>> t = {n: Tensor(n, MemoryKind.SBUF, "float32", (32, 16), partition=0, offset=64 * k) for k, n in enumerate("tu")}
    >>> def tile(tensor, loop, offset):
    ...     return Access(tensor, offset=offset, pattern=((1, 4),), per_iteration=((loop, 4),))
    >>> a = Loop("a", 3, (Instruction("w", "dve", "memset", writes=(tile("t", "a", 0),)),
    ...                   Instruction("v", "dve", "memset", writes=(tile("u", "a", 0),))))
    >>> b = Loop("b", 3, (Instruction("r", "act", "tensor_tensor", reads=(tile("t", "b", 4), tile("u", "b", 4)),
    ...                               writes=(tile("t", "b", 4),), attrs={"op": "add"}),))
    >>> for f in collect_illegal_common_ap(Program(t, (a, b)), "a", "b"):
    ...     print(f.kind, f.first.label, f.second.label)
    def-use w.writes[0] r.reads[0]
    def-use v.writes[0] r.reads[1]
    def-def w.writes[0] r.writes[0]
    """
    index = index_of(program, index)
    niters = fusion_niters(program, first, second, index=index)
    defs1, uses1 = loop_sites(program, first, index=index)
    defs2, uses2 = loop_sites(program, second, index=index)
    tensors = program.tensors
    findings: list[DistanceFinding] = []
    for kind, outer, inner, swap in (("def-use", uses2, defs1, True), ("use-def", uses1, defs2, False),
                                     ("def-def", defs1, defs2, False)):
        for o in outer:
            for i in inner:
                a, b = (i, o) if swap else (o, i)  # a belongs to the first loop, b to the second
                if not same_location(tensors[a.access.tensor], tensors[b.access.tensor]):
                    continue
                found = pair_distance_finding(program, kind, first, second, a, b, niters, literal=literal)
                if found is not None:
                    findings.append(found)
    return tuple(findings)
