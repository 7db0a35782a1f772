"""``interchange-loops``: swap a perfectly nested loop pair when the direction vectors allow it.

The seed's loop optimizer uses its dependence graph for fusion *and interchange* legality
(``dependence-distance.txt`` section 7: "direction vector all-``=`` or leading-``<`` =>
legal"), but only the scalar fusion test is observed in the binary.  This pass gives
interchange its classic rule over the direction vectors of
:mod:`neuronsim.passes.analysis.loopgraph`.

Legality (:func:`interchange_hazards`)
    A nest ``O { I { body } }`` (``O``'s body is exactly the loop ``I``) becomes ``I { O {
    body } }``: the instances run in order of ``(i, o)`` instead of ``(o, i)``.  Two instances
    with index pairs ``(o1, i1)`` and ``(o2, i2)`` (same indices on the loops around ``O``)
    swap their order iff ``sign(o1 - o2)`` and ``sign(i1 - i2)`` are opposite and nonzero:
    their direction vector on ``(O, I)`` is ``(<, >)`` or ``(>, <)``.  So the interchange keeps
    the program's meaning iff no pair of accesses on one location (one of them a write, the
    same access twice included) has such a vector over instances whose bytes meet, with
    ``=`` on every loop around ``O`` (exact: the vectors are computed over the byte unions
    of instance groups, :func:`neuronsim.passes.analysis.loopgraph.direction_vectors`).  Two more reasons to
    refuse: a random generator used inside the nest when both trip counts exceed 1 (the draws
    would come in another order), and an access the byte test does not model (a tensor
    rotating with ``O`` or ``I``, or a partition that moves per iteration).

The transformation (:func:`interchange`)
    keeps every name: the outer loop is now ``I`` (its trip count, extras), the inner one
    ``O``; accesses name loops, not positions, so ``per_iteration`` keys stay valid.  Deps are
    kept as written: a dep between instances of the same ``(o, i)`` keeps its meaning, and a
    loop-carried one now names the predecessor in the new order, which may not be the pair
    it ordered: run dependence construction afterwards (the default pipeline replaces deps).

Contract
    requires: a valid program (virtual tensors allowed).
    guarantees: a valid program with the same instructions, whose sequential execution
    equals the input's whenever every interchange made passed the check above (tested
    against a brute-force instance oracle, the race checker and the simulator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Loop, Program

from neuronsim.passes.analysis.distance import find_loop, loop_sites, same_location
from neuronsim.passes.analysis.loopgraph import MAX_PAIRS, direction_vectors
from neuronsim.passes.analysis.program_index import require_loops
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["InterchangeHazard", "InterchangeVerdict", "interchange_hazards", "interchange", "perfect_nests",
           "interchange_loops", "InterchangeLoops"]

_RNG_OPS = frozenset({"set_rand_state", "random"})
_SWAPPING = frozenset({(-1, 1), (1, -1)})


@dataclass(frozen=True, slots=True)
class InterchangeHazard:
    """A reason not to interchange ``outer`` and ``inner``."""

    outer: str
    inner: str
    kind: str
    """``direction`` (a dependence the interchange reverses), ``rng-state`` or ``unmodelled``."""
    reason: str

    @property
    def message(self) -> str:
        return f"[STOP INTERCHANGE] {self.outer} <-> {self.inner}: {self.reason}"


@dataclass(frozen=True, slots=True)
class InterchangeVerdict:
    outer: str
    inner: str
    hazards: tuple[InterchangeHazard, ...]
    done: bool = False

    @property
    def legal(self) -> bool:
        return not self.hazards


def perfect_nests(program: Program) -> list[tuple[Loop, Loop]]:
    """``(outer, inner)`` for every loop whose body is exactly one loop, in program order."""
    return [(node, node.body[0]) for node, _ in program.walk()
            if isinstance(node, Loop) and len(node.body) == 1 and isinstance(node.body[0], Loop)]


def interchange_hazards(program: Program, outer: str, *, max_pairs: int = MAX_PAIRS) -> tuple[InterchangeHazard, ...]:
    """Every reason not to interchange loop ``outer`` with the loop that is its whole body."""
    place = find_loop(program, outer)
    if len(place.loop.body) != 1 or not isinstance(place.loop.body[0], Loop):
        raise ProgramError(place.path, f"loop {outer!r} is not a perfect nest: its body must be exactly one loop")
    o, i = place.loop, place.loop.body[0]
    hazards: list[InterchangeHazard] = []
    defs, uses = loop_sites(program, outer)
    tensors = program.tensors
    for site in (*defs, *uses):
        t = tensors[site.access.tensor]
        if t.rotate is not None and t.rotate.loop in (o.name, i.name) or site.access.partitions_per_iteration:
            hazards.append(InterchangeHazard(o.name, i.name, "unmodelled",
                                             f"{site.label} rotates or moves partitions with the loops"))
            return tuple(hazards)
    depth = len(place.parents)
    sites = (*defs, *uses)
    for k, a in enumerate(sites):
        for b in sites[k:]:
            if not (a.is_write or b.is_write):
                continue
            if not same_location(tensors[a.access.tensor], tensors[b.access.tensor]):
                continue
            _, vectors, complete = direction_vectors(program, a, b, max_pairs)
            if not complete:
                hazards.append(InterchangeHazard(o.name, i.name, "direction",
                                                 f"{a.label} / {b.label}: direction search cut short"))
                continue
            bad = [v for v in vectors if not any(v[:depth]) and tuple(v[depth:depth + 2]) in _SWAPPING]
            if bad:
                signs = "".join("<=>"[s + 1] for s in bad[0][depth:depth + 2])
                hazards.append(InterchangeHazard(o.name, i.name, "direction",
                                                 f"{a.label} and {b.label} meet with direction ({signs[0]}, "
                                                 f"{signs[1]}) on ({o.name}, {i.name})"))
    if o.trip_count > 1 and i.trip_count > 1:
        engines = {inst.engine for inst, _ in Program({}, (o,)).instructions() if inst.op in _RNG_OPS}
        for engine in sorted(engines):
            hazards.append(InterchangeHazard(o.name, i.name, "rng-state",
                                             f"the {engine} random generator would draw in another order"))
    return tuple(hazards)


def interchange(program: Program, outer: str) -> Program:
    """Swap loop ``outer`` with the loop that is its whole body (no legality check)."""
    place = find_loop(program, outer)
    if len(place.loop.body) != 1 or not isinstance(place.loop.body[0], Loop):
        raise ProgramError(place.path, f"loop {outer!r} is not a perfect nest: its body must be exactly one loop")
    o, i = place.loop, place.loop.body[0]
    swapped = Loop(i.name, i.trip_count, (Loop(o.name, o.trip_count, i.body, o.extras),), i.extras)

    return program.replace_node(o, (swapped,))


def interchange_loops(program: Program,
                      only: frozenset[str] = frozenset()) -> tuple[Program, tuple[InterchangeVerdict, ...]]:
    """Interchange every legal perfect nest once, outermost first (only those whose outer
    loop ``only`` names, when given); a verdict per nest tried."""
    verdicts: list[InterchangeVerdict] = []
    tried: set[str] = set()
    while True:
        nest = next(((o, i) for o, i in perfect_nests(program)
                     if o.name not in tried and i.name not in tried and (not only or o.name in only)), None)
        if nest is None:
            return program, tuple(verdicts)
        o, i = nest
        tried.update((o.name, i.name))
        hazards = interchange_hazards(program, o.name)
        if not hazards:
            program = interchange(program, o.name)
        verdicts.append(InterchangeVerdict(o.name, i.name, hazards, done=not hazards))


@dataclass(frozen=True, slots=True)
class InterchangeLoops(Pass):
    """Pass ``interchange-loops{only=o|...}``: see the module doc."""

    name: ClassVar[str] = "interchange-loops"
    only: frozenset = frozenset()

    def apply(self, program: Program, ctx: PassContext) -> Program:
        require_loops(program, self.only, f"--passes.{self.name}.only")
        out, verdicts = interchange_loops(program, self.only)
        ctx.count(self.name, "interchanged", sum(v.done for v in verdicts))
        ctx.count(self.name, "refused", sum(not v.done for v in verdicts))
        return out
