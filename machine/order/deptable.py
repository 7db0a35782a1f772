"""Instruction-level deps as flat arrays.

A program stores its deps inside its instructions (``Instruction.deps``), which is what the
format reads and writes.  The dependence passes of a million-instruction program would spend
most of their time rebuilding a million instruction objects after every pass, so between
passes the deps travel as a :class:`DepTable` (one row per dep: waiter, former, kind,
loop-carried distance, iteration range) beside the program's structure
(:class:`neuronsim.passes.state.PipelineState`), and :func:`write_deps` writes a table into the
instructions once, when a whole program is wanted.

Examples
--------
>>> from neuronsim.machine.ir.program import Instruction, Program, Dep
>>> from neuronsim.machine.ir.edges import EdgeKind
>>> p = Program({}, (Instruction("a", "pe", "x"), Instruction("b", "act", "y")))
>>> t = DepTable.build([(1, 0, EdgeKind.FLOW, 0, ())])
>>> q = write_deps(p, t)
>>> q.body[1].deps
(Dep(on='a', kind=<EdgeKind.FLOW: 4>, loop_carried=False, extras=mappingproxy({}), distance=1, iterations=()),)
>>> q == Program({}, (Instruction("a", "pe", "x"), Instruction("b", "act", "y", deps=(Dep("a", EdgeKind.FLOW),))))
True
>>> DepTable.of_program(q).former.tolist()
[0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, repeat
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Dep, Instruction, Loop, Node, Program

if TYPE_CHECKING:
    from neuronsim.machine.order.stream import InstanceStream

__all__ = ["DepTable", "write_deps", "dep_table", "positions_of", "Ranges"]

#: ``((loop, lo, hi), ...)``: an iteration-range restriction of a dep (``x-iterations``).
Ranges = tuple[tuple[str, int, int], ...]

_KINDS = tuple(EdgeKind)
_DEPS, _ON, _KIND, _CARRIED, _DISTANCE, _ITERATIONS, _NAME = (attrgetter(name) for name in (
    "deps", "on", "kind._value_", "loop_carried", "distance", "iterations", "name"))
_CARRIED_AND_ITERATIONS = attrgetter("loop_carried", "iterations")


_CHUNK = 1 << 20  # wanted names searched at a time (bounds the search's arrays at ~21 MB)


def positions_of(names: Sequence[str], wanted: Sequence[str],
                 table: Callable[[], Mapping[str, int]]) -> np.ndarray:
    """The position in ``names`` (distinct) of each of ``wanted`` (int32); ``KeyError`` for a
    name not among them.

    A dep most often names its instruction by the very string object of the instruction's
    name (passes copy it from the program, the JSON loader hands each dep the name object of
    its instruction), so the strings are matched by identity first: one sort of the names'
    ``id`` and a binary search per wanted name, where a dict of a million names costs a hash
    and a cache miss per name and lookup (performance notes 2.8).  Only names not found so
    are looked up in ``table()`` (name -> position, built when first needed).

    >>> names = ["ld", "mm", "st"]
    >>> positions_of(names, [names[2], names[0]], lambda: {}).tolist()
    [2, 0]
    >>> positions_of(names, ["".join(["m", "m"])], lambda: {n: k for k, n in enumerate(names)}).tolist()
    [1]
    """
    out = np.zeros(len(wanted), np.int32)
    missing = np.ones(len(wanted), bool)
    if len(names):
        keys = np.fromiter(map(id, names), np.int64, len(names))
        # stable, and the last of equal keys below: a name given twice means its last
        # instruction, as in the dict (ids of names made in order are nearly sorted: timsort)
        order = np.argsort(keys, kind="stable").astype(np.int32)
        keys = keys[order]
        for lo in range(0, len(wanted), _CHUNK):  # a chunk at a time: ~21 B per dep of it, not of all
            want = np.fromiter(map(id, wanted[lo:lo + _CHUNK]), np.int64)
            at = np.searchsorted(keys, want, side="right") - 1
            at[at < 0] = 0
            missing[lo:lo + len(want)] = keys[at] != want
            out[lo:lo + len(want)] = order[at]
    if missing.any():
        lookup = table().__getitem__
        rows = np.flatnonzero(missing)
        out[rows] = np.fromiter(map(lookup, map(wanted.__getitem__, rows.tolist())), np.int32, len(rows))
    return out


class DepTable:
    """Deps as parallel arrays, one row per dep (see the module doc).

    ``waiter`` / ``former`` are instruction ids (document order); ``kind`` the
    :class:`~neuronsim.machine.ir.edges.EdgeKind` value; ``distance`` 0 for an ordinary dep, ``d >= 1``
    for a loop-carried one ``d`` iterations back; ``when`` indexes ``ranges`` (-1: every
    iteration).  ``objects`` optionally holds the :class:`~neuronsim.machine.ir.program.Dep` a row came from,
    so a dep that survives a pass keeps its ``x-`` keys.
    """

    __slots__ = ("waiter", "former", "_kind", "distance", "when", "ranges", "objects")

    def __init__(self, waiter: np.ndarray, former: np.ndarray, kind: np.ndarray | None, distance: np.ndarray,
                 when: np.ndarray, ranges: tuple[Ranges, ...] = (), objects: Sequence[Dep | None] | None = None):
        self.waiter = waiter
        self.former = former
        self._kind = kind  # None: read from `objects` when first asked for (the race checker never asks)
        self.distance = distance
        self.when = when
        self.ranges = ranges
        self.objects = objects

    @classmethod
    def build(cls, rows: Iterable[tuple[int, int, int, int, Ranges]],
              objects: Sequence[Dep | None] | None = None) -> DepTable:
        """From ``(waiter, former, kind, distance, ranges)`` rows."""
        rows = list(rows)
        ranges: dict[Ranges, int] = {}
        when = [ranges.setdefault(r, len(ranges)) if r else -1 for *_, r in rows]
        return cls(np.fromiter((r[0] for r in rows), np.int32, len(rows)),
                   np.fromiter((r[1] for r in rows), np.int32, len(rows)),
                   np.fromiter((r[2] for r in rows), np.int8, len(rows)),
                   np.fromiter((r[3] for r in rows), np.int32, len(rows)),
                   np.asarray(when, np.int32), tuple(ranges), objects)

    @classmethod
    def empty(cls) -> DepTable:
        return cls.build([])

    @classmethod
    def of_program(cls, program: Program, stream: InstanceStream | None = None) -> DepTable:
        """The deps written in ``program``'s instructions (``stream``: its instance stream, or
        that of a program with the same instructions in the same order, for the ids)."""
        # (a stream built from this very program knows; otherwise one scan at C level)
        flat = not stream.has_loops if stream is not None and stream.program is program else \
            not any(map(isinstance, program.body, repeat(Loop)))
        instrs = list(program.body) if flat else [inst for inst, _ in program.instructions()]
        counts = np.fromiter(map(len, map(_DEPS, instrs)), np.int64, len(instrs))
        objects: list[Dep] = list(chain.from_iterable(map(_DEPS, instrs)))  # (no list of the tuples)
        n = len(objects)
        waiter = np.repeat(np.arange(len(instrs), dtype=np.int32), counts)
        names = stream.names if stream is not None else list(map(_NAME, instrs)) if n else []
        table = (lambda: stream.id_of) if stream is not None else lambda: dict(zip(names, range(len(names))))
        try:
            former = positions_of(names, list(map(_ON, objects)), table) if n else np.zeros(0, np.int32)
        except KeyError as err:
            known = set(names)
            y = next(inst.name for inst in instrs if any(d.on not in known for d in inst.deps))
            raise ProgramError(f"{y}.deps", f"waits on unknown instruction {err.args[0]!r}") from None
        distance = np.zeros(n, np.int32)
        ranges: dict[Ranges, int] = {}
        when = np.full(n, -1, np.int32)
        # one scan for both extensions: most programs have neither a loop-carried dep nor a range
        plain = (False, ())
        if not any(map(plain.__ne__, map(_CARRIED_AND_ITERATIONS, objects))):
            return cls(waiter, former, None, distance, when, (), objects)
        if any(map(_CARRIED, objects)):
            carried = np.fromiter(map(_CARRIED, objects), bool, n)
            distance[carried] = np.fromiter(map(_DISTANCE, objects), np.int32, n)[carried]
        if any(map(_ITERATIONS, objects)):
            when = np.fromiter((ranges.setdefault(d.iterations, len(ranges)) if d.iterations else -1 for d in objects),
                               np.int32, n)
        return cls(waiter, former, None, distance, when, tuple(ranges), objects)

    @property
    def kind(self) -> np.ndarray:
        """Per row: the :class:`~neuronsim.machine.ir.edges.EdgeKind` value."""
        if self._kind is None:
            self._kind = np.fromiter(map(_KIND, self.objects), np.int8, len(self.waiter))
        return self._kind

    def __len__(self) -> int:
        return len(self.waiter)

    def iterations(self, r: int) -> Ranges:
        w = int(self.when[r])
        return self.ranges[w] if w >= 0 else ()

    def dep(self, r: int, names: Sequence[str]) -> Dep:
        """Row ``r`` as a :class:`~neuronsim.machine.ir.program.Dep` (its original object when it has one)."""
        if self.objects is not None and self.objects[r] is not None:
            return self.objects[r]
        d = int(self.distance[r])
        return Dep(names[int(self.former[r])], _KINDS[int(self.kind[r])], d > 0, distance=d or 1,
                   iterations=self.iterations(r))

    def select(self, keep: np.ndarray) -> DepTable:
        """The rows where ``keep`` (a boolean mask or index array) says so."""
        index = np.flatnonzero(keep) if keep.dtype == bool else keep
        objects = None if self.objects is None else [self.objects[r] for r in index.tolist()]
        return DepTable(self.waiter[keep], self.former[keep], self.kind[keep], self.distance[keep], self.when[keep],
                        self.ranges, objects)

    def with_kinds(self, kind: np.ndarray) -> DepTable:
        """The same rows with new kinds (objects of rows whose kind changed are dropped)."""
        objects = None
        if self.objects is not None:
            changed = kind != self.kind
            objects = [None if changed[r] else o for r, o in enumerate(self.objects)]
        return DepTable(self.waiter, self.former, kind.astype(np.int8), self.distance, self.when, self.ranges, objects)

    def concat(self, other: DepTable) -> DepTable:
        """Rows of ``self`` then of ``other`` (range indices renumbered)."""
        ranges = dict.fromkeys(self.ranges)
        for r in other.ranges:
            ranges.setdefault(r)
        index = {r: k for k, r in enumerate(ranges)}
        remap = np.asarray([index[r] for r in other.ranges] + [-1], np.int32)
        when = np.concatenate([self.when, remap[other.when]])
        objects = None
        if self.objects is not None or other.objects is not None:
            objects = list(self.objects or [None] * len(self)) + list(other.objects or [None] * len(other))
        return DepTable(np.concatenate([self.waiter, other.waiter]), np.concatenate([self.former, other.former]),
                        np.concatenate([self.kind, other.kind]), np.concatenate([self.distance, other.distance]),
                        when, tuple(ranges), objects)

    def merged(self) -> DepTable:
        """Rows with the same waiter, former, distance and iteration range merged into one of
        the strongest kind (the spec's merge of deps, the seed's max-merge), first one kept.

        One stable sort of the four columns (equal ranges under one index first): a dict of
        row tuples held ~200 B per dep, at 1e7 instructions the peak of ``anti-deps``
        (performance notes 2.9).

        >>> t = DepTable.build([(2, 1, 1, 0, ()), (2, 0, 1, 0, ()), (2, 1, 3, 0, ()), (2, 1, 1, 1, ())])
        >>> m = t.merged()
        >>> m.former.tolist(), m.kind.tolist(), m.distance.tolist()
        ([1, 0, 1], [3, 1, 1], [0, 0, 1])
        """
        n = len(self)
        if n < 2:
            return self
        first_of: dict[Ranges, int] = {}
        canon = np.asarray([first_of.setdefault(r, k) for k, r in enumerate(self.ranges)] + [-1], np.int64)
        when = canon[self.when]  # -1 (no range) stays -1: canon[-1]
        order = np.lexsort((when, self.distance, self.former, self.waiter))  # stable: first row first
        new = np.zeros(n, bool)  # a group starts where any of the four changes
        new[0] = True
        for column in (self.waiter, self.former, self.distance, when):
            ordered = column[order]
            new[1:] |= ordered[1:] != ordered[:-1]
        del when, ordered
        starts = np.flatnonzero(new)
        if len(starts) == n:
            return self
        keep = order[starts]  # the first row of each group
        kind = self.kind.copy()
        kind[keep] = np.maximum.reduceat(self.kind[order], starts)
        del order, starts, new
        return self.with_kinds(kind).select(np.sort(keep))

    def by_waiter(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``(order, ptr)``: rows of waiter ``y`` are ``order[ptr[y]:ptr[y+1]]`` (stable)."""
        order = np.argsort(self.waiter, kind="stable")
        ptr = np.zeros(m + 1, np.int64)
        np.cumsum(np.bincount(self.waiter, minlength=m), out=ptr[1:])
        return order, ptr

    def __repr__(self) -> str:
        return f"DepTable({len(self)} deps)"


def _rebuild(program: Program, table: DepTable) -> tuple[Node, ...]:
    """``program``'s body with every instruction's deps taken from ``table``."""
    instrs = [inst for inst, _ in program.instructions()]
    names = [inst.name for inst in instrs]
    order, ptr = table.by_waiter(len(instrs))
    order = order.tolist()
    bounds = ptr.tolist()
    made: dict[tuple, Dep] = {}
    new_deps: list[tuple[Dep, ...]] = []
    objects = table.objects
    # a table of arrays alone keeps the Dep objects written here, so that a table selected
    # from it (dep-reduction's, after dep-opt's) writes them again instead of making each anew
    # (constructing a frozen Dep is most of writing a flattened kernel's deps, issue 31)
    kept: list[Dep | None] | None = [None] * len(table) if objects is None else None
    for y in range(len(instrs)):
        a, b = bounds[y], bounds[y + 1]
        if a == b:
            new_deps.append(())
            continue
        deps = []
        for r in order[a:b]:
            if objects is not None and objects[r] is not None:
                deps.append(objects[r])
                continue
            key = (int(table.former[r]), int(table.kind[r]), int(table.distance[r]), int(table.when[r]))
            dep = made.get(key)
            if dep is None:
                dep = made[key] = table.dep(r, names)
            if kept is not None:
                kept[r] = dep
            deps.append(dep)
        new_deps.append(tuple(deps))
    if kept is not None:
        table.objects = kept
    replaced = {}
    for y, inst in enumerate(instrs):
        if inst.deps != new_deps[y]:
            replaced[id(inst)] = _with_instruction_deps(inst, new_deps[y])
    if not replaced:
        return program.body
    return program.map_instructions(lambda inst: replaced.get(id(inst), inst)).body


_SET = {name: getattr(Instruction, name).__set__ for name in Instruction.__slots__}
_NEW = object.__new__


def _with_instruction_deps(inst: Instruction, deps: tuple[Dep, ...]) -> Instruction:
    """``inst`` with ``deps`` (a field-by-field copy: several times cheaper than the frozen
    dataclass constructor, and this runs once per changed instruction of a million)."""
    out = _NEW(Instruction)
    for name, setter in _SET.items():
        setter(out, getattr(inst, name))
    _SET["deps"](out, deps)
    return out


def write_deps(program: Program, table: DepTable) -> Program:
    """``program`` with exactly the deps of ``table`` written into its instructions (an
    instruction whose deps do not change keeps its object)."""
    body = _rebuild(program, table)
    return program if body is program.body else program.with_body(body)


def dep_table(program: Program, stream: InstanceStream | None = None) -> DepTable:
    """The deps of ``program`` as a table (:meth:`DepTable.of_program`)."""
    return DepTable.of_program(program, stream)
