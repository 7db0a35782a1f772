"""The dependence edge model shared by every pass.

This reproduces the contract of the seed (``dependence-graph.txt``, "The shared edge model"):

* :class:`EdgeKind` is the numeric enum ``{Invalid=0, Ordered=1, Anti=2, Output=3, Flow=4}``
  and kinds compare by number.
* Between an ordered pair of instructions there is **one** edge, whose kind is the maximum of
  every kind ever added for that pair (``EdgePtr::addEdge``).  A pair that is both a flow and
  an anti dependence is stored as Flow.
* Loop-carried edges live in a separate set from ordinary ones.
* ``graph.add_dependency(waiter, former, kind)`` means "*waiter* waits for *former*": edges
  point from the later instruction to the earlier one.
* :meth:`DepGraph.flow_deps` keeps targets whose kind is Flow; :meth:`DepGraph.anti_deps`
  keeps targets whose kind is *exactly* Anti (``(EdgePtr & 7) == 2``).

The ``== 2`` quirk, kept on purpose: because of the max-merge, a pair that the anti analyzer
finds to be a WAR conflict but that ``build_fdeps`` already linked by Flow is stored as Flow,
and :meth:`anti_deps` does not return it.  Nothing is lost, since the stronger Flow edge to the
same predecessor enforces the same ordering, but a caller that counts "anti edges" with
:meth:`anti_deps` counts only the pairs whose strongest reason is WAR.  Use
:meth:`edges_of_kind` with ``at_least=True`` for "ordered at least as strongly as".

The graph is keyed by instruction *name* (the seed hashes edges on the producer's name), so it
describes instruction-level deps exactly as the program format stores them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum

__all__ = ["EdgeKind", "Edge", "DepGraph", "KIND_NAMES", "kind_from_name"]


class EdgeKind(IntEnum):
    """Kind of a dependence edge; the numeric order is the merge order."""

    INVALID = 0
    ORDERED = 1
    ANTI = 2
    OUTPUT = 3
    FLOW = 4


#: Names used by the program format (``deps[].kind``).
KIND_NAMES: dict[EdgeKind, str] = {
    EdgeKind.ORDERED: "ordered",
    EdgeKind.ANTI: "anti",
    EdgeKind.OUTPUT: "output",
    EdgeKind.FLOW: "flow",
}
_BY_NAME = {name: kind for kind, name in KIND_NAMES.items()}


def kind_from_name(name: str) -> EdgeKind:
    """Parse a format kind name.

    >>> kind_from_name("flow")
    <EdgeKind.FLOW: 4>
    """
    return _BY_NAME[name]


@dataclass(frozen=True, slots=True)
class Edge:
    """One stored edge: ``waiter`` waits for ``former``."""

    waiter: str
    former: str
    kind: EdgeKind
    loop_carried: bool = False


class DepGraph:
    """Instruction-level dependence edges with the seed's max-merge semantics.

    Examples
    --------
    >>> g = DepGraph()
    >>> g.add_dependency("mm", "load", EdgeKind.FLOW)
    >>> g.add_dependency("mm", "load", EdgeKind.ANTI)      # merged: Flow is stronger
    >>> g.kind("mm", "load")
    <EdgeKind.FLOW: 4>
    >>> g.anti_deps("mm")                                 # the ==2 quirk
    []
    >>> g.flow_deps("mm")
    ['load']
    """

    __slots__ = ("_sets",)

    def __init__(self) -> None:
        # _sets[loop_carried][waiter][former] = kind; dicts keep insertion order, which keeps
        # every listing deterministic.
        self._sets: tuple[dict[str, dict[str, EdgeKind]], dict[str, dict[str, EdgeKind]]] = ({}, {})

    # -- insertion -----------------------------------------------------------------------
    def add_dependency(
        self, waiter: str, former: str, kind: EdgeKind, loop_carried: bool = False
    ) -> None:
        """Record that ``waiter`` waits for ``former``, merging the kind by max.

        A self-edge is only meaningful across iterations, so it is accepted only when
        ``loop_carried`` (the seed asserts ``this != former``; the format allows a
        loop-carried dep of an instruction on itself).
        """
        if kind == EdgeKind.INVALID:
            raise ValueError("an edge of kind Invalid cannot be added")
        if waiter == former and not loop_carried:
            raise ValueError(f"self-edge on {waiter!r} must be loop-carried")
        row = self._sets[loop_carried].setdefault(waiter, {})
        current = row.get(former, EdgeKind.INVALID)
        if kind > current:
            row[former] = kind

    def remove_dependency(self, waiter: str, former: str, loop_carried: bool = False) -> None:
        """Drop the edge ``waiter -> former`` if present."""
        row = self._sets[loop_carried].get(waiter)
        if row is not None:
            row.pop(former, None)

    # -- queries -------------------------------------------------------------------------
    def kind(self, waiter: str, former: str, loop_carried: bool = False) -> EdgeKind:
        """The stored kind, ``INVALID`` when there is no edge."""
        return self._sets[loop_carried].get(waiter, {}).get(former, EdgeKind.INVALID)

    def deps(self, waiter: str, loop_carried: bool = False) -> dict[str, EdgeKind]:
        """All formers of ``waiter`` with their kinds (a copy)."""
        return dict(self._sets[loop_carried].get(waiter, {}))

    def flow_deps(self, waiter: str, loop_carried: bool = False) -> list[str]:
        """Formers whose stored kind is Flow (``getFlowDeps``)."""
        return [f for f, k in self._sets[loop_carried].get(waiter, {}).items() if k == EdgeKind.FLOW]

    def anti_deps(self, waiter: str, loop_carried: bool = False) -> list[str]:
        """Formers whose stored kind is exactly Anti (``getAntiDeps``, the ``== 2`` quirk)."""
        return [f for f, k in self._sets[loop_carried].get(waiter, {}).items() if k == EdgeKind.ANTI]

    def edges_of_kind(
        self, kind: EdgeKind, *, at_least: bool = False, loop_carried: bool | None = None
    ) -> list[Edge]:
        """Edges whose kind equals (or, with ``at_least``, is at least) ``kind``."""
        return [
            e
            for e in self.edges(loop_carried=loop_carried)
            if (e.kind >= kind if at_least else e.kind == kind)
        ]

    def rows(self) -> tuple[Mapping[str, Mapping[str, EdgeKind]], Mapping[str, Mapping[str, EdgeKind]]]:
        """The two edge tables ``(ordinary, loop-carried)``: ``waiter -> {former: kind}``.

        A read-only view for hot loops (building an :class:`Edge` per edge is what costs at a
        million edges); callers must not mutate it.
        """
        return self._sets

    def edges(self, loop_carried: bool | None = None) -> Iterator[Edge]:
        """Every edge; ``loop_carried`` None means both sets, ordinary ones first."""
        flags = (False, True) if loop_carried is None else (loop_carried,)
        for flag in flags:
            for waiter, row in self._sets[flag].items():
                for former, kind in row.items():
                    yield Edge(waiter, former, kind, flag)

    def __len__(self) -> int:
        return sum(len(row) for table in self._sets for row in table.values())

    def __contains__(self, pair: object) -> bool:
        if not isinstance(pair, tuple) or len(pair) not in (2, 3):
            return False
        waiter, former, *lc = pair
        return self.kind(waiter, former, bool(lc and lc[0])) != EdgeKind.INVALID

    def copy(self) -> DepGraph:
        other = DepGraph()
        for flag in (False, True):
            other._sets[flag].update({w: dict(r) for w, r in self._sets[flag].items()})
        return other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DepGraph):
            return NotImplemented
        return set(self.edges()) == set(other.edges())

    def __repr__(self) -> str:
        return f"DepGraph({len(self)} edges)"
