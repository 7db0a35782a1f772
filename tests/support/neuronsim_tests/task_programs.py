"""Seeded random task programs for oracle tests of the task passes.

:func:`random_task_program` draws a small program from one integer seed: a few tensor
parameters, submits and plain calls (assigned or not) of writer / reader / read-write / copy
kernels on whole tensors, constant windows or loop-dependent rows, user deps on earlier
TaskIds, static, single-trip, zero-trip and runtime-trip ``range`` loops, ``parallel`` loops,
``while`` loops, ``if`` / ``else``, AUTO and MANUAL scopes, in ``auto_scope`` functions or not.
``parallel`` bodies keep the parallel contract (each iteration touches its own row).
"""

from __future__ import annotations

import random

from neuronsim.machine.tasks.task_builder import In, InOut, Out, TaskBuilder
from neuronsim.machine.tasks.ir import TaskProgram

__all__ = ["random_task_program"]


class _Drawer:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.tb = TaskBuilder("g", auto_scope=self.rnd.random() < 0.8)
        tb = self.tb
        self.kernels = [tb.kernel("w", Out("o"), returns="o"), tb.kernel("r", In("i")),
                        tb.kernel("rw", InOut("io"), returns="io"), tb.kernel("cp", In("i"), Out("o"), returns="o")]
        self.tensors = [tb.param(f"p{i}", (8, 8)) for i in range(3)]
        self.n = tb.scalar("n", value=self.rnd.randint(0, 3))
        self.tids = [tb.task_invalid()]
        self.row = None  # the index of the enclosing parallel loop
        self.manual = False  # inside a MANUAL scope (no AUTO scope may open there)

    def view(self, t, index):
        if self.row is not None:
            return t.slice((1, 8), (self.row, 0))
        c = self.rnd.random()
        if c < 0.4:
            return t
        if c < 0.7:
            a = self.rnd.randint(0, 6)
            return t[a:a + 2, :]
        return t.slice((1, 8), (index % 8, 0)) if index is not None else t[0:4, :]

    def call(self, index) -> None:
        rnd, tb = self.rnd, self.tb
        k = rnd.choice(self.kernels)
        args = [self.view(rnd.choice(self.tensors), index) for _ in k.params]
        deps = [rnd.choice(self.tids)] if rnd.random() < 0.3 else []
        if rnd.random() < 0.7:
            self.tids.append(tb.submit(k, args, deps=deps)[1])
        else:
            tb.call(k, args, deps=deps, assign=rnd.random() < 0.5)

    def block(self, depth: int, index) -> None:
        rnd, tb = self.rnd, self.tb
        for _ in range(rnd.randint(1, 3)):
            c = rnd.random()
            saved = len(self.tids)
            if c < 0.5 or depth > 2:
                self.call(index)
                continue
            if c < 0.65:
                trips = rnd.choice([0, 1, 2, 3, self.n])
                parallel = rnd.random() < 0.25 and self.row is None
                for i in (tb.parallel(trips) if parallel else tb.range(trips)):
                    if parallel:
                        self.row = i
                    self.block(depth + 1, i)
                    if parallel:
                        self.row = None
            elif c < 0.75:
                with tb.if_(self.n > 1):
                    self.block(depth + 1, index)
                del self.tids[saved:]
                if rnd.random() < 0.5:
                    with tb.else_():
                        self.block(depth + 1, index)
            elif c < 0.85:
                for (count,) in tb.while_(lambda count: count < self.n, init=(0,)):
                    self.block(depth + 1, None)
                    tb.yield_(count + 1)
            else:
                outer = self.manual
                self.manual = outer or rnd.random() < 0.3
                with tb.scope(manual=self.manual):
                    self.block(depth + 1, index)
                self.manual = outer
            if c >= 0.5:
                del self.tids[saved:]  # TaskIds of a loop or branch body are not visible after it


def random_task_program(seed: int) -> TaskProgram:
    """A small valid task program drawn from ``seed`` (its scalar ``n`` is a runtime trip count)."""
    d = _Drawer(seed)
    d.block(0, None)
    return d.tb.program()
