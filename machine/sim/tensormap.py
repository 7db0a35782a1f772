"""The runtime's dependence tracking per submitted task: simpler's TensorMap (``pto_tensormap``).

``docs/task-rules.md`` section 4.  The orchestrator calls :meth:`TensorMap.submit` once per task
instance, in submission order; it answers the task's fan-in, each edge with its origin
(:class:`~neuronsim.machine.tasks.orchestrator.Origin`), and counts the tracking work done:

* explicit deps (user, then compiler), always;
* AUTO scopes only (a MANUAL scope skips A, B and 4):

  - **step A**, creator edges: every argument but a runtime-allocated ``output`` whose tensor
    has a creator task waits for it (``no_dep`` slots too);
  - **step B**, lookups: every ``input`` and ``inout`` argument looks up the producers
    registered on its storage (one bucket per storage space: a root instance, or a MemRef
    allocation) and waits for each whose region overlaps; an ``inout`` that COVERS an entry
    removes it (its own entry supersedes it);
  - **step 4**, inserts: every ``inout`` and ``output_existing`` argument registers the task
    as a producer of its region.  Readers are never registered, so a later
    ``output_existing`` writer is not ordered after earlier readers (the runtime's WAR hole;
    the race checker reports it).  ``output`` arguments are neither looked up nor inserted.

The overlap test is simpler's (:func:`relation`): disjoint byte ranges never overlap; two
boxes of one row-major layout are compared per dimension (NO_OVERLAP / COVERED / OTHER);
anything else is OTHER (an edge, conservatively).  ``exact=True`` decides the last case on the
bytes instead (what :mod:`tests.task_oracle` assumes).  Entries of finished tasks are kept:
simpler prunes them, which drops only edges to tasks already complete, so the edges recorded
here are the same in every run of one program.

Examples
--------
>>> from neuronsim.machine.tasks.task_geometry import Region
>>> root = Region.of("x", 0, 4, (8, 1), (8, 8))
>>> relation(root.window((0, 0), (4, 8)), root), relation(root, root.window((0, 0), (4, 8)))
(<Relation.COVERED: 1>, <Relation.OTHER: 2>)
>>> relation(root.window((0, 0), (4, 8)), root.window((4, 0), (4, 8)))
<Relation.NO_OVERLAP: 0>
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from neuronsim.machine.tasks.task_geometry import Region, covers, is_injective, overlaps
from neuronsim.machine.tasks.ir import ArgDirection
from neuronsim.machine.tasks.orchestrator import Origin, TaskInstance

__all__ = ["Relation", "relation", "Edge", "Tracking", "TensorMap", "task_graph"]


class Relation(IntEnum):
    NO_OVERLAP = 0
    COVERED = 1
    """The query's region contains the entry's."""
    OTHER = 2


def _row_major(r: Region) -> bool:
    strides = [s for s, n in zip(r.strides, r.shape) if n > 1]
    return all(a > b for a, b in zip(strides, strides[1:]))


def relation(entry: Region, query: Region, *, exact: bool = False) -> Relation:
    """simpler's overlap check of a TensorMap entry against an argument's region."""
    if entry.space != query.space or entry.empty or query.empty:
        return Relation.NO_OVERLAP
    (elo, ehi), (qlo, qhi) = entry.byte_range, query.byte_range
    if ehi <= qlo or qhi <= elo:
        return Relation.NO_OVERLAP
    if (entry.origin, entry.itemsize, entry.strides) == (query.origin, query.itemsize, query.strides) \
            and _row_major(entry) and all(entry.strides):
        extent = tuple(max(a + n, b + m) for a, n, b, m in zip(entry.start, entry.shape, query.start, query.shape))
        if is_injective(extent, entry.strides):
            pairs = tuple(zip(entry.start, entry.shape, query.start, query.shape))
            if any(a + n <= b or b + m <= a for a, n, b, m in pairs):
                return Relation.NO_OVERLAP
            if all(b <= a and a + n <= b + m for a, n, b, m in pairs):
                return Relation.COVERED
            return Relation.OTHER
    if exact:
        if not overlaps(entry, query):
            return Relation.NO_OVERLAP
        return Relation.COVERED if covers(query, entry) else Relation.OTHER
    return Relation.OTHER


@dataclass(frozen=True, slots=True)
class Edge:
    """``task`` waits for ``on``; ``arg`` is the argument that caused it (None for explicit deps)."""

    on: int
    origin: Origin
    arg: int | None = None


@dataclass(frozen=True, slots=True)
class Tracking:
    """The runtime's work for one submission."""

    edges: tuple[Edge, ...]
    lookups: int
    """Step-B lookups (one per ``input`` / ``inout`` slot in an AUTO scope)."""
    inserts: int
    explicit: int
    """Explicit deps handed to ``set_dependencies`` (user and compiler, distinct tasks)."""
    creator: int
    no_dep: int
    """Slots the call site marked ``no_dep`` (tracking skipped)."""

    @property
    def fan_in(self) -> tuple[int, ...]:
        """The distinct tasks waited for, in order of first mention."""
        return tuple(dict.fromkeys(e.on for e in self.edges))


class TensorMap:
    """Producer entries per storage space, fed one submission at a time (see the module doc)."""

    __slots__ = ("exact", "buckets")

    def __init__(self, *, exact: bool = False) -> None:
        self.exact = exact
        self.buckets: dict[object, list[tuple[Region, int]]] = {}

    def submit(self, task: TaskInstance) -> Tracking:
        edges: list[Edge] = [Edge(t, Origin.USER) for t in task.user_deps]
        user = set(task.user_deps)
        edges += [Edge(t, Origin.COMPILER) for t in task.compiler_deps if t not in user]
        explicit = len(edges)
        lookups = inserts = creators = no_dep = 0
        inserted: list[tuple[Region, int]] = []
        for a in task.accesses:
            d = a.direction
            if d == ArgDirection.NO_DEP:
                no_dep += 1
            if task.manual:
                continue
            if d != ArgDirection.OUTPUT and a.creator is not None:
                edges.append(Edge(a.creator, Origin.CREATOR, a.arg))
                creators += 1
            if d in (ArgDirection.INPUT, ArgDirection.INOUT):
                lookups += 1
                edges.extend(Edge(t, Origin.TENSORMAP, a.arg) for t in self.lookup(a.region, d == ArgDirection.INOUT))
            if d in (ArgDirection.INOUT, ArgDirection.OUTPUT_EXISTING):
                inserts += 1
                inserted.append((a.region, task.index))
        for region, index in inserted:  # after every lookup: a task never waits for itself
            self.buckets.setdefault(region.space, []).append((region, index))
        return Tracking(tuple(edges), lookups, inserts, explicit, creators, no_dep)

    def lookup(self, region: Region, removes: bool) -> list[int]:
        """Producers overlapping ``region``, oldest first; with ``removes`` the entries it covers go."""
        bucket = self.buckets.get(region.space)
        if not bucket:
            return []
        found, kept = [], []
        for entry in bucket:
            rel = relation(entry[0], region, exact=self.exact)
            if rel != Relation.NO_OVERLAP:
                found.append(entry[1])
            if not (removes and rel == Relation.COVERED):
                kept.append(entry)
        if removes and len(kept) != len(bucket):
            self.buckets[region.space] = kept
        return found


def task_graph(tasks: Iterable[TaskInstance], *, exact: bool = False) -> list[Tracking]:
    """Per task instance, the runtime's tracking (edges, counts), without timing: the graph the
    simulated runtime builds in every run."""
    tmap = TensorMap(exact=exact)
    return [tmap.submit(t) for t in tasks]
