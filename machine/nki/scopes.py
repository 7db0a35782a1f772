"""The block scope the legacy NKI API gives tensors made in its loops
(``err_local_variable_used_out_of_scope``).

The legacy errors page: "control blocks in if/else/for statements will introduce their own
scope for tensors.  A tensor defined in if/else/for control blocks are not allowed to be used
outside of the scope."  Its examples are a tile loaded in both branches of an ``if`` and
stored after it, and ``data = data + i_tile`` in a ``sequential_range`` body stored after the
loop (the fix: declare the tile before the block and write it with ``t[...] =``).

Only the second is refused here: a tile made in the body of an ``nl.affine_range`` /
``nl.sequential_range`` loop, which NKI keeps as one block of the program (a new tile each
iteration), used after the loop.  An ``if`` on a value Python knows at trace time is no block
of the compiled program, and kernels that ran on devices use tiles made in one after it (vLLM's
flash paged attention, ``if num_head > 1: head_id = nisa.iota(...)``; neuronx-distributed's
``find_index`` and Mamba2), so it scopes nothing.

A tile's definition is its declaring kernel line (``x-source``), when that line binds a
variable (``tmp = nl.load(a)``); a use is the line of an NKI call taking the tile and naming
that variable.  (The page's rule is of local variables: a tile put in a list made outside the
loop and reached as ``tiles[t]`` is no variable of the loop.)  Both lines are placed in the
kernel file's syntax (:mod:`ast`, parsed once per file): the innermost function holding both,
then the innermost NKI loop body of that function's own statements (nested functions are
theirs) holding the definition.  A use outside that body's lines is refused, unless it lies in
a function nested in that function (a helper the body calls, nki-samples' collective matmul:
it runs where it is called).  Only line spans are compared, so a use in a later iteration of
the same body is within scope, as the page's fix (a store inside the loop) is.

>>> import textwrap
>>> source = textwrap.dedent('''
...     def kernel(a):
...         for i in nl.sequential_range(4):
...             if i < 2:
...                 data = load(a)
...             store(data)
...         store(data)
... ''')
>>> spans = _function_blocks(ast.parse(source))
>>> _scope_left((spans, {}), 5, 7)
(4, 6)
>>> _scope_left((spans, {}), 5, 6) is None
True
"""

from __future__ import annotations

import ast
import linecache
import re
from typing import Any

from neuronsim.machine.nki.errors import NkiError, SourceLine
from neuronsim.machine.nki.layout import Layout

__all__ = ["check_uses"]

_Block = tuple[int, int]
_Function = tuple[int, int, tuple[_Block, ...]]
#: ``x = ...`` (a tile's variable) at the start of a kernel line
_BOUND = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
#: per file: its functions' spans and their own blocks, and the answers already given
_FILES: dict[str, tuple[list[_Function], dict[tuple[int, int], _Block | None]] | None] = {}


def _nki_range(call: ast.AST) -> bool:
    """``nl.affine_range(...)`` / ``nl.sequential_range(...)``: a loop NKI keeps, its body one
    block of the program."""
    func = call.func if isinstance(call, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("affine_range", "sequential_range")


def _function_blocks(tree: ast.AST) -> list[_Function]:
    """Every function of ``tree``: ``(first line, last line, the blocks of its own statements)``."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        blocks: list[_Block] = []
        stack = list(node.body)
        while stack:
            item = stack.pop()
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(item, ast.For) and _nki_range(item.iter) and item.body:
                blocks.append((item.body[0].lineno, item.body[-1].end_lineno or item.body[-1].lineno))
            stack.extend(child for child in ast.iter_child_nodes(item) if isinstance(child, ast.stmt))
        out.append((node.lineno, node.end_lineno or node.lineno, tuple(blocks)))
    return out


def _parsed(path: str) -> tuple[list[_Function], dict] | None:
    if path not in _FILES:
        try:
            _FILES[path] = (_function_blocks(ast.parse("".join(linecache.getlines(path)))), {})
        except (SyntaxError, ValueError):
            _FILES[path] = None
    return _FILES[path]


def _scope_left(parsed: tuple[list[_Function], dict], defined: int, used: int) -> _Block | None:
    """The block (its lines) a tensor defined at line ``defined`` is scoped to, when line
    ``used`` lies outside it; else None (cached per pair of lines)."""
    functions, answers = parsed
    key = (defined, used)
    if key not in answers:
        around = [f for f in functions if f[0] <= defined <= f[1] and f[0] <= used <= f[1]]
        found = None
        inner = max(around, key=lambda f: f[0]) if around else None  # the innermost
        # a use in a function nested in it (a helper the body calls) runs where it is called
        if inner is not None and not any(inner[0] < f[0] <= used <= f[1] for f in functions):
            blocks = inner[2]
            holding = [b for b in blocks if b[0] <= defined <= b[1]]
            if holding:
                block = min(holding, key=lambda b: b[1] - b[0])
                found = None if block[0] <= used <= block[1] else block
        answers[key] = found
    return answers[key]


def _defined(value: Any, pending: Any) -> dict:
    """Where ``value``, an on-chip tile, was made: its tensor's ``x-source``, or for the call
    whose result is not emitted yet (``pending``), that call's line."""
    if pending is not None and pending.proxy is value:
        return {"file": pending.site[0].file, "line": pending.site[0].line}
    layout = getattr(value, "_layout", None) if not isinstance(value, (int, float, str)) else None
    if not isinstance(layout, Layout):  # not a tile (a number, an index vector, the kernel's own object)
        return {}
    tensor = layout.tensor
    if tensor.memory.name == "DRAM" or not tensor.extras:
        return {}
    return tensor.extras.get("x-source") or {}


def check_uses(use: SourceLine, values: Any, pending: Any = None) -> None:
    """Refuse an on-chip tile among ``values`` (an NKI call's arguments, at kernel line ``use``)
    used outside the block of the kernel that defined it (module doc); ``pending``: the
    tracer's call whose result is not emitted yet."""
    if not use.path:
        return
    for value in values:
        source = _defined(value, pending)
        defined = source.get("line")
        if source.get("file") != use.file or defined in (None, use.line):
            continue
        key = (use.path, defined, use.line)
        found = _USES.get(key, _UNSEEN)
        if found is _UNSEEN:  # the same two lines meet once per iteration of an unrolled loop
            found = _USES[key] = _out_of_scope(use.path, defined, use.line)
        if found is not None:
            name, block = found
            raise NkiError(use, f"{name} is used outside the block that defines it (lines {block[0]}-{block[1]}, at "
                                f"line {defined}): NKI gives a tensor made in an if / else / for block that "
                                f"block's scope (err_local_variable_used_out_of_scope); declare it before the block "
                                f"and write it with {name}[...] = ...")


#: per (file, defining line, using line): the variable and the block it leaves, or None
_USES: dict[tuple[str, int, int], tuple[str, _Block] | None] = {}
_UNSEEN = object()


def _out_of_scope(path: str, defined: int, used: int) -> tuple[str, _Block] | None:
    """The variable line ``defined`` binds and the block it is scoped to, when line ``used``
    names that variable outside the block; else None."""
    # the page's rule is of local variables: a tile reached through a list made outside
    # the block (``tiles.append(nl.load(...))``, then ``tiles[t]``) names no such variable
    bound = _BOUND.match(linecache.getline(path, defined))
    if bound is None or not re.search(rf"\b{bound.group(1)}\b", linecache.getline(path, used)):
        return None
    parsed = _parsed(path)
    block = _scope_left(parsed, defined, used) if parsed else None
    return None if block is None else (bound.group(1), block)
