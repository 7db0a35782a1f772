"""How much work a task program is, known before the orchestrator's walk runs.

The walk (:mod:`neuronsim.machine.tasks.orchestrator`) finds a program too big only once it has
submitted the instance past the limit: ten million calls in a ``for`` took minutes of
unrolling before ``check`` refused them.  :func:`estimate_task_work` counts without walking:
a ``for`` whose bounds are known from the function's scalars (and scalar ``let`` s outside
loops) multiplies its body, so the count is exact for such programs.  What depends on values
known only inside the walk (a loop bound read from an iter_arg, a ``while``, a branch on a loop
variable) counts as little as it may: the figures are *lower bounds*, so refusing a program
whose bound is past a limit never refuses one that fits.  ``dep_slots`` counts the TaskId
array slots the walk reads for deps: a whole array named in a call's ``deps`` is read slot by
slot at every execution, so a 1,048,576-slot array as a dep of a loop's call is that many reads
per iteration, work the instance count does not see.

>>> from neuronsim.machine.tasks.format import loads_tasks
>>> doc = '''{"format": "neuronsim.tasks/1", "kernels": {"k": {"params": [{"name": "d", "direction": "out"}],
...   "returns": ["d"]}}, "function": {"params": [{"name": "x", "shape": [4], "dtype": "float32",
...   "direction": "out"}, {"name": "n", "scalar": "int", "value": 1000}], "body": [
...   {"for": "i", "name": "L", "stop": "n * 1000", "body": [{"call": "k", "name": "c", "args": ["x"]}]}]}}'''
>>> estimate_task_work(loads_tasks(doc))
TaskWork(instances=1000000, iterations=1000000, calls=1, dep_slots=0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from neuronsim.machine.tasks.expr import ScalarExpr, evaluate, free_names
from neuronsim.machine.tasks.ir import (
    Call, For, If, RuntimeScope, ScalarLet, Stmt, TaskArray, TaskDummy, TaskProgram, While,
)
from neuronsim.machine.tasks.orchestrator import scalar_values

__all__ = ["TaskWork", "estimate_task_work"]


@dataclass(frozen=True, slots=True)
class TaskWork:
    """Lower bounds of one run's work, and the program's size as written."""

    instances: int
    """Task instances submitted (calls and ``task_dummy`` barriers executed)."""
    iterations: int
    """Loop iterations run, in all loops."""
    calls: int
    """Call statements in the program text (what the task passes compare pairwise)."""
    dep_slots: int
    """TaskId array slots read for deps (a whole array as a dep reads every slot, each execution)."""


def _value(expr: ScalarExpr, env: Mapping[str, int]) -> int | None:
    """``expr``'s value when every name it reads is known here, else None."""
    if not free_names(expr) <= env.keys():
        return None
    try:
        return evaluate(expr, env)
    except ArithmeticError:  # a division by zero or an overflow: the walk reports it where it is
        return None


def _trips(loop: For, env: Mapping[str, int]) -> int:
    lo, hi, step = (_value(v, env) for v in (loop.start, loop.stop, loop.step))
    if lo is None or hi is None or not step:
        return 0
    span, stride = (hi - lo, step) if step > 0 else (lo - hi, -step)
    return max(0, -(-span // stride))  # len(range(lo, hi, step)), which overflows past 2**63


def _body(body: tuple[Stmt, ...], env: dict[str, int], arrays: dict[str, int]) -> tuple[int, int, int, int]:
    """(instances, iterations, calls, dep slots) of one execution of ``body``; ``env`` holds the
    scalars known here and takes the body's own loop-invariant ``let`` s, ``arrays`` the TaskId
    arrays of known extent."""
    instances = iterations = calls = slots = 0
    for s in body:
        if isinstance(s, (Call, TaskDummy)):
            instances += 1
            calls += isinstance(s, Call)
            slots += sum(arrays.get(dep, 0) for dep in s.deps)
        elif isinstance(s, TaskArray):
            extent = _value(s.extent, env)
            if extent is not None:
                arrays[s.var] = max(extent, 0)
        elif isinstance(s, ScalarLet):
            value = _value(s.value, env)
            if value is not None:
                env[s.var] = value
        elif isinstance(s, RuntimeScope):
            n, it, c, sl = _body(s.body, env, arrays)
            instances, iterations, calls, slots = instances + n, iterations + it, calls + c, slots + sl
        elif isinstance(s, If):
            taken = _value(s.cond, env)
            sides = [_body(b, dict(env), dict(arrays)) for b in (s.then_body, s.else_body or ())]
            if taken is None:  # either side may run: the smaller one is the bound
                n, it, sl = (min(sides[0][k], sides[1][k]) for k in (0, 1, 3))
            else:
                n, it, sl = (sides[0 if taken else 1][k] for k in (0, 1, 3))
            instances, iterations, calls = instances + n, iterations + it, calls + sides[0][2] + sides[1][2]
            slots += sl
        elif isinstance(s, (For, While)):
            trips = _trips(s, env) if isinstance(s, For) else 0  # a while runs at least 0 times
            inner = {k: v for k, v in env.items() if k not in {a.name for a in s.iter_args}}
            n, it, c, sl = _body(s.body, inner, dict(arrays))
            instances, iterations, calls = instances + trips * n, iterations + trips * (1 + it), calls + c
            slots += trips * sl
    return instances, iterations, calls, slots


def estimate_task_work(program: TaskProgram, scalars: Mapping[str, int] | None = None) -> TaskWork:
    """Lower bounds of the work of one run of ``program`` with ``scalars`` (the parameters'
    values by default), without running the walk (see the module doc)."""
    instances, iterations, calls, slots = _body(program.function.body, dict(scalar_values(program, scalars)), {})
    return TaskWork(instances=instances, iterations=iterations, calls=calls, dep_slots=slots)
