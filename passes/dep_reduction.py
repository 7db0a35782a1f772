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
    (:mod:`neuronsim.passes.analysis.syncstate`), so it is a vector of per-engine frontiers.  For instance ``Y``
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
    :func:`neuronsim.testing.reduction.redundant_waits_syncstate` runs the loop on the seed's
    two BitMap banks (``mergeSyncStates`` / ``hasCompleted`` / ``setCompleted`` /
    ``recordSyncState``, the records freed after their last waiter), with bank B holding each
    point's async window: a reference kept with the tests.  :func:`redundant_waits` is the
    pass's one implementation, :meth:`neuronsim.machine.order.hb.HappensBefore.fold` on
    the project's one happens-before: bank A of every engine is a prefix (in-order engines,
    performance notes 1.4), so a vector clock of frontiers encodes it losslessly and joins
    replace bitmap unions; bank B is skipped, since no exact redundancy test reads it (the
    async window mode below does).  The tests
    check both paths agree entry for entry.

Loops
    A dep is one instruction-level edge but one wait per instance it resolves at.  The fold
    judges every instance wait; a dep redundant at every instance is dropped.  A dep needed at
    some instances only is *split* (``split=true``, the default): it is replaced by deps
    restricted to the iteration boxes where it is needed (``x-iterations``; "first iteration
    only", "all but the first", ...), so the kept instance waits are exactly the
    non-redundant ones: the instance-level minimum of the given graph, with the loops kept.
    Dropping all redundant waits at once keeps every order (the reduction is a subgraph of
    what remains), so the split is sound.  A needed set that is not a union of at most
    :data:`MAX_BOXES` boxes keeps its dep whole (counted as ``unsplit``).  ``split=false``
    keeps partially needed deps whole, as the seed, whose deps cannot say "only at k = 0";
    :class:`ReductionResult` then reports them (:attr:`ReductionResult.partial`).  Expanding
    the loops first (:mod:`neuronsim.passes.expand_scheduling_units`) reaches the same minimum at the
    price of the loop structure.

Orders no conflict needs (``orders=needed``, the default)
    A wait resolves to the *last* instance of its target that the dep names: from after a
    loop, the target's last iteration.  That instance may share no byte with the waiter while
    an earlier iteration does; when other waits already order that earlier iteration, the wait
    orders nothing a conflict needs, yet the graph's reduction must keep it (nothing else
    orders the last iteration).  On a placed program the pass therefore first keeps, of the
    Flow / Anti / Output waits, only those that realize the spec's minimum (each wait ``x``
    before ``y`` of :func:`neuronsim.passes.analysis.minimum_waits.minimum_waits` by ``y``'s
    wait on the earliest target at or after ``x`` on ``x``'s engine or queue:
    :func:`needed_waits`), then reduces those with the Ordered ones.  Every conflicting pair
    stays ordered, so a race-free program stays race-free, but orders no conflict needs may
    go.  When a wait of the minimum has no such wait (deps that race, or that order a pair
    only through other instances) every order is kept, races included; ``orders=all`` always
    keeps them (the contract below then holds without exception).

The async window (``window=async``)
    :mod:`neuronsim.passes.analysis.asyncwindow`: the fold driven by ``procAsync``'s edges, keeping each
    point's async window in bank B and reading it in ``RedundantAsyncRemover``.  With the
    default fold it gives the exact answer; with ``fold=program-order`` it recovers part of
    what that fold misses and stays weaker than exact (tested).  The seed's arch gate
    (``DepReduction::run`` skips the pass on arch 10, "Skipping dependency reduction pass.") is
    the option ``arch``: the target's arch number, which our presets do not know (-1, the
    default, never skips); ``arch=10`` leaves the deps untouched and counts ``skipped-arch``.

Kinds
    :func:`apply_reorder_reduction` drops redundant Flow / Ordered deps,
    :func:`apply_anti_dependence_reduction` redundant Anti / Output deps (the seed's gated
    second phase).  Redundancy is judged on the whole graph, which removing redundant edges
    does not change, so the two phases commute and together give the full reduction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from neuronsim.machine.order.conflicts import MAX_BOXES, conflict_kind, iteration_boxes
from neuronsim.machine.order.deptable import DepTable, Ranges, dep_table, write_deps
from neuronsim.machine.ir.edges import KIND_NAMES, EdgeKind
from neuronsim.machine.order.hb import HappensBefore, wait_counts
from neuronsim.machine.ir.program import Dep, Program
from neuronsim.machine.order.stream import InstanceStream, stream_of
from neuronsim.machine.ir.collector import collector_paused

from neuronsim.passes.analysis.asyncwindow import redundant_waits_window
from neuronsim.passes.analysis.minimum_waits import keeps_a_needless_wait, needed_waits
from neuronsim.passes.pipeline import Pass, PassContext, PipelineState

__all__ = [
    "LATEST_FIRST", "PROGRAM_ORDER", "FOLDS", "MAX_BOXES", "InstanceWaits", "instance_waits", "waits_from_targets",
    "redundant_waits", "DepRef", "PartialDep", "ReductionResult",
    "dep_reduction", "reduce_table", "apply_reorder_reduction", "apply_anti_dependence_reduction", "REORDER_KINDS",
    "ANTI_KINDS", "DepReduction", "WINDOWS", "ORDERS", "ALL_ORDERS", "NEEDED_ORDERS", "needed_waits",
    "validate_options",
]

#: ``window`` option values: none, or the seed's async window.
WINDOWS = ("none", "async")
ALL_ORDERS = "all"
NEEDED_ORDERS = "needed"
#: ``orders`` option values: keep every order the deps give, or only what conflicts need.
ORDERS = (ALL_ORDERS, NEEDED_ORDERS)
#: Arch numbers on which the seed skips the pass.
SKIPPED_ARCHS = frozenset({10})
LATEST_FIRST = "latest-first"
PROGRAM_ORDER = "program-order"
FOLDS = (LATEST_FIRST, PROGRAM_ORDER)
REORDER_KINDS = frozenset({EdgeKind.FLOW, EdgeKind.ORDERED})
ANTI_KINDS = frozenset({EdgeKind.ANTI, EdgeKind.OUTPUT})


def validate_options(fold: str, window: str = "none", orders: str = ALL_ORDERS) -> None:
    """The one check of the reduction's variants (the pass, :func:`reduce_table` and
    :func:`redundant_waits` call it): ``fold`` one of :data:`FOLDS`, ``window`` of :data:`WINDOWS`,
    ``orders`` of :data:`ORDERS`.

    >>> validate_options("program-order", "async")
    >>> validate_options("backwards")
    Traceback (most recent call last):
    ValueError: fold must be one of ['latest-first', 'program-order'], got 'backwards'
    """
    for option, value, allowed in (("fold", fold, FOLDS), ("window", window, WINDOWS), ("orders", orders, ORDERS)):
        if value not in allowed:
            raise ValueError(f"{option} must be one of {list(allowed)}, got {value!r}")


class DepRef(NamedTuple):
    """One instruction-level dep: ``waiter`` waits for ``dep.on``."""

    waiter: str
    dep: Dep
    index: int = 0
    """Position of the dep in the waiter's ``deps``."""

    def describe(self) -> str:
        carried = ""
        if self.dep.loop_carried:
            carried = " (loop-carried)" if self.dep.distance == 1 else f" (loop-carried, {self.dep.distance} back)"
        when = "".join(f" {loop}[{lo},{hi})" for loop, lo, hi in self.dep.iterations)
        return f"{self.dep.on} -> {self.waiter} [{KIND_NAMES[self.dep.kind]}]{carried}{when}"


@dataclass(frozen=True, slots=True)
class InstanceWaits:
    """The rule-4 waits of a program's instances, one per dep per instance it resolves at.

    Entries are stored per waiter (``start[y]:start[y+1]``), latest target first; ``slot[k]``
    is the dep-table row of entry ``k`` (-1 when the waits do not come from deps).
    """

    stream: InstanceStream
    start: Sequence[int]
    target: Sequence[int]
    slot: Sequence[int]
    """Lists, or memoryviews of the resolved table's columns (read in place)."""
    table: DepTable | None = None

    def __len__(self) -> int:
        return len(self.target)

    def waits_of(self, waiter: int) -> range:
        return range(self.start[waiter], self.start[waiter + 1])

    def name(self, instance: int) -> str:
        return self.stream.instance_name(instance)


def instance_waits(program: Program, stream: InstanceStream | None = None) -> InstanceWaits:
    """Resolve every dep of every instance to its last target instance.

    >>> from neuronsim.machine.ir.program import Instruction, Program, Dep
    >>> body = (Instruction("a", "pe", "x"), Instruction("b", "act", "y"),
    ...         Instruction("c", "dve", "z", deps=(Dep("a"), Dep("b"))))
    >>> w = instance_waits(Program({}, body))
    >>> [w.target[k] for k in w.waits_of(2)]   # latest first
    [1, 0]
    """
    stream = stream or stream_of(program)
    table = dep_table(program, stream)
    waits = stream.resolve(table)
    return InstanceWaits(stream, waits.ptr.tolist(), waits.target.tolist(), waits.row.tolist(), table)


def waits_from_targets(stream: InstanceStream, waits: Sequence[Iterable[int]]) -> InstanceWaits:
    """Instance waits given directly as target ids per instance (no deps behind them)."""
    start, target = [0], []
    for y, targets in enumerate(waits):
        chosen = sorted(set(targets), reverse=True)
        if chosen and chosen[0] >= y:
            raise ValueError(f"instance {y} waits on {chosen[0]}, which does not precede it")
        target.extend(chosen)
        start.append(len(target))
    return InstanceWaits(stream, start, target, [-1] * len(target))


def redundant_waits(waits: InstanceWaits, fold: str = LATEST_FIRST) -> bytearray:
    """Per wait entry, 1 when it is redundant (:meth:`neuronsim.machine.order.hb.HappensBefore.fold`).

    Requires entries in program order of their waiters, latest target first.  Guarantees,
    with ``fold="latest-first"``: the entries left at 0 are exactly the wait edges of the
    transitive reduction of the happens-before graph of rules 1-4.  With
    ``fold="program-order"`` (the seed): a subset of those redundancies (sound, not exact).
    """
    validate_options(fold)
    stream = waits.stream
    seq, comp, pos = stream.columns("seq", "comp", "pos")
    start, target = waits.start, waits.target
    hb = HappensBefore(stream.spec.dma_queues, wait_counts(target))
    fold_clock, complete, trigger = hb.fold, hb.complete, hb.trigger
    redundant = bytearray(len(target))
    latest_first = fold == LATEST_FIRST
    with collector_paused():
        for y in range(len(stream)):
            a, b = start[y], start[y + 1]
            if a == b:
                complete(y, seq[y], comp[y], trigger(seq[y]))
                continue
            targets = target[a:b] if latest_first else target[b - 1:a - 1 if a else None:-1]
            clock, needed = fold_clock(seq[y], targets, comp, pos)
            for k, keep in enumerate(needed):
                if not keep:
                    redundant[a + k if latest_first else b - 1 - k] = 1
            complete(y, seq[y], comp[y], clock)
    return redundant


@dataclass(frozen=True, slots=True)
class PartialDep:
    """A dep that is redundant at some of the instances it resolves at."""

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
    """Deps needed at some instances only (before splitting)."""
    instance_waits_before: int
    """Waits (one per dep per instance it resolves at) before the reduction."""
    instance_waits_kept: int
    """Waits of the kept deps: what the reduced program executes."""
    instance_waits_minimum: int
    """Waits of the transitive reduction at instance level (what instance deps could reach)."""
    fold: str
    split: int = 0
    """Deps split into iteration boxes."""
    unsplit: int = 0
    """Partially needed deps kept whole (their needed set is not a few boxes)."""
    deps_before: int = -1
    """Deps before the reduction (-1: ``len(dropped) + deps_kept``)."""
    dropped_rows: tuple[int, ...] = ()
    """Rows of the input table dropped (always filled; ``dropped`` only when described)."""
    dropped_reorder: int = 0
    """How many of them were reorder deps (the rest: anti)."""

    def __post_init__(self) -> None:
        if self.deps_before < 0:
            object.__setattr__(self, "deps_before", len(self.dropped_rows or self.dropped) + self.deps_kept)


def _dep_refs(table: DepTable, stream: InstanceStream, rows) -> dict[int, DepRef]:
    """A :class:`DepRef` for each of ``rows`` (its index: position among its waiter's rows)."""
    wanted = set(rows)
    if not wanted:
        return {}
    names = stream.names
    seen: dict[int, int] = {}
    out = {}
    for r, y in enumerate(table.waiter.tolist()):
        k = seen.get(y, 0)
        seen[y] = k + 1
        if r in wanted:
            out[r] = DepRef(names[y], table.dep(r, names), k)
    return out


def reduce_table(stream: InstanceStream, table: DepTable, *, fold: str = LATEST_FIRST,
                 kinds: frozenset = REORDER_KINDS | ANTI_KINDS, split: bool = True, describe: bool = True,
                 window: str = "none", orders: str = ALL_ORDERS) -> tuple[DepTable, ReductionResult]:
    """The reduction of ``table`` over ``stream``; see the module doc.  Without ``describe``
    the result names no dropped dep (``dropped`` empty; ``dropped_rows`` and the counts
    filled): a pipeline pass needs the counts, a report the names.  ``window="async"`` folds
    with the async window (:mod:`neuronsim.passes.analysis.asyncwindow`).  ``orders="needed"``
    (a placed program only) first sets aside the byte-labelled waits no conflict needs
    (:func:`needed_waits`)."""
    validate_options(fold, window, orders)
    resolved = stream.resolve(table)
    # the resolved columns read in place (as lists: ~250 B an instance, this pass's peak)
    waits = InstanceWaits(stream, memoryview(resolved.ptr), memoryview(resolved.target), memoryview(resolved.row),
                          table)
    if window == "async":
        redundant, _, _ = redundant_waits_window(waits, fold)
    else:
        redundant = redundant_waits(waits, fold)
    if orders == NEEDED_ORDERS and keeps_a_needless_wait(stream, table, resolved, redundant, kinds):
        usable = needed_waits(stream, table, resolved, kinds)
        if usable is not None:
            redundant = _redundant_among(waits, usable, fold, window)
    rows = len(table)
    needed_mask = np.frombuffer(bytes(redundant), np.uint8) == 0 if len(redundant) else np.zeros(0, bool)
    row = resolved.row.astype(np.int64)
    total = np.bincount(row, minlength=rows)
    needed = np.bincount(row[needed_mask], minlength=rows)
    allowed = np.isin(table.kind, np.asarray([int(k) for k in kinds], np.int8))
    drop = (needed == 0) & allowed
    partial_rows = np.flatnonzero((needed > 0) & (needed < total)).tolist()
    refs = _dep_refs(table, stream, (np.flatnonzero(drop).tolist() if describe else []) + partial_rows)
    keep_rows = np.flatnonzero(~drop)
    new = table.select(keep_rows)
    split_count = unsplit = 0
    partial = []
    if partial_rows:
        waiter_of = np.repeat(np.arange(len(stream), dtype=np.int64), np.diff(resolved.ptr))
        position = {r: k for k, r in enumerate(keep_rows.tolist())}
        replacements: dict[int, list[Ranges]] = {}
        for r in partial_rows:
            here = row == r
            need_ids = waiter_of[here & needed_mask]
            skip_ids = waiter_of[here & ~needed_mask]
            partial.append(PartialDep(refs[r], tuple(stream.instance_name(i) for i in need_ids[:64].tolist()),
                                      tuple(stream.instance_name(i) for i in skip_ids[:64].tolist())))
            if not split:
                continue
            boxes = iteration_boxes(stream, int(table.waiter[r]), need_ids)
            if boxes is None:
                unsplit += 1
                continue
            replacements[position[r]] = boxes
            split_count += 1
        if replacements:
            new, made = _split_rows(new, replacements)
            new = _relabel(stream, new, made)
    kept_waits = _count_waits(stream, new) if split_count else int(total[keep_rows].sum())
    drop_rows = np.flatnonzero(drop)
    reorder = np.isin(table.kind[drop_rows], np.asarray([int(k) for k in REORDER_KINDS], np.int8))
    dropped = tuple((refs[r], "reorder" if is_reorder else "anti")
                    for r, is_reorder in zip(drop_rows.tolist(), reorder.tolist())) if describe else ()
    result = ReductionResult(None, dropped, len(new), tuple(partial), len(waits), kept_waits,
                             len(waits) - int(sum(redundant)), fold, split_count, unsplit, rows,
                             tuple(drop_rows.tolist()), int(reorder.sum()))
    return new, result


def _redundant_among(waits: InstanceWaits, usable: np.ndarray, fold: str, window: str) -> bytearray:
    """:func:`redundant_waits` (or the async window's) over the usable entries only; the
    entries set aside count as redundant."""
    keep = np.flatnonzero(usable).tolist()
    before = np.concatenate(([0], np.cumsum(usable, dtype=np.int64)))  # usable entries before k
    sub = InstanceWaits(waits.stream, before[np.asarray(waits.start, np.int64)].tolist(),
                        [waits.target[k] for k in keep], [waits.slot[k] for k in keep], waits.table)
    if window == "async":
        part, _, _ = redundant_waits_window(sub, fold)
    else:
        part = redundant_waits(sub, fold)
    redundant = bytearray(b"\x01" * len(waits))
    for k, flag in zip(keep, part):
        redundant[k] = flag
    return redundant


def _count_waits(stream: InstanceStream, table: DepTable) -> int:
    return len(stream.resolve(table).target)


def _split_rows(table: DepTable, replacements: dict[int, list[Ranges]]) -> tuple[DepTable, list[int]]:
    """``table`` with row ``r`` replaced by one row per box of ``replacements[r]``, and the
    indices of the rows the split made."""
    rows, objects, made = [], [], []
    for r in range(len(table)):
        boxes = replacements.get(r)
        base = (int(table.waiter[r]), int(table.former[r]), int(table.kind[r]), int(table.distance[r]))
        if boxes is None:
            rows.append((*base, table.iterations(r)))
            objects.append(table.objects[r] if table.objects is not None else None)
            continue
        for box in boxes:
            made.append(len(rows))
            rows.append((*base, _intersect(table.iterations(r), box)))
            objects.append(None)
    return DepTable.build(rows, objects), made


def _relabel(stream: InstanceStream, table: DepTable, made: list[int]) -> DepTable:
    """Label each row made by a split with the strongest kind the pairs it now waits on give
    (Ordered when they share no byte): restricted to fewer iterations, a dep may no longer
    wait on the pair that gave it its kind (``verifyAntiDependence``'s rule).  Every instance
    the wait names counts, not only the one it resolves to: a wait from after a loop names
    all of its iterations (only the last was read: a first iteration's RAW left the dep
    Ordered, and the pipeline failed its own fuzzer, a probe)."""
    kinds = table.kind.copy()
    resolved = stream.resolve(table.select(np.asarray(made, np.int64)))
    waiter = np.repeat(np.arange(len(stream), dtype=np.int64), np.diff(resolved.ptr)).tolist()
    best: dict[int, int] = {}
    flow = int(EdgeKind.FLOW)
    for k, (a, r) in enumerate(zip(resolved.target.tolist(), resolved.row.tolist())):
        found = best.get(r, int(EdgeKind.ORDERED))
        for target in reversed(stream.waited_with(a, waiter[k])):
            if found == flow:
                break
            found = conflict_kind(stream, target, waiter[k], found)
        best[r] = found
    for k, r in enumerate(made):
        kinds[r] = best.get(k, int(EdgeKind.ORDERED))
    return table.with_kinds(kinds)


def _intersect(old: Ranges, new: Ranges) -> Ranges:
    """Two iteration restrictions combined (the needed set lies inside ``old`` already)."""
    merged = {loop: (lo, hi) for loop, lo, hi in old}
    for loop, lo, hi in new:
        a, b = merged.get(loop, (lo, hi))
        merged[loop] = (max(a, lo), min(b, hi))
    return tuple((loop, lo, hi) for loop, (lo, hi) in merged.items())


def dep_reduction(program: Program, *, fold: str = LATEST_FIRST, anti: bool = True,
                  split: bool = True) -> ReductionResult:
    """Reduce the program's deps; ``anti=False`` leaves Anti / Output deps alone (the gate).

    ``split`` restricts partially needed deps to
    the iteration boxes where they are needed (see the module doc; the pass does by default).

    >>> from neuronsim.machine.ir.program import Instruction, Program, Dep
    >>> body = (Instruction("a", "pe", "x"), Instruction("b", "act", "y", deps=(Dep("a"),)),
    ...         Instruction("c", "dve", "z", deps=(Dep("a"), Dep("b"))))
    >>> r = dep_reduction(Program({}, body))
    >>> [ref.describe() for ref, _ in r.dropped], r.instance_waits_kept
    (['a -> c [ordered]'], 2)
    >>> [ref.describe() for ref, _ in dep_reduction(Program({}, body), fold="program-order").dropped]
    []
    """
    stream = stream_of(program)
    with collector_paused():
        table, result = reduce_table(stream, dep_table(program, stream), fold=fold, split=split,
                                     kinds=REORDER_KINDS | ANTI_KINDS if anti else REORDER_KINDS)
    return _with_program(result, write_deps(program, table))


def _with_program(result: ReductionResult, program: Program) -> ReductionResult:
    from dataclasses import replace

    return replace(result, program=program)


def _reduce_kinds(program: Program, kinds: frozenset, fold: str) -> Program:
    stream = stream_of(program)
    table, _ = reduce_table(stream, dep_table(program, stream), fold=fold, kinds=kinds, split=False)
    return write_deps(program, table)


def apply_reorder_reduction(program: Program, fold: str = LATEST_FIRST) -> Program:
    """Drop every Flow / Ordered dep that is redundant at every instance it resolves at."""
    return _reduce_kinds(program, REORDER_KINDS, fold)


def apply_anti_dependence_reduction(program: Program, fold: str = LATEST_FIRST) -> Program:
    """Drop every Anti / Output dep already enforced by other paths (at every instance).

    The seed looks only for an intervening same-engine instruction; the clock sees every
    path, which includes those.
    """
    return _reduce_kinds(program, ANTI_KINDS, fold)


@dataclass(frozen=True, slots=True)
class DepReduction(Pass):
    """Pass: the exact transitive reduction of the waits
    (``dep-reduction{fold=latest-first,anti=true,split=true,window=none,arch=-1,orders=needed}``).

    Contract
        requires: a valid program.
        guarantees: with ``orders=all``, happens-before over every instance's trigger, start
        and end is unchanged; the instance waits kept are exactly the transitive reduction's
        (with ``split``, up to the deps whose needed instances are not a few iteration boxes:
        ``unsplit``); deps are a subset of the input's, some restricted to iteration ranges.
        With ``orders=needed`` (the default) on a placed program whose deps realize the
        spec's minimum: every conflicting instance pair stays ordered and the Ordered deps'
        orders are kept, while Flow / Anti / Output waits no conflict needs may be dropped
        (the module doc); otherwise as ``orders=all``.

    Counters: deps ``dropped-reorder`` / ``dropped-anti`` / ``kept``, deps ``partial`` (needed
    at some instances only), ``split`` / ``unsplit``, instance-level waits ``waits-before`` /
    ``waits-kept`` / ``waits-minimum``, and with ``labels`` the ``inconsistent-labels`` found.
    """

    name: ClassVar[str] = "dep-reduction"
    fold: str = LATEST_FIRST
    anti: bool = True
    labels: bool = False
    """Also run :func:`neuronsim.passes.analysis.labels.verify_anti_dependence` on the result and count its
    findings as ``inconsistent-labels`` (the seed verifies after its anti phase)."""
    split: bool = True
    window: str = "none"
    """``async``: the seed's async window and redundant-async remover (see the module doc)."""
    arch: int = -1
    """The target's arch number for the seed's gate: the pass does nothing on arch 10."""
    orders: str = NEEDED_ORDERS
    """``needed``: on a placed program, drop the Flow / Anti / Output waits no conflict needs
    (:func:`needed_waits`); ``all``: keep every order the deps give."""

    def __post_init__(self) -> None:
        validate_options(self.fold, self.window, self.orders)

    def run(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        if self.arch in SKIPPED_ARCHS:  # "Skipping dependency reduction pass."
            ctx.count(self.name, "skipped-arch")
            return state.unchanged()
        stream = state.stream
        orders = ALL_ORDERS if state.structure.has_virtual_tensors else self.orders  # conflicts need placement
        table, result = reduce_table(stream, state.deps, fold=self.fold, split=self.split,
                                     kinds=REORDER_KINDS | ANTI_KINDS if self.anti else REORDER_KINDS, describe=False,
                                     window=self.window, orders=orders)
        out = state.with_deps(table)
        dropped_anti = len(result.dropped_rows) - result.dropped_reorder
        for phase, n in (("reorder", result.dropped_reorder), ("anti", dropped_anti)):
            if n:
                ctx.count(self.name, f"dropped-{phase}", n)
        for key, value in (("kept", result.deps_kept), ("partial", len(result.partial)), ("split", result.split),
                           ("unsplit", result.unsplit), ("waits-before", result.instance_waits_before),
                           ("waits-kept", result.instance_waits_kept),
                           ("waits-minimum", result.instance_waits_minimum)):
            ctx.count(self.name, key, value)
        if self.labels and not out.structure.has_virtual_tensors:
            from neuronsim.passes.analysis.labels import verify_anti_dependence

            ctx.count(self.name, "inconsistent-labels", len(verify_anti_dependence(out.program)))
        return out
