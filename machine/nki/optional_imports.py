"""Which imports of a package that is not installed the user's code expects to fail.

While a kernel is loaded, a package nothing can import becomes a stand-in when a user's file
imports it (:mod:`neuronsim.machine.nki.standins`): kernel files import their framework at the
top (``import torch``) and use it only where the file is imported.  But a file that tests for
an optional package takes the wrong branch if the import succeeds on a stand-in, and so does
a library beside the kernel that chooses between its sources (nki-library's ``nkilib`` asks
``importlib.util.find_spec`` for its bundled copy).  Those imports fail as Python makes them
fail:

- a query, ``importlib.util.find_spec(name)``: it asks whether the package is there, and it is not;
- an import statement (or an ``importlib.import_module`` call) inside a ``try`` whose handlers
  catch ``ImportError``, ``ModuleNotFoundError``, ``Exception`` or anything (a bare ``except``).

>>> import textwrap, tempfile, os
>>> source = textwrap.dedent('''
...     import torch
...     try:
...         import fast
...     except ImportError:
...         fast = None
... ''')
>>> with tempfile.TemporaryDirectory() as folder:
...     path = os.path.join(folder, "k.py")
...     _ = open(path, "w").write(source)
...     sorted(guarded_lines(path))
[4]
"""

from __future__ import annotations

import ast
import os
import sys
from functools import lru_cache
from types import FrameType

__all__ = ["expected_to_fail", "guarded_lines"]

#: Where ``importlib.util.find_spec`` is defined: frozen into the interpreter, or its source file.
_QUERIES = frozenset({"<frozen importlib.util>", os.path.join(os.path.dirname(os.__file__), "importlib", "util.py")})

#: Exceptions whose handler makes an import optional (``except`` with no type is one too).
_CATCHING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def expected_to_fail(importer: FrameType) -> bool:
    """Whether the import being made for ``importer`` (the user's frame) should fail: asked by
    ``importlib.util.find_spec``, or made inside a ``try`` that catches its failure."""
    frame = sys._getframe(1)
    while frame is not None and frame is not importer:
        if frame.f_code.co_name == "find_spec" and frame.f_code.co_filename in _QUERIES:
            return True
        frame = frame.f_back
    return importer.f_lineno in guarded_lines(importer.f_code.co_filename)


@lru_cache(maxsize=256)
def guarded_lines(path: str) -> frozenset[int]:
    """The lines of ``path`` inside the body of a ``try`` that catches an import's failure."""
    try:
        with open(path, encoding="utf-8", errors="replace") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and any(
                handler.type is None or _names(handler.type) & _CATCHING for handler in node.handlers):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return frozenset(lines)


def _names(expression: ast.expr) -> set[str]:
    """The exception names of a handler's type: ``ImportError``, ``builtins.ImportError``, a tuple."""
    if isinstance(expression, ast.Tuple):
        return set().union(*(_names(element) for element in expression.elts))
    if isinstance(expression, ast.Attribute):
        return {expression.attr}
    return {expression.id} if isinstance(expression, ast.Name) else set()
