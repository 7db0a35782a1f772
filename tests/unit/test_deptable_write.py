"""Writing a dep table into a program (``machine/order/deptable.write_deps``): the deps it
writes are the table's rows, and a table selected from one already written (dep-reduction's
from dep-opt's) writes the same Dep objects again rather than equal new ones (issue 31)."""

from __future__ import annotations

import numpy as np

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
