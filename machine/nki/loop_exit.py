"""A legacy loop body that ends in ``return`` or ``break``, as NKI reads it.

NKI's legacy frontend traces an ``nl.affine_range`` / ``nl.sequential_range`` body once, with
a symbolic index, and the device runs that body for every iteration: a body whose last
statement is ``return out`` (a workshop kernel's ``return`` indented one level too deep) still
computes every iteration, then returns.  neuronsim does the same for a loop it keeps as a
program loop.  A loop it unrolls (a mask that depends on the index, say) runs the body in
Python once per iteration, and the ``return`` would end the kernel after the first one; so the
kernel function is traced again as NKI reads it: the trailing ``break`` dropped, the trailing
``return`` moved after the loop (what followed the loop never ran in NKI either).

Only a loop of the kernel function's own top-level statements whose body ends in the exit, in
a function without closure variables, is rewritten; any other early exit stays the tracer's
refusal (:func:`check_loops_finished`).  Line numbers are
the source's, so every later message names the kernel's own lines.
"""

from __future__ import annotations

import ast
import linecache
from typing import Any

from neuronsim.machine.nki.errors import LeftLoopEarly

__all__ = ["body_exit_after_loop", "check_loops_finished"]


def body_exit_after_loop(func: Any, path: str, line: int) -> Any | None:
    """``func`` compiled again with the ``return`` / ``break`` ending the body of its loop at
    ``path:line`` taken out of the body (module doc), or None where that is not possible."""
    code = getattr(func, "__code__", None)
    if code is None or code.co_freevars or code.co_filename != path:
        return None
    try:
        tree = ast.parse("".join(linecache.getlines(path)), path)
    except (SyntaxError, ValueError):
        return None
    definition = _definition(tree, code)
    if definition is None:
        return None
    for k, statement in enumerate(definition.body):
        if isinstance(statement, ast.For) and statement.lineno == line and statement.body and not statement.orelse:
            last = statement.body[-1]
            if not isinstance(last, (ast.Return, ast.Break)):
                return None
            statement.body = statement.body[:-1] or [ast.Pass(lineno=last.lineno, col_offset=last.col_offset)]
            definition.body = definition.body[:k + 1] + ([last] if isinstance(last, ast.Return) else
                                                          definition.body[k + 1:])
            break
    else:
        return None
    definition.decorator_list = []
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=[definition], type_ignores=[]), path, "exec"), func.__globals__, namespace)
    rewritten = namespace[definition.name]
    rewritten.__defaults__, rewritten.__kwdefaults__ = func.__defaults__, func.__kwdefaults__
    rewritten.__qualname__ = func.__qualname__
    return rewritten


def _definition(tree: ast.Module, code: Any) -> ast.FunctionDef | None:
    """The ``def`` of ``code`` in its file's tree: its name, at its first line (a decorated
    function's code starts at its first decorator)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if first == code.co_firstlineno:
                return node
    return None


def check_loops_finished(tracer: Any) -> None:
    """Refuse the kernel ``tracer`` traced if it left an unrolled NKI loop early (its
    ``left_early``; a legacy body ending in the exit is first traced again as NKI reads it,
    :func:`body_exit_after_loop`): NKI traces a legacy body once for all its iterations; NKI
    0.7 runs a Python loop as it traces."""
    if tracer.left_early is not None:
        where, kind, at, trips = tracer.left_early
        why = ("NKI runs every iteration of a body it traced once, which neuronsim does only for loops it "
               "keeps symbolic" if tracer.generation == "legacy" else
               "NKI 0.7 runs a Python loop as the kernel is traced, so the iterations after it are never traced")
        raise LeftLoopEarly(where, f"the kernel leaves this nl.{kind}_range loop by return or break in iteration "
                                   f"{at} of {trips}: {why}; return after the loop")
