"""Task-program IR: kernels, the orchestration function and its statements.

Immutable value objects (``frozen=True, slots=True``); a pass returns a new program
(:func:`dataclasses.replace`, :func:`map_calls`).  Names are PyPTO's where one exists (see the
package docstring for the correspondence).

Variables are SSA names: every tensor, TaskId and scalar variable is defined by exactly one
statement (or parameter, loop variable, iter_arg, return var).  TaskId arrays are the one
mutable kind (``arr[i] = tid``), as host arrays are in orchestration code.  A variable defined
in a loop or branch body is visible in that body only (its value leaves through ``yield`` /
return vars); a runtime scope's body is transparent.

Operands: a tensor or TaskId operand is the variable's name (``str``); a scalar operand is a
:data:`~neuronsim.machine.tasks.expr.ScalarExpr` (``int``, :class:`~neuronsim.machine.tasks.expr.Sym`, ``Op``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Any, Union

from neuronsim.machine.tasks.expr import ScalarExpr

__all__ = [
    "ParamDirection", "ArgDirection", "TensorView", "MemRef", "TensorType", "KernelParam", "Kernel",
    "TensorParam", "ScalarParam", "Create", "Slice", "Assemble", "IndexedView", "Alias", "ScalarLet",
    "CompilerDep", "Call", "TaskArray", "SetSlot", "GetSlot", "TaskInvalid", "TaskDummy", "IterArg",
    "RuntimeScope", "For", "While", "If", "Stmt", "Function", "Runtime", "TaskProgram", "Operand",
    "INDEXED_OPS", "LAYOUTS", "PADS", "walk", "map_calls", "bodies", "with_bodies", "EMPTY",
]

EMPTY: Mapping[str, Any] = MappingProxyType({})


def _extras() -> Any:
    return field(default_factory=lambda: EMPTY, hash=False, compare=False)


class ParamDirection(str, Enum):
    """Direction of a kernel or function parameter (PyPTO ``ParamDirection``)."""

    IN = "in"
    OUT = "out"
    INOUT = "inout"
    SCALAR = "scalar"


class ArgDirection(str, Enum):
    """Direction of one argument at one call site (PyPTO ``ArgDirection``)."""

    INPUT = "input"
    OUTPUT = "output"
    OUTPUT_EXISTING = "output_existing"
    INOUT = "inout"
    NO_DEP = "no_dep"
    SCALAR = "scalar"


#: Data-dependent view ops (gather / scatter family): their region depends on runtime indices.
INDEXED_OPS = ("gather", "gather_mask", "gather_compare", "scatter_update", "mscatter")
LAYOUTS = ("nd", "dn")
PADS = ("zero", "max", "min", "nan")


@dataclass(frozen=True, slots=True)
class TensorView:
    """A tensor type's view (PyPTO ``TensorView``): layout, element strides, valid shape, padding.

    ``strides`` None means packed for the layout: row-major for ``nd``; for ``dn`` the last two
    dimensions are stored column-major.  ``valid_shape`` bounds the elements kernels touch.
    """

    layout: str = "nd"
    strides: tuple[int, ...] | None = None
    valid_shape: tuple[ScalarExpr, ...] | None = None
    pad: str | None = None


@dataclass(frozen=True, slots=True)
class MemRef:
    """Placement of a root tensor inside the allocation ``base``: ``size`` bytes from ``offset``."""

    base: str
    offset: ScalarExpr
    size: int


@dataclass(frozen=True, slots=True)
class TensorType:
    """Shape, element type, optional view and optional MemRef of a tensor variable."""

    shape: tuple[ScalarExpr, ...]
    dtype: str
    view: TensorView | None = None
    memref: MemRef | None = None


@dataclass(frozen=True, slots=True)
class KernelParam:
    name: str
    direction: ParamDirection


@dataclass(frozen=True, slots=True)
class Kernel:
    """A callee: an opaque kernel with a signature, a cost (ns) and optionally a numpy body.

    ``returns`` names the parameters the kernel returns, in order (its outputs at a call site).
    ``fn`` is ``"module:qualname"`` of ``f(*args)`` working in place on numpy views; ``impl``
    is the callable itself when built in memory (not saved).
    """

    name: str
    params: tuple[KernelParam, ...]
    returns: tuple[str, ...] = ()
    cost: float = 1.0
    fn: str | None = None
    impl: Callable[..., Any] | None = field(default=None, compare=False, hash=False)
    extras: Mapping[str, Any] = _extras()

    def param_index(self, name: str) -> int:
        return next(i for i, p in enumerate(self.params) if p.name == name)


@dataclass(frozen=True, slots=True)
class TensorParam:
    name: str
    type: TensorType
    direction: ParamDirection = ParamDirection.IN
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class ScalarParam:
    """A runtime scalar argument; ``value`` is the default a simulation uses."""

    name: str
    value: int | None = None
    extras: Mapping[str, Any] = _extras()


Operand = Union[str, ScalarExpr]


# -- statements ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Create:
    """``var = pl.create_tensor(...)``: a new root (PyPTO ``tensor.create``)."""

    var: str
    type: TensorType
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class Slice:
    """``var = source[offset : offset + shape]`` (``tensor.slice``); ``view`` is the result type's."""

    var: str
    source: str
    shape: tuple[ScalarExpr, ...]
    offset: tuple[ScalarExpr, ...]
    view: TensorView | None = None
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class Assemble:
    """``var = tensor.assemble(base, value, offset)``: ``var`` names all of ``base``'s storage."""

    var: str
    base: str
    value: str
    offset: tuple[ScalarExpr, ...]
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class IndexedView:
    """A gather / scatter-family result: a window of ``source`` chosen by runtime indices.

    ``offset`` / ``shape`` say where the indices land at run time; the analysis may not use them.
    """

    var: str
    op: str
    source: str
    shape: tuple[ScalarExpr, ...]
    offset: tuple[ScalarExpr, ...]
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class Alias:
    """``var = source``: a plain copy of a tensor or TaskId variable."""

    var: str
    source: str
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class ScalarLet:
    var: str
    value: ScalarExpr
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class CompilerDep:
    """One compiler-derived dep: the task(s) ``on`` names when the call is submitted.

    With ``loop`` set it is a loop fan-in: every instance of ``calls`` submitted during the last
    completed execution of that loop, plus the latest instance of each (``on`` is the loop
    return var the pass re-bound them to, kept for reading).

    With ``carried`` set (a loop around the call) it is a loop-carried dep: ``on``'s instance
    only when it was submitted during the current execution of that loop (an earlier iteration),
    none at the first iteration of an execution.  C++ codegen declares the TaskId invalid just
    before the loop, as PyPTO hoists cross-scope TaskIds; a plain dep holds whatever ``on`` held
    last, also from an earlier execution of the loop (an earlier iteration of a loop around it).
    """

    on: str
    loop: str | None = None
    calls: tuple[str, ...] = ()
    carried: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """A task: ``pl.submit`` (``submit=True``, binds ``task_id``) or a plain kernel call.

    ``directions`` is the call site's ArgDirection vector (None until resolved);
    ``no_dep`` lists user ``pl.no_dep`` argument indices; ``deps`` are user deps (TaskId
    variables or TaskId arrays); ``compiler_deps`` are the pass's.  ``manual_candidate`` is
    the transient marker between the dependence pass and scope materialization.
    """

    name: str
    kernel: str
    args: tuple[Operand, ...]
    outputs: tuple[str, ...] = ()
    task_id: str | None = None
    submit: bool = False
    deps: tuple[str, ...] = ()
    directions: tuple[ArgDirection, ...] | None = None
    no_dep: tuple[int, ...] = ()
    compiler_deps: tuple[CompilerDep, ...] = ()
    manual_candidate: bool = False
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class TaskArray:
    """``var = pl.array.create(extent, pl.TASK_ID)``, every slot invalid."""

    var: str
    extent: ScalarExpr
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class SetSlot:
    """``array[index] = value`` (a TaskId variable)."""

    array: str
    index: ScalarExpr
    value: str
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class GetSlot:
    """``var = array[index]``: a TaskId variable holding the slot's value."""

    var: str
    array: str
    index: ScalarExpr
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class TaskInvalid:
    """``var = pl.system.task_invalid()``: a TaskId naming no task."""

    var: str
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class TaskDummy:
    """``var = pl.system.task_dummy(deps=...)``: a barrier task waiting for ``deps``."""

    var: str
    deps: tuple[str, ...]
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class IterArg:
    name: str
    init: Operand


@dataclass(frozen=True, slots=True)
class RuntimeScope:
    """``with pl.scope():`` (AUTO) or ``with pl.manual_scope():`` (MANUAL).

    ``owner`` is ``"compiler"`` for scopes placed by ``materialize-runtime-scopes``.
    """

    body: tuple[Stmt, ...]
    manual: bool = False
    name: str = ""
    owner: str = "user"
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class For:
    """``for var in pl.range(start, stop, step)`` (or ``pl.parallel``) with iter_args."""

    name: str
    var: str
    start: ScalarExpr
    stop: ScalarExpr
    step: ScalarExpr = 1
    parallel: bool = False
    iter_args: tuple[IterArg, ...] = ()
    body: tuple[Stmt, ...] = ()
    yields: tuple[Operand, ...] = ()
    returns: tuple[str, ...] = ()
    extras: Mapping[str, Any] = _extras()

    @property
    def static_trip_count(self) -> int | None:
        """Iterations when start, stop and step are constants (PyPTO's rule), else None."""
        if not all(isinstance(v, int) for v in (self.start, self.stop, self.step)) or self.step == 0:
            return None
        span = self.stop - self.start if self.step > 0 else self.start - self.stop
        return max(0, -(-span // abs(self.step)))


@dataclass(frozen=True, slots=True)
class While:
    """``while cond:`` with iter_args; ``cond`` is evaluated before each iteration."""

    name: str
    cond: ScalarExpr
    iter_args: tuple[IterArg, ...] = ()
    body: tuple[Stmt, ...] = ()
    yields: tuple[Operand, ...] = ()
    returns: tuple[str, ...] = ()
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class If:
    """``if cond:`` with optional ``else`` and return vars fed by both branches' yields."""

    cond: ScalarExpr
    then_body: tuple[Stmt, ...] = ()
    else_body: tuple[Stmt, ...] | None = None
    then_yields: tuple[Operand, ...] = ()
    else_yields: tuple[Operand, ...] = ()
    returns: tuple[str, ...] = ()
    name: str = ""
    extras: Mapping[str, Any] = _extras()


Stmt = Union[Create, Slice, Assemble, IndexedView, Alias, ScalarLet, Call, TaskArray, SetSlot, GetSlot,
             TaskInvalid, TaskDummy, RuntimeScope, For, While, If]


@dataclass(frozen=True, slots=True)
class Function:
    """The orchestration function.  ``manual_layer_candidate`` is the transient marker
    ``__compiler_auto_manual_layer_candidate`` (dependence pass -> scope materialization)."""

    name: str
    params: tuple[TensorParam | ScalarParam, ...]
    body: tuple[Stmt, ...]
    auto_scope: bool = True
    manual_layer_candidate: bool = False
    extras: Mapping[str, Any] = _extras()


@dataclass(frozen=True, slots=True)
class Runtime:
    """What the simulated runtime is given: worker cores."""

    cores: int = 4


@dataclass(frozen=True, slots=True)
class TaskProgram:
    kernels: Mapping[str, Kernel] = field(hash=False)
    function: Function = field(hash=False)
    runtime: Runtime = Runtime()
    extras: Mapping[str, Any] = _extras()

    def walk(self) -> Iterator[tuple[Stmt, tuple[Stmt, ...]]]:
        """Every statement in program order with its enclosing compound statements."""
        return walk(self.function.body)

    def calls(self) -> Iterator[tuple[Call, tuple[Stmt, ...]]]:
        for stmt, parents in walk(self.function.body):
            if isinstance(stmt, Call):
                yield stmt, parents

    def call_map(self) -> dict[str, Call]:
        return {call.name: call for call, _ in self.calls()}

    def scopes_of_calls(self) -> dict[str, RuntimeScope | None]:
        """Per call, the innermost runtime scope around it (None: the runtime's implicit AUTO scope)."""
        out: dict[str, RuntimeScope | None] = {}
        for stmt, parents in walk(self.function.body):
            if isinstance(stmt, Call):
                out[stmt.name] = next((p for p in reversed(parents) if isinstance(p, RuntimeScope)), None)
        return out

    def with_body(self, body: tuple[Stmt, ...], **function_changes: Any) -> TaskProgram:
        return replace(self, function=replace(self.function, body=tuple(body), **function_changes))

    @property
    def dep_count(self) -> int:
        """User plus compiler deps over all call sites (the pipeline's edge count)."""
        return sum(len(c.deps) + len(c.compiler_deps) for c, _ in self.calls())


# -- traversal -----------------------------------------------------------------------------
def bodies(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The nested statement lists of a compound statement (none for a simple one)."""
    if isinstance(stmt, (For, While, RuntimeScope)):
        return (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.then_body,) if stmt.else_body is None else (stmt.then_body, stmt.else_body)
    return ()


def with_bodies(stmt: Stmt, new: tuple[tuple[Stmt, ...], ...]) -> Stmt:
    """``stmt`` with its nested lists replaced (same order as :func:`bodies`)."""
    if isinstance(stmt, (For, While, RuntimeScope)):
        return stmt if new[0] is stmt.body else replace(stmt, body=new[0])
    if isinstance(stmt, If):
        if new[0] is stmt.then_body and (len(new) == 1 or new[1] is stmt.else_body):
            return stmt
        return replace(stmt, then_body=new[0], else_body=new[1] if len(new) > 1 else None)
    return stmt


def walk(body: tuple[Stmt, ...], parents: tuple[Stmt, ...] = ()) -> Iterator[tuple[Stmt, tuple[Stmt, ...]]]:
    """Pre-order walk of ``body``: ``(statement, enclosing compound statements)``."""
    for stmt in body:
        yield stmt, parents
        for inner in bodies(stmt):
            yield from walk(inner, (*parents, stmt))


def map_calls(body: tuple[Stmt, ...], fn: Callable[[Call], Call]) -> tuple[Stmt, ...]:
    """``body`` with every call replaced by ``fn(call)``; unchanged parts are shared."""
    out: list[Stmt] = []
    changed = False
    for stmt in body:
        if isinstance(stmt, Call):
            new = fn(stmt)
        else:
            inner = bodies(stmt)
            new = with_bodies(stmt, tuple(map_calls(b, fn) for b in inner)) if inner else stmt
        changed = changed or new is not stmt
        out.append(new)
    return tuple(out) if changed else body
