"""``dep_reduction``: the exact transitive reduction of a program's waits.

What is reduced
    The happens-before graph of the spec (rules 1-4) has a trigger, a start and an end node
    per instance.  Rules 1-3 are given structure; every rule-4 wait ``E(X) -> T(Y)`` is a
    candidate.  A wait is *redundant* when ``E(X)`` reaches ``T(Y)`` by another path; the
    waits the reduction keeps are exactly the wait edges of the transitive reduction of that
    graph (the reduction of a DAG is unique, and dropping any set of individually redundant
    edges keeps every order, because the reduction is a subgraph of what remains).

How (the seed's ``applyReorderReduction``, corrected)
    Instances are visited in program order, a topological order of the graph.  ``C(n)`` is
    the set of completions that happen before node ``n``; per engine it is a prefix
    (:mod:`passes.analysis.syncstate`), so it is a vector of per-engine frontiers.  For instance ``Y``
    on sequencer ``s`` the fold starts from the clock of ``Y``'s predecessor on ``s`` (its
    end, or its trigger when it is a DMA: rule 2) and visits ``Y``'s wait targets
    **latest first**: target ``X`` is redundant iff ``pos(X) <= u[engine(X)]``; otherwise it is
    kept and ``u |= C(E(X))``.  Exactness: if ``E(X)`` reaches ``T(Y)`` through another wait
    ``X'``, then ``E(X) <= E(X')`` so ``X'`` comes later in program order and was folded
    first (a dropped ``X'`` is itself covered by ``u``).

    The seed folds predecessors *in program order* and says that is required.  It is not:
    in a topological order an earlier predecessor's closure can never contain a later
    predecessor, so a program-order fold finds redundancy only through the sequencer
    predecessor and misses every wait implied by a *later* wait of the same instruction.  It
    stays sound (it drops a subset).  ``fold="program-order"`` reproduces it, documented as
    not exact, so the tests can show the difference.  (The seed merges ``recorded[P]`` before
    testing ``P``; that record is ``P``'s *strict* closure, so merge-then-test and
    test-then-merge find the same.)

SyncState
    :func:`redundant_waits_syncstate` runs the loop on the seed's two BitMap banks
    (``mergeSyncStates`` / ``hasCompleted`` / ``setCompleted`` / ``recordSyncState``, the
    records freed after their last waiter), with bank B holding each point's async window.
    :func:`redundant_waits` is the production path: bank A of every engine is a prefix
    (in-order engines, performance notes 1.4), so it stores the frontier of each bitmap, a
    lossless encoding, and joins frontiers instead of unioning bitmaps; it skips bank B, which
    no redundancy test reads.  The tests check both paths agree entry for entry.

Loops
    A dep is one instruction-level edge but one wait per instance it resolves at.  A dep is
    dropped only when it is redundant at every instance (sound by the subset argument
    above).  Instruction-level deps cannot express "wait only at k=0": a dep needed at one
    iteration waits at all of them, so on loop programs the kept instance-level waits can
    exceed the instance-level minimum; :class:`ReductionResult` reports both and lists the
    deps that are needed at some instances only.  Expanding the loops first
    (:mod:`passes.expand_scheduling_units`) turns every instance wait into its own dep, and the reduction then
    reaches the instance-level minimum, at the price of the loop structure.

Kinds
    :func:`apply_reorder_reduction` drops redundant Flow / Ordered deps,
    :func:`apply_anti_dependence_reduction` redundant Anti / Output deps (the seed's gated
    second phase).  Redundancy is judged on the whole graph, which removing redundant edges
    does not change, so the two phases commute and together give the full reduction.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, NamedTuple

from machine.edges import KIND_NAMES, EdgeKind
from machine.ir import Dep, Instruction, Program
from machine.presets import MachineSpec, resolve_machine
from machine.unroll import Unrolled, unroll

from passes.pipeline import Pass, PassContext
from passes.analysis.syncstate import NUM_SEQUENCERS, EnginePositions, SyncState, assign_ids

__all__ = [
    "LATEST_FIRST", "PROGRAM_ORDER", "FOLDS", "InstanceWaits", "instance_waits", "waits_from_targets",
    "redundant_waits", "redundant_waits_syncstate", "DepRef", "PartialDep", "ReductionResult",
    "dep_reduction", "apply_reorder_reduction", "apply_anti_dependence_reduction", "REORDER_KINDS", "ANTI_KINDS",
    "DepReduction",
]

LATEST_FIRST = "latest-first"
PROGRAM_ORDER = "program-order"
FOLDS = (LATEST_FIRST, PROGRAM_ORDER)
REORDER_KINDS = frozenset({EdgeKind.FLOW, EdgeKind.ORDERED})
ANTI_KINDS = frozenset({EdgeKind.ANTI, EdgeKind.OUTPUT})


class DepRef(NamedTuple):
    """One instruction-level dep: ``waiter`` waits for ``dep.on`` (an immutable value; a
    named tuple because a million of them are made per million deps, ~5x cheaper than a
    frozen dataclass)."""

    waiter: str
    dep: Dep
    index: int = 0
    """Position of the dep in the waiter's ``deps``."""

    def describe(self) -> str:
        carried = " (loop-carried)" if self.dep.loop_carried else ""
        return f"{self.dep.on} -> {self.waiter} [{KIND_NAMES[self.dep.kind]}]{carried}"


@dataclass(frozen=True, slots=True)
class InstanceWaits:
    """The rule-4 waits of an unrolled program, one per dep per instance it resolves at.

    Entries are stored per waiter (``start[y]:start[y+1]``), latest target first.  A dep
    that waits on several instances of ``B`` keeps only the last one: the others complete
    before it on the same engine, so their waits are always redundant.
    """

    positions: EnginePositions
    start: tuple[int, ...]
    target: tuple[int, ...]
    slot: tuple[int, ...]
    """Index into ``deps`` of the entry's dep (-1 when the waits do not come from deps)."""
    deps: tuple[DepRef, ...]
    unrolled: Unrolled | None = None
    """The instances (None when not built from a program)."""

    def __len__(self) -> int:
        return len(self.target)

    def waits_of(self, waiter: int) -> range:
        return range(self.start[waiter], self.start[waiter + 1])

    def name(self, instance: int) -> str:
        return self.unrolled[instance].name if self.unrolled is not None else f"#{instance}"


def instance_waits(program: Program, unrolled: Unrolled | None = None,
                   spec: MachineSpec | None = None) -> InstanceWaits:
    """Resolve every dep of every instance to its last target instance.

    >>> from machine.ir import Instruction, Program, Dep
    >>> body = (Instruction("a", "pe", "x"), Instruction("b", "act", "y"),
    ...         Instruction("c", "dve", "z", deps=(Dep("a"), Dep("b"))))
    >>> w = instance_waits(Program({}, body))
    >>> [(w.target[k], w.deps[w.slot[k]].dep.on) for k in w.waits_of(2)]   # latest first
    [(1, 'b'), (0, 'a')]
    """
    unrolled = unrolled or unroll(program)
    spec = spec or resolve_machine(program.machine)
    positions = assign_ids(unrolled, spec)
    deps: list[DepRef] = []
    # Per instruction, once: its deps' slots and, where the target is the same at every
    # instance (a dep from outside every loop), that target, latest first.
    plans: dict[int, tuple] = {}
    start, target, slot = [0], [], []
    ids_of = unrolled.ids_of
    for inst in unrolled.instances:
        instr = inst.instr
        if instr.deps:
            plan = plans.get(id(instr))
            if plan is None:
                fixed, varying = [], []
                for k, dep in enumerate(instr.deps):
                    deps.append(DepRef(instr.name, dep, k))
                    if not inst.loops and not dep.loop_carried:
                        fixed.append((ids_of(dep.on)[-1], len(deps) - 1))  # all of B: the last
                    else:
                        varying.append((len(deps) - 1, dep))
                fixed.sort(reverse=True)
                plan = ([t for t, _ in fixed], [s for _, s in fixed], fixed, varying)
                if inst.loops:  # instances to come reuse it
                    plans[id(instr)] = plan
            fixed_targets, fixed_slots, fixed, varying = plan
            if varying:
                found = list(fixed)
                for s, dep in varying:
                    t = unrolled.resolve_wait(inst, dep)
                    if t is not None:
                        found.append((t, s))
                found.sort(reverse=True)
                target.extend(t for t, _ in found)
                slot.extend(s for _, s in found)
            else:
                target.extend(fixed_targets)
                slot.extend(fixed_slots)
        start.append(len(target))
    return InstanceWaits(positions, tuple(start), tuple(target), tuple(slot), tuple(deps), unrolled)


def waits_from_targets(positions: EnginePositions, waits: Sequence[Iterable[int]]) -> InstanceWaits:
    """Instance waits given directly as target ids per instance (no deps behind them)."""
    start, target = [0], []
    for y, targets in enumerate(waits):
        chosen = sorted(set(targets), reverse=True)
        if chosen and chosen[0] >= y:
            raise ValueError(f"instance {y} waits on {chosen[0]}, which does not precede it")
        target.extend(chosen)
        start.append(len(target))
    return InstanceWaits(positions, tuple(start), tuple(target), (-1,) * len(target), ())


@contextmanager
def _gc_paused():
    """Pause the cyclic collector: the passes allocate millions of small acyclic objects,
    which trigger full collections for nothing (performance notes, 1.3)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@lru_cache(maxsize=None)
def _joiner(width: int):
    """``join(a, b)``: the component-wise max of two clocks as a new list.

    Generated for the machine's width because an unrolled join is ~5x cheaper than
    ``list(map(max, a, b))`` (performance notes, 2.3), and the join is the hot operation.
    """
    a = ", ".join(f"a{i}" for i in range(width))
    b = ", ".join(f"b{i}" for i in range(width))
    body = ", ".join(f"a{i} if a{i} > b{i} else b{i}" for i in range(width))
    source = f"def join(a, b):\n    {a}, = a\n    {b}, = b\n    return [{body}]\n"
    scope: dict = {}
    exec(source, scope)  # noqa: S102 - generated from integers only
    return scope["join"]


def redundant_waits(waits: InstanceWaits, fold: str = LATEST_FIRST) -> bytearray:
    """Per wait entry, 1 when it is redundant (the fast path: per-engine frontier clocks).

    Requires ``waits`` built from a program or targets in program order.  Guarantees, with
    ``fold="latest-first"``: the entries left at 0 are exactly the wait edges of the
    transitive reduction of the happens-before graph of rules 1-4.  With
    ``fold="program-order"`` (the seed): a subset of those redundancies (sound, not exact).
    """
    if fold not in FOLDS:
        raise ValueError(f"fold must be one of {FOLDS}, got {fold!r}")
    pos_ = waits.positions
    n = len(pos_.engine)
    eng, pos, seq, dma = pos_.engine, pos_.position, pos_.issuer, pos_.is_dma
    start, target = waits.start, waits.target
    wanted = bytearray(n)
    for t in target:
        wanted[t] = 1
    join = _joiner(pos_.width)
    zero = [-1] * pos_.width
    seq_clock = [zero] * NUM_SEQUENCERS
    queue_clock = [zero] * pos_.width
    clocks: list = [None] * n
    redundant = bytearray(len(target))
    latest_first = fold == LATEST_FIRST
    with _gc_paused():
        for y in range(n):
            s = seq[y]
            u = seq_clock[s]
            fresh = False
            a = start[y]
            b = start[y + 1]
            if a != b:
                for k in range(a, b) if latest_first else range(b - 1, a - 1, -1):
                    x = target[k]
                    if pos[x] <= u[eng[x]]:
                        redundant[k] = 1
                    else:
                        u = join(u, clocks[x])
                        fresh = True
            e = eng[y]
            if dma[y]:
                seq_clock[s] = u  # rule 2: the sequencer knows only the trigger
                c = join(u, queue_clock[e])  # rule 3: S(Y) after the queue's last completion
                c[e] = pos[y]
                queue_clock[e] = c
            else:
                c = u if fresh else u.copy()
                c[e] = pos[y]
                seq_clock[s] = c  # rule 1
            if wanted[y]:
                clocks[y] = c
    return redundant


def redundant_waits_syncstate(waits: InstanceWaits, fold: str = LATEST_FIRST) -> tuple[bytearray, bytearray]:
    """The same reduction on the seed's two-bank :class:`SyncState` (reference path).

    Returns ``(redundant, in_window)``: per entry, whether it is redundant, and whether its
    target was in the waiter's async window when tested (a DMA whose trigger the waiter
    already knows but whose completion it does not: bank B).  About an order of magnitude
    slower than :func:`redundant_waits`; the tests check both agree entry for entry.
    """
    if fold not in FOLDS:
        raise ValueError(f"fold must be one of {FOLDS}, got {fold!r}")
    pos_ = waits.positions
    n, width = len(pos_.engine), pos_.width
    eng, pos, seq, dma = pos_.engine, pos_.position, pos_.issuer, pos_.is_dma
    empty = SyncState(width)
    seq_state = [empty] * NUM_SEQUENCERS
    queue_state = [empty] * width
    recorded: dict[int, SyncState] = {}
    remaining: dict[int, int] = {}
    for t in waits.target:
        remaining[t] = remaining.get(t, 0) + 1
    redundant = bytearray(len(waits.target))
    in_window = bytearray(len(waits.target))
    for y in range(n):
        s = seq[y]
        state = seq_state[s]
        fresh = False
        entries = waits.waits_of(y)
        for k in entries if fold == LATEST_FIRST else reversed(entries):
            x = waits.target[k]
            in_window[k] = state.is_issued(eng[x], pos[x])
            if state.has_completed(eng[x], pos[x]):
                redundant[k] = 1
            else:
                if not fresh:
                    state, fresh = state.copy(), True
                state.merge(recorded[x])  # mergeSyncStates
            remaining[x] -= 1
            if not remaining[x]:
                del recorded[x]  # the seed's successor counter: free after the last waiter
        if fresh:
            state.minimize()
        e = eng[y]
        if dma[y]:
            trigger = state.copy()
            trigger.set_completed(e, pos[y], issued=True)  # the window opens at T(Y)
            seq_state[s] = trigger
            end = state.copy()
            end.merge(queue_state[e])
            end.set_completed(e, pos[y])
            end.minimize()
            queue_state[e] = end
        else:
            end = state if fresh else state.copy()
            end.set_completed(e, pos[y])
            seq_state[s] = end
        if y in remaining:
            recorded[y] = end  # recordSyncState
    return redundant, in_window


@dataclass(frozen=True, slots=True)
class PartialDep:
    """A kept dep that is redundant at some of the instances it resolves at."""

    dep: DepRef
    needed_at: tuple[str, ...]
    redundant_at: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReductionResult:
    """What :func:`dep_reduction` did."""

    program: Program
    dropped: tuple[tuple[DepRef, str], ...]
    """Each dropped dep with the phase that dropped it (``reorder`` or ``anti``)."""
    deps_kept: int
    partial: tuple[PartialDep, ...]
    instance_waits_before: int
    """Waits (one per dep per instance it resolves at) before the reduction."""
    instance_waits_kept: int
    """Waits of the kept deps: what the reduced program executes."""
    instance_waits_minimum: int
    """Waits of the transitive reduction at instance level (what instance deps could reach)."""
    fold: str

    @property
    def deps_before(self) -> int:
        return len(self.dropped) + self.deps_kept


@dataclass(frozen=True, slots=True)
class _Decision:
    drop: dict[tuple[str, int], DepRef]
    kept: int
    kept_waits: int
    partial_slots: tuple[int, ...]


def _decide(waits: InstanceWaits, redundant: bytearray, kinds: frozenset) -> _Decision:
    """Which deps of ``kinds`` to drop: those redundant at every instance they resolve at.

    Every dep has a slot (made at its instruction's first instance); a dep that resolves at
    no instance (loop-carried in a single iteration) orders nothing, has no entry, and is
    dropped too.
    """
    nslots = len(waits.deps)
    needed = [0] * nslots
    total = [0] * nslots
    for k, s in enumerate(waits.slot):
        total[s] += 1
        if not redundant[k]:
            needed[s] += 1
    drop: dict[tuple[str, int], DepRef] = {}
    kept = kept_waits = 0
    partial = []
    for s, ref in enumerate(waits.deps):
        if not needed[s] and ref.dep.kind in kinds:
            drop[(ref.waiter, ref.index)] = ref
            continue
        kept += 1
        kept_waits += total[s]
        if 0 < needed[s] < total[s]:
            partial.append(s)
    return _Decision(drop, kept, kept_waits, tuple(partial))


def _partials(waits: InstanceWaits, redundant: bytearray, slots: tuple[int, ...]) -> tuple[PartialDep, ...]:
    if not slots:
        return ()
    wanted = {s: ([], []) for s in slots}
    for y in range(len(waits.start) - 1):
        for k in waits.waits_of(y):
            found = wanted.get(waits.slot[k])
            if found is not None:
                found[redundant[k]].append(waits.name(y))
    return tuple(PartialDep(waits.deps[s], tuple(wanted[s][0]), tuple(wanted[s][1])) for s in slots)


def _drop(program: Program, drop: Iterable[tuple[str, int]]) -> Program:
    """The program without the deps ``(waiter, index)``."""
    by_waiter: dict[str, set[int]] = {}
    for waiter, k in drop:
        by_waiter.setdefault(waiter, set()).add(k)
    if not by_waiter:
        return program

    def rebuild(instr: Instruction) -> Instruction:
        gone = by_waiter.get(instr.name)
        if gone is None:
            return instr
        deps = tuple(d for k, d in enumerate(instr.deps) if k not in gone)
        return Instruction(instr.name, instr.engine, instr.op, instr.reads, instr.writes, instr.attrs, deps,
                           instr.queue, instr.extras)

    return program.map_instructions(rebuild)


def _reduce_kinds(program: Program, kinds: frozenset, fold: str) -> Program:
    waits = instance_waits(program)
    return _drop(program, _decide(waits, redundant_waits(waits, fold), kinds).drop)


def apply_reorder_reduction(program: Program, fold: str = LATEST_FIRST) -> Program:
    """Drop every Flow / Ordered dep that is redundant at every instance it resolves at."""
    return _reduce_kinds(program, REORDER_KINDS, fold)


def apply_anti_dependence_reduction(program: Program, fold: str = LATEST_FIRST) -> Program:
    """Drop every Anti / Output dep already enforced by other paths (at every instance).

    The seed looks only for an intervening same-engine instruction; the clock sees every
    path, which includes those.
    """
    return _reduce_kinds(program, ANTI_KINDS, fold)


def dep_reduction(program: Program, *, fold: str = LATEST_FIRST, anti: bool = True,
                  method: str = "clock") -> ReductionResult:
    """Reduce the program's deps; ``anti=False`` leaves Anti / Output deps alone (the gate).

    ``method`` is ``"clock"`` (frontier clocks, fast) or ``"syncstate"`` (the seed's
    BitMap banks); both give the same result.

    >>> from machine.ir import Instruction, Program, Dep
    >>> body = (Instruction("a", "pe", "x"), Instruction("b", "act", "y", deps=(Dep("a"),)),
    ...         Instruction("c", "dve", "z", deps=(Dep("a"), Dep("b"))))
    >>> r = dep_reduction(Program({}, body))
    >>> [ref.describe() for ref, _ in r.dropped], r.instance_waits_kept
    (['a -> c [ordered]'], 2)
    >>> [ref.describe() for ref, _ in dep_reduction(Program({}, body), fold="program-order").dropped]
    []
    """
    with _gc_paused():
        return _dep_reduction(program, fold, anti, method)


def _dep_reduction(program: Program, fold: str, anti: bool, method: str) -> ReductionResult:
    waits = instance_waits(program)
    if method == "clock":
        redundant = redundant_waits(waits, fold)
    elif method == "syncstate":
        redundant, _ = redundant_waits_syncstate(waits, fold)
    else:
        raise ValueError(f"method must be 'clock' or 'syncstate', got {method!r}")
    decision = _decide(waits, redundant, REORDER_KINDS | ANTI_KINDS if anti else REORDER_KINDS)
    dropped = tuple((ref, "reorder" if ref.dep.kind in REORDER_KINDS else "anti") for ref in decision.drop.values())
    return ReductionResult(
        program=_drop(program, decision.drop),
        dropped=dropped,
        deps_kept=decision.kept,
        partial=_partials(waits, redundant, decision.partial_slots),
        instance_waits_before=len(waits),
        instance_waits_kept=decision.kept_waits,
        instance_waits_minimum=len(waits) - sum(redundant),
        fold=fold,
    )


@dataclass(frozen=True, slots=True)
class DepReduction(Pass):
    """Pass: :func:`dep_reduction` (``dep-reduction{fold=latest-first,anti=true,method=clock}``).

    Counters: deps ``dropped-reorder`` / ``dropped-anti`` / ``kept``, deps ``partial`` (needed
    at some instances only), instance-level waits ``waits-before`` / ``waits-kept`` /
    ``waits-minimum``, and with ``labels`` the ``inconsistent-labels`` found.
    """

    name: ClassVar[str] = "dep-reduction"
    fold: str = LATEST_FIRST
    anti: bool = True
    method: str = "clock"
    labels: bool = False
    """Also run :func:`passes.analysis.labels.verify_anti_dependence` on the result and count its
    findings as ``inconsistent-labels`` (the seed verifies after its anti phase)."""

    def __post_init__(self) -> None:
        if self.fold not in FOLDS:
            raise ValueError(f"fold must be one of {list(FOLDS)}, got {self.fold!r}")
        if self.method not in ("clock", "syncstate"):
            raise ValueError(f"method must be clock or syncstate, got {self.method!r}")

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        result = dep_reduction(program, fold=self.fold, anti=self.anti, method=self.method)
        if ctx is not None:
            for _, phase in result.dropped:
                ctx.count(self.name, f"dropped-{phase}")
            for key, value in (("kept", result.deps_kept), ("partial", len(result.partial)),
                               ("waits-before", result.instance_waits_before),
                               ("waits-kept", result.instance_waits_kept),
                               ("waits-minimum", result.instance_waits_minimum)):
                ctx.count(self.name, key, value)
            if self.labels and not result.program.has_virtual_tensors:
                from passes.analysis.labels import verify_anti_dependence

                ctx.count(self.name, "inconsistent-labels", len(verify_anti_dependence(result.program)))
            ctx.carry_stream(program, result.program)
        return result.program
