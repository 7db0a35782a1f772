"""Generated task programs: a hypothesis strategy (:func:`task_programs`) and its seeded twin.

One drawer builds both, through :class:`neuronsim.machine.tasks.task_builder.TaskBuilder`, from a source of
choices: hypothesis draws (so failures shrink to small programs) or ``random.Random(seed)``
(:func:`seeded_task_program`).  Every construct of ``neuronsim.tasks/1`` appears:

* kernels reading (``in``), writing (``out``), updating (``inout``), copying, and taking a
  scalar; ``submit`` and plain calls, assigned or not; user deps on TaskIds, on loop-carried
  TaskIds and on whole TaskId arrays; ``pl.no_dep`` arguments; directions given by hand
  (``output``: runtime-allocated, so creator edges) or derived;
* whole tensors, constant windows, rows chosen by a loop index, ``valid_shape`` windows, DN
  layouts, two roots placed in one MemRef allocation (overlapping or not), ``create`` inside
  and outside loops, ``assemble``, aliases, gather views (regions the analysis cannot know);
* static, single-trip, zero-trip and runtime-trip ``range`` loops, ``parallel`` loops (keeping
  their contract: each iteration touches its own rows of unaliased tensors), ``while`` loops,
  TaskId and tensor iter_args, ``if`` / ``else`` with return vars, TaskId arrays
  (``set`` / ``get``), ``task_invalid``, ``task_dummy`` barriers, AUTO and MANUAL scopes,
  in ``auto_scope`` functions or not.

The scalar ``n`` (a runtime trip count and branch condition) defaults to a drawn value in
0..3; :data:`TRIP_VALUES` are the values a fuzz run also tries.

Examples
--------
>>> p = seeded_task_program(7)
>>> p.function.name, sorted(p.kernels)[:3]
('g', ['cp', 'r', 'rw'])
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

from neuronsim.machine.tasks.task_builder import In, InOut, MemRef, Out, Scalar, TaskBuilder, View, no_dep
from neuronsim.machine.tasks.ir import TaskProgram

__all__ = ["task_programs", "seeded_task_program", "TRIP_VALUES"]

#: Values of the runtime scalar ``n`` a fuzz run simulates each program with.
TRIP_VALUES = (0, 1, 3)


class _Seeded:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)

    def chance(self, p: float) -> bool:
        return self.rnd.random() < p

    def integer(self, lo: int, hi: int) -> int:
        return self.rnd.randint(lo, hi)

    def pick(self, items: list[Any]) -> Any:
        return items[self.rnd.randrange(len(items))]


class _Drawn:
    def __init__(self, draw) -> None:
        self.draw = draw

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) < int(p * 100)

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def pick(self, items: list[Any]) -> Any:
        return items[self.draw(st.integers(0, len(items) - 1))]


class _Drawer:
    def __init__(self, d) -> None:
        self.d = d
        tb = self.tb = TaskBuilder("g", auto_scope=d.chance(0.8))
        self.w = tb.kernel("w", Out("o"), returns="o", cost=d.integer(1, 4) * 100)
        self.r = tb.kernel("r", In("i"), cost=d.integer(1, 4) * 100)
        self.rw = tb.kernel("rw", InOut("io"), returns="io", cost=d.integer(1, 4) * 100)
        self.cp = tb.kernel("cp", In("i"), Out("o"), returns="o", cost=d.integer(1, 4) * 100)
        self.sc = tb.kernel("sc", InOut("io"), Scalar("k"), returns="io", cost=100)
        self.plain = [tb.param(f"p{i}", (8, 8)) for i in range(2)]
        self.plain.append(tb.param("pd", (8, 8), view=View(layout="dn")))
        self.aliased = [tb.param("m0", (8, 8), memref=MemRef("hbm", 0, 256)),
                        tb.param("m1", (8, 8), memref=MemRef("hbm", d.pick([0, 128, 128, 256]), 256))]
        self.n = tb.scalar("n", value=d.integer(0, 3))
        self.tensors = [*self.plain, *self.aliased]
        self.tids = [tb.task_invalid()]
        self.arrays: list = [tb.task_array(2)] if d.chance(0.5) else []
        self.row = None  # the index of the enclosing parallel loop
        self.manual = False  # inside a MANUAL scope (no AUTO scope may open there)

    # -- operands --------------------------------------------------------------------------
    def view(self, t, index):
        d, tb = self.d, self.tb
        if self.row is not None:
            return t.slice((1, 8), (self.row, 0))
        c = d.integer(0, 24)
        if c < 10:
            return t
        if c < 15:
            a = d.integer(0, 6)
            return t[a:a + 2, :]
        if c < 17:
            return tb.slice(t, (4, 8), (d.pick([0, 4]), 0), valid_shape=(d.integer(1, 4), 8))
        if c < 19 and index is not None:
            return t.slice((1, 8), (index % 8, 0))
        if c == 19:
            return tb.indexed(t, (2, 8), (d.integer(0, 6), 0))
        a = d.integer(0, 6)
        return t[:, a:a + 2]

    def tensor(self):
        if self.row is not None:
            return self.d.pick(self.plain)
        if self.d.chance(0.3):
            return self.d.pick(self.aliased)
        return self.d.pick(self.tensors)

    def deps(self) -> list:
        d = self.d
        out = []
        if d.chance(0.3):
            out.append(d.pick(self.tids))
        if self.arrays and d.chance(0.1):
            out.append(d.pick(self.arrays))
        return out

    # -- statements ------------------------------------------------------------------------
    def call(self, index) -> None:
        d, tb = self.d, self.tb
        k = d.pick([self.w, self.r, self.rw, self.cp, self.cp, self.sc])
        args: list[Any] = []
        for p in k.params:
            if p.direction.value == "scalar":
                args.append(d.integer(1, 3))
                continue
            v = self.view(self.tensor(), index)
            args.append(no_dep(v) if d.chance(0.04) else v)
        directions = None
        if d.chance(0.06) and not any(type(a).__name__ == "NoDepArg" for a in args):
            by_param = {"in": "input", "out": d.pick(["output", "output_existing", "inout"]), "inout": "inout",
                        "scalar": "scalar"}
            directions = [by_param[p.direction.value] for p in k.params]
        if d.chance(0.7):
            outs, tid = tb.submit(k, args, deps=self.deps(), directions=directions)
            self.tids.append(tid)
            if self.arrays and d.chance(0.3):
                tb.set_slot(d.pick(self.arrays), d.integer(0, 1), tid)
        else:
            out = tb.call(k, args, deps=self.deps(), assign=d.chance(0.5), directions=directions)
            outs = (out,) if out is not None and not isinstance(out, tuple) else (out or ())
        whole = k.returns and any(args[k.param_index(k.returns[0])] is t for t in self.tensors)
        if outs and whole and self.row is None and d.chance(0.3):
            self.tensors.append(outs[0])  # the caller's whole tensor, under a new name

    def extra(self) -> None:
        """A statement that submits nothing: tensors, TaskIds, arrays, barriers."""
        d, tb = self.d, self.tb
        c = d.integer(0, 5)
        if c == 0 and self.row is None:
            self.tensors.append(tb.create((8, 8)))
        elif c == 1 and self.row is None:
            base = d.pick(self.tensors)
            self.tensors.append(tb.assemble(base, base[0:2, :], (0, 0)) if d.chance(0.5) else tb.alias(base))
        elif c == 2:
            self.arrays.append(tb.task_array(2))
        elif c == 3 and self.arrays:
            self.tids.append(tb.get_slot(d.pick(self.arrays), d.integer(0, 1)))
        elif c == 4:
            self.tids.append(tb.task_dummy([d.pick(self.tids), *([d.pick(self.arrays)] if self.arrays else [])]))
        else:
            self.tids.append(tb.alias(d.pick(self.tids)))

    def block(self, depth: int, index) -> None:
        d = self.d
        for _ in range(d.integer(1, 3)):
            c = d.integer(0, 99)
            saved = (len(self.tids), len(self.tensors), len(self.arrays))
            if c < 45 or depth > 2:
                self.call(index)
                continue
            if c < 52:
                self.extra()
                continue
            if c < 68:
                self.loop(depth)
            elif c < 78:
                self.branch(depth, index)
            elif c < 86:
                self.while_loop(depth)
            else:
                outer = self.manual
                self.manual = outer or d.chance(0.3)
                with self.tb.scope(manual=self.manual):
                    self.block(depth + 1, index)
                self.manual = outer
                continue  # scopes are transparent: what they define stays visible
            self._forget(saved)

    def _forget(self, saved) -> None:
        """Variables of a loop or branch body are not visible after it."""
        del self.tids[saved[0]:], self.tensors[saved[1]:], self.arrays[saved[2]:]

    def loop(self, depth: int) -> None:
        d, tb = self.d, self.tb
        trips = d.pick([0, 1, 2, 3, self.n])
        if d.chance(0.25) and self.row is None:
            for i in tb.parallel(trips):
                self.row = i
                self.block(depth + 1, i)
                self.row = None
            return
        carried = d.integer(0, 2) if self.row is None else 0
        if not carried:
            for i in tb.range(trips):
                self.block(depth + 1, i)
            return
        init = (d.pick(self.tids),) if carried == 1 else (d.pick(self.tensors),)
        saved = (len(self.tids), len(self.tensors), len(self.arrays))
        for i, (value,) in tb.range(trips, init=init):
            (self.tids if carried == 1 else self.tensors).append(value)
            self.block(depth + 1, i)
            returned = tb.yield_(self.tids[-1] if carried == 1 else value)
            self._forget(saved)
        (self.tids if carried == 1 else self.tensors).append(returned)

    def while_loop(self, depth: int) -> None:
        tb = self.tb
        for (count,) in tb.while_(lambda count: count < self.n, init=(0,)):
            self.block(depth + 1, None)
            tb.yield_(count + 1)

    def branch(self, depth: int, index) -> None:
        d, tb = self.d, self.tb
        returns = d.chance(0.4)
        saved = (len(self.tids), len(self.tensors), len(self.arrays))
        with tb.if_(self.n > d.integer(0, 2)):
            self.block(depth + 1, index)
            returned = tb.yield_(self.tids[-1]) if returns else None
        self._forget(saved)
        if returns or d.chance(0.5):
            with tb.else_():
                self.block(depth + 1, index)
                if returns:
                    tb.yield_(self.tids[-1])
            self._forget(saved)
        if returned is not None:
            self.tids.append(returned)

    def program(self) -> TaskProgram:
        self.block(0, None)
        return self.tb.program()


def seeded_task_program(seed: int) -> TaskProgram:
    """A small valid task program drawn from ``seed`` (the same drawer as :func:`task_programs`)."""
    return _Drawer(_Seeded(seed)).program()


@st.composite
def task_programs(draw) -> TaskProgram:
    """Hypothesis strategy: small valid task programs covering every construct (module doc)."""
    return _Drawer(_Drawn(draw)).program()
