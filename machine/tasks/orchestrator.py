"""The orchestrator's walk: execute a task program for concrete scalars, one task instance per submit.

What a program means at run time (``docs/tasks-format.md``, "What a program means at run
time"): loops run their real trip counts, branches take the side the scalars select, every
executed call (and every ``task_dummy``) submits one :class:`TaskInstance` carrying

* the bytes each tensor argument names (:class:`ArgAccess`: a byte-exact
  :class:`~neuronsim.machine.tasks.task_geometry.Region`), what the kernel does with them (its parameter's
  direction: ``in`` reads, ``out`` writes, ``inout`` both) and what the call site tells the
  runtime (the argument's :class:`~neuronsim.machine.tasks.ir.ArgDirection`);
* the *creator* of each argument's tensor: the task that got it as a runtime-allocated
  ``output`` (views, aliases and carried values of that tensor keep it), as simpler's
  ``Tensor`` handles keep their owner task;
* its explicit deps, evaluated at submission: user deps (TaskId variables, whole TaskId
  arrays) and compiler deps (a variable's current task value; for a loop-carried dep, that
  value only if the loop's current execution submitted it; or a loop fan-in: every instance
  of the named calls in the loop's last completed execution plus the latest of each).

Nothing here orders anything: the runtime (:mod:`neuronsim.machine.sim.runtime`) adds TensorMap
tracking in AUTO scopes.  The walk is a generator, so a runtime consumes instances as the
orchestrator would submit them.

Bad input found only at run time (a window leaving its tensor for these scalars, an array
index out of range, a division by zero, a loop that does not end within ``max_iterations``)
is a :class:`~neuronsim.machine.ir.errors.ProgramError` naming the statement's JSON path.

Examples
--------
>>> from neuronsim.machine.tasks.task_builder import In, InOut, TaskBuilder
>>> tb = TaskBuilder("acc")
>>> add = tb.kernel("add", In("x"), InOut("acc"), returns="acc", cost=100)
>>> x, acc = tb.param("x", (16, 8)), tb.param("acc", (8, 8), direction="inout")
>>> for i in tb.range(2, name="rows"):
...     _ = tb.submit(add, [x[i * 8: i * 8 + 8, :], acc], name="add", directions=["input", "inout"])
>>> [(t.name, t.accesses[0].region.byte_range) for t in unroll_task_program(tb.program())]
[('add[0]', (0, 256)), ('add[1]', (256, 512))]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.tasks.expr import ScalarExpr, evaluate, free_names
from neuronsim.machine.tasks.task_geometry import Region, root_region
from neuronsim.machine.tasks.ir import (
    Alias, ArgDirection, Assemble, Call, Create, For, GetSlot, If, IndexedView, ParamDirection, RuntimeScope,
    ScalarLet, ScalarParam, SetSlot, Slice, Stmt, TaskArray, TaskDummy, TaskInvalid, TaskProgram, While,
)

__all__ = ["READ", "WRITE", "Origin", "ArgAccess", "TaskInstance", "iter_task_instances", "unroll_task_program",
           "scalar_values", "DEFAULT_MAX_ITERATIONS", "MAX_TASK_ARRAY"]

READ, WRITE = 1, 2
#: Loop iterations one walk runs at most (a ``while`` whose condition never turns false).
DEFAULT_MAX_ITERATIONS = 10_000_000
#: Slots of one TaskId array at most (static extents are checked when the program is read,
#: runtime ones when the array is created): far beyond any orchestration, far below memory.
MAX_TASK_ARRAY = 1 << 20
#: Iterations of one execution of a ``while`` loop at most (far beyond an orchestration loop;
#: a loop that submits forever is stopped in seconds, not at the instance limit).
MAX_WHILE_TRIPS = 100_000
_MODE = {ParamDirection.IN: READ, ParamDirection.OUT: WRITE, ParamDirection.INOUT: READ | WRITE}


class Origin(str, Enum):
    """Why a task waits for another (the runtime records one per edge)."""

    TENSORMAP = "tensormap"
    CREATOR = "creator"
    USER = "explicit-user"
    COMPILER = "explicit-compiler"


@dataclass(frozen=True, slots=True)
class ArgAccess:
    """One tensor argument of one task instance."""

    arg: int
    var: str
    region: Region
    direction: ArgDirection
    mode: int
    """What the kernel does: :data:`READ`, :data:`WRITE` or both (its parameter's direction)."""
    creator: int | None
    """The task that allocated this tensor (a runtime ``output``), if any."""

    @property
    def writes(self) -> bool:
        return bool(self.mode & WRITE)


@dataclass(frozen=True, slots=True)
class TaskInstance:
    """One submitted task: a call (or a ``task_dummy`` barrier, ``kernel`` None) as executed."""

    index: int
    call: str
    kernel: str | None
    manual: bool
    """Submitted inside a MANUAL scope (only explicit deps order it)."""
    accesses: tuple[ArgAccess, ...]
    user_deps: tuple[int, ...]
    compiler_deps: tuple[int, ...]
    cost: float
    iteration: tuple[tuple[str, int], ...]
    """The enclosing loops (label, iteration index), outermost first."""
    task_var: str | None
    """The TaskId variable (or call output) that names this instance in the program."""
    path: str
    """JSON path of the statement that submitted it."""

    @property
    def name(self) -> str:
        """``call`` with its loop indices, e.g. ``consume[2,0]``."""
        if not self.iteration:
            return self.call
        return f"{self.call}[{','.join(str(i) for _, i in self.iteration)}]"


def scalar_values(program: TaskProgram, scalars: Mapping[str, int] | None = None) -> dict[str, int]:
    """The runtime scalars of a run: ``scalars`` over the parameters' ``value``; a scalar with
    neither is a located ProgramError."""
    given = dict(scalars or {})
    names = {p.name for p in program.function.params if isinstance(p, ScalarParam)}
    for name in given:
        if name not in names:
            raise ProgramError("function.params", f"no scalar parameter {name!r} (the program has "
                                                  f"{', '.join(sorted(names)) or 'none'})")
    out: dict[str, int] = {}
    for k, p in enumerate(program.function.params):
        if isinstance(p, ScalarParam):
            value = given.get(p.name, p.value)
            if value is None:
                raise ProgramError(f"function.params[{k}].value", f"scalar {p.name!r} has no value to run with")
            out[p.name] = value
    return out


class _Walk:
    """The orchestrator's state: every variable's value while the function runs."""

    def __init__(self, program: TaskProgram, env: dict[str, int], max_iterations: int) -> None:
        self.program, self.env, self.max_iterations = program, env, max_iterations
        self.views: dict[str, Region] = {}
        self.tasks: dict[str, frozenset[int]] = {}
        self.creators: dict[str, int] = {}
        self.arrays: dict[str, list[frozenset[int]]] = {}
        self.latest: dict[str, int] = {}
        self.executions: dict[str, tuple[int, int]] = {}
        self.started: dict[str, int] = {}  # loop -> first instance index of its current execution
        self.calls_of: list[str] = []  # per instance, its label (for loop fan-ins)
        self.loops: list[tuple[str, int]] = []
        self.manual = 0
        self.roots = 0
        self.iterations = 0
        for k, p in enumerate(program.function.params):
            if not isinstance(p, ScalarParam):
                self.views[p.name] = self._root(p.name, p.type, f"function.params[{k}]")

    # -- values ------------------------------------------------------------------------------
    def _root(self, name: str, t, path: str) -> Region:
        self.roots += 1
        try:
            return root_region((name, self.roots), t, self.env)
        except ValueError as err:  # a runtime dimension or memref the loader could not check
            raise ProgramError(path, f"cannot lay out {name!r} at run time: {err}") from None
        except (ArithmeticError, KeyError) as err:
            raise ProgramError(path, f"cannot lay out {name!r} at run time: {type(err).__name__}: {err}") from None

    def value(self, expr: ScalarExpr, path: str) -> int:
        try:
            return evaluate(expr, self.env)
        except ArithmeticError as err:
            raise ProgramError(path, f"cannot evaluate at run time: {err}") from None

    def bind(self, name: str, operand, path: str) -> None:
        """``name`` takes the value of ``operand`` (a variable of any kind, or a scalar)."""
        if isinstance(operand, str) and operand in self.env:  # a scalar named by itself (a scalar iter_arg)
            self.env[name] = self.env[operand]
        elif isinstance(operand, str):
            for table in (self.views, self.tasks, self.creators):
                if operand in table:
                    table[name] = table[operand]
                else:
                    table.pop(name, None)
            if name not in self.tasks:
                self.tasks[name] = frozenset()
        else:
            self.env[name] = self.value(operand, path)

    def deps(self, names) -> set[int]:
        out: set[int] = set()
        for n in names:
            if n in self.arrays:
                for slot in self.arrays[n]:
                    out |= slot
            else:
                out |= self.tasks.get(n, frozenset())
        return out

    def fan_in(self, loop: str, calls) -> set[int]:
        lo, hi = self.executions.get(loop, (0, 0))
        out = {i for i in range(lo, hi) if self.calls_of[i] in calls}
        return out | {self.latest[c] for c in calls if c in self.latest}

    def slot(self, array: str, index: ScalarExpr, path: str) -> int:
        k = self.value(index, path)
        size = len(self.arrays[array])
        if not 0 <= k < size:
            raise ProgramError(path, f"index {k} of TaskId array {array!r} of {size} slots")
        return k

    # -- statements ----------------------------------------------------------------------------
    def body(self, body: tuple[Stmt, ...], path: str) -> Iterator[TaskInstance]:
        for k, s in enumerate(body):
            yield from self.stmt(s, f"{path}[{k}]")

    def stmt(self, s: Stmt, path: str) -> Iterator[TaskInstance]:
        if isinstance(s, Call):
            yield self.submit(s, path)
        elif isinstance(s, TaskDummy):
            index = len(self.calls_of)
            self.calls_of.append(s.var)
            self.tasks[s.var] = frozenset({index})
            yield TaskInstance(index, s.var, None, bool(self.manual), (), tuple(sorted(self.deps(s.deps))), (), 0.0,
                               tuple(self.loops), s.var, path)
        elif isinstance(s, RuntimeScope):
            self.manual += s.manual
            yield from self.body(s.body, f"{path}.body")
            self.manual -= s.manual
        elif isinstance(s, If):
            taken = self.value(s.cond, f"{path}.if")
            branch = s.then_body if taken else (s.else_body or ())
            yield from self.body(branch, f"{path}.{'then' if taken else 'else'}")
            for ret, value in zip(s.returns, s.then_yields if taken else s.else_yields):
                self.bind(ret, value, path)
        elif isinstance(s, (For, While)):
            yield from self.loop(s, path)
        else:
            self.define(s, path)

    def define(self, s: Stmt, path: str) -> None:
        if isinstance(s, Create):
            self.views[s.var] = self._root(s.var, s.type, path)
            self.creators.pop(s.var, None)
        elif isinstance(s, (Slice, IndexedView)):
            source = self.views[s.source]
            shape = tuple(self.value(n, f"{path}.shape") for n in s.shape)
            offset = tuple(self.value(o, f"{path}.offset") for o in s.offset)
            for d, (o, n, whole) in enumerate(zip(offset, shape, source.frame)):  # as validate checks it
                if n < 0:
                    raise ProgramError(f"{path}.shape[{d}]", f"at run time dimension {d} of the window is {n}; a "
                                                             f"dimension is at least 0")
                if o < 0 or o + n > whole:
                    raise ProgramError(f"{path}.offset[{d}]", f"at run time the window [{o}, {o + n}) leaves "
                                                              f"dimension {d} of {s.source!r} (size {whole})")
            region = source.window(offset, shape)
            if isinstance(s, Slice) and s.view is not None and s.view.valid_shape is not None:
                region = region.clipped(tuple(self.value(v, f"{path}.view") for v in s.view.valid_shape))
            self.views[s.var] = region  # its task value stays: a synthetic TaskId outlives an iteration
            if s.source in self.creators:
                self.creators[s.var] = self.creators[s.source]
        elif isinstance(s, Assemble):
            self.views[s.var] = self.views[s.base]
            if s.base in self.creators:
                self.creators[s.var] = self.creators[s.base]
        elif isinstance(s, Alias):
            self.bind(s.var, s.source, path)
        elif isinstance(s, ScalarLet):
            self.env[s.var] = self.value(s.value, path)
        elif isinstance(s, TaskArray):
            extent = self.value(s.extent, path)
            if extent > MAX_TASK_ARRAY:
                raise ProgramError(f"{path}.task_array", f"an array of {extent:,} slots at run time; at most "
                                                         f"{MAX_TASK_ARRAY:,} are allowed")
            if extent < 1:  # as a constant extent is refused (task_validate): it was 0 slots (probe_bc)
                raise ProgramError(f"{path}.task_array", f"an array of {extent:,} slots at run time; an extent "
                                                         "is at least 1")
            self.arrays[s.var] = [frozenset()] * extent
        elif isinstance(s, SetSlot):
            self.arrays[s.array][self.slot(s.array, s.index, path)] = self.tasks.get(s.value, frozenset())
        elif isinstance(s, GetSlot):
            self.tasks[s.var] = self.arrays[s.array][self.slot(s.array, s.index, path)]
        elif isinstance(s, TaskInvalid):
            self.tasks[s.var] = frozenset()

    def loop(self, s: For | While, path: str) -> Iterator[TaskInstance]:
        for a in s.iter_args:
            self.bind(a.name, a.init, path)
        start = self.started[s.name] = len(self.calls_of)
        if isinstance(s, For):
            lo, hi, step = (self.value(v, path) for v in (s.start, s.stop, s.step))
            if step == 0:
                raise ProgramError(f"{path}.step", "a loop step of 0 at run time")
            indices: Iterator[int] = iter(range(lo, hi, step))
        else:
            indices = _count()
        fixed = isinstance(s, While) and not free_names(s.cond) & {a.name for a in s.iter_args}
        for trip, i in enumerate(indices):
            if isinstance(s, While) and not self.value(s.cond, f"{path}.while"):
                break
            if isinstance(s, While) and trip >= MAX_WHILE_TRIPS:
                raise ProgramError(f"{path}.while", f"loop {s.name!r} is still running after {MAX_WHILE_TRIPS:,} "
                                                    f"iterations of one execution (a while loop that never ends?)")
            if fixed and trip:  # the condition holds again and nothing in the loop can change it
                raise ProgramError(f"{path}.while", f"loop {s.name!r} never ends: its condition reads none of its "
                                                    f"iter_args (variables are single-assignment) and holds")
            self.iterations += 1
            if self.iterations > self.max_iterations:
                raise ProgramError(path, f"loop {s.name!r} is still running after {self.max_iterations:,} loop "
                                         f"iterations in all (a while loop that never ends?)")
            if isinstance(s, For):
                self.env[s.var] = i
            self.loops.append((s.name, i if isinstance(s, For) else trip))
            yield from self.body(s.body, f"{path}.body")
            self.loops.pop()
            carried = [self.carry(v, path) for v in s.yields]
            for a, v in zip(s.iter_args, carried):
                self.restore(a.name, v)
        for a, ret in zip(s.iter_args, s.returns):
            self.bind(ret, a.name, path)
        self.executions[s.name] = (start, len(self.calls_of))

    def carry(self, operand, path: str):
        if isinstance(operand, str):
            return (self.views.get(operand), self.tasks.get(operand, frozenset()), self.creators.get(operand))
        return self.value(operand, path)

    def restore(self, name: str, carried) -> None:
        if not isinstance(carried, tuple):
            self.env[name] = carried
            return
        view, tasks, creator = carried
        if view is not None:
            self.views[name] = view
        self.tasks[name] = tasks
        if creator is None:
            self.creators.pop(name, None)
        else:
            self.creators[name] = creator

    # -- submission ----------------------------------------------------------------------------
    def submit(self, c: Call, path: str) -> TaskInstance:
        kernel = self.program.kernels[c.kernel]
        if c.directions is None:
            raise ProgramError(path, f"call {c.name!r} has no argument directions: run derive-call-directions first")
        index = len(self.calls_of)
        compiler: set[int] = set()
        for dep in c.compiler_deps:
            if dep.loop:
                compiler |= self.fan_in(dep.loop, dep.calls)
            elif dep.carried:  # only what the current execution of the loop submitted
                first = self.started[dep.carried]
                compiler |= {i for i in self.deps((dep.on,)) if i >= first}
            else:
                compiler |= self.deps((dep.on,))
        accesses = []
        for k, (arg, d, param) in enumerate(zip(c.args, c.directions, kernel.params)):
            if param.direction == ParamDirection.SCALAR or not isinstance(arg, str):
                continue
            accesses.append(ArgAccess(k, arg, self.views[arg], d, _MODE[param.direction], self.creators.get(arg)))
        instance = TaskInstance(index, c.name, c.kernel, bool(self.manual), tuple(accesses),
                                tuple(sorted(self.deps(c.deps))), tuple(sorted(compiler)), kernel.cost,
                                tuple(self.loops), c.task_id or (c.outputs[0] if c.outputs else None), path)
        self.calls_of.append(c.name)
        self.latest[c.name] = index
        mine = frozenset({index})
        if c.task_id:
            self.tasks[c.task_id] = mine
        for arg, d in zip(c.args, c.directions):
            if d == ArgDirection.OUTPUT and isinstance(arg, str):
                self.creators[arg] = index  # the runtime filled this handle with a buffer of its own
        for out, returned in zip(c.outputs, kernel.returns):
            source = c.args[kernel.param_index(returned)]
            self.tasks[out] = mine
            self.views[out] = self.views[source]
            if source in self.creators:
                self.creators[out] = self.creators[source]
        if not c.outputs and not c.submit:
            for arg, d in zip(c.args, c.directions):
                if d in (ArgDirection.OUTPUT_EXISTING, ArgDirection.INOUT) and isinstance(arg, str):
                    self.tasks[arg] = mine
        return instance


def _count() -> Iterator[int]:
    k = 0
    while True:
        yield k
        k += 1


def iter_task_instances(program: TaskProgram, scalars: Mapping[str, int] | None = None, *,
                        max_iterations: int = DEFAULT_MAX_ITERATIONS) -> Iterator[TaskInstance]:
    """The task instances of one run of ``program``, in submission order (see the module doc)."""
    walk = _Walk(program, scalar_values(program, scalars), max_iterations)
    return walk.body(program.function.body, "function.body")


def unroll_task_program(program: TaskProgram, scalars: Mapping[str, int] | None = None, *,
                        max_instances: int | None = None,
                        max_iterations: int = DEFAULT_MAX_ITERATIONS) -> list[TaskInstance]:
    """:func:`iter_task_instances` as a list; more than ``max_instances`` instances, or explicit
    dep edges (a whole TaskId array as a dep inside a loop makes instances x slots of them, and
    every check after the walk costs per edge), is a ProgramError at the instance past it."""
    out: list[TaskInstance] = []
    edges = 0
    for instance in iter_task_instances(program, scalars, max_iterations=max_iterations):
        out.append(instance)
        edges += len(instance.user_deps) + len(instance.compiler_deps)
        if max_instances is not None and len(out) > max_instances:
            raise ProgramError(instance.path, f"the program submits more than {max_instances:,} task instances; "
                                              "raise the limit with --max-instances N")
        if max_instances is not None and edges > max_instances:
            raise ProgramError(instance.path, f"the program's first {len(out):,} task instances already wait on "
                                              f"{edges:,} explicit dep edges, more than the limit of "
                                              f"{max_instances:,}: raise it with --max-instances N")
    return out
