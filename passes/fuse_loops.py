"""``fuse-loops``: fuse sibling loops within the seed's window when no dependence forbids it.

The seed's loop optimizer (``dependence-distance.txt`` section 7) walks candidate loop pairs
*within a positional window* (``distanceThreshold`` = 8), asks ``has_negative_distance(L1,
L2)`` (and consults ``collect_illegal_common_ap``) and prints ``[STOP FUSION] negative
distance dep in def-use`` when it says no.  This pass does the same, greedily in program
order: a fused loop is tried again with the loops after it, and its body is searched for
newly fusable loops.

Candidates (:func:`candidate_pairs`)
    Two loops of one block (the body, or one loop body) at most ``window`` positions apart
    (option ``window``, default 8; 1 is adjacent loops only), whose trip counts are equal or
    share a factor: the seed's ``niters = gcd(trip counts) x parents`` must be above the
    parents' product for the loops to share an iteration space.  Loops that are not adjacent
    are brought together first (:func:`placement`): the second is hoisted up to the first
    when it shares no byte (one side writing), no random generator and no dep with any node
    between them, else the first is sunk down to the second on the same terms, else the pair
    is refused (an ``intervening`` finding).  Moving a loop over nodes it has no conflict
    with keeps the program's meaning.

Legality (:func:`fusion_hazards`)
    Fusing L1 (trip T1) and L2 (trip T2) with ``g = gcd(T1, T2)`` gives F with ``g``
    iterations; iteration ``k`` runs iterations ``[k T1/g, (k+1) T1/g)`` of L1, then the same
    share of L2 (inner loops keeping L1's and L2's names when ``T/g > 1``; none when the trip
    counts are equal): the seed's niters groups, so its kernel answers exactly for this
    transformation.  Every pair of instances keeps its order except (x of L1 in group i, y of
    L2 in group j) with ``i > j``, which swap; fusion keeps the program's meaning iff no
    swapped pair conflicts.  The checks, all with the seed's ``niters``
    (:func:`neuronsim.passes.analysis.distance.fusion_niters`):

    * ``def-use``: the seed's check, defs of L1 against uses of L2 on one location;
    * ``use-def`` and ``def-def`` (ours): a swapped WAR or WAW changes results as surely as a
      swapped RAW, and the seed's gate does not see them (all three are
      :func:`neuronsim.passes.analysis.distance.collect_illegal_common_ap`);
    * ``rng-state`` (ours): random generators are per engine (:mod:`neuronsim.machine.model.semantics`), so if
      both loops reseed or draw on one engine and ``niters > 1`` fusion interleaves the draws.

    For loops outside any other loop the test is exact: it refuses iff some conflicting pair
    would swap.  Inside shared parent loops the parent iterations are groups too (the seed's
    formula), which is conservative: a def in a later parent iteration against a use in an
    earlier one has a positive distance although fusion does not swap them.  ``gate=literal``
    rejects on the seed's literal ``max gi`` instead
    (:attr:`neuronsim.passes.analysis.distance.DefUseDistance.last_def_group`), which refuses every dependence
    whose def is past group 0.  Unequal trip counts are refused when a dep restricts
    iterations of either loop (``x-iterations``) or a tensor rotates with one (``x-rotate``):
    their indices change meaning.

The fused loop (:func:`fuse_pair`)
    is named ``FIRST+SECOND`` (``#2``, ``#3``... appended if that is taken), has L1's body then
    L2's (each in its inner loop when its trip count is ``g`` times more), the extras of both
    (L1's win) and ``x-fused-from`` listing the original loops; every ``per_iteration`` and
    ``x-partitions_per_iteration`` key naming L1 or L2 is re-expressed on the fused loop (and
    the inner loop).  Instruction names and deps are untouched, and every dep stays valid (the
    fused loop only adds a common loop):

    * deps inside L1, inside L2, and between either and the rest keep their meaning (a
      loop-carried dep inside L1 names the previous iteration of L1: with the inner loop, the
      lexicographic predecessor over (F, L1) is that iteration);
    * a dep of an L2 instruction on an L1 instruction used to wait for every iteration of it;
      now it waits for the same group, which (instances of one instruction complete in
      program order) orders every group up to it: all the fused order still needs;
    * a loop-carried dep between them (inside a shared parent) now waits for the previous
      iteration of F, which completes after the previous parent iteration's instances.

    With ``unequal=peel`` unequal trip counts are fused over ``min(T1, T2)`` iterations
    instead, the rest of the longer loop peeled off into ``NAME~rest`` (after the second loop,
    or before the first): :mod:`neuronsim.passes.fusion_peel`; any trip counts then qualify, and the
    check runs on the peeled program's equal-trip pair (exact at the top level).  A peeled
    loop carries ``x-peeled-from`` and is not fused again with its own part.

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
from math import gcd
from typing import ClassVar

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Instruction, Loop, Node, Program, frozen_mapping

from neuronsim.passes.analysis.distance import (DistanceFinding, collect_illegal_common_ap, find_loop, fusion_niters,
                                                node_sites, sites_conflict)
from neuronsim.passes.analysis.program_index import ProgramIndex, index_of, require_loops
from neuronsim.passes.fusion_peel import peel, peel_blocker
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["FuseLoops", "FusionVerdict", "FusionResult", "StateFinding", "BlockFinding", "fusion_hazards",
           "check_fusion", "adjacent_loop_pairs", "candidate_pairs", "placement", "move_together", "fuse_pair",
           "fuse_loops", "GATES", "WINDOW", "UNEQUAL"]

GATES = ("relative", "literal")
#: How unequal trip counts are fused: by the seed's niters groups, or over the shorter count
#: with the rest peeled.
UNEQUAL = ("groups", "peel")
#: The seed's ``distanceThreshold``: candidate loops at most this many positions apart.
WINDOW = 8
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


@dataclass(frozen=True, slots=True)
class BlockFinding:
    """Something other than the two loops' accesses stops the fusion: a node between them
    that neither loop can move over (``intervening``), or a loop index named by
    ``x-iterations`` / ``x-rotate`` (``loop-index``)."""

    kind: str
    first_loop: str
    second_loop: str
    reason: str

    @property
    def message(self) -> str:
        return f"[STOP FUSION] {self.reason}"

    def to_json(self) -> dict:
        return {"message": self.message, "kind": self.kind, "loops": [self.first_loop, self.second_loop]}


Finding = DistanceFinding | StateFinding | BlockFinding


def _rng_users(instructions: tuple[Instruction, ...]) -> dict[str, str]:
    """Engine -> the first of ``instructions`` that uses its random generator."""
    users: dict[str, str] = {}
    for inst in instructions:
        if inst.op in _RNG_OPS:
            users.setdefault(inst.engine, inst.name)
    return users


def fusion_hazards(program: Program, first: str, second: str, *, gate: str = "relative",
                   index: ProgramIndex | None = None) -> tuple[Finding, ...]:
    """Every reason in the two loops' accesses not to fuse ``first`` (earlier) with ``second``
    (see module doc), in the order def-use (uses outer, as the seed), use-def, def-def,
    rng-state (``index``: the program's, when judging many pairs)."""
    if gate not in GATES:
        raise ValueError(f"gate must be one of {GATES}, not {gate!r}")
    index = index_of(program, index)
    findings: list[Finding] = list(collect_illegal_common_ap(program, first, second, literal=gate == "literal",
                                                             index=index))
    niters = fusion_niters(program, first, second, index=index)
    if niters > 1:
        rng1, rng2 = _rng_users(index.instructions_of(first)), _rng_users(index.instructions_of(second))
        for engine in sorted(rng1.keys() & rng2.keys()):
            findings.append(StateFinding(first, second, engine, rng1[engine], rng2[engine], niters))
    return tuple(findings)


def _compatible(a: int, b: int) -> bool:
    """Trip counts the fusion can share an iteration space for: equal, or with a common factor."""
    return a == b or gcd(a, b) > 1


@dataclass(frozen=True, slots=True)
class FusionVerdict:
    """What fusion made of one candidate loop pair."""

    first: str
    second: str
    trip_counts: tuple[int, int]
    findings: tuple[Finding, ...] = ()
    fused: str | None = None
    """Name of the fused loop when the pass fused the pair."""
    placement: str = "adjacent"
    """``adjacent``, ``hoist`` (the second loop moves up to the first) or ``sink``."""
    peeled: str | None = None
    """With ``unequal=peel``, the loop peeled off the longer one (its remainder or head)."""

    @property
    def legal(self) -> bool:
        return _compatible(*self.trip_counts) and not self.findings

    @property
    def status(self) -> str:
        if self.findings:
            return "refused"
        if not _compatible(*self.trip_counts):
            return "trip counts differ"
        return "fused" if self.fused else "legal"

    @property
    def message(self) -> str:
        head = f"{self.first} + {self.second}"
        if self.status == "trip counts differ":
            return f"{head}: not fused, trip counts {self.trip_counts[0]} and {self.trip_counts[1]} share no factor"
        if self.findings:
            return f"{head}: " + "; ".join(f.message for f in self.findings)
        moved = "" if self.placement == "adjacent" else f" ({self.placement})"
        if self.peeled:
            moved += f" ({self.peeled} peeled)"
        return f"{head}: fused into {self.fused}{moved}" if self.fused else f"{head}: legal{moved}"

    def to_json(self) -> dict:
        return {"loops": [self.first, self.second], "trip_counts": list(self.trip_counts), "status": self.status,
                "fused": self.fused, "placement": self.placement, "peeled": self.peeled,
                "findings": [f.to_json() for f in self.findings]}


def _blocks(program: Program) -> list[tuple[Node, ...]]:
    return [program.body] + [node.body for node, _ in program.walk() if isinstance(node, Loop)]


def candidate_pairs(program: Program, window: int = WINDOW) -> list[tuple[Loop, Loop]]:
    """Loops of one block at most ``window`` positions apart, in program order of the first
    then the second (any trip counts: :func:`check_fusion` judges them)."""
    order = {node.name: k for k, (node, _) in enumerate(program.walk())}
    pairs = []
    for nodes in _blocks(program):
        for i, a in enumerate(nodes):
            if isinstance(a, Loop):
                pairs.extend((a, b) for b in nodes[i + 1:i + 1 + window] if isinstance(b, Loop))
    return sorted(pairs, key=lambda pair: (order[pair[0].name], order[pair[1].name]))


def adjacent_loop_pairs(program: Program) -> list[tuple[Loop, Loop]]:
    """Sibling loops with nothing between them, in program order (any trip counts)."""
    return candidate_pairs(program, 1)


def _between(program: Program, first: str, second: str, index: ProgramIndex | None = None) -> tuple[Node, ...]:
    """The nodes between sibling loops ``first`` and ``second`` (a ProgramError otherwise)."""
    index = index_of(program, index)
    a, b = index.loop(first), index.loop(second)
    if len(a.parents) != len(b.parents) or any(x is not y for x, y in zip(a.parents, b.parents)):
        raise ProgramError(b.path, f"cannot fuse {first!r} with {second!r}: they are not in one block")
    nodes = a.parents[-1].body if a.parents else program.body
    i, j = a.position, b.position
    if j <= i:
        raise ProgramError(b.path, f"cannot fuse {first!r} with {second!r}: {second!r} does not come after {first!r}")
    return nodes[i + 1:j]


def _obstacle(program: Program, moving: Loop, other: Node, index: ProgramIndex) -> str | None:
    """Why ``moving`` cannot move over ``other`` (None: it can): a shared byte one writes, a
    random generator both use, or a dep between them."""
    moving_insts, other_insts = index.instructions_of(moving.name), index.instructions_of(other.name)
    if not moving_insts or not other_insts:  # a node with no instruction touches nothing and waits for nothing
        return None
    tensors = program.tensors
    mdefs, muses = node_sites(program, moving.name, index=index)
    odefs, ouses = node_sites(program, other.name, index=index)
    for a in (*mdefs, *muses):
        for b in (*odefs, *ouses):
            if sites_conflict(tensors, a, b):
                return f"{a.label} and {b.label} share bytes"
    shared = sorted(_rng_users(moving_insts).keys() & _rng_users(other_insts).keys())
    if shared:
        return f"both use the {shared[0]} random generator"
    mine, theirs = {inst.name for inst in moving_insts}, {inst.name for inst in other_insts}
    # A dep between them has its waiter in one of the two siblings: their instructions, in
    # program order, are all that need looking at (not the whole program, for every pair).
    ahead = index.places[moving.name].position < index.places[other.name].position
    for inst in (*moving_insts, *other_insts) if ahead else (*other_insts, *moving_insts):
        for dep in inst.deps:
            if (inst.name in mine and dep.on in theirs) or (inst.name in theirs and dep.on in mine):
                return f"{inst.name} waits for {dep.on}"
    return None


def placement(program: Program, first: str, second: str, *,
              index: ProgramIndex | None = None) -> tuple[str, BlockFinding | None]:
    """How two sibling loops are brought together: ``adjacent``, ``hoist`` or ``sink``, or a
    finding naming the node neither can move over."""
    index = index_of(program, index)
    between = _between(program, first, second, index)
    if not between:
        return "adjacent", None
    reasons = {}
    for how, moving in (("hoist", index.loop(second).loop), ("sink", index.loop(first).loop)):
        blocked = next(((n.name, why) for n in between if (why := _obstacle(program, moving, n, index)) is not None),
                       None)
        if blocked is None:
            return how, None
        reasons[how] = blocked
    (hn, hwhy), (sn, swhy) = reasons["hoist"], reasons["sink"]
    return "blocked", BlockFinding("intervening", first, second,
                                   f"{second} cannot move up over {hn} ({hwhy}) and {first} cannot move down over "
                                   f"{sn} ({swhy})")


def _index_users(index: ProgramIndex, loops: tuple[str, ...]) -> str | None:
    """The first dep restriction (``x-iterations``, in program order) or else the first rotation
    (``x-rotate``) naming one of ``loops``."""
    restrictions = sorted((index.restricting[loop], loop) for loop in loops if loop in index.restricting)
    if restrictions:
        (*_, inst), loop = restrictions[0]
        return f"a dep of {inst} restricts iterations of loop {loop} (x-iterations)"
    rotations = sorted((index.rotating[loop], loop) for loop in loops if loop in index.rotating)
    if rotations:
        (_, tensor), loop = rotations[0]
        return f"tensor {tensor} rotates with loop {loop} (x-rotate)"
    return None


def check_fusion(program: Program, first: str, second: str, *, gate: str = "relative",
                 index: ProgramIndex | None = None) -> FusionVerdict:
    """The verdict on one pair of loops of one block, without fusing: trip counts, then the
    loop indices, the nodes between them, then the hazards.  Judging many pairs of one
    program, pass its ``index`` (:class:`~neuronsim.passes.analysis.distance.ProgramIndex`):
    each verdict then looks at the two loops and what lies between them, not the whole program."""
    index = index_of(program, index)
    a, b = index.loop(first).loop, index.loop(second).loop
    trips = (a.trip_count, b.trip_count)
    if not _compatible(*trips):
        return FusionVerdict(first, second, trips)
    how, blocked = placement(program, first, second, index=index)
    findings: list[Finding] = [blocked] if blocked is not None else []
    if trips[0] != trips[1]:
        why = _index_users(index, (first, second))
        if why is not None:
            findings.append(BlockFinding("loop-index", first, second, f"unequal trip counts and {why}"))
    findings.extend(fusion_hazards(program, first, second, gate=gate, index=index))
    return FusionVerdict(first, second, trips, tuple(findings), placement=how)


def _shifts(shifts: tuple[tuple[str, int], ...], plan: dict[str, tuple[str, int, bool]]) -> tuple[tuple[str, int], ...]:
    """Re-express per-iteration shifts: loop L -> (fused loop, shift x share) and, when L stays
    as an inner loop, (L, shift)."""
    out: list[tuple[str, int]] = []
    for loop, shift in shifts:
        if loop not in plan:
            out.append((loop, shift))
            continue
        fused, share, inner = plan[loop]
        out.append((fused, shift * share))
        if inner:
            out.append((loop, shift))
    return tuple(out)


def _moved(access: Access, plan: dict[str, tuple[str, int, bool]]) -> Access:
    if not any(loop in plan for loop, _ in (*access.per_iteration, *access.partitions_per_iteration)):
        return access
    return dataclasses.replace(access, per_iteration=_shifts(access.per_iteration, plan),
                               partitions_per_iteration=_shifts(access.partitions_per_iteration, plan))


def _renamed(node: Node, plan: dict[str, tuple[str, int, bool]]) -> Node:
    if isinstance(node, Loop):
        return Loop(node.name, node.trip_count, tuple(_renamed(n, plan) for n in node.body), node.extras)
    reads = tuple(_moved(a, plan) for a in node.reads)
    writes = tuple(_moved(a, plan) for a in node.writes)
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


def _rebuild(nodes: tuple[Node, ...], change) -> tuple[Node, ...]:
    """``nodes`` with ``change(block)`` applied to every block, innermost first."""
    out = [Loop(n.name, n.trip_count, _rebuild(n.body, change), n.extras) if isinstance(n, Loop) else n
           for n in nodes]
    return change(tuple(out))


def move_together(program: Program, first: str, second: str, how: str) -> Program:
    """The program with ``second`` hoisted right after ``first`` (``hoist``) or ``first`` sunk
    right before ``second`` (``sink``), without any legality check."""
    if how == "adjacent":
        return program

    def change(block: tuple[Node, ...]) -> tuple[Node, ...]:
        names = [n.name for n in block]
        if first not in names or second not in names:
            return block
        i, j = names.index(first), names.index(second)
        nodes = list(block)
        if how == "hoist":
            nodes.insert(i + 1, nodes.pop(j))
        else:
            nodes.insert(j - 1, nodes.pop(i))
        return tuple(nodes)

    return program.with_body(_rebuild(program.body, change))


def fuse_pair(program: Program, first: str, second: str) -> tuple[Program, str]:
    """Fuse adjacent loops ``first`` and ``second`` (equal trip counts, or with a common
    factor) without any legality check; returns the program and the fused loop's name (see
    module doc)."""
    a, b = find_loop(program, first), find_loop(program, second)
    t1, t2 = a.loop.trip_count, b.loop.trip_count
    if not _compatible(t1, t2):
        raise ProgramError(b.path, f"cannot fuse {first!r} (trip count {t1}) with {second!r} (trip count {t2}): "
                           f"trip counts differ and share no factor")
    if _between(program, first, second):
        raise ProgramError(b.path, f"cannot fuse {first!r} with {second!r}: they are not adjacent loops")
    g = gcd(t1, t2)
    name = _fresh_name(program, f"{first}+{second}")
    plan = {first: (name, t1 // g, t1 != g), second: (name, t2 // g, t2 != g)}
    bodies = []
    for place in (a, b):
        loop = place.loop
        body = tuple(_renamed(n, plan) for n in loop.body)
        share = loop.trip_count // g
        bodies.extend(body if share == 1 else (Loop(loop.name, share, body),))
    origins = [*a.loop.extras.get("x-fused-from", [first]), *b.loop.extras.get("x-fused-from", [second])]
    extras = frozen_mapping({**b.loop.extras, **a.loop.extras, "x-fused-from": origins})
    fused = Loop(name, g, tuple(bodies), extras)

    def change(block: tuple[Node, ...]) -> tuple[Node, ...]:
        names = [n.name for n in block]
        if first not in names:
            return block
        i = names.index(first)
        return (*block[:i], fused, *block[i + 2:])

    return program.with_body(_rebuild(program.body, change)), name


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


def _peeled_check(program: Program, first: str, second: str, gate: str) -> tuple[FusionVerdict, Program]:
    """The verdict on an unequal pair with ``unequal=peel``, and the peeled program to fuse."""
    a, b = find_loop(program, first).loop, find_loop(program, second).loop
    why = peel_blocker(program, first, second)
    if why is not None:
        return FusionVerdict(first, second, (a.trip_count, b.trip_count),
                             (BlockFinding("peel", first, second, why),)), program
    peeled, rest = peel(program, first, second)
    peeled = _mark_peeled(peeled, rest, (a if a.trip_count > b.trip_count else b).name)
    return dataclasses.replace(check_fusion(peeled, first, second, gate=gate), peeled=rest), peeled


def _mark_peeled(program: Program, name: str, origin: str) -> Program:
    def change(block: tuple[Node, ...]) -> tuple[Node, ...]:
        return tuple(Loop(n.name, n.trip_count, n.body, frozen_mapping({**n.extras, "x-peeled-from": origin}))
                     if isinstance(n, Loop) and n.name == name else n for n in block)

    return program.with_body(_rebuild(program.body, change))


def fuse_loops(program: Program, *, gate: str = "relative", only: frozenset[str] = frozenset(),
               window: int = WINDOW, unequal: str = "groups") -> FusionResult:
    """Fuse greedily (see module doc); ``only``, when not empty, limits fusion to those loops
    (and the loops fused from them); ``window`` is the seed's ``distanceThreshold``;
    ``unequal`` says how unequal trip counts fuse (:data:`UNEQUAL`)."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    if unequal not in UNEQUAL:
        raise ValueError(f"unequal must be one of {UNEQUAL}, got {unequal!r}")
    peeling = unequal == "peel"
    eligible = set(only)
    tried: set[tuple[str, str]] = set()
    verdicts: list[FusionVerdict] = []
    while True:
        pair = next(((a, b) for a, b in candidate_pairs(program, window)
                     if (peeling or _compatible(a.trip_count, b.trip_count)) and (a.name, b.name) not in tried
                     and not (peeling and ("x-peeled-from" in a.extras or "x-peeled-from" in b.extras))
                     and (not only or (a.name in eligible and b.name in eligible))), None)
        if pair is None:
            return FusionResult(program, tuple(verdicts))
        first, second = pair[0].name, pair[1].name
        tried.add((first, second))
        candidate = program
        if peeling and pair[0].trip_count != pair[1].trip_count:
            verdict, candidate = _peeled_check(program, first, second, gate)
        else:
            verdict = check_fusion(program, first, second, gate=gate)
        if verdict.findings:
            verdicts.append(verdict)
            continue
        program, name = fuse_pair(move_together(candidate, first, second, verdict.placement), first, second)
        eligible.add(name)
        verdicts.append(dataclasses.replace(verdict, fused=name))


@dataclass(frozen=True, slots=True)
class FuseLoops(Pass):
    """Pass ``fuse-loops{gate=relative|literal, only=a|b, window=8, unequal=groups|peel}``: see the
    module doc."""

    name: ClassVar[str] = "fuse-loops"
    gate: str = "relative"
    only: frozenset = frozenset()
    window: int = WINDOW
    unequal: str = "groups"

    def __post_init__(self) -> None:
        if self.gate not in GATES:
            raise ValueError(f"gate must be one of {'|'.join(GATES)}, got {self.gate!r}")
        if self.window < 1:
            raise ValueError(f"window must be at least 1, got {self.window}")
        if self.unequal not in UNEQUAL:
            raise ValueError(f"unequal must be one of {'|'.join(UNEQUAL)}, got {self.unequal!r}")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        require_loops(program, self.only, f"--passes.{self.name}.only")
        result = fuse_loops(program, gate=self.gate, only=self.only, window=self.window, unequal=self.unequal)
        ctx.count(self.name, "fused", len(result.fused))
        ctx.count(self.name, "refused", len(result.refused))
        return result.program
