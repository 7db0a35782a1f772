"""Semantic checks of task programs, and the symbol table the passes read.

:func:`validate_tasks` walks the function in program order with block scoping (loop and branch
bodies open a scope, runtime scopes do not) and raises a located
:class:`~neuronsim.machine.ir.errors.ProgramError` on the first problem: a name defined twice or used before
its definition, a variable of the wrong kind (tensor / TaskId / TaskId array / scalar), an
argument list or an output list that does not fit the kernel's signature, a direction a call
site cannot have, a yield that does not match its iter_args, a static slice that leaves its
source, an AUTO scope inside a MANUAL one.  It returns the program with identifiers that name
scalar variables turned into :class:`~neuronsim.machine.tasks.expr.Sym` operands, and a
:class:`Symbols` table: the kind of every variable and the type of every tensor (computed for
derived tensors: a slice of a DN or strided tensor keeps its source's layout and strides).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.tasks.expr import ScalarExpr, Sym, free_names
from neuronsim.machine.tasks.task_geometry import packed_strides, span_elements, view_strides
from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.tasks.orchestrator import MAX_TASK_ARRAY
from neuronsim.machine.tasks.ir import (
    Alias, ArgDirection, Assemble, Call, Create, For, GetSlot, If, IndexedView, IterArg, Operand, ParamDirection,
    RuntimeScope, ScalarLet, SetSlot, Slice, Stmt, TaskArray, TaskDummy, TaskInvalid, TaskProgram,
    TensorParam, TensorType, TensorView, While,
)

__all__ = ["Symbols", "validate_tasks", "TENSOR", "TASK", "ARRAY", "SCALAR", "ALLOWED_DIRECTIONS"]

TENSOR, TASK, ARRAY, SCALAR = "tensor", "TaskId", "TaskId array", "scalar"

#: ArgDirections a call site may give an argument, by the kernel parameter's direction.
ALLOWED_DIRECTIONS = {
    ParamDirection.IN: {ArgDirection.INPUT, ArgDirection.NO_DEP},
    ParamDirection.OUT: {ArgDirection.OUTPUT, ArgDirection.OUTPUT_EXISTING, ArgDirection.INOUT, ArgDirection.NO_DEP},
    ParamDirection.INOUT: {ArgDirection.INOUT, ArgDirection.OUTPUT_EXISTING, ArgDirection.NO_DEP},
    ParamDirection.SCALAR: {ArgDirection.SCALAR},
}


@dataclass(frozen=True, slots=True)
class Symbols:
    """What every variable of a valid program is: ``kinds[name]`` and, for tensors, ``types[name]``."""

    kinds: Mapping[str, str]
    types: Mapping[str, TensorType]
    labels: Mapping[str, str]
    """Call, loop and named if / scope labels -> ``"call"``, ``"loop"``, ``"if"``, ``"scope"``."""


def _slice_view(source: TensorType, declared: TensorView | None) -> TensorView | None:
    """A slice's type view: a bare window of a packed tensor, else its source's layout and strides."""
    view = source.view
    inherited = None
    if view is not None and (view.layout != "nd" or view.strides is not None):
        shape = source.shape
        packed = all(isinstance(n, int) for n in shape) and view.layout == "nd" \
            and tuple(view.strides) == packed_strides(tuple(shape))  # type: ignore[arg-type]
        if not packed:
            inherited = TensorView(view.layout, view.strides)
    if declared is None:
        return inherited
    base = inherited or TensorView()
    return TensorView(base.layout, base.strides, declared.valid_shape, declared.pad)


class _Checker:
    def __init__(self, program: TaskProgram) -> None:
        self.program = program
        self.kinds: dict[str, str] = {}
        self.types: dict[str, TensorType] = {}
        self.labels: dict[str, str] = {}
        self.scopes: list[set[str]] = [set()]
        self.deferred: list[tuple[Call, str, tuple[str, ...]]] = []  # a call, its path, the loops around it
        self.defined_at: dict[str, int] = {}  # variable -> its definition's rank in program order
        self.call_at: dict[str, int] = {}  # call label -> the rank of the call
        self.loop_at: dict[str, tuple[int, tuple[str, ...]]] = {}  # loop label -> its rank, the loops around it
        self.loops: list[str] = []

    # -- names ---------------------------------------------------------------------------
    def define(self, name: str, kind: str, path: str, type_: TensorType | None = None) -> None:
        if name in self.kinds:
            raise ProgramError(path, f"'{name}' is defined twice (variables are single-assignment)")
        self.kinds[name] = kind
        self.defined_at[name] = len(self.defined_at)
        self.scopes[-1].add(name)
        if type_ is not None:
            self.types[name] = type_

    def label(self, name: str, what: str, path: str) -> None:
        if name in self.labels:
            raise ProgramError(path,
                               f"duplicate label '{name}' (calls, loops and named ifs / scopes need distinct names)")
        self.labels[name] = what

    def use(self, name: str, path: str, *kinds: str) -> str:
        if not any(name in scope for scope in self.scopes):
            hint = " (defined in a loop or branch body: use its return vars)" if name in self.kinds else ""
            raise ProgramError(path, f"'{name}' is not defined here{hint}")
        kind = self.kinds[name]
        if kinds and kind not in kinds:
            raise ProgramError(path, f"'{name}' is a {kind}; expected a {' or '.join(kinds)}")
        return kind

    def expr(self, value: ScalarExpr, path: str) -> None:
        for name in sorted(free_names(value)):
            self.use(name, path, SCALAR)

    def operand(self, value: Operand, path: str, *kinds: str) -> tuple[Operand, str]:
        """Resolve an operand: a name of a scalar becomes a Sym; returns (operand, kind)."""
        if isinstance(value, str):
            kind = self.use(value, path)
            if kind == SCALAR:
                value = Sym(value)
            elif kind not in kinds:
                raise ProgramError(path, f"'{value}' is a {kind}; expected a {' or '.join(kinds)}")
            return value, kind
        if SCALAR not in kinds:
            raise ProgramError(path, f"expected a {' or '.join(kinds)} variable, got an expression")
        self.expr(value, path)
        return value, SCALAR

    def check_type(self, t: TensorType, path: str) -> None:
        for i, n in enumerate(t.shape):
            self.expr(n, join_path(join_path(path, "shape"), i))
            if isinstance(n, int) and n < 1:
                raise ProgramError(join_path(join_path(path, "shape"), i), f"expected a dimension >= 1, got {n}")
        if t.view is not None:
            self.check_view(t.view, t.shape, join_path(path, "view"))
        if t.memref is not None:
            mpath = join_path(path, "memref")
            self.expr(t.memref.offset, join_path(mpath, "offset"))
            if all(isinstance(n, int) for n in t.shape):
                need = itemsize(t.dtype) * span_elements(tuple(t.shape), view_strides(tuple(t.shape), t.view))  # type: ignore[arg-type]
                if t.memref.size < need:
                    raise ProgramError(join_path(mpath, "size"),
                                       f"{t.memref.size} bytes cannot hold the tensor ({need} bytes)")

    def check_view(self, view: TensorView, shape: tuple, path: str) -> None:
        if view.layout == "dn" and len(shape) < 2:
            raise ProgramError(join_path(path, "layout"), "a 'dn' layout needs at least two dimensions")
        for key, values in (("strides", view.strides), ("valid_shape", view.valid_shape)):
            if values is not None and len(values) != len(shape):
                raise ProgramError(join_path(path, key),
                                   f"expected {len(shape)} values (one per dimension), got {len(values)}")
        for i, v in enumerate(view.valid_shape or ()):
            self.expr(v, join_path(join_path(path, "valid_shape"), i))
            if isinstance(v, int) and isinstance(shape[i], int) and not 0 <= v <= shape[i]:
                raise ProgramError(join_path(join_path(path, "valid_shape"), i), f"expected 0..{shape[i]}, got {v}")

    def window(self, source: str, shape: tuple, offset: tuple, path: str) -> TensorType:
        self.use(source, path, TENSOR)
        parent = self.types[source]
        for key, values in (("shape", shape), ("offset", offset)):
            if len(values) != len(parent.shape):
                raise ProgramError(join_path(path, key),
                                   f"'{source}' has {len(parent.shape)} dimensions, got {len(values)} values")
            for i, v in enumerate(values):
                if not isinstance(v, int):  # a constant names nothing (and its path would cost a string)
                    self.expr(v, join_path(join_path(path, key), i))
        for i, (n, o, whole) in enumerate(zip(shape, offset, parent.shape)):
            if isinstance(n, int) and n < 1:
                raise ProgramError(join_path(join_path(path, "shape"), i), f"expected a dimension >= 1, got {n}")
            if isinstance(o, int) and o < 0:
                raise ProgramError(join_path(join_path(path, "offset"), i), f"expected an offset >= 0, got {o}")
            if all(isinstance(v, int) for v in (n, o, whole)) and o + n > whole:
                raise ProgramError(join_path(join_path(path, "offset"), i),
                                   f"window [{o}, {o + n}) leaves dimension {i} of '{source}' (size {whole})")
        return parent

    # -- statements ------------------------------------------------------------------------
    def body(self, body: tuple[Stmt, ...], path: str, *, manual: bool, loops: int) -> tuple[Stmt, ...]:
        return tuple(self.stmt(s, join_path(path, i), manual=manual, loops=loops) for i, s in enumerate(body))

    def stmt(self, s: Stmt, path: str, *, manual: bool, loops: int) -> Stmt:
        if isinstance(s, Call):
            return self.call(s, path)
        if isinstance(s, Create):
            self.check_type(s.type, join_path(path, "create"))
            self.define(s.var, TENSOR, join_path(path, "let"), s.type)
        elif isinstance(s, Slice):
            parent = self.window(s.source, s.shape, s.offset, path)
            if s.view is not None and (s.view.layout != "nd" or s.view.strides is not None):
                raise ProgramError(join_path(path, "view"), "a slice keeps its source's layout and strides; "
                                                            "its view may give 'valid_shape' and 'pad' only")
            if s.view is not None:
                self.check_view(s.view, s.shape, join_path(path, "view"))
            t = TensorType(s.shape, parent.dtype, _slice_view(parent, s.view))
            self.define(s.var, TENSOR, join_path(path, "let"), t)
        elif isinstance(s, Assemble):
            self.use(s.value, join_path(path, "value"), TENSOR)
            base = self.window(s.base, self.types[s.value].shape, s.offset, path)
            self.define(s.var, TENSOR, join_path(path, "let"), base)
        elif isinstance(s, IndexedView):
            parent = self.window(s.source, s.shape, s.offset, path)
            self.define(s.var, TENSOR, join_path(path, "let"), TensorType(s.shape, parent.dtype))
        elif isinstance(s, Alias):
            kind = self.use(s.source, join_path(path, "alias"), TENSOR, TASK)
            self.define(s.var, kind, join_path(path, "let"), self.types.get(s.source))
        elif isinstance(s, ScalarLet):
            self.expr(s.value, join_path(path, "scalar"))
            self.define(s.var, SCALAR, join_path(path, "let"))
        elif isinstance(s, TaskArray):
            self.expr(s.extent, join_path(path, "task_array"))
            if isinstance(s.extent, int) and s.extent < 1:
                raise ProgramError(join_path(path, "task_array"), f"expected an extent >= 1, got {s.extent}")
            if isinstance(s.extent, int) and s.extent > MAX_TASK_ARRAY:
                raise ProgramError(join_path(path, "task_array"), f"expected an extent of at most {MAX_TASK_ARRAY:,} "
                                                                  f"slots, got {s.extent:,}")
            self.define(s.var, ARRAY, join_path(path, "let"))
        elif isinstance(s, (SetSlot, GetSlot)):
            self.use(s.array, join_path(path, "set" if isinstance(s, SetSlot) else "get"), ARRAY)
            self.expr(s.index, join_path(path, "index"))
            if isinstance(s.index, int) and s.index < 0:
                raise ProgramError(join_path(path, "index"), f"expected an index >= 0, got {s.index}")
            if isinstance(s, SetSlot):
                self.use(s.value, join_path(path, "value"), TASK)
            else:
                self.define(s.var, TASK, join_path(path, "let"))
        elif isinstance(s, TaskInvalid):
            self.define(s.var, TASK, join_path(path, "let"))
        elif isinstance(s, TaskDummy):
            for i, dep in enumerate(s.deps):
                self.use(dep, join_path(join_path(path, "task_dummy"), i), TASK, ARRAY)
            self.define(s.var, TASK, join_path(path, "let"))
        elif isinstance(s, RuntimeScope):
            if manual and not s.manual:
                raise ProgramError(join_path(path, "scope"), "an AUTO scope cannot sit inside a MANUAL scope "
                                                             "(the runtime forbids it)")
            if s.name:
                self.label(s.name, "scope", join_path(path, "name"))
            return replace(s, body=self.body(s.body, join_path(path, "body"), manual=manual or s.manual, loops=loops))
        elif isinstance(s, (For, While)):
            return self.loop(s, path, manual=manual, loops=loops)
        elif isinstance(s, If):
            return self.branch(s, path, manual=manual, loops=loops)
        return s

    def carried(self, s: For | While, path: str) -> tuple[tuple[IterArg, ...], list]:
        args, defs = [], []
        for i, a in enumerate(s.iter_args):
            init, kind = self.operand(a.init, join_path(join_path(join_path(path, "iter_args"), i), "init"), TENSOR,
                                      TASK, SCALAR)
            args.append(IterArg(a.name, init))
            defs.append((a.name, kind, self.types.get(init) if isinstance(init, str) else None))
        return tuple(args), defs

    def yields(self, values: tuple[Operand, ...], kinds: list[str], path: str, what: str) -> tuple[Operand, ...]:
        if len(values) != len(kinds):
            raise ProgramError(path, f"{what} yields {len(values)} values for {len(kinds)} carried values")
        return tuple(self.operand(v, join_path(path, i), k)[0] for i, (v, k) in enumerate(zip(values, kinds)))

    def loop(self, s: For | While, path: str, *, manual: bool, loops: int) -> Stmt:
        self.label(s.name, "loop", join_path(path, "name"))
        self.loop_at[s.name] = (len(self.defined_at), tuple(self.loops))
        if isinstance(s, For):
            for key in ("start", "stop", "step"):
                self.expr(getattr(s, key), join_path(path, key))
            if s.step == 0:
                raise ProgramError(join_path(path, "step"), "a loop step cannot be 0")
        iter_args, defs = self.carried(s, path)
        if len(s.returns) != len(iter_args):
            raise ProgramError(join_path(path, "returns"), f"expected {len(iter_args)} return vars (one per iter_arg), "
                                                           f"got {len(s.returns)}")
        self.scopes.append(set())
        if isinstance(s, For):
            self.define(s.var, SCALAR, join_path(path, "for"))
        for i, (name, kind, type_) in enumerate(defs):
            self.define(name, kind, join_path(join_path(join_path(path, "iter_args"), i), "name"), type_)
        if isinstance(s, While):
            self.expr(s.cond, join_path(path, "while"))
        self.loops.append(s.name)
        body = self.body(s.body, join_path(path, "body"), manual=manual, loops=loops + 1)
        self.loops.pop()
        yields = self.yields(s.yields, [kind for _, kind, _ in defs], join_path(path, "yield"), f"loop '{s.name}'")
        self.scopes.pop()
        for i, (name, (_, kind, type_)) in enumerate(zip(s.returns, defs)):
            self.define(name, kind, join_path(join_path(path, "returns"), i), type_)
        return replace(s, iter_args=iter_args, body=body, yields=yields)

    def branch(self, s: If, path: str, *, manual: bool, loops: int) -> Stmt:
        self.expr(s.cond, join_path(path, "if"))
        if s.name:
            self.label(s.name, "if", join_path(path, "name"))
        sides, yielded = [], []
        for key, body, values in (("then", s.then_body, s.then_yields), ("else", s.else_body, s.else_yields)):
            if body is None:
                if s.returns or values:
                    raise ProgramError(join_path(path, "else"), "an 'if' with return vars needs an 'else' branch")
                sides.append(None)
                continue
            self.scopes.append(set())
            sides.append(self.body(body, join_path(path, key), manual=manual, loops=loops))
            if len(values) != len(s.returns):
                raise ProgramError(join_path(path, f"{key}_yield"),
                                   f"expected {len(s.returns)} values (one per return var), got {len(values)}")
            resolved = [self.operand(v, join_path(join_path(path, f"{key}_yield"), i), TENSOR, TASK, SCALAR)
                        for i, v in enumerate(values)]
            self.scopes.pop()
            yielded.append(resolved)
        if yielded and len(yielded) == 2:
            for i, ((_, k1), (_, k2)) in enumerate(zip(*yielded)):
                if k1 != k2:
                    raise ProgramError(join_path(join_path(path, "else_yield"), i),
                                       f"yields a {k2} where 'then' yields a {k1}")
        for i, name in enumerate(s.returns):
            value, kind = yielded[0][i]
            self.define(name, kind, join_path(path, "returns"),
                        self.types.get(value) if isinstance(value, str) else None)
        return replace(s, then_body=sides[0], else_body=sides[1],
                       then_yields=tuple(v for v, _ in yielded[0]) if yielded else (),
                       else_yields=tuple(v for v, _ in yielded[1]) if len(yielded) > 1 else ())

    def call(self, c: Call, path: str) -> Call:
        self.label(c.name, "call", join_path(path, "name"))
        kernel = self.program.kernels.get(c.kernel)
        key = "submit" if c.submit else "call"
        if kernel is None:
            raise ProgramError(join_path(path, key),
                               f"unknown kernel '{c.kernel}'; expected one of {sorted(self.program.kernels)}")
        if len(c.args) != len(kernel.params):
            raise ProgramError(join_path(path, "args"),
                               f"kernel '{c.kernel}' takes {len(kernel.params)} arguments, got {len(c.args)}")
        args = []
        args_path = join_path(path, "args")
        for i, (a, p) in enumerate(zip(c.args, kernel.params)):
            want = SCALAR if p.direction == ParamDirection.SCALAR else TENSOR
            args.append(self.operand(a, join_path(args_path, i), want)[0])
        if c.directions is not None:
            if len(c.directions) != len(c.args):
                raise ProgramError(join_path(path, "directions"),
                                   f"expected {len(c.args)} directions (one per argument), got {len(c.directions)}")
            for i, (d, p) in enumerate(zip(c.directions, kernel.params)):
                if d not in ALLOWED_DIRECTIONS[p.direction]:
                    raise ProgramError(join_path(join_path(path, "directions"), i),
                                       f"'{d.value}' cannot be given to {p.direction.value} parameter '{p.name}'; "
                                       f"expected one of {sorted(x.value for x in ALLOWED_DIRECTIONS[p.direction])}")
        for i, index in enumerate(c.no_dep):
            if index >= len(c.args) or kernel.params[index].direction == ParamDirection.SCALAR:
                raise ProgramError(join_path(join_path(path, "no_dep"), i),
                                   f"argument {index} is not a tensor argument")
        for i, dep in enumerate(c.deps):
            self.use(dep, join_path(join_path(path, "deps"), i), TASK, ARRAY)
        if c.outputs and len(c.outputs) != len(kernel.returns):
            raise ProgramError(join_path(path, "outputs"),
                               f"kernel '{c.kernel}' returns {len(kernel.returns)} values, got {len(c.outputs)} names")
        for name, returned in zip(c.outputs, kernel.returns):
            source = args[kernel.param_index(returned)]
            self.define(name, TENSOR, join_path(path, "outputs"),
                        self.types.get(source) if isinstance(source, str) else None)
        if c.submit:
            self.define(c.task_id, TASK, join_path(path, "task_id"))
        self.call_at[c.name] = len(self.defined_at)  # the call's own task_id and outputs come after it
        self.deferred.append((c, path, tuple(self.loops)))
        return replace(c, args=tuple(args))

    def finish(self) -> None:
        """Compiler deps may name variables defined anywhere (they are hoisted): check them last."""
        def at(path: str, i: int, *keys: str | int) -> str:  # built on error only: a compiled flat
            where = join_path(join_path(path, "compiler_deps"), i)  # program has quadratically many deps
            for key in keys:
                where = join_path(where, key)
            return where

        for c, path, loops in self.deferred:
            for i, dep in enumerate(c.compiler_deps):
                if self.kinds.get(dep.on) not in (TASK, ARRAY, TENSOR):
                    raise ProgramError(at(path, i, "on"),
                                       f"'{dep.on}' is not a TaskId, TaskId array or tensor variable")
                if dep.loop is not None and self.labels.get(dep.loop) != "loop":
                    raise ProgramError(at(path, i, "loop"), f"'{dep.loop}' is not a loop")
                if (dep.carried is None and dep.loop is None and self.kinds[dep.on] in (TASK, ARRAY)
                        and self.defined_at[dep.on] >= self.call_at[c.name] and not loops):
                    raise ProgramError(at(path, i, "on"),
                                       f"'{dep.on}' is defined after call '{c.name}', outside any loop: a plain "
                                       "compiler dep names a TaskId submitted before it")
                if dep.loop is not None and self._fan_in_unreached(c.name, dep.loop, loops):
                    raise ProgramError(at(path, i, "loop"),
                                       f"loop '{dep.loop}' comes after call '{c.name}' and no loop "
                                                            f"encloses both: a loop fan-in names the instances of the "
                                                            f"loop's last completed execution, and there is none yet")
                if dep.carried is not None and dep.carried not in loops:
                    raise ProgramError(at(path, i, "carried"), f"'{dep.carried}' is not a loop around call '{c.name}'")
                for j, name in enumerate(dep.calls):
                    if self.labels.get(name) != "call":
                        raise ProgramError(at(path, i, "calls", j), f"'{name}' is not a call")


    def _fan_in_unreached(self, call: str, loop: str, loops: tuple[str, ...]) -> bool:
        """True when ``loop`` has never completed whenever ``call`` runs: it comes later in
        program order and no loop encloses both (then a later iteration would see it done)."""
        rank, around = self.loop_at[loop]
        return rank >= self.call_at[call] and not set(around) & set(loops)


def _check_kernels(program: TaskProgram) -> None:
    for name, k in program.kernels.items():
        path = join_path("kernels", name)
        seen: set[str] = set()
        for i, p in enumerate(k.params):
            if p.name in seen:
                raise ProgramError(join_path(join_path(join_path(path, "params"), i), "name"),
                                   f"duplicate parameter '{p.name}'")
            seen.add(p.name)
        tensors = {p.name for p in k.params if p.direction != ParamDirection.SCALAR}
        for i, r in enumerate(k.returns):
            if r not in tensors:
                raise ProgramError(join_path(join_path(path, "returns"), i),
                                   f"'{r}' is not a tensor parameter of '{name}'")


def validate_tasks(program: TaskProgram) -> tuple[TaskProgram, Symbols]:
    """Check ``program``; return it with scalar operands resolved, and its symbol table."""
    _check_kernels(program)
    checker = _Checker(program)
    for i, p in enumerate(program.function.params):
        path = join_path(join_path("function", "params"), i)
        if isinstance(p, TensorParam):
            checker.check_type(p.type, path)
            checker.define(p.name, TENSOR, join_path(path, "name"), p.type)
        else:
            checker.define(p.name, SCALAR, join_path(path, "name"))
    body = checker.body(program.function.body, join_path("function", "body"), manual=False, loops=0)
    checker.finish()
    symbols = Symbols(dict(checker.kinds), dict(checker.types), dict(checker.labels))
    return program.with_body(body), symbols

