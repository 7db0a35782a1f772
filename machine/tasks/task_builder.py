"""Build task programs in Python the way PyPTO orchestration code reads.

>>> import numpy as np
>>> tb = TaskBuilder("attention_layer")
>>> mm = tb.kernel("matmul", In("a"), In("b"), Out("c"), returns="c", cost=900)
>>> add = tb.kernel("add_bias", In("bias"), InOut("y"), returns="y", cost=200)
>>> x = tb.param("x", (256, 64), "float32")
>>> w = tb.param("w", (64, 64), "float32")
>>> bias = tb.param("bias", (64, 64), "float32")
>>> out = tb.param("out", (256, 64), "float32", direction="out")
>>> n = tb.scalar("n", value=4)
>>> prev = tb.task_invalid()
>>> for i, (last,) in tb.range(n, init=(prev,)):
...     (y,), t = tb.submit(mm, [x[i * 64 : i * 64 + 64, :], w, out[i * 64 : i * 64 + 64, :]], deps=[last])
...     y2 = tb.call(add, [bias, y])
...     done = tb.yield_(t)
>>> program = tb.program()
>>> [c.name for c, _ in program.calls()], program.function.body[-1].static_trip_count is None
(['matmul0', 'add_bias0'], True)

Handles (:mod:`neuronsim.machine.tasks.refs`) stand for variables; loops are Python ``for`` statements
over :meth:`TaskBuilder.range` / :meth:`parallel` / :meth:`while_` (the body is recorded once),
``tb.yield_(...)`` gives the loop's return vars, ``with tb.if_(c): ... with tb.else_(): ...``
records a branch.  Names are generated (``matmul0``, ``x_s0``) unless given with ``name=``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from neuronsim.machine.tasks.expr import Sym
from neuronsim.machine.tasks.ir import (
    Alias, ArgDirection, Assemble, Call, Create, For, Function, GetSlot, If, IndexedView, IterArg, Kernel,
    KernelParam, MemRef, ParamDirection, Runtime, RuntimeScope, ScalarLet, ScalarParam, SetSlot, Slice, Stmt,
    TaskArray, TaskDummy, TaskInvalid, TaskProgram, TensorParam, TensorType, TensorView, While,
)
from neuronsim.machine.tasks.refs import NoDepArg, ScalarRef, TaskArrayRef, TaskIdRef, TensorRef, as_expr, no_dep
from neuronsim.machine.tasks.task_validate import validate_tasks

__all__ = ["TaskBuilder", "In", "Out", "InOut", "Scalar", "View", "MemRef", "no_dep"]

View = TensorView


def In(name: str) -> KernelParam:
    return KernelParam(name, ParamDirection.IN)


def Out(name: str) -> KernelParam:
    return KernelParam(name, ParamDirection.OUT)


def InOut(name: str) -> KernelParam:
    return KernelParam(name, ParamDirection.INOUT)


def Scalar(name: str) -> KernelParam:
    return KernelParam(name, ParamDirection.SCALAR)


def _memref(memref: MemRef | None) -> MemRef | None:
    """A MemRef whose offset may be given as a scalar handle or a scalar's name."""
    if memref is None:
        return None
    offset = Sym(memref.offset) if isinstance(memref.offset, str) else as_expr(memref.offset)
    return MemRef(memref.base, offset, memref.size)


def _fn_spec(fn: Callable[..., Any]) -> str | None:
    """``module:qualname`` when ``fn`` can be imported back by that name, else None."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or "<" in qualname:
        return None
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        return None
    return f"{module}:{qualname}" if target is fn else None


class _Frame:
    """An open loop or branch: where ``yield_`` goes and the return vars it hands out."""

    def __init__(self, kind: str, hints: Sequence[str]) -> None:
        self.kind, self.hints = kind, list(hints)
        self.yields: tuple | None = None
        self.returns: tuple[str, ...] = ()
        self.refs: list[Any] = []


class TaskBuilder:
    """Records kernels, parameters and statements; :meth:`program` returns the validated program."""

    def __init__(self, name: str = "main", *, auto_scope: bool = True, cores: int = 4) -> None:
        self.name, self.auto_scope, self.cores = name, auto_scope, cores
        self.kernels: dict[str, Kernel] = {}
        self.params: list[TensorParam | ScalarParam] = []
        self._blocks: list[list[Stmt]] = [[]]
        self._frames: list[_Frame] = []
        self._names: set[str] = set()
        self._counters: dict[str, int] = {}
        self._types: dict[str, TensorType] = {}
        self._last_then = _Frame("then", ())

    # -- names -------------------------------------------------------------------------------
    def _fresh(self, hint: str, given: str | None = None, *, numbered: bool = True) -> str:
        """A new unique name: ``given`` as is, else ``hint`` with a counter (or bare when free
        and ``numbered`` is false: ``matmul0_tid`` rather than ``matmul0_tid0``)."""
        if given is not None:
            if given in self._names:
                raise ValueError(f"the name {given!r} is taken")
            self._names.add(given)
            return given
        if not numbered and hint not in self._names:
            self._names.add(hint)
            return hint
        k = self._counters.get(hint, 0)
        while f"{hint}{k}" in self._names:
            k += 1
        self._counters[hint] = k + 1
        self._names.add(f"{hint}{k}")
        return f"{hint}{k}"

    def _emit(self, stmt: Stmt) -> None:
        self._blocks[-1].append(stmt)

    def type_of(self, tensor: TensorRef) -> TensorType:
        return self._types[tensor.name]

    # -- declarations ------------------------------------------------------------------------
    def kernel(self, name: str, *params: KernelParam, returns: str | Sequence[str] = (), cost: float = 1.0,
               fn: Callable[..., Any] | str | None = None) -> Kernel:
        """Declare a callee; ``fn`` is its numpy body (a function or ``"module:qualname"``)."""
        returns = (returns,) if isinstance(returns, str) else tuple(returns)
        spec, impl = (fn, None) if isinstance(fn, str) or fn is None else (_fn_spec(fn), fn)
        kernel = Kernel(name, tuple(params), returns, float(cost), spec, impl)
        self.kernels[name] = kernel
        return kernel

    def param(self, name: str, shape: Sequence[Any], dtype: str = "float32", *, direction: str = "in",
              view: TensorView | None = None, memref: MemRef | None = None) -> TensorRef:
        t = TensorType(tuple(as_expr(n) for n in shape), dtype, view, _memref(memref))
        self.params.append(TensorParam(self._fresh(name, name), t, ParamDirection(direction)))
        self._types[name] = t
        return TensorRef(self, name)

    def scalar(self, name: str, value: int | None = None) -> ScalarRef:
        """A runtime scalar parameter (``value`` is what a simulation uses by default)."""
        self.params.append(ScalarParam(self._fresh(name, name), value))
        return ScalarRef(Sym(name))

    # -- tensors -----------------------------------------------------------------------------
    def create(self, shape: Sequence[Any], dtype: str = "float32", *, name: str | None = None,
               view: TensorView | None = None, memref: MemRef | None = None) -> TensorRef:
        t = TensorType(tuple(as_expr(n) for n in shape), dtype, view, _memref(memref))
        var = self._fresh("buf", name)
        self._emit(Create(var, t))
        self._types[var] = t
        return TensorRef(self, var)

    def slice(self, source: TensorRef, shape: Sequence[Any], offset: Sequence[Any], *, name: str | None = None,
              valid_shape: Sequence[Any] | None = None, pad: str | None = None) -> TensorRef:
        shape, offset = tuple(as_expr(n) for n in shape), tuple(as_expr(o) for o in offset)
        view = None
        if valid_shape is not None or pad is not None:
            view = TensorView(valid_shape=None if valid_shape is None else tuple(as_expr(v) for v in valid_shape),
                              pad=pad)
        var = self._fresh(f"{source.name}_s", name)
        self._emit(Slice(var, source.name, shape, offset, view))
        self._types[var] = TensorType(shape, self._types[source.name].dtype)
        return TensorRef(self, var)

    def assemble(self, base: TensorRef, value: TensorRef, offset: Sequence[Any], *,
                 name: str | None = None) -> TensorRef:
        var = self._fresh(f"{base.name}_a", name)
        self._emit(Assemble(var, base.name, value.name, tuple(as_expr(o) for o in offset)))
        self._types[var] = self._types[base.name]
        return TensorRef(self, var)

    def indexed(self, source: TensorRef, shape: Sequence[Any], offset: Sequence[Any], *, op: str = "gather",
                name: str | None = None) -> TensorRef:
        """A gather / scatter-family view whose window depends on runtime indices."""
        shape = tuple(as_expr(n) for n in shape)
        var = self._fresh(f"{source.name}_{op}", name)
        self._emit(IndexedView(var, op, source.name, shape, tuple(as_expr(o) for o in offset)))
        self._types[var] = TensorType(shape, self._types[source.name].dtype)
        return TensorRef(self, var)

    def alias(self, value: TensorRef | TaskIdRef, *, name: str | None = None) -> TensorRef | TaskIdRef:
        var = self._fresh(f"{value.name}_c", name)
        self._emit(Alias(var, value.name))
        if isinstance(value, TensorRef):
            self._types[var] = self._types[value.name]
            return TensorRef(self, var)
        return TaskIdRef(self, var)

    def let(self, value: Any, *, name: str | None = None) -> ScalarRef:
        var = self._fresh("s", name)
        self._emit(ScalarLet(var, as_expr(value)))
        return ScalarRef(Sym(var))

    # -- TaskIds -----------------------------------------------------------------------------
    def task_invalid(self, *, name: str | None = None) -> TaskIdRef:
        var = self._fresh("invalid", name)
        self._emit(TaskInvalid(var))
        return TaskIdRef(self, var)

    def task_dummy(self, deps: Sequence[TaskIdRef | TaskArrayRef], *, name: str | None = None) -> TaskIdRef:
        var = self._fresh("barrier", name)
        self._emit(TaskDummy(var, tuple(d.name for d in deps)))
        return TaskIdRef(self, var)

    def task_array(self, extent: Any, *, name: str | None = None) -> TaskArrayRef:
        var = self._fresh("tids", name)
        self._emit(TaskArray(var, as_expr(extent)))
        return TaskArrayRef(self, var)

    def set_slot(self, array: TaskArrayRef, index: Any, value: TaskIdRef) -> None:
        self._emit(SetSlot(array.name, as_expr(index), value.name))

    def get_slot(self, array: TaskArrayRef, index: Any, *, name: str | None = None) -> TaskIdRef:
        var = self._fresh(f"{array.name}_at", name)
        self._emit(GetSlot(var, array.name, as_expr(index)))
        return TaskIdRef(self, var)

    # -- tasks -------------------------------------------------------------------------------
    def _call(self, kernel: Kernel | str, args: Sequence[Any], *, submit: bool, deps: Sequence[Any], name: str | None,
              outputs: Sequence[str] | None, task_id: str | None,
              directions: Sequence[str] | None) -> tuple[tuple[TensorRef, ...], TaskIdRef | None]:
        k = self.kernels[kernel] if isinstance(kernel, str) else kernel
        label = self._fresh(k.name, name)
        operands, marked = [], []
        for i, a in enumerate(args):
            if isinstance(a, NoDepArg):
                marked.append(i)
                a = a.tensor
            operands.append(a.name if isinstance(a, TensorRef) else as_expr(a))
        out_names = (tuple(outputs) if outputs is not None
                     else tuple(self._fresh(f"{label}_{r}", numbered=False) for r in k.returns))
        for n in outputs or ():
            self._fresh(n, n)
        tid = self._fresh(f"{label}_tid", task_id, numbered=False) if submit else None
        dirs = None if directions is None else tuple(ArgDirection(d) for d in directions)
        self._emit(Call(label, k.name, tuple(operands), out_names, tid, submit, tuple(d.name for d in deps), dirs,
                        tuple(marked)))
        refs = []
        for var, returned in zip(out_names, k.returns):
            source = operands[k.param_index(returned)]
            if isinstance(source, str):
                self._types[var] = self._types[source]
            refs.append(TensorRef(self, var))
        return tuple(refs), (TaskIdRef(self, tid) if tid else None)

    def submit(self, kernel: Kernel | str, args: Sequence[Any], *, deps: Sequence[TaskIdRef | TaskArrayRef] = (),
               name: str | None = None, outputs: Sequence[str] | None = None, task_id: str | None = None,
               directions: Sequence[str] | None = None) -> tuple[tuple[TensorRef, ...], TaskIdRef]:
        """``outputs, tid = pl.submit(kernel, *args, deps=...)``."""
        outs, tid = self._call(kernel, args, submit=True, deps=deps, name=name, outputs=outputs, task_id=task_id,
                               directions=directions)
        assert tid is not None
        return outs, tid

    def call(self, kernel: Kernel | str, args: Sequence[Any], *, deps: Sequence[TaskIdRef | TaskArrayRef] = (),
             name: str | None = None, outputs: Sequence[str] | None = None, assign: bool = True,
             directions: Sequence[str] | None = None) -> Any:
        """``out = self.kernel(*args)``: a plain call; ``assign=False`` discards the result
        (an expression statement).  Returns None, the output, or a tuple of outputs."""
        k = self.kernels[kernel] if isinstance(kernel, str) else kernel
        outs, _ = self._call(k, args, submit=False, deps=deps, name=name, outputs=outputs if assign else (),
                             task_id=None, directions=directions)
        if not assign or not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    # -- scopes and control flow ---------------------------------------------------------------
    @contextmanager
    def _block(self) -> Iterator[list[Stmt]]:
        self._blocks.append([])
        try:
            yield self._blocks[-1]
        finally:
            self._blocks.pop()

    @contextmanager
    def scope(self, *, manual: bool = False, name: str = "") -> Iterator[None]:
        """``with pl.scope():`` (AUTO) or, with ``manual=True``, ``with pl.manual_scope():``."""
        with self._block() as body:
            yield
        self._emit(RuntimeScope(tuple(body), manual, name))

    def manual_scope(self, *, name: str = ""):
        return self.scope(manual=True, name=name)

    def _carried(self, init: Any) -> tuple[list[str], list[Any]]:
        items = list(init.items()) if isinstance(init, dict) else [(None, v) for v in init]
        hints, values = [], []
        for hint, value in items:
            hints.append(hint or (value.name if isinstance(value, (TensorRef, TaskIdRef)) else "v"))
            values.append(value)
        return hints, values

    def _iter_args(self, hints: list[str], values: list[Any]) -> tuple[tuple[IterArg, ...], list[Any]]:
        args, refs = [], []
        for hint, value in zip(hints, values):
            var = self._fresh(f"{hint}_it", numbered=False)
            if isinstance(value, TensorRef):
                args.append(IterArg(var, value.name))
                self._types[var] = self._types[value.name]
                refs.append(TensorRef(self, var))
            elif isinstance(value, TaskIdRef):
                args.append(IterArg(var, value.name))
                refs.append(TaskIdRef(self, var))
            else:
                args.append(IterArg(var, as_expr(value)))
                refs.append(ScalarRef(Sym(var)))
        return tuple(args), refs

    def _loop(self, kind: str, name: str | None, init: Any) -> tuple[_Frame, str, tuple[IterArg, ...], list[Any]]:
        hints, values = self._carried(init)
        label = self._fresh("loop" if kind != "while" else "while", name)
        args, refs = self._iter_args(hints, values)
        frame = _Frame(kind, hints)
        self._frames.append(frame)
        return frame, label, args, refs

    def _close(self, frame: _Frame, n: int, what: str) -> tuple[tuple, tuple[str, ...]]:
        self._frames.pop()
        if n and frame.yields is None:
            raise ValueError(f"{what} carries {n} values: call tb.yield_(...) at the end of its body")
        return frame.yields or (), frame.returns

    def range(self, start: Any, stop: Any = None, step: Any = 1, *, init: Any = (), name: str | None = None,
              var: str | None = None, parallel: bool = False) -> Iterator[Any]:
        """``for i in pl.range(...)`` / ``for i, (a, b) in pl.range(..., init_values=(a0, b0))``."""
        if stop is None:
            start, stop = 0, start
        frame, label, args, refs = self._loop("parallel" if parallel else "range", name, init)
        index = self._fresh("i", var)
        with self._block() as body:
            yield (ScalarRef(Sym(index)), tuple(refs)) if args else ScalarRef(Sym(index))
        yields, returns = self._close(frame, len(args), f"loop {label}")
        self._emit(For(label, index, as_expr(start), as_expr(stop), as_expr(step), parallel, args, tuple(body),
                       yields, returns))

    def parallel(self, start: Any, stop: Any = None, step: Any = 1, **kwargs: Any) -> Iterator[Any]:
        """``for i in pl.parallel(...)``: iterations are independent."""
        return self.range(start, stop, step, parallel=True, **kwargs)

    def while_(self, cond: Callable[..., Any], *, init: Any, name: str | None = None) -> Iterator[tuple]:
        """``while cond(*carried):`` with carried values; yields the carried handles."""
        frame, label, args, refs = self._loop("while", name, init)
        test = as_expr(cond(*refs))
        with self._block() as body:
            yield tuple(refs)
        yields, returns = self._close(frame, len(args), f"loop {label}")
        self._emit(While(label, test, args, tuple(body), yields, returns))

    def yield_(self, *values: Any) -> Any:
        """End the innermost loop body or branch with these values; returns its return vars."""
        if not self._frames:
            raise ValueError("yield_ outside a loop or branch")
        frame = self._frames[-1]
        operands = tuple(v.name if isinstance(v, (TensorRef, TaskIdRef)) else as_expr(v) for v in values)
        frame.yields = operands
        if not frame.returns:
            hints = frame.hints or [v.name if isinstance(v, (TensorRef, TaskIdRef)) else "v" for v in values]
            frame.returns = tuple(self._fresh(f"{h}_out", numbered=False) for h in hints[:len(values)])
            for var, value in zip(frame.returns, values):
                if isinstance(value, TensorRef):
                    self._types[var] = self._types[value.name]
                    frame.refs.append(TensorRef(self, var))
                elif isinstance(value, TaskIdRef):
                    frame.refs.append(TaskIdRef(self, var))
                else:
                    frame.refs.append(ScalarRef(Sym(var)))
        return frame.refs[0] if len(frame.refs) == 1 else tuple(frame.refs)

    @contextmanager
    def if_(self, cond: Any, *, name: str = "") -> Iterator[None]:
        """``if cond:`` (then branch); follow with ``with tb.else_():`` for the else branch."""
        frame = _Frame("then", ())
        self._frames.append(frame)
        with self._block() as body:
            yield
        self._frames.pop()
        self._emit(If(as_expr(cond), tuple(body), None, frame.yields or (), (), frame.returns, name))
        self._last_then = frame

    @contextmanager
    def else_(self) -> Iterator[None]:
        block = self._blocks[-1]
        if not block or not isinstance(block[-1], If) or block[-1].else_body is not None:
            raise ValueError("else_ must follow an if_ block directly")
        stmt, then = block[-1], self._last_then
        frame = _Frame("else", ())
        frame.returns, frame.refs = then.returns, then.refs
        self._frames.append(frame)
        with self._block() as body:
            yield
        self._frames.pop()
        block[-1] = replace(stmt, else_body=tuple(body), else_yields=frame.yields or ())

    # -- result ------------------------------------------------------------------------------
    def program(self) -> TaskProgram:
        """The validated program (a :class:`~neuronsim.machine.ir.errors.ProgramError` names what is wrong)."""
        if len(self._blocks) != 1:
            raise ValueError("program() inside an open scope, loop or branch")
        function = Function(self.name, tuple(self.params), tuple(self._blocks[0]), self.auto_scope)
        program, _ = validate_tasks(TaskProgram(dict(self.kernels), function, Runtime(self.cores)))
        return program

