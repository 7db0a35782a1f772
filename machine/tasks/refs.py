"""Handles the task builder gives back: tensors, TaskIds, TaskId arrays and scalar expressions.

A handle is a name (or, for scalars, an expression) plus the builder it belongs to; using it
(slicing a tensor, ``arr[i] = tid``, ``i * 64``) records statements in that builder.  Scalar
handles overload arithmetic and comparisons, so loop bounds and slice offsets read like Python:
``x[i * 64 : i * 64 + 64, :]``, ``tb.if_(i % 2 == 0)``; ``&``, ``|`` and ``~`` stand for
``and``, ``or`` and ``not`` (Python does not let ``and`` be overloaded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuronsim.machine.tasks.expr import Op, ScalarExpr, Sym, fold

if TYPE_CHECKING:
    from neuronsim.machine.tasks.task_builder import TaskBuilder

__all__ = ["ScalarRef", "TensorRef", "TaskIdRef", "TaskArrayRef", "NoDepArg", "no_dep", "as_expr"]


def as_expr(value: Any) -> ScalarExpr:
    """The expression of an int, a :class:`ScalarRef` or an expression."""
    if isinstance(value, ScalarRef):
        return value.expr
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, Sym, Op)):
        return value
    raise TypeError(f"expected an integer or a scalar, got {value!r}")


def _op(name: str, a: Any, b: Any) -> ScalarRef:
    return ScalarRef(fold(Op(name, (as_expr(a), as_expr(b)))))


class ScalarRef:
    """A scalar expression (a loop variable, a scalar parameter, or arithmetic on them)."""

    __slots__ = ("expr",)
    __hash__ = object.__hash__

    def __init__(self, expr: ScalarExpr) -> None:
        self.expr = expr

    def __repr__(self) -> str:
        from neuronsim.machine.tasks.expr import render

        return f"ScalarRef({render(self.expr)!r})"

    def __add__(self, o): return _op("+", self, o)
    def __radd__(self, o): return _op("+", o, self)
    def __sub__(self, o): return _op("-", self, o)
    def __rsub__(self, o): return _op("-", o, self)
    def __mul__(self, o): return _op("*", self, o)
    def __rmul__(self, o): return _op("*", o, self)
    def __floordiv__(self, o): return _op("//", self, o)
    def __rfloordiv__(self, o): return _op("//", o, self)
    def __mod__(self, o): return _op("%", self, o)
    def __rmod__(self, o): return _op("%", o, self)
    def __lt__(self, o): return _op("<", self, o)
    def __le__(self, o): return _op("<=", self, o)
    def __gt__(self, o): return _op(">", self, o)
    def __ge__(self, o): return _op(">=", self, o)
    def __eq__(self, o): return _op("==", self, o)  # type: ignore[override]
    def __ne__(self, o): return _op("!=", self, o)  # type: ignore[override]
    def __and__(self, o): return _op("and", self, o)
    def __or__(self, o): return _op("or", self, o)
    def __neg__(self): return ScalarRef(fold(Op("neg", (self.expr,))))
    def __invert__(self): return ScalarRef(fold(Op("not", (self.expr,))))

    def __bool__(self) -> bool:
        raise TypeError("a scalar of a task program has no value while the program is built; "
                        "use tb.if_(...) / tb.while_(...) for control flow")


def _window_dim(item: Any, size: ScalarExpr) -> tuple[ScalarExpr, ScalarExpr]:
    """``(offset, extent)`` of one index of ``tensor[...]``."""
    if isinstance(item, slice):
        if item.step not in (None, 1):
            raise ValueError("tensor slices take no step")
        start = as_expr(item.start) if item.start is not None else 0
        stop = as_expr(item.stop) if item.stop is not None else size
        if isinstance(stop, Op) and stop.op == "+" and stop.args[0] == start:
            return start, stop.args[1]  # x[o : o + n]: the extent is n even when o is symbolic
        return start, fold(Op("-", (stop, start)))
    return as_expr(item), 1


class TensorRef:
    """A tensor variable; ``t[a:b, :]`` records a slice, ``t.slice(shape, offset)`` too."""

    __slots__ = ("builder", "name")

    def __init__(self, builder: TaskBuilder, name: str) -> None:
        self.builder, self.name = builder, name

    def __repr__(self) -> str:
        return f"TensorRef({self.name!r})"

    @property
    def shape(self) -> tuple[ScalarExpr, ...]:
        return self.builder.type_of(self).shape

    @property
    def dtype(self) -> str:
        return self.builder.type_of(self).dtype

    def __getitem__(self, index: Any) -> TensorRef:
        items = index if isinstance(index, tuple) else (index,)
        shape = self.shape
        if len(items) > len(shape):
            raise IndexError(f"{len(items)} indices for a {len(shape)}-dimensional tensor")
        items = items + (slice(None),) * (len(shape) - len(items))
        offset, extent = zip(*(_window_dim(item, size) for item, size in zip(items, shape)))
        return self.builder.slice(self, tuple(extent), tuple(offset))

    def slice(self, shape, offset, **kwargs: Any) -> TensorRef:
        return self.builder.slice(self, shape, offset, **kwargs)


class TaskIdRef:
    """A ``Scalar[TASK_ID]`` variable."""

    __slots__ = ("builder", "name")

    def __init__(self, builder: TaskBuilder, name: str) -> None:
        self.builder, self.name = builder, name

    def __repr__(self) -> str:
        return f"TaskIdRef({self.name!r})"


class TaskArrayRef:
    """An ``Array[N, TASK_ID]``: ``arr[i] = tid`` writes a slot, ``arr[k]`` reads one."""

    __slots__ = ("builder", "name")

    def __init__(self, builder: TaskBuilder, name: str) -> None:
        self.builder, self.name = builder, name

    def __repr__(self) -> str:
        return f"TaskArrayRef({self.name!r})"

    def __setitem__(self, index: Any, value: TaskIdRef) -> None:
        self.builder.set_slot(self, index, value)

    def __getitem__(self, index: Any) -> TaskIdRef:
        return self.builder.get_slot(self, index)


class NoDepArg:
    """An argument marked ``pl.no_dep(x)``: its slot is not tracked by the runtime."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: TensorRef) -> None:
        self.tensor = tensor


def no_dep(tensor: TensorRef) -> NoDepArg:
    """Mark a call argument as ``NoDep`` (PyPTO ``pl.no_dep``)."""
    return NoDepArg(tensor)
