"""``fuse-loops``: fuse adjacent loops with equal trip counts when no dependence forbids it.

The seed's loop optimizer (``dependence-distance.txt`` section 7) walks candidate loop pairs,
asks ``has_negative_distance(L1, L2)`` and prints ``[STOP FUSION] negative distance dep in
def-use`` when it says no.  This pass does the same for *adjacent* sibling loops (nothing
between them) with equal trip counts, greedily in program order: a fused loop is tried again
with the loop after it, and its body is searched for newly adjacent loops.

Legality (:func:`fusion_hazards`)
    Fusing L1 and L2 (trip count T) into F runs, in iteration i, L1's body then L2's.  Every
    pair of instances keeps its order except (x of L1 at iteration i, y of L2 at iteration j)
    with ``i > j``, which swap; fusion keeps the program's meaning iff no swapped pair
    conflicts.  The checks, all with the seed's ``niters`` (:func:`neuronsim.passes.analysis.distance.fusion_niters`):

    * ``def-use``: the seed's check, defs of L1 against uses of L2 on one location;
    * ``use-def`` and ``def-def`` (ours): a swapped WAR or WAW changes results as surely as a
      swapped RAW, and the seed's gate does not see them;
    * ``rng-state`` (ours): random generators are per engine (:mod:`neuronsim.machine.model.semantics`), so if
      both loops reseed or draw on one engine and ``niters > 1`` fusion interleaves the draws.

    For loops outside any other loop the groups are iterations and the test is exact: it
    refuses iff some conflicting pair would swap.  Inside shared parent loops the parent
    iterations are groups too (the seed's formula), which is conservative: a def in a later
    parent iteration against a use in an earlier one has a positive distance although fusion
    does not swap them.  ``gate=literal`` rejects on the seed's literal ``max gi`` instead
    (:attr:`neuronsim.passes.analysis.distance.DefUseDistance.last_def_group`), which refuses every dependence
    whose def is past group 0.

The fused loop (:func:`fuse_pair`)
    is named ``FIRST+SECOND`` (``#2``, ``#3``... appended if that is taken), has L1's body then
    L2's, the extras of both (L1's win) and ``x-fused-from`` listing the original loops; every
    ``per_iteration`` key naming L1 or L2 names the fused loop.  Instruction names and deps
    are untouched, and every dep stays valid (the fused loop only adds a common loop):

    * deps inside L1, inside L2, and between either and the rest keep their meaning;
    * a dep of an L2 instruction on an L1 instruction used to wait for every iteration of it;
      now it waits for the same iteration, which (instances of one instruction complete in
      program order) orders every iteration up to it: all the fused order still needs;
    * a loop-carried dep between them (inside a shared parent) now waits for the previous
      iteration of F, which completes after the previous parent iteration's instances.

    Fusion can still break an order the given deps only implied transitively (the last
    iterations of L1 no longer precede L2), so run dependence construction after fusing: the
    default pipeline replaces the deps.

Contract
    requires: a valid program (virtual tensors allowed: fusion belongs before allocation).
    guarantees: a valid program with the same instructions, whose sequential execution
    (program order) equals the input's whenever every fusion made passed the exact check
    above; each refusal is a located finding (:class:`FusionVerdict`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Loop, Node, Program, frozen_mapping

from neuronsim.passes.analysis.distance import DistanceFinding, find_loop, fusion_niters, loop_sites, pair_distance_finding, same_location
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["FuseLoops", "FusionVerdict", "FusionResult", "StateFinding", "fusion_hazards", "check_fusion",
           "adjacent_loop_pairs", "fuse_pair", "fuse_loops", "GATES"]

GATES = ("relative", "literal")
_RNG_OPS = frozenset({"set_rand_state", "random"})


@dataclass(frozen=True, slots=True)
class StateFinding:
    """Both loops use one engine's random generator: fusion would interleave its draws."""

    first_loop: str
    second_loop: str
    engine: str
    first: str
    second: str
    niters: int
    kind: ClassVar[str] = "rng-state"

    @property
    def message(self) -> str:
        return (f"[STOP FUSION] shared random state: {self.first} (loop {self.first_loop}) and {self.second} "
                f"(loop {self.second_loop}) both use the {self.engine} random generator; fusing would interleave "
                f"their {self.niters} iteration groups")

    def to_json(self) -> dict:
        return {"message": self.message, "kind": self.kind, "loops": [self.first_loop, self.second_loop],
                "engine": self.engine, "instructions": [self.first, self.second], "niters": self.niters}


Finding = DistanceFinding | StateFinding


def _rng_users(program: Program, name: str) -> dict[str, str]:
    place = find_loop(program, name)
    users: dict[str, str] = {}
    for inst, _ in Program(program.tensors, place.loop.body).instructions():
        if inst.op in _RNG_OPS:
            users.setdefault(inst.engine, inst.name)
    return users


def fusion_hazards(program: Program, first: str, second: str, *, gate: str = "relative") -> tuple[Finding, ...]:
    """Every reason not to fuse ``first`` (earlier) with ``second`` (see module doc), in the
    order def-use (uses outer, as the seed), use-def, def-def, rng-state."""
    if gate not in GATES:
        raise ValueError(f"gate must be one of {GATES}, not {gate!r}")
    literal = gate == "literal"
    niters = fusion_niters(program, first, second)
    defs1, uses1 = loop_sites(program, first)
    defs2, uses2 = loop_sites(program, second)
    tensors = program.tensors
    findings: list[Finding] = []
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
    if niters > 1:
        rng1, rng2 = _rng_users(program, first), _rng_users(program, second)
        for engine in sorted(rng1.keys() & rng2.keys()):
            findings.append(StateFinding(first, second, engine, rng1[engine], rng2[engine], niters))
    return tuple(findings)


@dataclass(frozen=True, slots=True)
class FusionVerdict:
    """What fusion made of one adjacent loop pair."""

    first: str
    second: str
    trip_counts: tuple[int, int]
    findings: tuple[Finding, ...] = ()
    fused: str | None = None
    """Name of the fused loop when the pass fused the pair."""

    @property
    def legal(self) -> bool:
        return self.trip_counts[0] == self.trip_counts[1] and not self.findings

    @property
    def status(self) -> str:
        if self.trip_counts[0] != self.trip_counts[1]:
            return "trip counts differ"
        if self.findings:
            return "refused"
        return "fused" if self.fused else "legal"

    @property
    def message(self) -> str:
        head = f"{self.first} + {self.second}"
        if self.status == "trip counts differ":
            return f"{head}: not fused, trip counts {self.trip_counts[0]} and {self.trip_counts[1]} differ"
        if self.findings:
            return f"{head}: " + "; ".join(f.message for f in self.findings)
        return f"{head}: fused into {self.fused}" if self.fused else f"{head}: legal"

    def to_json(self) -> dict:
        return {"loops": [self.first, self.second], "trip_counts": list(self.trip_counts), "status": self.status,
                "fused": self.fused, "findings": [f.to_json() for f in self.findings]}


def adjacent_loop_pairs(program: Program) -> list[tuple[Loop, Loop]]:
    """Sibling loops with nothing between them, in program order (any trip counts)."""
    pairs = []
    for nodes in [program.body] + [node.body for node, _ in program.walk() if isinstance(node, Loop)]:
        pairs.extend((a, b) for a, b in zip(nodes, nodes[1:]) if isinstance(a, Loop) and isinstance(b, Loop))
    order = {node.name: k for k, (node, _) in enumerate(program.walk())}
    return sorted(pairs, key=lambda pair: order[pair[0].name])


def check_fusion(program: Program, first: str, second: str, *, gate: str = "relative") -> FusionVerdict:
    """The verdict on one pair, without fusing (trip counts first, then the hazards)."""
    a, b = find_loop(program, first).loop, find_loop(program, second).loop
    if a.trip_count != b.trip_count:
        return FusionVerdict(first, second, (a.trip_count, b.trip_count))
    return FusionVerdict(first, second, (a.trip_count, b.trip_count), fusion_hazards(program, first, second, gate=gate))


def _moved(access: Access, rename: dict[str, str]) -> Access:
    if not any(loop in rename for loop, _ in access.per_iteration):
        return access
    moved = tuple((rename.get(loop, loop), shift) for loop, shift in access.per_iteration)
    return dataclasses.replace(access, per_iteration=moved)


def _renamed(node: Node, rename: dict[str, str]) -> Node:
    if isinstance(node, Loop):
        return Loop(node.name, node.trip_count, tuple(_renamed(n, rename) for n in node.body), node.extras)
    reads = tuple(_moved(a, rename) for a in node.reads)
    writes = tuple(_moved(a, rename) for a in node.writes)
    if reads == node.reads and writes == node.writes:
        return node
    return dataclasses.replace(node, reads=reads, writes=writes)


def _fresh_name(program: Program, base: str) -> str:
    taken = {node.name for node, _ in program.walk()}
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}#{k}"
    return name


def fuse_pair(program: Program, first: str, second: str) -> tuple[Program, str]:
    """Fuse adjacent loops ``first`` and ``second`` (equal trip counts) without any legality
    check; returns the program and the fused loop's name (see module doc)."""
    a, b = find_loop(program, first), find_loop(program, second)
    if a.loop.trip_count != b.loop.trip_count:
        raise ProgramError(b.path, f"cannot fuse {first!r} (trip count {a.loop.trip_count}) with {second!r} "
                           f"(trip count {b.loop.trip_count}): trip counts differ")
    name = _fresh_name(program, f"{first}+{second}")
    rename = {first: name, second: name}
    origins = [*a.loop.extras.get("x-fused-from", [first]), *b.loop.extras.get("x-fused-from", [second])]
    extras = frozen_mapping({**b.loop.extras, **a.loop.extras, "x-fused-from": origins})
    fused = Loop(name, a.loop.trip_count, tuple(_renamed(n, rename) for n in (*a.loop.body, *b.loop.body)), extras)
    done = []

    def rebuild(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
        out: list[Node] = []
        k = 0
        while k < len(nodes):
            node = nodes[k]
            if isinstance(node, Loop) and node.name == first:
                nxt = nodes[k + 1] if k + 1 < len(nodes) else None
                if not (isinstance(nxt, Loop) and nxt.name == second):
                    raise ProgramError(b.path, f"cannot fuse {first!r} with {second!r}: they are not adjacent loops")
                out.append(fused)
                done.append(True)
                k += 2
                continue
            if isinstance(node, Loop):
                node = Loop(node.name, node.trip_count, rebuild(node.body), node.extras)
            out.append(node)
            k += 1
        return tuple(out)

    body = rebuild(program.body)
    if not done:  # pragma: no cover - find_loop found it, so rebuild does too
        raise ProgramError(a.path, f"loop {first!r} not found")
    return program.with_body(body), name


@dataclass(frozen=True, slots=True)
class FusionResult:
    """The fused program and a verdict per pair the pass tried, in the order it tried them."""

    program: Program
    verdicts: tuple[FusionVerdict, ...]

    @property
    def fused(self) -> tuple[FusionVerdict, ...]:
        return tuple(v for v in self.verdicts if v.fused)

    @property
    def refused(self) -> tuple[FusionVerdict, ...]:
        return tuple(v for v in self.verdicts if v.findings)


def fuse_loops(program: Program, *, gate: str = "relative", only: frozenset[str] = frozenset()) -> FusionResult:
    """Fuse greedily (see module doc); ``only``, when not empty, limits fusion to those loops
    (and the loops fused from them)."""
    eligible = set(only)
    tried: set[tuple[str, str]] = set()
    verdicts: list[FusionVerdict] = []
    while True:
        pair = next(((a, b) for a, b in adjacent_loop_pairs(program)
                     if a.trip_count == b.trip_count and (a.name, b.name) not in tried
                     and (not only or (a.name in eligible and b.name in eligible))), None)
        if pair is None:
            return FusionResult(program, tuple(verdicts))
        first, second = pair[0].name, pair[1].name
        tried.add((first, second))
        verdict = check_fusion(program, first, second, gate=gate)
        if verdict.findings:
            verdicts.append(verdict)
            continue
        program, name = fuse_pair(program, first, second)
        eligible.add(name)
        verdicts.append(dataclasses.replace(verdict, fused=name))


@dataclass(frozen=True, slots=True)
class FuseLoops(Pass):
    """Pass ``fuse-loops{gate=relative|literal, only=a|b}``: see the module doc."""

    name: ClassVar[str] = "fuse-loops"
    gate: str = "relative"
    only: frozenset = frozenset()

    def __post_init__(self) -> None:
        if self.gate not in GATES:
            raise ValueError(f"gate must be one of {'|'.join(GATES)}, got {self.gate!r}")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        result = fuse_loops(program, gate=self.gate, only=self.only)
        ctx.count(self.name, "fused", len(result.fused))
        ctx.count(self.name, "refused", len(result.refused))
        return result.program
