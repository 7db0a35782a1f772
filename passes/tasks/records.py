"""The state and the results of the task-dependence walk.

* :class:`Record`: one prior access (PyPTO ``StorageAccess``): root, region, kind, the TaskId
  variable a later edge names, and what the loops around it mean for that name;
* :class:`Frame`: one analysed region (the virtual whole body, a hand-placed AUTO scope, or
  the container of an ``auto_scope=False`` function) with its prior accesses;
* :class:`Fallback`: why a region keeps runtime tracking (located: the call, the argument,
  the prior access involved);
* :class:`CallResult` / :class:`RegionResult` / :class:`Analysis`: what the pass decided, per
  call and per region, before and after the fallbacks are applied.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from neuronsim.machine.order.spans import SpanIndex
from neuronsim.machine.tasks.ir import ArgDirection, CompilerDep
from neuronsim.passes.tasks.regions import AccessKind, Hazard, Region, first_extent

__all__ = ["Access", "Record", "Frame", "LoopCtx", "Fallback", "Note", "CallResult", "RegionResult", "Analysis",
           "FALLBACK_REASONS"]

#: Fallback reason codes and what they mean.
FALLBACK_REASONS = {
    "unresolved-location": "a read/write argument has no storage lineage",
    "unsupported-location": "a read/write argument's lineage is unsupported (gather/scatter result, more than "
                            "four roots, or a branch/loop merge with an unresolvable side)",
    "missing-task-id": "a hazard on a prior access that has no TaskId (an unassigned read-only call)",
    "exited-dynamic-loop": "a hazard on a producer of a dynamic loop that has exited",
    "loop-producer": "a hazard on a loop producer that was not re-bound to a loop return var and is not in an "
                     "active dynamic loop",
    "stale-loop-producer": "a hazard on a producer of a loop that exited without re-binding its instances to a "
                           "loop return var",
    "conditional-writer": "a writer that does not run in every iteration of a loop, after read-only instances "
                          "that nothing orders among themselves",
    "nested-fallback": "a hand-placed scope inside the body fell back: its calls rely on runtime lookups, which "
                       "cannot see producers the compiler would put in MANUAL scopes",
}


class Access(NamedTuple):
    """One storage alternative of one argument of the call being analysed."""

    root: str
    region: Region
    kind: AccessKind
    arg: int
    creator_only: bool = False
    """A ``no_dep`` slot: the runtime still orders it after the task that allocated its tensor (a
    runtime ``output``, simpler's creator edge), so it meets prior ``output`` writers only."""


class Record(NamedTuple):
    """A prior access of the walk.

    ``task`` is the variable an edge to it names (the submit's TaskId, a plain call's assigned
    variable, the written argument of an unassigned call, or the loop return var it was re-bound
    to; None when there is none); ``direct`` says it is a TaskId variable.  The seed's loop
    bookkeeping is ``loop_producer`` / ``dyn_depth`` / ``dyn_id``; the sound analysis uses
    ``loops`` (loops whose iterations ``task`` does not summarise), ``enclosing`` (every loop
    around the producer), ``chained`` (the call writes and runs once or inside a loop walked
    twice, so the back-edge on its own write orders all its instances and the latest one stands
    for all), ``breaks`` (loops around the producer whose iterations that chain does not join:
    its back-edges are carried in the loops walked twice, so instances in different iterations
    of a ``parallel`` loop are not ordered, and once such a loop has exited the latest instance
    no longer stands for all) and ``prev_of`` (the record stands for the previous iteration of
    that loop).
    """

    root: str
    region: Region
    kind: AccessKind
    arg: int
    call: str
    task: str | None
    direct: bool
    loop_producer: bool
    dyn_depth: int
    dyn_id: int
    loops: tuple[int, ...]
    enclosing: tuple[int, ...]
    chained: bool
    fan_in: tuple[str, str] | None = None
    prev_of: int | None = None
    tracked: bool = False
    """Only runtime tracking orders it (an access of a region that fell back, or of a call that
    triggered a fallback): a later hazard on it keeps the consumer's lookup and AUTO scope."""
    output: bool = False
    """The access is a runtime-allocated ``output`` (it creates the tensor later slots use)."""
    breaks: tuple[int, ...] = ()


@dataclass
class LoopCtx:
    """A counted loop being walked (single-trip loops are transparent and get none)."""

    id: int
    label: str
    depth: int
    dynamic: bool
    parallel: bool
    may_skip: bool
    """The body may run zero times in an execution of the loop around it."""
    twice: bool = False
    """The sound analysis walks the body twice (a sequential loop that may run two iterations)."""


@dataclass(frozen=True, slots=True)
class Fallback:
    reason: str
    call: str
    arg: int | None = None
    prior: str | None = None
    loop: str | None = None
    detail: str = ""

    def describe(self) -> str:
        where = f"call {self.call}" + (f" argument {self.arg}" if self.arg is not None else "")
        prior = f" against {self.prior}" if self.prior else ""
        loop = f" (loop {self.loop})" if self.loop else ""
        return f"{self.reason}: {where}{prior}{loop}" + (f": {self.detail}" if self.detail else "")

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "call": self.call, "arg": self.arg, "prior": self.prior, "loop": self.loop,
                "detail": self.detail or FALLBACK_REASONS[self.reason]}


@dataclass(frozen=True, slots=True)
class Note:
    """One hazard the walk met and what became of it (``edge``, ``user``, ``fallback``, ``runtime``)."""

    walk: int
    arg: int
    prior: str
    prior_arg: int
    hazards: tuple[Hazard, ...]
    outcome: str
    on: str | None = None
    previous_iteration: bool = False
    """The prior access stands for the previous iteration of a loop around both (the back-edge walk)."""

    def to_json(self) -> dict[str, Any]:
        return {"walk": self.walk, "arg": self.arg, "prior": self.prior, "prior_arg": self.prior_arg,
                "hazards": [h.value for h in self.hazards], "outcome": self.outcome, "on": self.on,
                "previous_iteration": self.previous_iteration}


class _Shelf:
    """Record indices of one root (all its accesses, or only its writes): boxes the overlap
    rule separates by their first dimension in a :class:`~neuronsim.machine.order.spans.SpanIndex` per rank,
    the rest (``loose``) in a list.  A box access meets the loose records, the boxes of other
    ranks, and the boxes of its rank whose first extent meets its own: a straight-line program
    writing thousands of disjoint tiles of one output scans a few records per call, not all."""

    __slots__ = ("loose", "boxes")

    def __init__(self) -> None:
        self.loose: list[int] = []
        self.boxes: dict[int, SpanIndex] = {}

    def add(self, index: int, region: Region) -> None:
        extent = first_extent(region)
        if extent is None:
            self.loose.append(index)
        else:
            self.boxes.setdefault(len(region.offsets), SpanIndex()).add(*extent, index, None)

    def truncate(self, length: int) -> None:
        while self.loose and self.loose[-1] >= length:
            self.loose.pop()
        for boxes in self.boxes.values():
            boxes.drop_from(length)

    def meeting(self, region: Region | None) -> list[int]:
        """Indices of the records ``region`` may overlap under the rule (every one for ``None``)."""
        extent = first_extent(region) if region is not None else None
        found = list(self.loose)
        for rank, boxes in self.boxes.items():
            near = boxes.meeting(*extent) if extent is not None and rank == len(region.offsets) else boxes.every()
            found.extend(i for i, _ in near)
        return sorted(found) if len(found) > 1 else found


@dataclass
class Frame:
    """An analysed region and its prior accesses, in order and indexed by root: a call scans
    only the accesses of roots it may alias, a read only their writes (the one kind it can
    conflict with), and a box only the boxes it may overlap (:class:`_Shelf`), so a long
    straight-line program costs a few comparisons per call, not one per earlier access."""

    kind: str
    """``virtual`` (the whole body of a default-mode function), ``scope`` or ``container``."""
    key: str
    active: bool
    records: list[Record] = field(default_factory=list)
    fallback: Fallback | None = None
    task_calls: int = 0
    unsupported: bool = False
    calls: dict[str, None] = field(default_factory=dict)
    """The calls analysed in it, in order (a dict: an ordered set)."""
    shelves: dict[tuple[str, bool], _Shelf] = field(default_factory=dict)
    """(root, writes only) -> that root's record indices."""

    def add(self, record: Record) -> None:
        index = len(self.records)
        self.records.append(record)
        self.shelves.setdefault((record.root, False), _Shelf()).add(index, record.region)
        if record.kind & AccessKind.WRITE:
            self.shelves.setdefault((record.root, True), _Shelf()).add(index, record.region)

    def truncate(self, length: int) -> None:
        """Forget the accesses recorded after the first ``length``."""
        del self.records[length:]
        for shelf in self.shelves.values():
            shelf.truncate(length)

    def of_roots(self, roots, writes_only: bool = False, region: Region | None = None) -> Iterator[Record]:
        """The accesses (or only the writes) of any of ``roots`` that ``region`` may overlap
        (all of them for ``None``), in the order they were recorded."""
        lists = [shelf.meeting(region) for r in roots if (shelf := self.shelves.get((r, writes_only)))]
        lists = [found for found in lists if found]
        if not lists:
            return iter(())
        order = lists[0] if len(lists) == 1 else heapq.merge(*lists)
        return (self.records[i] for i in order)


@dataclass
class CallResult:
    name: str
    regions: tuple[str, ...]
    """Keys of the analysed regions around the call, outermost first."""
    edges: list[CompilerDep] = field(default_factory=list)
    no_dep: dict[int, list[bool]] = field(default_factory=dict)
    output_existing: dict[int, list[bool]] = field(default_factory=dict)
    """Per argument: ``[has a covered hazard, blocked]`` (PyPTO ``AutoNoDepCandidateState``)."""
    notes: list[Note] = field(default_factory=list)
    fallback: Fallback | None = None
    runtime: bool = False
    """A hazard on a tracked access: the call must stay under runtime tracking (no MANUAL marker)."""
    _edge_at: dict[tuple[str, str | None], int] = field(default_factory=dict, repr=False)
    _noted: set[Note] = field(default_factory=set, repr=False)

    def add_edge(self, dep: CompilerDep, loops: tuple[str, ...] = ()) -> None:
        """Append ``dep`` unless one on the same variable (and loop) is there; fan-ins merge their
        calls; a plain dep and a loop-carried one on the same variable merge into the weaker
        restriction: plain, or carried in the outer of the two loops (``loops``: the loops
        around the call, outermost first)."""
        i = self._edge_at.get((dep.on, dep.loop))
        if i is None:
            self._edge_at[dep.on, dep.loop] = len(self.edges)
            self.edges.append(dep)
            return
        old = self.edges[i]
        if dep.calls and not set(dep.calls) <= set(old.calls):
            old = self.edges[i] = CompilerDep(old.on, old.loop,
                                              old.calls + tuple(c for c in dep.calls if c not in old.calls))
        if old.carried != dep.carried and old.carried is not None:
            outer = None if dep.carried is None else min(old.carried, dep.carried, key=loops.index)
            self.edges[i] = CompilerDep(old.on, old.loop, old.calls, outer)

    def note(self, note: Note) -> None:
        if note not in self._noted:
            self._noted.add(note)
            self.notes.append(note)

    def demotions(self) -> dict[int, ArgDirection]:
        out = {i: ArgDirection.NO_DEP for i, (covered, blocked) in self.no_dep.items() if covered and not blocked}
        out.update({i: ArgDirection.OUTPUT_EXISTING for i, (covered, blocked) in self.output_existing.items()
                    if covered and not blocked})
        return out


@dataclass
class RegionResult:
    key: str
    kind: str
    name: str = ""
    fallback: Fallback | None = None
    task_calls: int = 0
    unsupported: bool = False
    calls: dict[str, None] = field(default_factory=dict)
    """The calls of the region, in order (a dict: an ordered set)."""


@dataclass
class Analysis:
    """Everything the dependence pass decided for one program."""

    calls: dict[str, CallResult] = field(default_factory=dict)
    regions: dict[str, RegionResult] = field(default_factory=dict)
    layer_candidate: bool = False
    faithful: bool = False
    analyzed: bool = False

    def region_fell_back(self, call: str, kinds: tuple[str, ...]) -> bool:
        return any(self.regions[k].fallback is not None and self.regions[k].kind in kinds
                   for k in self.calls[call].regions)

    def final_edges(self, call: str) -> list[CompilerDep]:
        """Edges that survive: a hand-placed scope that falls back strips its calls' edges."""
        return [] if self.region_fell_back(call, ("scope",)) else list(self.calls[call].edges)

    def final_demotions(self, call: str) -> dict[int, ArgDirection]:
        """Demotions that survive: any fallback around the call discards them."""
        return {} if self.region_fell_back(call, ("scope", "virtual")) else self.calls[call].demotions()

    def marker(self, call: str) -> bool:
        """The compiler-owned MANUAL candidate marker: compiler edges and no fallback around."""
        result = self.calls[call]
        return bool(result.edges) and not result.runtime and not self.region_fell_back(call, ("scope", "virtual"))
