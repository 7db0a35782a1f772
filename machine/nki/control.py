"""NKI's compiled control flow: ``nl.fori_loop`` / ``nl.while_loop`` / ``nl.if_else`` (NKI 0.6 /
0.7) and the older ``nl.dynamic_range``.

What the NKI docs promise (the loops and control-flow deep dives, the API pages), in short: a
compiled loop's body is traced *once*, and the device runs that one body every iteration; the
induction value is handed to the body by value; state the iterations share must live in SBUF /
HBM (or, for ``while_loop``, be the condition register the body returns).  A Python variable
the body rebinds, or a list it appends to, changes once at trace time, not once per iteration.

How neuronsim traces them, with the kernel's inputs at hand:

* ``fori_loop`` / ``dynamic_range`` with bounds neuronsim knows (ints, or device values read on
  the traced inputs) are kept as one program ``Loop`` of that trip count, the body traced once
  with a symbolic index, as the compiler does; a body that needs a value per iteration (a
  device value read inside it, an index used where only a number fits) restarts the trace with
  that loop unrolled (the tracer's usual fallback);
* ``while_loop`` runs as many iterations as its condition register allows on these inputs;
* ``if_else`` on a device value calls the branch that value selects.

Every place a device value shaped the program is a decision in ``extras["x-nki-decisions"]``
(:mod:`~neuronsim.machine.nki.scalars`); a compiled loop body that changes Python state is
noted in ``extras["x-nki-loop-state"]`` at the line that changes it, and reported by
:mod:`neuronsim.verify.nki.control_findings`.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from typing import Any

import numpy as np

from neuronsim.machine.nki.frames import for_statement
from neuronsim.machine.nki.loop_state import LOOP_STATE_KEY, body_carries, contents
from neuronsim.machine.ir.source import shown_path
from neuronsim.machine.nki.errors import NkiError, SourceLine, fail, shown, user_line
from neuronsim.machine.nki.scalars import NkiScalar, VirtualRegister, _Scalar, record_decision
from neuronsim.machine.nki.tiles import NkiTensor
from neuronsim.machine.nki.tracer import current

__all__ = ["fori_loop", "while_loop", "if_else", "dynamic_range", "language_names", "LOOP_STATE_KEY"]

_WHILE_LIMIT = 1 << 16
#: A while_loop whose condition grows in magnitude this many iterations in a row is stopped.
_AWAY_LIMIT = 1 << 10
_FOR = re.compile(r"^\s*for\s+([A-Za-z_]\w*)\s+in\b")


def _bound(value: Any, what: str) -> int:
    """A loop bound as an int; a device value (its value on the traced inputs) is a decision."""
    if isinstance(value, _Scalar):
        record_decision(what, value.value, 3)
        return value.value
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise fail(f"{what} is an int, an NkiScalar or a register, not {value!r}")


def _iterations(values: range, var: str, where: SourceLine, call: str, body: Any):
    """The iterations of a compiled loop: one kept program loop, unless the tracer unrolls it.
    None on these inputs: ``body`` noted (:mod:`~neuronsim.machine.nki.unrun`), and in a trace
    that checks it, one iteration at the lower bound."""
    tracer = current()
    key = f"{where.path}:{where.line}"
    if len(values) == 0 and tracer.unrun.note(key, where, call, body):
        values = range(values.start, values.start + values.step, values.step)
    if tracer.unroll is not None and key not in tracer.unroll and len(values) > 0:
        return tracer._kept(var, "sequential", values, key)
    return tracer._unrolled(var, values)


def fori_loop(lower: Any, upper: Any, body_fun: Any, step: int = 1, unroll: Any = None, **kw: Any) -> None:
    """``nl.fori_loop``: ``body_fun(i)`` for ``i`` in ``range(lower, upper, step)``."""
    _no_other_keywords("nl.fori_loop", kw,
                       "fori_loop(lower, upper, body_fun, step=1), with unroll= on the control-flow page")
    where = user_line(2)
    current().flush()
    if not isinstance(step, (int, np.integer)) or step <= 0:
        raise fail(f"nl.fori_loop: step must be a positive int known at compile time, not {step!r}")
    if unroll is not None and not isinstance(unroll, (bool, np.bool_, int, np.integer)):
        raise fail(f"nl.fori_loop: unroll is True or False, not {unroll!r}")
    if unroll and (isinstance(lower, _Scalar) or isinstance(upper, _Scalar)):
        # traced once, unrolled by the compiler: its trip count must be known when it compiles
        raise fail("nl.fori_loop(unroll=True) with a bound computed on the device: an unrolled loop's bounds are "
                   "known at compile time (Python ints); drop unroll=True to keep it a device loop")
    values = range(_bound(lower, "nl.fori_loop lower bound"), _bound(upper, "nl.fori_loop upper bound"), int(step))
    watch = _PythonState(body_fun, where)
    _check_body(body_fun, 1, "nl.fori_loop", where)
    # The page: "i is a NkiScalar unless either lower or upper is a VirtualRegister".  A kept
    # loop hands the body its symbolic index; an unrolled one (the body compared or tested the
    # index, which a symbolic index cannot answer) each iteration's value as that NkiScalar, so
    # that a Python `if` on a comparison of it is refused as NKI refuses it ("traced, but the
    # result cannot be used", the NkiScalar page) rather than taking the branch of the value.
    scalar = not any(isinstance(bound, VirtualRegister) for bound in (lower, upper))
    for i in _iterations(values, _parameter(body_fun, "i"), where, "nl.fori_loop", body_fun):
        before = watch.snapshot()
        body_fun(NkiScalar(i) if scalar and type(i) is int else i)
        watch.compare(before)


def dynamic_range(start: Any, stop: Any = None, step: Any = 1, **_kw: Any):
    """``nl.dynamic_range(start, stop=None, step=1)`` (NKI <= 0.6; by keyword too): a device
    loop, bounds may be registers; one bound alone is the stop, as for ``range``."""
    where = user_line(2)
    current().flush()
    if current().generation != "legacy":  # (it runs as it did: a kernel may target NKI 0.6)
        current().warn("generation", "nl.dynamic_range is deprecated since NKI 0.6 and removed in NKI 0.7 (the "
                       "migration guide, \"removes the dynamic loop constructs deprecated in NKI 0.6.0\"): write "
                       "nl.fori_loop(lower, upper, body)", where)
    start, stop = (0, start) if stop is None else (start, stop)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step <= 0:  # (0 was Python's ValueError)
        raise fail(f"nl.dynamic_range: step={step!r}; its page: \"step - Must be a compile-time positive int\"")
    values = range(_bound(start, "nl.dynamic_range start"), _bound(stop, "nl.dynamic_range stop"), int(step))
    match = _FOR.match(linecache.getline(where.path, where.line)) if where.path else None
    body = (where.file, where.line, _last_line_of_for(where)) if len(values) == 0 else None  # (read when unrun)
    return _iterations(values, match.group(1) if match else f"i{where.line}", where, "nl.dynamic_range", body)


def _last_line_of_for(where: SourceLine) -> int:
    """The last line of the ``for`` statement at ``where`` (its own line when not found)."""
    node = for_statement(where.path, where.line) if where.path else None
    return node.end_lineno or where.line if node is not None else where.line


def while_loop(init: Any, body_fun: Any, **kw: Any) -> None:
    """``nl.while_loop``: ``body_fun(r)`` while the condition register ``r`` is nonzero; the
    body returns the next condition.  Runs as many iterations as the traced inputs make."""
    _no_other_keywords("nl.while_loop", kw, "while_loop(init, body_fun)")
    tracer = current()
    where = user_line(2)
    tracer.flush()
    watch = _PythonState(body_fun, where)
    _check_body(body_fun, 1, "nl.while_loop", where)
    var, cond, count = _parameter(body_fun, "r"), _register(init, "init"), 0
    away, last = 0, None  # iterations in a row whose condition moved away from zero, the last value
    while _truth(cond, "nl.while_loop"):
        if count == _WHILE_LIMIT:
            raise fail(f"nl.while_loop ran {_WHILE_LIMIT} iterations on these inputs without its condition "
                       "becoming zero")
        value = cond.value if isinstance(cond, _Scalar) else None
        away = away + 1 if value is not None and last is not None and abs(value) > abs(last) and \
            (value > 0) == (last > 0) else 0
        last = value
        if away == _AWAY_LIMIT:  # (count -2 stepping -1 traced for minutes: each condition read runs the program)
            raise fail(f"nl.while_loop: its condition register moved away from zero in each of the last {_AWAY_LIMIT} "
                       f"iterations (now {value}): it does not reach zero on these inputs, and the loop runs while "
                       "it is nonzero")
        cond = _iteration(tracer, body_fun, cond, var, count, watch)
        count += 1
    if count == 0 and tracer.unrun.note(f"{where.path}:{where.line}", where, "nl.while_loop", body_fun):
        _iteration(tracer, body_fun, cond, var, count, watch)  # (a check trace's: the device never runs it)
    tracer.program_extras.setdefault("x-nki-decisions", []).append(
        {"file": where.file, "line": where.line, "what": "nl.while_loop iterations", "value": count})


def _iteration(tracer: Any, body_fun: Any, cond: Any, var: str, count: int, watch: Any) -> Any:
    """One iteration of a while_loop: its body's next condition register."""
    tracer.loops.append((var, count))
    try:
        before = watch.snapshot()
        cond = _register(body_fun(cond), "the value its body returns")
        watch.compare(before)
        tracer.flush()
    finally:
        tracer.loops.pop()
    return cond


def _register(cond: Any, what: str) -> Any:
    """A ``while_loop`` condition: its page takes a register, ``init`` and the body's return alike
    (``if_else`` takes a Python bool or int too; ``while_loop`` not: a Python ``while`` is that).
    A tile or None is left to :func:`_truth`, which says what to do of it."""
    if isinstance(cond, (_Scalar, NkiTensor)) or cond is None:
        return cond
    raise fail(f"nl.while_loop: {what} is {cond!r}, and its page takes a condition register (a VirtualRegister: "
               f"nisa.register_alloc, register_load); for a condition known while tracing, a Python while loop")


def if_else(cond: Any, then_fn: Any, else_fn: Any = None, **kw: Any) -> None:
    """``nl.if_else``: the branch ``cond`` selects (a device value: on the traced inputs)."""
    _no_other_keywords("nl.if_else", kw, "if_else(cond, then_fn, else_fn=None)")
    if not isinstance(cond, (bool, int, np.integer, np.bool_, _Scalar, NkiTensor)) and cond is not None:
        raise fail(f"nl.if_else: the condition is {shown(cond)}; its page: \"cond - A Python "
                   "bool or int, or a 32-bit NkiScalar\"")
    current().flush()
    for what, fn in (("then_fn", then_fn), ("else_fn", else_fn)):
        if (fn is not None or what == "then_fn") and not callable(fn):  # (then_fn() passed ran both bodies: a probe)
            raise fail(f"nl.if_else: {what} is {fn!r}; its page: \"{what} - Function () -> None\" (pass the function, "
                       "not what calling it returns)")
    taken = _truth(cond, "nl.if_else")
    if isinstance(cond, _Scalar):
        record_decision(f"nl.if_else took the {'then' if taken else 'else'} branch", cond.value)
    branch, other = (then_fn, else_fn) if taken else (else_fn, then_fn)
    where = user_line(2)
    if branch is not None:
        _check_body(branch, 0, "nl.if_else", where)
        branch()
    # NKI builds both branches of an if_else on a device value: the one these inputs do not
    # take is checked as an unrun loop body is, by a second trace that runs it too
    if isinstance(cond, _Scalar) and other is not None and current().unrun.note(
            f"{where.path}:{where.line}", where, "nl.if_else", other):
        _check_body(other, 0, "nl.if_else", where)
        other()


def _check_body(fn: Any, count: int, call: str, where: SourceLine) -> None:
    """Refuse, at the kernel line, a body that cannot take the ``count`` arguments ``call``
    passes it (``fori_loop`` / ``while_loop``: the index or the condition register; ``if_else``:
    none): the kernel's mistake, not a failure inside the tracer."""
    if not callable(fn):
        raise NkiError(where, f"{call}: the body must be a function, not {type(fn).__name__}")
    try:
        inspect.signature(fn).bind(*([None] * count))
    except TypeError as err:
        raise NkiError(where, f"{call} calls its body with {count} argument{'s' * (count != 1)}: {err}") from None
    except ValueError:  # a builtin without a signature: let the call say
        return


def _no_other_keywords(call: str, given: dict[str, Any], signature: str) -> None:
    """Refuse a keyword the call does not take: its page's signature has no ``**kwargs``, and a
    misspelt one (``stride=2``, ``unrol=True``) changed the loop without a word."""
    if given:
        raise fail(f"{call} takes no keyword {next(iter(given))!r}; its page's signature: {signature}")


def _truth(cond: Any, call: str) -> bool:
    if isinstance(cond, _Scalar):
        return cond.value != 0
    if isinstance(cond, NkiTensor):
        raise fail(f"{call}: the condition is a scalar (nisa.scalar_load of the tile), not a tile")
    if cond is None:
        raise fail(f"{call}: the condition is None (a while_loop body returns the next condition register)")
    return bool(cond)


def _parameter(fn: Any, default: str) -> str:
    code = getattr(fn, "__code__", None)
    return code.co_varnames[0] if code is not None and code.co_argcount else default


class _PythonState:
    """What a compiled loop body changes outside SBUF / HBM: the variables it closes over
    (rebound through ``nonlocal``, or a list / dict / set changed in place).  The compiler
    traces the body once, so such a change is not carried from one iteration to the next."""

    def __init__(self, fn: Any, where: SourceLine) -> None:
        code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
        self.fn, self.where = fn, where
        self.cells = list(zip(code.co_freevars, closure)) if code is not None else []
        self.reported: set[str] = set()

    def snapshot(self) -> dict[str, tuple]:
        out = {}
        for name, cell in self.cells:
            try:
                value = cell.cell_contents
            except ValueError:  # not bound yet
                continue
            out[name] = (id(value), contents(value))
        return out

    def compare(self, before: dict[str, tuple]) -> None:
        after = self.snapshot()
        for name, state in after.items():
            if before.get(name, state) != state and name not in self.reported:
                self.reported.add(name)
                rebound = before[name][0] != state[0]
                self._note(name, "rebinds" if rebound else "changes in place")

    def _note(self, name: str, how: str) -> None:
        line = _line_changing(self.fn, name)
        notes = current().program_extras.setdefault(LOOP_STATE_KEY, [])
        entry = {"file": line.file, "line": line.line, "name": name, "how": how,
                 "loop_file": self.where.file, "loop_line": self.where.line}
        if entry not in notes:
            notes.append(entry)


def _line_changing(fn: Any, name: str) -> SourceLine:
    """The first line of ``fn`` that binds ``name`` or changes it in place (else its def), read
    as the legacy loops' bodies are (:func:`~neuronsim.machine.nki.loop_state.body_carries`)."""
    code = fn.__code__
    first = SourceLine(shown_path(code.co_filename), code.co_firstlineno, code.co_filename)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return first
    node = tree.body[0] if tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        body = node.body
    else:  # a lambda: its expression (getsource gives the statement around it)
        found = next((n for n in ast.walk(tree) if isinstance(n, ast.Lambda)), None)
        body = [ast.Expr(found.body)] if found is not None else tree.body
    line = body_carries(body).line_of(name)
    return first if line is None else SourceLine(first.file, code.co_firstlineno + line - 1, code.co_filename)


def language_names() -> dict[str, Any]:
    """The ``nki.language`` names of this module (both generations)."""
    return {"fori_loop": fori_loop, "while_loop": while_loop, "if_else": if_else, "dynamic_range": dynamic_range}
