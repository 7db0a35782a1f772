"""The loop indices in force at a kernel statement, read from the kernel's own frames.

Current-API kernels loop with Python's ``range()`` as often as with ``nl.affine_range``, and
both hand the body plain ints: no tracer object ever sees the loop variable.  So the indices
come from where they live, the frames of the kernel (and of its helpers) on the stack:

* the kernel's source is parsed once per file (:mod:`ast`); for each function (a code object)
  the ``for`` statements of its own body, not of nested functions, are listed with the lines
  their body spans and the names their target binds (comprehensions likewise);
* at a statement (code object, line) the loops whose body holds that line are the ones in
  force; their variables are read from the frame's locals, and those holding an ``int`` are
  the indices (a ``for tile in tiles`` loop binds no int and is left out; a variable of a loop
  the tracer keeps as a program loop holds a symbolic index and is named by the tracer);
* frames are read from the innermost kernel frame out to the frame that called the kernel
  (:data:`ENTRY_CODES`), skipping neuronsim's own, so a helper called inside a loop reports the
  caller's loop variables, outermost first.

Both lookups are cached: by code object and line, so a traced loop body costs dict lookups
and one read of the frame's locals per NKI call.

>>> import sys
>>> def body():
...     return loop_indices(sys._getframe(), entry={id(run.__code__): run.__code__})
>>> def kernel():
...     seen = []
...     for i in range(2):
...         for tile in ["a"]:
...             seen.append(body())
...     return seen
>>> def run():
...     return kernel()
>>> run()
[{'i': 0}, {'i': 1}]
"""

from __future__ import annotations

import ast
import ctypes
import linecache
import sys
from collections.abc import Iterator, Mapping
from types import CodeType, FrameType
from typing import Any

from neuronsim.machine.nki.errors import _CODE, _code_info, frame_line

__all__ = ["loop_indices", "ENTRY_CODES", "KERNEL_CALLS", "mark_kernel_call", "mark_entry", "loops_at",
           "entry_locals", "restore_locals", "TILE_TYPES", "for_statement"]

#: ``id -> code`` of the frames that call a kernel (``frontend._run``): the walk stops there.
#: Caches here are keyed by a code object's ``id`` (hashing a code object hashes its constants
#: each time) and hold the code, so the id is never reused while cached.
ENTRY_CODES: dict[int, CodeType] = {}

_Span = tuple[int, int, tuple[str, ...]]
_FILES: dict[str, list[tuple[ast.AST, int, int]] | None] = {}
_FUNCTIONS: dict[int, tuple[CodeType, tuple[_Span, ...]]] = {}
_AT: dict[tuple[int, int], tuple[str, ...]] = {}
_COMPREHENSIONS = ("<listcomp>", "<genexpr>", "<setcomp>", "<dictcomp>")


def _names(target: ast.AST) -> tuple[str, ...]:
    """The names a ``for`` target binds (``i``, ``i, j``, ``(i, (j, k))``)."""
    if isinstance(target, ast.Name):
        return (target.id,)
    if isinstance(target, (ast.Tuple, ast.List)):
        return tuple(n for elt in target.elts for n in _names(elt))
    return ()


def _scopes(path: str) -> list[tuple[ast.AST, int, int]] | None:
    """Every function and comprehension of the file: ``(node, first line, last line)``."""
    if path not in _FILES:
        try:
            tree = ast.parse("".join(linecache.getlines(path)))
        except (SyntaxError, ValueError):
            tree = None
        scopes = None
        if tree is not None:
            scopes = []
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
                                     ast.DictComp, ast.GeneratorExp)):
                    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
                    scopes.append((node, first, node.end_lineno or node.lineno))
        _FILES[path] = scopes
    return _FILES[path]


def _own_loops(node: ast.AST) -> tuple[_Span, ...]:
    """The ``for`` loops of a function's own body (nested functions and classes left out), or
    the generators of a comprehension: ``(first body line, last body line, names)``."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        names = tuple(n for gen in node.generators for n in _names(gen.target))
        return ((node.lineno, node.end_lineno or node.lineno, names),) if names else ()
    spans: list[_Span] = []
    for item in _own_statements(node):
        if isinstance(item, (ast.For, ast.AsyncFor)) and item.body:
            names = _names(item.target)
            if names:
                spans.append((item.body[0].lineno, item.body[-1].end_lineno or item.body[-1].lineno, names))
    spans.sort()  # outer loops start first
    return tuple(spans)


def _own_statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement of a function's own body, nested ones included (nested functions and
    classes left out; a lambda or a comprehension has none)."""
    stack = list(getattr(node, "body", ())) if not isinstance(node, ast.Lambda) else []
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield item
        stack.extend(child for child in ast.iter_child_nodes(item) if isinstance(child, ast.stmt))


def for_statement(path: str, line: int) -> ast.For | None:
    """The ``for`` statement at ``path:line`` in a function of the file (None: none there, or the
    file does not parse); from the file's parse this module keeps."""
    for node, first, last in _scopes(path) or ():
        if first <= line <= last:
            found = next((item for item in _own_statements(node) if isinstance(item, ast.For) and item.lineno == line),
                         None)
            if found is not None:
                return found
    return None


def under_program_if(code: CodeType, line: int) -> bool:
    """Whether ``line`` of ``code``'s function lies in a branch of one of its own ``if``
    statements (nested functions and classes left out) whose test reads the SPMD program's
    coordinates: ``nl.program_id(...)``, or a name the function binds from one (``pid =
    nl.program_id(0)``).  A test Python decides alike for every program (``if training:``) is
    a choice of the trace, not a branch of the compiled kernel."""
    for node in _nodes_of(code):
        statements = list(_own_statements(node))
        derived = _program_names(statements)
        if any(item.body[0].lineno <= line <= _last_line((item.orelse or item.body)[-1])
               and _reads_program(item.test, derived) for item in statements if isinstance(item, ast.If)):
            return True
    return False


def _reads_program(expr: ast.AST, names: set[str]) -> bool:
    """Whether ``expr`` calls ``program_id`` or reads one of ``names``."""
    return any((isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "program_id")
               or (isinstance(n, ast.Name) and n.id in names) for n in ast.walk(expr))


def _program_names(statements: list[ast.stmt]) -> set[str]:
    """Names bound (``=``) from an expression reading the program's coordinates, transitively."""
    names: set[str] = set()
    assigns = [item for item in statements if isinstance(item, ast.Assign)]
    while True:
        found = {n.id for item in assigns if _reads_program(item.value, names)
                 for bound in item.targets for n in ast.walk(bound) if isinstance(n, ast.Name)}
        if found <= names:
            return names
        names |= found


def _last_line(node: ast.AST) -> int:
    return node.end_lineno or node.lineno


#: The code of ``Kernel.__call__``: a frame called through it is a kernel's top level, even
#: when a host function called the kernel (machine/nki/kernel.py marks it).
KERNEL_CALLS: dict[int, CodeType] = {}


def mark_kernel_call(code: CodeType) -> None:
    """Note ``code`` as the call of a kernel object (see :data:`KERNEL_CALLS`)."""
    KERNEL_CALLS[id(code)] = code


def mark_entry(code: CodeType) -> None:
    """Stop :func:`loop_indices` at frames running ``code`` (the caller of the kernel)."""
    ENTRY_CODES[id(code)] = code


def _function_loops(code: CodeType) -> tuple[_Span, ...]:
    cached = _FUNCTIONS.get(id(code))
    found = cached[1] if cached is not None else None
    if found is None:
        found = tuple(span for node in _nodes_of(code) for span in _own_loops(node))
        _FUNCTIONS[id(code)] = (code, found)
    return found


def _nodes_of(code: CodeType) -> Iterator[ast.AST]:
    """The function or comprehension nodes of ``code``'s file that ``code`` was compiled from."""
    comprehension = code.co_name in _COMPREHENSIONS
    for node, first, _last in _scopes(code.co_filename) or ():
        if comprehension != isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        named = getattr(node, "name", "<lambda>" if isinstance(node, ast.Lambda) else code.co_name)
        if named == code.co_name and (first == code.co_firstlineno or node.lineno == code.co_firstlineno):
            yield node


def loops_at(code: CodeType, line: int) -> tuple[str, ...]:
    """The loop variables in force at ``line`` of ``code``'s function, outermost first."""
    key = (id(code), line)
    names = _AT.get(key)
    if names is None:
        names = tuple(n for lo, hi, bound in _function_loops(code) if lo <= line <= hi for n in bound)
        _AT[key] = names
    return names


def loop_indices(frame: FrameType | None, kept: dict[str, Any] | None = None,
                 entry: dict[int, CodeType] | None = None) -> dict[str, Any]:
    """``{variable: int}`` of the loops in force in the kernel frames from ``frame`` out to a
    frame of ``entry`` (default :data:`ENTRY_CODES`), outermost first; a variable in ``kept`` (a
    kept loop's variable -> its loop name) that holds no int maps to that name.  (Runs for every
    NKI call: the caches are read inline.)"""
    entry = ENTRY_CODES if entry is None else entry
    found: list[tuple[str, Any]] = []
    while frame is not None:
        code = frame.f_code
        key = id(code)
        if key in entry:
            break
        info = _CODE.get(key) or _code_info(code)
        if not info[0]:
            line = frame_line(frame)
            names = _AT.get((key, line))
            if names is None:
                names = loops_at(code, line)
            if names:
                values = frame.f_locals
                pairs = []
                for name in names:
                    value = values.get(name)
                    if value.__class__ is int or (isinstance(value, int) and not isinstance(value, bool)):
                        pairs.append((name, int(value)))
                    elif kept and name in kept:
                        pairs.append((name, kept[name]))
                found = pairs + found  # an outer frame's loops come first
        frame = frame.f_back
    return dict(found)


# -- a symbolic loop's body, run once per iteration --------------------------------------------
# The legacy API traces an affine / sequential loop's body once, with a symbolic index: a Python
# statement of the body (``w = w // 2``) runs once.  Unrolled (a block picked by the loop's
# variable), the body runs once per iteration, so each iteration after the first starts from
# the plain values and the tiles the frame held when the loop began; each then runs the
# statement once, and after the loop the frame holds what one run of the body left, as NKI's
# single trace does.  A tile too: ``v = nl.copy(v)`` in the body reads the tile ``v`` held when
# the loop began in every iteration of the device's loop, as it does in a loop kept as one
# (nki-samples' blockwise matmul, blockwise_mm.py:708, unrolled by an indirect load: iteration
# 1 read iteration 0's copy, a false carried RAW).  Other objects are left alone.

_PLAIN = (int, float, bool, str, bytes, complex, type(None))
#: The frontend's tile classes (machine/nki/tiles.py registers them: it sits above this module).
TILE_TYPES: list[type] = []


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN) or type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0


def entry_locals(frame: FrameType | None, skip: str) -> dict[str, Any]:
    """The plain values (numbers, strings, tuples of them) and the tiles bound in ``frame``, but
    ``skip``."""
    if frame is None:
        return {}
    return {name: value for name, value in frame.f_locals.items() if name != skip and _restored(value)}


def _restored(value: Any) -> bool:
    return _plain(value) or isinstance(value, tuple(TILE_TYPES))


def restore_locals(frame: FrameType | None, entry: Mapping[str, Any]) -> None:
    """Bind again in ``frame`` each name of ``entry`` that now holds another plain value or tile.

    >>> import sys
    >>> def body():
    ...     w = 8
    ...     entry = entry_locals(sys._getframe(), "i")
    ...     seen = []
    ...     for i in range(3):
    ...         restore_locals(sys._getframe(), entry)
    ...         w = w // 2
    ...         seen.append(w)
    ...     return seen
    >>> body()
    [4, 4, 4]
    """
    if frame is None or not entry:
        return
    values = frame.f_locals
    changed = [name for name, value in entry.items()
               if name in values and values[name] is not value and _restored(values[name])]
    if not changed:
        return
    if sys.version_info >= (3, 13):  # PEP 667: f_locals writes through
        for name in changed:
            frame.f_locals[name] = entry[name]
        return
    for name in changed:  # the snapshot dict, written back into the frame's fast locals
        values[name] = entry[name]
    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
