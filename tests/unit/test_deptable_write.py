"""Writing a dep table into a program (``machine/order/deptable.write_deps``): the deps it
writes are the table's rows, and a table selected from one already written (dep-reduction's
from dep-opt's) writes the same Dep objects again rather than equal new ones (issue 31); and the
merge of equal deps into one of the strongest kind."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.machine.order.deptable import DepTable, write_deps


def _chain(n: int) -> Program:
    return Program({}, tuple(Instruction(f"i{k}", "act" if k % 2 else "dve", "op", attrs={"cycles": 10})
                             for k in range(n)))


def test_a_selected_table_writes_the_dep_objects_its_parent_wrote():
    program = _chain(5)
    waiter, former = np.array([1, 2, 3, 4, 4], np.int32), np.array([0, 1, 2, 3, 0], np.int32)
    table = DepTable(waiter, former, np.full(5, int(EdgeKind.FLOW), np.int8), np.zeros(5, np.int32),
                     np.full(5, -1, np.int32))
    written = write_deps(program, table)
    assert [[(d.on, d.kind) for d in i.deps] for i in written.body] == [
        [], [("i0", EdgeKind.FLOW)], [("i1", EdgeKind.FLOW)], [("i2", EdgeKind.FLOW)],
        [("i3", EdgeKind.FLOW), ("i0", EdgeKind.FLOW)]]
    reduced = write_deps(program, table.select(np.array([True, True, True, True, False])))
    assert reduced.body[4].deps == (Dep("i3", EdgeKind.FLOW),)
    for before, after in zip(written.body[1:], reduced.body[1:]):
        assert after.deps[0] is before.deps[0]  # the parent's object, not an equal new one


def _merged_by_dict(table: DepTable) -> tuple[list, list]:
    """The merge as the spec words it: the first row of each (waiter, former, distance,
    iteration range) kept, with the strongest kind of its group."""
    first: dict[tuple, int] = {}
    kind = table.kind.tolist()
    keep = []
    for r in range(len(table)):
        key = (int(table.waiter[r]), int(table.former[r]), int(table.distance[r]), table.iterations(r))
        k = first.setdefault(key, r)
        if k == r:
            keep.append(r)
        else:
            kind[k] = max(kind[k], kind[r])
    return keep, [kind[r] for r in keep]


@pytest.mark.parametrize("seed", range(40))
def test_merged_keeps_the_first_row_of_each_dep_with_its_strongest_kind(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    ranges = [(), ((0, 2),), ((1, 3),), ((0, 2),)]  # two equal ranges: one dep
    rows = [(int(rng.integers(0, 4)), int(rng.integers(0, 4)), int(rng.integers(1, 5)), int(rng.integers(0, 2)),
             ranges[int(rng.integers(0, 4))]) for _ in range(n)]
    table = DepTable.build(rows)
    other = DepTable.build(rows[: n // 2]).concat(DepTable.build(rows[n // 2:]))  # ranges numbered twice
    for t in (table, other):
        merged = t.merged()
        keep, kinds = _merged_by_dict(t)
        assert merged.waiter.tolist() == [rows[r][0] for r in keep]
        assert merged.former.tolist() == [rows[r][1] for r in keep]
        assert merged.distance.tolist() == [rows[r][3] for r in keep]
        assert [merged.iterations(r) for r in range(len(merged))] == [rows[r][4] for r in keep]
        assert merged.kind.tolist() == kinds


def test_merged_treats_equal_ranges_under_two_indices_as_one():
    r = ((0, 2),)
    table = DepTable(np.array([1, 1], np.int32), np.array([0, 0], np.int32), np.array([1, 3], np.int8),
                     np.zeros(2, np.int32), np.array([0, 1], np.int32), (r, r))
    merged = table.merged()
    assert len(merged) == 1 and merged.kind.tolist() == [3] and merged.iterations(0) == r
