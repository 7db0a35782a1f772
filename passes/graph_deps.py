"""A program's deps as a graph and back, and dep tables from edge dicts (helpers for passes
that work on edges rather than instance streams)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from neuronsim.machine.ir.edges import DepGraph, EdgeKind
from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.machine.order.deptable import DepTable, Ranges

__all__ = ["graph_of", "graph_rows", "with_graph", "edge_table"]


def edge_table(edges: Mapping[tuple[int, int, int], int],
               ranges: Mapping[tuple[int, int, int], Sequence[Ranges]] | None = None) -> DepTable:
    """Deps from ``{(former, waiter, distance): kind}`` over instruction ids, in the canonical
    order: by waiter, ordinary deps before loop-carried ones, each in document order of the
    instruction waited on (then by distance).  ``ranges[key]``, when given, lists the
    iteration restrictions of that dep (one row each; default: one unrestricted row)."""
    keys = sorted(edges, key=lambda k: (k[1], k[2] > 0, k[0], k[2]))
    ranges = ranges or {}
    return DepTable.build([(y, x, int(edges[(x, y, d)]), d, box) for x, y, d in keys
                           for box in ranges.get((x, y, d), ((),))])


def graph_of(program: Program) -> DepGraph:
    """The program's deps as a :class:`~neuronsim.machine.ir.edges.DepGraph` (kinds merged by max)."""
    graph = DepGraph()
    for inst, _ in program.instructions():
        for dep in inst.deps:
            graph.add_dependency(inst.name, dep.on, dep.kind, dep.loop_carried)
    return graph


def graph_rows(graph: DepGraph) -> tuple[dict[str, dict[str, EdgeKind]], dict[str, dict[str, EdgeKind]]]:
    """The graph's two edge sets, ``rows[loop_carried][waiter][former] = kind``, read-only
    (:meth:`~neuronsim.machine.ir.edges.DepGraph.rows`: iterating ``edges()`` builds one object per edge,
    which dominates at a million instructions)."""
    return graph.rows()


def with_graph(program: Program, graph: DepGraph, order: Mapping[str, int] | None = None,
               changed: set[str] | None = None) -> Program:
    """``program`` whose deps are exactly ``graph``'s, listed in document order of the
    instruction waited on, ordinary deps before loop-carried ones.

    ``order`` maps names to document order (computed when not given); ``changed``, when
    given, names the only instructions whose deps may differ from the program's.
    """
    if order is None:
        order = {inst.name: k for k, (inst, _) in enumerate(program.instructions())}
    rows = graph_rows(graph)
    plain, carried = rows[False], rows[True]
    made: dict[tuple[str, EdgeKind, bool], Dep] = {}  # one Dep object per distinct value

    def dep(former: str, kind: EdgeKind, flag: bool) -> Dep:
        key = (former, kind, flag)
        d = made.get(key)
        if d is None:
            d = made[key] = Dep(former, kind, flag)
        return d

    def rebuild(inst: Instruction) -> Instruction:
        if changed is not None and inst.name not in changed:
            return inst
        row, lc_row = plain.get(inst.name), carried.get(inst.name)
        if not row and not lc_row and not inst.deps:
            return inst
        deps: list[Dep] = []
        if row:
            deps.extend(dep(f, row[f], False) for f in (sorted(row, key=order.__getitem__) if len(row) > 1 else row))
        if lc_row:
            deps.extend(dep(f, lc_row[f], True) for f in sorted(lc_row, key=order.__getitem__))
        if inst.deps:  # a dep that survives unchanged keeps its object (and its x- keys)
            old = {(d.on, d.loop_carried, d.kind): d for d in inst.deps}
            deps = [old.get((d.on, d.loop_carried, d.kind), d) for d in deps]
        # by keyword, not dataclasses.replace: this runs for every instruction of the program
        return Instruction(name=inst.name, engine=inst.engine, op=inst.op, reads=inst.reads, writes=inst.writes,
                           attrs=inst.attrs, deps=tuple(deps), queue=inst.queue, extras=inst.extras)

    return program.map_instructions(rebuild)
