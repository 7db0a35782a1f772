"""Brute-force oracle for task programs: unroll, order by deps (and TensorMap tracking), list races.

Independent of the passes: it executes the orchestration function for concrete scalar values,
submits every task instance with the regions it touches (byte-exact, :mod:`neuronsim.machine.tasks.task_geometry`)
and the instances it must wait for:

* explicit deps, always: user deps and compiler deps evaluated when the task is submitted (a
  TaskId or tensor variable names the task it currently holds; a loop fan-in names the
  instances of its calls in the loop's last completed execution plus their latest instances);
* in an AUTO scope (or outside any scope), the TensorMap: every ``Input`` / ``InOut`` slot
  waits for the earlier producers of overlapping bytes, every ``InOut`` / ``OutputExisting``
  slot becomes a producer (readers are never registered, as in the runtime);
* in a MANUAL scope, nothing else.

:func:`races` lists the pairs of instances that share a byte, one of them writing, with no
happens-before path between them (transitive closure of the waits).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from neuronsim.machine.tasks.expr import evaluate
from neuronsim.machine.tasks.task_geometry import Region, overlaps, root_region
from neuronsim.machine.tasks.ir import (
    Alias, ArgDirection, Assemble, Call, Create, For, GetSlot, If, IndexedView, RuntimeScope, ScalarLet, ScalarParam,
    SetSlot, Slice, TaskArray, TaskDummy, TaskInvalid, TaskProgram, While,
)

@dataclass
class Instance:
    index: int
    call: str
    executions: dict[str, int] = field(default_factory=dict)
    """Per loop around the submit: which execution of it (1, 2, ...) submitted this instance."""
    accesses: list[tuple[Region, bool]] = field(default_factory=list)
    waits: set[int] = field(default_factory=set)


@dataclass
class Run:
    instances: list[Instance] = field(default_factory=list)

    def named(self, call: str) -> list[Instance]:
        return [i for i in self.instances if i.call == call]


class _Exec:
    def __init__(self, program: TaskProgram, scalars: dict[str, int], max_trips: int) -> None:
        self.program, self.max_trips = program, max_trips
        self.env: dict[str, int] = dict(scalars)
        self.views: dict[str, Region] = {}
        self.tasks: dict[str, frozenset[int]] = {}
        self.arrays: dict[str, list[frozenset[int]]] = {}
        self.latest: dict[str, int] = {}
        self.executions: dict[str, tuple[int, int]] = {}
        self.running: dict[str, int] = {}  # loop -> its current execution's number (while it runs)
        self.execution_count: dict[str, int] = {}
        self.producers: list[tuple[Region, int]] = []
        self.run = Run()
        self.manual = 0
        self.roots = 0
        for p in program.function.params:
            if isinstance(p, ScalarParam):
                self.env.setdefault(p.name, p.value if p.value is not None else 1)
            else:
                self.views[p.name] = self._root(p.name, p.type)

    def _root(self, name: str, t) -> Region:
        self.roots += 1
        return root_region((name, self.roots), t, self.env)

    def value(self, operand):
        return operand if isinstance(operand, str) else evaluate(operand, self.env)

    def bind(self, name: str, operand) -> None:
        if isinstance(operand, str):
            if operand in self.views:
                self.views[name] = self.views[operand]
            self.tasks[name] = self.tasks.get(operand, frozenset())
        else:
            self.env[name] = evaluate(operand, self.env)

    def deps(self, names) -> set[int]:
        out: set[int] = set()
        for n in names:
            if n in self.arrays:
                for slot in self.arrays[n]:
                    out |= slot
            else:
                out |= self.tasks.get(n, frozenset())
        return out

    def body(self, body) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s) -> None:
        if isinstance(s, Call):
            self.submit(s)
        elif isinstance(s, Create):
            self.views[s.var] = self._root(s.var, s.type)
        elif isinstance(s, (Slice, IndexedView)):
            shape = tuple(evaluate(n, self.env) for n in s.shape)
            region = self.views[s.source].window(tuple(evaluate(o, self.env) for o in s.offset), shape)
            if isinstance(s, Slice) and s.view is not None and s.view.valid_shape is not None:
                region = region.clipped(tuple(evaluate(v, self.env) for v in s.view.valid_shape))
            self.views[s.var] = region
        elif isinstance(s, Assemble):
            self.views[s.var] = self.views[s.base]
        elif isinstance(s, Alias):
            self.bind(s.var, s.source)
        elif isinstance(s, ScalarLet):
            self.env[s.var] = evaluate(s.value, self.env)
        elif isinstance(s, TaskArray):
            self.arrays[s.var] = [frozenset()] * evaluate(s.extent, self.env)
        elif isinstance(s, SetSlot):
            self.arrays[s.array][evaluate(s.index, self.env)] = self.tasks.get(s.value, frozenset())
        elif isinstance(s, GetSlot):
            self.tasks[s.var] = self.arrays[s.array][evaluate(s.index, self.env)]
        elif isinstance(s, TaskInvalid):
            self.tasks[s.var] = frozenset()
        elif isinstance(s, TaskDummy):
            inst = Instance(len(self.run.instances), f"{s.var}@dummy", dict(self.running), waits=self.deps(s.deps))
            self.run.instances.append(inst)
            self.tasks[s.var] = frozenset({inst.index})
        elif isinstance(s, RuntimeScope):
            self.manual += s.manual
            self.body(s.body)
            self.manual -= s.manual
        elif isinstance(s, If):
            taken = evaluate(s.cond, self.env)
            self.body(s.then_body if taken else (s.else_body or ()))
            for ret, value in zip(s.returns, s.then_yields if taken else s.else_yields):
                self.bind(ret, value)
        elif isinstance(s, (For, While)):
            self.loop(s)

    def loop(self, s) -> None:
        for a in s.iter_args:
            self.bind(a.name, a.init)
        start = len(self.run.instances)
        self.execution_count[s.name] = self.execution_count.get(s.name, 0) + 1
        self.running[s.name] = self.execution_count[s.name]
        trips = 0
        if isinstance(s, For):
            lo, hi, step = (evaluate(v, self.env) for v in (s.start, s.stop, s.step))
            indices = range(lo, hi, step)
        else:
            indices = iter(int, 1)
        for i in indices:
            if isinstance(s, While) and not evaluate(s.cond, self.env):
                break
            trips += 1
            assert trips <= self.max_trips, f"loop {s.name} runs more than {self.max_trips} times"
            if isinstance(s, For):
                self.env[s.var] = i
            self.body(s.body)
            carried = [(self.views.get(v), self.tasks.get(v, frozenset())) if isinstance(v, str)
                       else evaluate(v, self.env)
                       for v in s.yields]
            for a, v in zip(s.iter_args, carried):
                self._set(a.name, v)
        for a, ret in zip(s.iter_args, s.returns):
            self.bind(ret, a.name)
        self.executions[s.name] = (start, len(self.run.instances))
        del self.running[s.name]

    def _set(self, name: str, carried) -> None:
        if isinstance(carried, tuple):
            if carried[0] is not None:
                self.views[name] = carried[0]
            self.tasks[name] = carried[1]
        else:
            self.env[name] = carried

    def fan_in(self, loop: str, calls) -> set[int]:
        lo, hi = self.executions.get(loop, (0, 0))
        out = {i for i in range(lo, hi) if self.run.instances[i].call in calls}
        return out | {self.latest[c] for c in calls if c in self.latest}

    def submit(self, c: Call) -> None:
        inst = Instance(len(self.run.instances), c.name, dict(self.running))
        inst.waits |= self.deps(c.deps)
        for dep in c.compiler_deps:
            if dep.loop:
                inst.waits |= self.fan_in(dep.loop, dep.calls)
            elif dep.carried:  # submitted in this execution of the loop, not an earlier one
                now = self.running[dep.carried]
                inst.waits |= {i for i in self.deps((dep.on,))
                               if self.run.instances[i].executions.get(dep.carried) == now}
            else:
                inst.waits |= self.deps((dep.on,))
        dirs = c.directions or ()
        kernel = self.program.kernels[c.kernel]
        inserts = []
        for arg, d, param in zip(c.args, dirs, kernel.params):
            if d == ArgDirection.SCALAR or not isinstance(arg, str):
                continue
            region = self.views[arg]
            inst.accesses.append((region, param.direction.value in ("out", "inout")))  # what the kernel does
            if self.manual or d == ArgDirection.NO_DEP:
                continue
            if d in (ArgDirection.INPUT, ArgDirection.INOUT):
                inst.waits |= {p for r, p in self.producers if overlaps(r, region)}
            if d in (ArgDirection.INOUT, ArgDirection.OUTPUT_EXISTING):
                inserts.append(region)
        if not dirs:
            raise AssertionError(f"call {c.name} has no directions: run derive-call-directions first")
        self.producers.extend((r, inst.index) for r in inserts)
        self.run.instances.append(inst)
        self.latest[c.name] = inst.index
        mine = frozenset({inst.index})
        if c.task_id:
            self.tasks[c.task_id] = mine
        for out in c.outputs:
            self.tasks[out] = mine
            self.views[out] = self.views[c.args[kernel.param_index(kernel.returns[c.outputs.index(out)])]]
        if not c.outputs and not c.submit:
            for arg, d in zip(c.args, dirs):
                if d in (ArgDirection.OUTPUT_EXISTING, ArgDirection.INOUT) and isinstance(arg, str):
                    self.tasks[arg] = mine


def unroll_tasks(program: TaskProgram, scalars: dict[str, int] | None = None, max_trips: int = 64) -> Run:
    """Every task instance of ``program`` run with ``scalars`` (defaults: the parameters' values)."""
    ex = _Exec(program, dict(scalars or {}), max_trips)
    ex.body(program.function.body)
    return ex.run


def races(run: Run) -> list[tuple[Instance, Instance, str]]:
    """Conflicting instance pairs with no happens-before path, with the hazard kind of the later one."""
    before: list[int] = []
    for inst in run.instances:
        mask = 0
        for w in inst.waits:
            mask |= before[w] | (1 << w)
        before.append(mask)
    out = []
    for b in run.instances:
        for a in run.instances[:b.index]:
            if before[b.index] >> a.index & 1:
                continue
            for ra, wa in a.accesses:
                hit = next(((rb, wb) for rb, wb in b.accesses if (wa or wb) and overlaps(ra, rb)), None)
                if hit is not None:
                    kind = "WAW" if wa and hit[1] else ("RAW" if wa else "WAR")
                    out.append((a, b, kind))
                    break
    return out

