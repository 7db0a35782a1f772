"""Scalar expressions of task programs: loop bounds, slice offsets, shapes, conditions.

An expression is an ``int`` (a constant), a :class:`Sym` (a scalar variable: a function
parameter, a loop variable, a scalar ``let`` or a scalar iter_arg) or an :class:`Op` over
expressions.  The format writes them as JSON integers or as Python-like text (``"i * 64"``,
``"min(n - i, 4)"``, ``"i < n and flag != 0"``); :func:`parse_expr` reads the text with
:mod:`ast` restricted to the operators below and folds constant parts, so ``"2 * 32"`` is the
constant 64 (a *static* value in the sense of the pass: PyPTO's ``ConstInt``).

Integer semantics are Python's (``//`` and ``%`` floor); comparisons and ``and``/``or``/``not``
give 0 or 1.

Examples
--------
>>> e = parse_expr("i * 64 + 8", "x")
>>> render(e), free_names(e)
('i * 64 + 8', frozenset({'i'}))
>>> evaluate(e, {"i": 2})
136
>>> parse_expr("2 * 32", "x"), is_static(parse_expr("n", "x"))
(64, False)
>>> evaluate(parse_expr("min(n - i, 4) > 0 and not done", "x"), {"n": 5, "i": 3, "done": 0})
1
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

from neuronsim.machine.ir.errors import ProgramError

__all__ = ["Sym", "Op", "ScalarExpr", "parse_expr", "render", "evaluate", "free_names", "is_static", "fold",
           "BINARY_OPS", "INT64_RANGE"]


@dataclass(frozen=True, slots=True)
class Sym:
    """A reference to a scalar variable."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Op:
    """``op`` applied to ``args`` (two for binary operators, one for ``neg`` / ``not``)."""

    op: str
    args: tuple[ScalarExpr, ...]

    def __str__(self) -> str:
        return render(self)


ScalarExpr = Union[int, Sym, Op]


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("integer division by zero")
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("integer modulo by zero")
    return a % b


#: Binary operators: name -> (function, precedence for rendering).
BINARY_OPS = {
    "or": (lambda a, b: int(bool(a) or bool(b)), 1),
    "and": (lambda a, b: int(bool(a) and bool(b)), 2),
    "<": (lambda a, b: int(a < b), 4), "<=": (lambda a, b: int(a <= b), 4),
    ">": (lambda a, b: int(a > b), 4), ">=": (lambda a, b: int(a >= b), 4),
    "==": (lambda a, b: int(a == b), 4), "!=": (lambda a, b: int(a != b), 4),
    "+": (lambda a, b: a + b, 5), "-": (lambda a, b: a - b, 5),
    "*": (lambda a, b: a * b, 6), "//": (_floordiv, 6), "%": (_mod, 6),
    "min": (min, 9), "max": (max, 9),
}
_UNARY = {"neg": (lambda a: -a, 7), "not": (lambda a: int(not a), 3)}

_AST_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_AST_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _build(node: ast.AST, path: str) -> ScalarExpr:
    """Translate one (restricted) Python expression node."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return _int64(node.value, path)
    if isinstance(node, ast.Name):
        return Sym(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_BIN:
        return Op(_AST_BIN[type(node.op)], (_build(node.left, path), _build(node.right, path)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.UAdd)):
        inner = _build(node.operand, path)
        if isinstance(node.op, ast.UAdd):
            return inner
        return Op("neg" if isinstance(node.op, ast.USub) else "not", (inner,))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _AST_CMP:
        return Op(_AST_CMP[type(node.ops[0])], (_build(node.left, path), _build(node.comparators[0], path)))
    if isinstance(node, ast.BoolOp):
        name = "and" if isinstance(node.op, ast.And) else "or"
        out = _build(node.values[0], path)
        for value in node.values[1:]:
            out = Op(name, (out, _build(value, path)))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max") \
            and len(node.args) == 2 and not node.keywords:
        return Op(node.func.id, (_build(node.args[0], path), _build(node.args[1], path)))
    raise ProgramError(path, f"unsupported expression {ast.unparse(node)!r}; expected integers, scalar names, "
                             "+ - * // %, comparisons, and/or/not, min(a, b), max(a, b)")


#: Operators nested deeper than this are refused at the expression's path: evaluating, folding
#: and rendering recurse per level (a flat sum of 200 terms nests 199 deep).
MAX_EXPR_DEPTH = 200


def _depth(tree: ast.AST) -> int:
    """How deep ``tree``'s operators nest (expression nodes, the tree's own included), counted
    without recursion: its depth is what is checked.

    >>> _depth(ast.parse("1 + 2 * n", mode="eval").body), _depth(ast.parse("a and b and c", mode="eval").body)
    (3, 3)
    """
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, ast.BoolOp):  # one node for ``a and b and ...``, which _build chains two by two:
            last = len(node.values) - 1   # the first two values sit as deep as the chain is long
            stack.extend((value, depth + last - max(k - 1, 0)) for k, value in enumerate(node.values))
            continue
        stack.extend((child, depth + isinstance(child, ast.expr)) for child in ast.iter_child_nodes(node))
    return deepest


def parse_expr(value: object, path: str) -> ScalarExpr:
    """A scalar expression from a JSON value (an integer or expression text), folded."""
    if isinstance(value, bool):
        raise ProgramError(path, f"expected an integer or an expression, got {value}")
    if isinstance(value, int):
        return _int64(value, path)
    if not isinstance(value, str) or not value.strip():
        raise ProgramError(path, f"expected an integer or an expression, got {value!r}")
    if "#" in value:  # Python's parser would drop the rest as a comment: "i * 64 # + 8" read as i * 64
        raise ProgramError(path, f"cannot parse expression {_short(value)}: '#' is no operator of an expression")
    try:
        tree = ast.parse(value.strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):  # the parser's own limits on nesting
        raise ProgramError(path, f"cannot parse expression {_short(value)}") from None
    if _depth(tree.body) > MAX_EXPR_DEPTH:
        raise ProgramError(path, f"the expression {_short(value)} nests more than {MAX_EXPR_DEPTH} operators deep; "
                                 "name a part of it with a scalar let")
    return fold(_build(tree.body, path))


def _int64(value: int, path: str) -> int:
    """``value``, an integer the format allows (scalars are INT64, as in the instruction format)."""
    if not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        raise ProgramError(path, f"expected an integer below 2**63 in magnitude, got one of {value.bit_length()} "
                                 "bits")
    return value


def _short(text: str) -> str:
    """``text`` quoted, its middle elided past 60 characters (an error line stays one line)."""
    return repr(text if len(text) <= 60 else f"{text[:28]} ... {text[-28:]}")


def fold(expr: ScalarExpr) -> ScalarExpr:
    """Constant-fold ``expr`` (a division by a constant zero, or a value beyond INT64, is left
    for evaluation to report)."""
    if not isinstance(expr, Op):
        return expr
    args = tuple(fold(a) for a in expr.args)
    if all(isinstance(a, int) for a in args):
        try:
            return _apply(expr.op, args)
        except (ZeroDivisionError, OverflowError):  # left for the run, which locates it
            pass
    return Op(expr.op, args)


#: Scalars are PyPTO's INT64: a value beyond is an error, not a Python integer that grows
#: without end (``s = s * s`` in a ``while`` doubled its digits each trip and hung the walk).
INT64_RANGE = (-(2**63), 2**63 - 1)


def _apply(op: str, args: tuple[int, ...]) -> int:
    value = _UNARY[op][0](args[0]) if op in _UNARY else BINARY_OPS[op][0](args[0], args[1])
    if not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        shown = ", ".join(str(a) if abs(a) < 10**30 else f"an integer of {a.bit_length()} bits" for a in args)
        raise OverflowError(f"{op} of {shown} leaves the 64-bit integer range (scalars are INT64)")
    return value


def evaluate(expr: ScalarExpr, env: Mapping[str, int]) -> int:
    """The value of ``expr`` with scalar variables from ``env`` (KeyError names a missing one)."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, Sym):
        return env[expr.name]
    return _apply(expr.op, tuple(evaluate(a, env) for a in expr.args))


def free_names(expr: ScalarExpr) -> frozenset[str]:
    """The scalar variables ``expr`` reads."""
    if isinstance(expr, int):
        return frozenset()
    if isinstance(expr, Sym):
        return frozenset((expr.name,))
    out: frozenset[str] = frozenset()
    for a in expr.args:
        out |= free_names(a)
    return out


def is_static(expr: ScalarExpr) -> bool:
    """True for a constant (after folding)."""
    return isinstance(expr, int)


def _precedence(expr: ScalarExpr) -> int:
    if isinstance(expr, Op):
        return (_UNARY.get(expr.op) or BINARY_OPS[expr.op])[1]
    return 10 if not (isinstance(expr, int) and expr < 0) else 7


def render(expr: ScalarExpr) -> str:
    """Text that :func:`parse_expr` reads back to the same expression."""
    if isinstance(expr, (int, Sym)):
        return str(expr)
    if expr.op in ("min", "max"):
        return f"{expr.op}({render(expr.args[0])}, {render(expr.args[1])})"
    mine = _precedence(expr)
    if expr.op in _UNARY:
        inner = render(expr.args[0])
        if _precedence(expr.args[0]) < mine:
            inner = f"({inner})"
        return f"-{inner}" if expr.op == "neg" else f"not {inner}"
    left, right = expr.args
    ltext, rtext = render(left), render(right)
    if _precedence(left) < mine or (mine == 4 and _precedence(left) == 4):
        ltext = f"({ltext})"
    if _precedence(right) <= mine:  # left-associative: a - (b - c) keeps its parentheses
        rtext = f"({rtext})"
    return f"{ltext} {expr.op} {rtext}"
