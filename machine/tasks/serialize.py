"""Write task programs as canonical ``neuronsim.tasks/1`` JSON (the inverse of :mod:`neuronsim.machine.tasks.format`).

Key order is fixed, defaults are left out where the format gives them (``start`` 0, ``step`` 1,
``direction`` ``in``...), expressions are written as text that parses back to the same tree,
``x-`` keys are kept.  ``loads_tasks(dumps_tasks(p)) == p`` for every valid program ``p``
(kernels' in-memory ``impl`` aside).
"""

from __future__ import annotations

from typing import Any, TextIO

from neuronsim.machine.formats.jsonio import dumps_strict, write_text
from neuronsim.machine.tasks.expr import Sym, render
from neuronsim.machine.tasks.ir import (
    Alias, Assemble, Call, CompilerDep, Create, For, GetSlot, If, IndexedView, IterArg, Kernel, MemRef, Operand,
    RuntimeScope, ScalarLet, ScalarParam, SetSlot, Slice, Stmt, TaskArray, TaskDummy, TaskInvalid, TaskProgram,
    TensorParam, TensorType, TensorView, While,
)

__all__ = ["tasks_to_json", "dumps_tasks", "save_tasks", "compiler_dep_json"]


def compiler_dep_json(dep: CompilerDep) -> dict[str, Any]:
    """One ``compiler_deps`` entry: ``{"on": v}``, a loop fan-in with ``loop`` and ``calls``, or
    a loop-carried dep with ``carried``.

    >>> compiler_dep_json(CompilerDep("t", carried="blocks")), compiler_dep_json(CompilerDep("R", "L", ("a",)))
    ({'on': 't', 'carried': 'blocks'}, {'on': 'R', 'loop': 'L', 'calls': ['a']})
    """
    out: dict[str, Any] = {"on": dep.on}
    if dep.loop:
        out.update(loop=dep.loop, calls=list(dep.calls))
    if dep.carried:
        out["carried"] = dep.carried
    return out


def _expr(value: Any) -> Any:
    return value if isinstance(value, int) else render(value)


def _operand(value: Operand) -> Any:
    if isinstance(value, str):
        return value
    return value.name if isinstance(value, Sym) else _expr(value)


def _exprs(values) -> list[Any]:
    return [_expr(v) for v in values]


def _view(view: TensorView) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if view.layout != "nd":
        out["layout"] = view.layout
    if view.strides is not None:
        out["strides"] = list(view.strides)
    if view.valid_shape is not None:
        out["valid_shape"] = _exprs(view.valid_shape)
    if view.pad is not None:
        out["pad"] = view.pad
    return out


def _memref(m: MemRef) -> dict[str, Any]:
    return {"base": m.base, "offset": _expr(m.offset), "size": m.size}


def _type(t: TensorType, out: dict[str, Any]) -> dict[str, Any]:
    out["shape"] = _exprs(t.shape)
    out["dtype"] = t.dtype
    if t.view is not None:
        out["view"] = _view(t.view)
    if t.memref is not None:
        out["memref"] = _memref(t.memref)
    return out


def _kernel(k: Kernel) -> dict[str, Any]:
    out: dict[str, Any] = {"params": [{"name": p.name, "direction": p.direction.value} for p in k.params]}
    if k.returns:
        out["returns"] = list(k.returns)
    out["cost"] = int(k.cost) if float(k.cost).is_integer() else k.cost
    if k.fn is not None:
        out["fn"] = k.fn
    out.update(k.extras)
    return out


def _param(p: TensorParam | ScalarParam) -> dict[str, Any]:
    if isinstance(p, ScalarParam):
        out: dict[str, Any] = {"name": p.name, "scalar": "int"}
        if p.value is not None:
            out["value"] = p.value
    else:
        out = _type(p.type, {"name": p.name})
        if p.direction.value != "in":
            out["direction"] = p.direction.value
    out.update(p.extras)
    return out


def _iter_args(args: tuple[IterArg, ...]) -> list[dict[str, Any]]:
    return [{"name": a.name, "init": _operand(a.init)} for a in args]


def _call(c: Call) -> dict[str, Any]:
    out: dict[str, Any] = {"submit" if c.submit else "call": c.kernel, "name": c.name,
                           "args": [_operand(a) for a in c.args]}
    if c.outputs:
        out["outputs"] = list(c.outputs)
    if c.submit:
        out["task_id"] = c.task_id
    if c.deps:
        out["deps"] = list(c.deps)
    if c.directions is not None:
        out["directions"] = [d.value for d in c.directions]
    if c.no_dep:
        out["no_dep"] = list(c.no_dep)
    if c.compiler_deps:
        out["compiler_deps"] = [compiler_dep_json(d) for d in c.compiler_deps]
    if c.manual_candidate:
        out["compiler_manual_candidate"] = True
    return out


def _loop_tail(stmt: For | While, out: dict[str, Any]) -> dict[str, Any]:
    if stmt.iter_args:
        out["iter_args"] = _iter_args(stmt.iter_args)
    out["body"] = _body(stmt.body)
    if stmt.yields:
        out["yield"] = [_operand(v) for v in stmt.yields]
    if stmt.returns:
        out["returns"] = list(stmt.returns)
    return out


def _stmt(s: Stmt) -> dict[str, Any]:
    if isinstance(s, Call):
        out = _call(s)
    elif isinstance(s, Create):
        out = {"let": s.var, "create": _type(s.type, {})}
    elif isinstance(s, Slice):
        out = {"let": s.var, "slice": s.source, "shape": _exprs(s.shape), "offset": _exprs(s.offset)}
        if s.view is not None:
            out["view"] = _view(s.view)
    elif isinstance(s, Assemble):
        out = {"let": s.var, "assemble": s.base, "value": s.value, "offset": _exprs(s.offset)}
    elif isinstance(s, IndexedView):
        out = {"let": s.var, "indexed": s.source, "op": s.op, "shape": _exprs(s.shape), "offset": _exprs(s.offset)}
    elif isinstance(s, Alias):
        out = {"let": s.var, "alias": s.source}
    elif isinstance(s, ScalarLet):
        out = {"let": s.var, "scalar": _expr(s.value)}
    elif isinstance(s, TaskArray):
        out = {"let": s.var, "task_array": _expr(s.extent)}
    elif isinstance(s, GetSlot):
        out = {"let": s.var, "get": s.array, "index": _expr(s.index)}
    elif isinstance(s, TaskInvalid):
        out = {"let": s.var, "task_invalid": True}
    elif isinstance(s, TaskDummy):
        out = {"let": s.var, "task_dummy": list(s.deps)}
    elif isinstance(s, SetSlot):
        out = {"set": s.array, "index": _expr(s.index), "value": s.value}
    elif isinstance(s, RuntimeScope):
        out = {"scope": "manual" if s.manual else "auto"}
        if s.name:
            out["name"] = s.name
        if s.owner != "user":
            out["owner"] = s.owner
        out["body"] = _body(s.body)
    elif isinstance(s, For):
        out = {"for": s.var, "name": s.name}
        if s.start != 0:
            out["start"] = _expr(s.start)
        out["stop"] = _expr(s.stop)
        if s.step != 1:
            out["step"] = _expr(s.step)
        if s.parallel:
            out["parallel"] = True
        out = _loop_tail(s, out)
    elif isinstance(s, While):
        out = _loop_tail(s, {"while": _expr(s.cond), "name": s.name})
    elif isinstance(s, If):
        out = {"if": _expr(s.cond)}
        if s.name:
            out["name"] = s.name
        out["then"] = _body(s.then_body)
        if s.else_body is not None:
            out["else"] = _body(s.else_body)
        if s.then_yields:
            out["then_yield"] = [_operand(v) for v in s.then_yields]
        if s.else_yields:
            out["else_yield"] = [_operand(v) for v in s.else_yields]
        if s.returns:
            out["returns"] = list(s.returns)
    else:  # pragma: no cover - every statement kind is listed above
        raise TypeError(f"not a statement: {s!r}")
    out.update(s.extras)
    return out


def _body(body: tuple[Stmt, ...]) -> list[dict[str, Any]]:
    return [_stmt(s) for s in body]


def tasks_to_json(program: TaskProgram) -> dict[str, Any]:
    """The canonical JSON document of ``program``."""
    from neuronsim.machine.tasks.format import FORMAT

    f = program.function
    function: dict[str, Any] = {"name": f.name, "auto_scope": f.auto_scope, "params": [_param(p) for p in f.params],
                                "body": _body(f.body)}
    if f.manual_layer_candidate:
        function["compiler_manual_layer"] = True
    function.update(f.extras)
    doc: dict[str, Any] = {"format": FORMAT, "kernels": {k: _kernel(v) for k, v in program.kernels.items()},
                           "function": function}
    if program.runtime.cores != 4:
        doc["runtime"] = {"cores": program.runtime.cores}
    doc.update(program.extras)
    return doc


def dumps_tasks(program: TaskProgram, *, indent: int | None = 1) -> str:
    return dumps_strict(tasks_to_json(program), indent=indent, refuse_non_finite=True) + "\n"


def save_tasks(program: TaskProgram, target: str | TextIO) -> None:
    """Write ``program``; a path is written atomically (nothing half-written on error)."""
    write_text(dumps_tasks(program), target)
