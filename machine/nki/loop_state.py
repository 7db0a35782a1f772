"""Python state a legacy loop body changes while NKI traces the body once.

The legacy frontend traces an ``nl.affine_range`` / ``nl.sequential_range`` body once, with a
symbolic index, and the device runs that one body every iteration; a legacy kernel's ``for``
over Python's ``range`` is the compiler's ``sequential_range`` (the ``sequential_range`` page).
neuronsim traces such a loop the same way: kept as a program loop, its body runs once; unrolled
(a body that needs the index's value), each iteration starts from the plain values the frame
held when the loop began (:func:`neuronsim.machine.nki.frames.restore_locals`).  A body that
carries Python state from one iteration to the next (``scale = scale * 2``, ``done += 1``,
``tiles.append(t)``) therefore changes it once, in NKI and here, and the kernel computes
something its author did not mean, silently: the outputs differ from a Python-minded
reference, or a slice meant to move stays where it was.

:class:`BodyState` watches one body: the frame's locals when the loop begins, compared when
the body has run once.  A name is noted when its value changed *and* the body carries it: it
reads a plain value before it rebinds it (upward exposed), or changes a list / dict / set in
place (a method call or an item assignment on it).  A temporary the body assigns before it
reads it (``offset = i * 128``) is the same every iteration and is not noted.  Notes join
``nl.fori_loop``'s in ``extras["x-nki-loop-state"]`` (:mod:`neuronsim.machine.nki.control`),
reported by :mod:`neuronsim.verify.nki.control_findings`.

>>> import ast
>>> body = ast.parse("t = 2 * i\\nscale = scale * t\\nout.append(t)\\nk = t + k").body
>>> carried = body_carries(body)
>>> sorted(carried.exposed), sorted(carried.mutated)
(['i', 'k', 'out', 'scale'], ['out'])
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import FrameType
from typing import Any

from neuronsim.machine.nki.errors import SourceLine, user_frame
from neuronsim.machine.nki.frames import _plain, for_statement

__all__ = ["BodyState", "Carried", "body_carries", "body_state", "contents", "note_changes", "LOOP_STATE_KEY"]

LOOP_STATE_KEY = "x-nki-loop-state"

#: Methods that change a list / dict / set in place.
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                       "setdefault", "popitem", "add", "discard", "difference_update", "intersection_update",
                       "symmetric_difference_update", "__setitem__", "__delitem__"})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def contents(value: Any) -> Any:
    """What an in-place change of a container alters (its length, the ids of its first items);
    None for anything else."""
    if isinstance(value, (list, tuple)):
        return (len(value), tuple(id(v) for v in value[:256]))
    if isinstance(value, dict):
        return (len(value), tuple((k, id(v)) for k, v in list(value.items())[:256]))
    if isinstance(value, set):
        return (len(value),)
    return None


@dataclass(frozen=True, slots=True)
class Carried:
    """What a loop body carries across iterations, read from its source."""

    exposed: frozenset[str]
    """Names the body reads before it binds them (in the order Python evaluates the body)."""
    mutated: frozenset[str]
    """Names of containers the body changes in place (a method call, an item assignment)."""
    lines: tuple[tuple[str, int], ...]
    """Each name's first line that binds or changes it."""

    def line_of(self, name: str) -> int | None:
        return next((line for n, line in self.lines if n == name), None)


def body_carries(body: list[ast.stmt]) -> Carried:
    """:class:`Carried` of the statements ``body`` (module doc)."""
    first: dict[str, str] = {}
    mutated: set[str] = set()
    lines: dict[str, int] = {}
    for name, event, line in _events_of(body):
        first.setdefault(name, event)
        if event == "mutate":
            mutated.add(name)
        if event != "load":
            lines.setdefault(name, line)
    exposed = {name for name, event in first.items() if event in ("load", "mutate")}
    return Carried(exposed=frozenset(exposed), mutated=frozenset(mutated), lines=tuple(lines.items()))


def _events_of(nodes: list[Any]) -> Any:
    for node in nodes:
        yield from _events(node)


def _events(node: Any) -> Any:
    """``(name, "load" | "store" | "mutate", line)`` in the order Python evaluates ``node``."""
    if isinstance(node, ast.Assign):
        yield from _events(node.value)
        for target in node.targets:
            yield from _stores(target)
    elif isinstance(node, ast.AugAssign):
        if isinstance(node.target, ast.Name):
            yield node.target.id, "load", node.lineno
            yield from _events(node.value)
            yield node.target.id, "store", node.lineno
        else:
            yield from _events(node.value)
            yield from _stores(node.target)
    elif isinstance(node, ast.AnnAssign):
        if node.value is not None:
            yield from _events(node.value)
            yield from _stores(node.target)
    elif isinstance(node, ast.NamedExpr):
        yield from _events(node.value)
        yield from _stores(node.target)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from _events(node.iter)
        yield from _stores(node.target)
        yield from _events_of(node.body + node.orelse)
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in _MUTATORS:
            yield func.value.id, "mutate", node.lineno
        for child in ast.iter_child_nodes(node):
            yield from _events(child)
    elif isinstance(node, ast.Name):
        yield node.id, "load" if isinstance(node.ctx, ast.Load) else "store", node.lineno
    elif isinstance(node, _COMPREHENSIONS):  # their own scope: only the outer names they read
        own = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id not in own:
                yield child.id, "load", child.lineno
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    else:
        for child in ast.iter_child_nodes(node):
            yield from _events(child)


def _stores(target: Any) -> Any:
    if isinstance(target, ast.Name):
        yield target.id, "store", target.lineno
    elif isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            yield from _stores(item)
    elif isinstance(target, ast.Starred):
        yield from _stores(target.value)
    elif isinstance(target, ast.Subscript):
        yield from _events(target.slice)
        if isinstance(target.value, ast.Name):
            yield target.value.id, "mutate", target.lineno
        else:
            yield from _events(target.value)
    elif isinstance(target, ast.Attribute):
        yield from _events(target.value)


_CARRIED: dict[int, Carried] = {}


def _loop_carries(path: str, line: int) -> Carried | None:
    """:class:`Carried` of the body of the ``for`` statement at ``path:line`` (None when its
    source cannot be read); kept per statement, as a trace reaches a loop once per iteration of
    the loops around it."""
    node = for_statement(path, line)
    if node is None:
        return None
    if id(node) not in _CARRIED:  # (the statement lives as long as the file's parse: frames keeps it)
        _CARRIED[id(node)] = body_carries(node.body)
    return _CARRIED[id(node)]


def body_state(where: SourceLine, kind: str, variable: str, *, containers: bool = True) -> BodyState | None:
    """A :class:`BodyState` of the kernel frame running the loop at ``where`` (None outside one)."""
    frame = user_frame()
    return BodyState(frame, where, kind, variable, containers=containers) if frame is not None else None


def note_changes(state: BodyState | None, extras: dict[str, Any]) -> None:
    """:meth:`BodyState.note_changes` of ``state``, when there is one."""
    if state is not None:
        state.note_changes(extras)


class BodyState:
    """The frame of a loop once traced, as it was when the loop began (module doc)."""

    __slots__ = ("frame", "where", "kind", "entry", "containers")

    def __init__(self, frame: FrameType, where: SourceLine, kind: str, variable: str, *,
                 containers: bool = True) -> None:
        self.frame, self.where, self.kind = frame, where, kind
        self.containers = containers  # (an unrolled body changes them once per iteration: Python's)
        self.entry = {name: (value, contents(value)) for name, value in frame.f_locals.items() if name != variable}

    def note_changes(self, extras: dict[str, Any]) -> None:
        """Note in ``extras`` (a tracer's program extras) each name the body carries and changed
        (module doc)."""
        now = self.frame.f_locals
        changed = []
        for name, (value, held) in self.entry.items():
            if name not in now:
                continue
            new = now[name]
            if _plain(value) and _plain(new) and (type(new) is not type(value) or bool(new != value)):
                changed.append((name, "rebinds"))
            elif self.containers and new is value and held is not None and contents(new) != held:
                changed.append((name, "changes in place"))
        if not changed or not self.where.path:
            return
        carried = _loop_carries(self.where.path, self.where.line)
        if carried is None:
            return
        for name, how in changed:
            if name not in (carried.exposed if how == "rebinds" else carried.mutated):
                continue
            entry = {"file": self.where.file, "line": carried.line_of(name) or self.where.line,
                     "name": name, "how": how, "loop_file": self.where.file, "loop_line": self.where.line,
                     "kind": self.kind}
            notes = extras.setdefault(LOOP_STATE_KEY, [])
            if entry not in notes:
                notes.append(entry)
