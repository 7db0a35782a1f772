"""Task programs (``neuronsim.tasks/1``): orchestration code that submits kernels as tasks.

Design note: what maps to what in PyPTO (``hw-native-sys/pypto``) and its runtime
(``hw-native-sys/simpler``).

=============================  ===============================================================
neuronsim                      PyPTO
=============================  ===============================================================
:class:`~ir.TaskProgram`       ``ir.Program`` holding one Orchestration function and the
                               InCore kernels it calls (kernel bodies are opaque: a cost and
                               optionally a numpy function)
:class:`~ir.Function`          the Orchestration ``Function``; ``auto_scope`` is its attr,
                               ``manual_layer_candidate`` the transient
                               ``__compiler_auto_manual_layer_candidate``
:class:`~ir.Kernel`            a callee ``Function`` with ``param_directions_`` (In / Out /
                               InOut / Scalar) and a trailing ``return`` of some params
:class:`~ir.Call`              ``ir.Submit`` (``submit=True``: ``pl.submit``, tuple result
                               ``(outputs..., Scalar[TASK_ID])``, ``deps_``) or a plain
                               ``ir.Call``; ``directions`` = ``attrs["arg_directions"]``,
                               ``deps`` = ``manual_dep_edges``, ``compiler_deps`` =
                               ``compiler_manual_dep_edges``, ``no_dep`` =
                               ``arg_direction_overrides``, ``manual_candidate`` =
                               ``__compiler_auto_manual_scope_candidate``
:class:`~ir.Create` ...        ``tensor.create`` / ``tensor.slice`` / ``tensor.assemble`` /
:class:`~ir.IndexedView`       gather / scatter family (``tensor.gather``, ``tile.mscatter``...)
:class:`~ir.TaskArray` ...     ``pl.array.create(N, pl.TASK_ID)``, ``array.update_element``
                               (:class:`~ir.SetSlot`), ``array.get_element``
                               (:class:`~ir.GetSlot`)
:class:`~ir.TaskInvalid`,      ``pl.system.task_invalid()``, ``pl.system.task_dummy(deps=)``
:class:`~ir.TaskDummy`
:class:`~ir.RuntimeScope`      ``RuntimeScopeStmt`` (``pl.scope()`` AUTO, ``pl.manual_scope()``
                               MANUAL); ``owner="compiler"`` for scopes the compiler placed
:class:`~ir.For` / ``While``   ``ForStmt`` (``pl.range`` / ``pl.parallel``) / ``WhileStmt``
/ ``If``                       / ``IfStmt`` with iter_args, trailing ``yield_`` and return vars
:class:`~ir.TensorView`,       ``TensorView`` (layout ND / DN, strides, ``valid_shape``, pad)
:class:`~ir.MemRef`            and ``MemRef`` (base, byte offset, size) of a ``TensorType``
=============================  ===============================================================

Two deliberate differences: variables are names (SSA: defined once, visible in their block),
while TaskId arrays are mutable host arrays; and calls and loops carry unique *labels* so that
reports, traces and loop fan-in deps can name them.

Modules: :mod:`~neuronsim.machine.tasks.expr` (scalar expressions), :mod:`~neuronsim.machine.tasks.ir`,
:mod:`~neuronsim.machine.tasks.format` / :mod:`~neuronsim.machine.tasks.serialize` (JSON),
:mod:`~neuronsim.machine.tasks.task_validate` (checks and symbol table),
:mod:`~neuronsim.machine.tasks.task_builder` and :mod:`~neuronsim.machine.tasks.refs` (Python builder),
:mod:`~neuronsim.machine.tasks.task_geometry` (byte-exact regions).
The format is documented in ``docs/tasks-format.md``.
"""

from neuronsim.machine.tasks.expr import Op, ScalarExpr, Sym, evaluate, parse_expr, render
from neuronsim.machine.tasks.format import FORMAT, is_task_document, load_tasks, loads_tasks, parse_tasks
from neuronsim.machine.tasks.ir import (
    Alias, ArgDirection, Assemble, Call, CompilerDep, Create, For, Function, GetSlot, If, IndexedView, IterArg,
    Kernel, KernelParam, MemRef, ParamDirection, Runtime, RuntimeScope, ScalarLet, ScalarParam, SetSlot, Slice,
    Stmt, TaskArray, TaskDummy, TaskInvalid, TaskProgram, TensorParam, TensorType, TensorView, While, map_calls, walk,
)
from neuronsim.machine.tasks.serialize import dumps_tasks, save_tasks, tasks_to_json
from neuronsim.machine.tasks.task_validate import Symbols, validate_tasks

__all__ = [
    "FORMAT", "Alias", "ArgDirection", "Assemble", "Call", "CompilerDep", "Create", "For", "Function", "GetSlot",
    "If", "IndexedView", "IterArg", "Kernel", "KernelParam", "MemRef", "Op", "ParamDirection", "Runtime",
    "RuntimeScope", "ScalarExpr", "ScalarLet", "ScalarParam", "SetSlot", "Slice", "Stmt", "Sym", "Symbols",
    "TaskArray", "TaskDummy", "TaskInvalid", "TaskProgram", "TensorParam", "TensorType", "TensorView", "While",
    "dumps_tasks", "evaluate", "is_task_document", "load_tasks", "loads_tasks", "map_calls", "parse_expr",
    "parse_tasks", "render", "save_tasks", "tasks_to_json", "validate_tasks", "walk",
]
