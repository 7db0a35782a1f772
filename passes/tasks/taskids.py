"""TaskId collection: which task a TaskId variable, a tensor or a user dep stands for.

``docs/task-rules.md`` section 3 items 2 and 8 (PyPTO ``SubmitTaskIdCollector``; user-dep
coverage).  Facts gathered in program order:

* a submit's TaskId; every output of the submit canonicalizes to it (``produced`` -> ``tid``);
* TaskId copies canonicalize to their source; a loop's iter_arg and return var canonicalize to
  the TaskId its yield carries (remembered as *carried by that loop*);
* TaskId arrays: an extent, per static slot the TaskIds written there, TaskIds written at
  runtime indices ("any slot may hold these"), and slots of unknown content; a slot read
  ``arr[k]`` is "slot k of that array version"; an array is *complete* when every slot
  0..N-1 holds known TaskIds.  Arrays are mutable here, so every write makes a new version.

:meth:`TaskIds.user_deps` canonicalizes one call's ``deps`` (PyPTO ``CanonicalizeTaskIds``)
into a :class:`UserDeps`, the input of the coverage rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from neuronsim.machine.tasks.ir import (
    Alias, Call, For, GetSlot, If, RuntimeScope, SetSlot, Stmt, TaskArray, TaskProgram, While,
)
from neuronsim.machine.tasks.task_validate import ARRAY, TASK, Symbols

__all__ = ["TaskIds", "UserDeps", "collect_task_ids"]


@dataclass
class _Array:
    """The lineage of one TaskId array version (PyPTO ``TaskIdArrayLineage``)."""

    extent: int | None
    full: list[str] = field(default_factory=list)
    static: dict[int, list[str]] = field(default_factory=dict)
    static_dynamic: dict[int, dict[tuple, set[int]]] = field(default_factory=dict)
    unknown_static: set[int] = field(default_factory=set)
    unknown_dynamic: bool = False

    def copy(self) -> _Array:
        return _Array(self.extent, list(self.full), {k: list(v) for k, v in self.static.items()},
                      {k: {a: set(s) for a, s in v.items()} for k, v in self.static_dynamic.items()},
                      set(self.unknown_static), self.unknown_dynamic)


def _complete(slots: set[int], extent: int | None) -> bool:
    return extent is not None and extent > 0 and len(slots) == extent and all(0 <= s < extent for s in slots)


def _add(out: list[str], items) -> None:
    for item in items:
        if item not in out:
            out.append(item)


@dataclass(frozen=True, slots=True)
class UserDeps:
    """One call's user deps, canonicalized."""

    canonical: tuple[str, ...]
    """TaskIds the deps name (copies and carries resolved, complete slot sets expanded)."""
    direct: tuple[str, ...]
    """The same without what only a loop carry reaches (an iter_arg names the previous iteration)."""
    carried: dict[str, frozenset[str]]
    """Loop label -> TaskIds reached through that loop's carried TaskIds."""
    complete_dynamic: frozenset[str]
    incomplete_dynamic: frozenset[str]
    complete_arrays: frozenset[str]
    windowed: bool
    """At least one TaskId scalar that is not a submit's TaskId (a barrier, a carried or slot TaskId)."""


class TaskIds:
    """The facts of one function (see the module docstring)."""

    def __init__(self, symbols: Symbols) -> None:
        self.kinds = symbols.kinds
        self.task_id_of_call: dict[str, str] = {}
        self.canonical: dict[str, str] = {}
        self.carried_by: dict[str, str] = {}
        self.slot_ids: dict[str, list[str]] = {}
        self.dynamic_slots: dict[str, dict[tuple, set[int]]] = {}
        self.versions: dict[tuple, _Array] = {}
        self.current: dict[str, tuple] = {}
        self.arrays_at_call: dict[str, dict[str, tuple]] = {}
        self.submit_ids: set[str] = set()

    # -- lookups ------------------------------------------------------------------------------
    def canonical_of(self, var: str | None) -> str | None:
        """PyPTO ``CanonicalTaskId``: the mapped TaskId, the variable itself if it is a TaskId, else None."""
        if var is None:
            return None
        mapped = self.canonical.get(var)
        if mapped is not None:
            return mapped
        return var if self.kinds.get(var) == TASK else None

    def expanded(self, key: tuple) -> list[str]:
        """All TaskIds an array version holds (PyPTO ``ExpandTaskIdArray``)."""
        a = self.versions[key]
        out: list[str] = []
        if not a.unknown_dynamic and not a.unknown_static:
            _add(out, a.full)
        for ids in a.static.values():
            _add(out, ids)
        covered: dict[tuple, set[int]] = {}
        for slots in a.static_dynamic.values():
            for source, s in slots.items():
                covered.setdefault(source, set()).update(s)
        for source, s in covered.items():
            src = self.versions.get(source)
            if src is None or not _complete(s, src.extent):
                continue
            if a.unknown_dynamic or a.unknown_static or src.unknown_dynamic or src.unknown_static:
                continue
            _add(out, src.full)
        return out

    def complete(self, key: tuple) -> bool:
        a = self.versions[key]
        if a.extent is None or a.extent <= 0 or a.unknown_dynamic or a.unknown_static:
            return False
        slots = {k for k, v in a.static.items() if v} | {k for k, v in a.static_dynamic.items() if v}
        return _complete(slots, a.extent)

    def _ids_of(self, var: str, arrays: dict[str, tuple]) -> list[str]:
        """PyPTO ``CanonicalTaskIds`` for one dep variable."""
        if var in self.slot_ids:
            return list(self.slot_ids[var])
        scalar = self.canonical_of(var)
        if scalar is not None:
            return [scalar]
        if self.kinds.get(var) == ARRAY and var in arrays:
            return self.expanded(arrays[var])
        return []

    def user_deps(self, call: Call) -> UserDeps:
        arrays = self.arrays_at_call.get(call.name, {})
        canonical: list[str] = []
        direct: list[str] = []
        carried: dict[str, set[str]] = {}
        slots: dict[tuple, set[int]] = {}
        for var in call.deps:
            if var in self.dynamic_slots:
                for key, s in self.dynamic_slots[var].items():
                    slots.setdefault(key, set()).update(s)
                continue
            if self.kinds.get(var) == TASK:
                _add(canonical, [var])
                _add(direct, [var])
            ids = self._ids_of(var, arrays)
            _add(canonical, ids)
            if var in self.carried_by:
                carried.setdefault(self.carried_by[var], set()).update(ids)
            else:
                _add(direct, ids)
        complete_dyn: set[str] = set()
        incomplete_dyn: set[str] = set()
        for key, s in slots.items():
            ids = self.expanded(key)
            if _complete(s, self.versions[key].extent):
                _add(canonical, ids)
                _add(direct, ids)
                complete_dyn.update(ids)
            else:
                incomplete_dyn.update(ids)
        complete_arrays: set[str] = set()
        for var in call.deps:
            if self.kinds.get(var) == ARRAY and var in arrays and self.complete(arrays[var]):
                complete_arrays.update(self.expanded(arrays[var]))
        windowed = any(self.kinds.get(v) == TASK and v not in self.submit_ids for v in canonical)
        return UserDeps(tuple(canonical), tuple(direct), {k: frozenset(v) for k, v in carried.items()},
                        frozenset(complete_dyn), frozenset(incomplete_dyn), frozenset(complete_arrays), windowed)

    # -- collection ---------------------------------------------------------------------------
    def _value_ids(self, var: str) -> tuple[list[str], dict[tuple, set[int]]]:
        """PyPTO ``TaskIdsForExpr`` of a TaskId variable."""
        if var in self.slot_ids or var in self.dynamic_slots:
            return list(self.slot_ids.get(var, [])), {k: set(v) for k, v in self.dynamic_slots.get(var, {}).items()}
        scalar = self.canonical_of(var)
        return ([scalar] if scalar else []), {}

    def _new_version(self, array: str, lineage: _Array) -> None:
        key = (array, len([k for k in self.versions if k[0] == array]))
        self.versions[key] = lineage
        self.current[array] = key

    def visit(self, body: tuple[Stmt, ...], loops: tuple[str, ...] = ()) -> None:
        for s in body:
            if isinstance(s, Call):
                if s.submit:
                    self.task_id_of_call[s.name] = s.task_id  # type: ignore[assignment]
                    self.submit_ids.add(s.task_id)  # type: ignore[arg-type]
                    for out in s.outputs:
                        self.canonical[out] = s.task_id  # type: ignore[assignment]
                self.arrays_at_call[s.name] = {d: self.current[d] for d in s.deps if d in self.current}
            elif isinstance(s, Alias) and self.kinds.get(s.var) == TASK:
                source = self.canonical_of(s.source)
                if source is not None and source != s.var:
                    self.canonical[s.var] = source
                if s.source in self.carried_by:
                    self.carried_by[s.var] = self.carried_by[s.source]
            elif isinstance(s, TaskArray):
                self._new_version(s.var, _Array(s.extent if isinstance(s.extent, int) else None))
            elif isinstance(s, SetSlot):
                self._set_slot(s)
            elif isinstance(s, GetSlot):
                self._get_slot(s)
            elif isinstance(s, RuntimeScope):
                self.visit(s.body, loops)
            elif isinstance(s, If):
                self.visit(s.then_body, loops)
                if s.else_body is not None:
                    self.visit(s.else_body, loops)
            elif isinstance(s, (For, While)):
                self.visit(s.body, (*loops, s.name))
                for arg, value, ret in zip(s.iter_args, s.yields, s.returns):
                    task = self.canonical_of(value) if isinstance(value, str) else None
                    if task is None:
                        continue
                    for var in (arg.name, ret):
                        self.canonical[var] = task
                        self.carried_by[var] = s.name

    def _set_slot(self, s: SetSlot) -> None:
        key = self.current.get(s.array)
        lineage = self.versions[key].copy() if key else _Array(None)
        ids, dyn = self._value_ids(s.value)
        if isinstance(s.index, int):
            if ids:
                lineage.static[s.index] = ids
            else:
                lineage.static.pop(s.index, None)
            if dyn:
                lineage.static_dynamic[s.index] = dyn
            else:
                lineage.static_dynamic.pop(s.index, None)
            if not ids and not dyn:
                lineage.unknown_static.add(s.index)
            else:
                lineage.unknown_static.discard(s.index)
        elif ids and not dyn:
            _add(lineage.full, ids)
        else:
            lineage.unknown_dynamic = True
        self._new_version(s.array, lineage)

    def _get_slot(self, s: GetSlot) -> None:
        key = self.current.get(s.array)
        if key is None or not isinstance(s.index, int):
            return
        lineage = self.versions[key]
        ids = list(lineage.static.get(s.index, []))
        if ids:
            self.slot_ids[s.var] = ids
            if len(ids) == 1:
                self.canonical[s.var] = ids[0]
        if lineage.full or self.expanded(key):
            self.dynamic_slots[s.var] = {key: {s.index}}


def collect_task_ids(program: TaskProgram, symbols: Symbols) -> TaskIds:
    """The TaskId facts of ``program``'s function."""
    ids = TaskIds(symbols)
    ids.visit(program.function.body)
    return ids
