"""The vector-clock race checker: every unordered conflicting pair of instances.

:func:`check_program` checks a program under its given ``deps`` (spec rules 1-4);
:func:`check_waits` checks it under any per-instance waits (the simulator's trace supplies the
waits it actually met).  Both walk the instance stream (:mod:`neuronsim.machine.order.stream`) once, in
program order:

A race-free program is recognised first, by one sort of its accesses (:mod:`neuronsim.verify.race_free`);
only a program that may have races is walked:

1. :class:`~neuronsim.machine.order.hb.HappensBefore` gives each instance its start clock ``S(X)`` and the
   position of its completion on its component;
2. each access of the instance is cut into the cells of its memory space's split interval
   maps (:class:`neuronsim.machine.order.splitmap.CellSpace`); in each cell the epochs of other components
   that are not ordered before ``S(X)`` are the races, reads only against writes, writes
   against both (:mod:`neuronsim.verify.shadow`);
3. the access's epoch is recorded there.

A race is reported once per instance pair with the first kind some shared byte gives (RAW,
then WAW, then WAR), in the first memory (sbuf, psum, dram) where the pair conflicts with that
kind, and the smallest ranges covering the conflicting partitions and bytes there (spec,
"Race report").  ``max_races`` keeps the first races in that order and counts them all, in
memory bounded by the cap.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.geometry import mask_range
from neuronsim.machine.order.hb import HappensBefore, active_sequencers, wait_counts
from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.order.splitmap import CellSpace, cell_bins
from neuronsim.machine.order.stream import InstanceStream, Waits, stream_of

from neuronsim.verify.race_free import race_free
from neuronsim.verify.shadow import Histories, prune, unordered

__all__ = ["Race", "RaceReport", "check_program", "check_waits", "check_stream", "KINDS", "Progress",
           "PROGRESS_EVERY", "waits_from_lists"]

KINDS = ("RAW", "WAW", "WAR")
_MEMORIES = ("sbuf", "psum", "dram")
_MEM_RANK = {MemoryKind.SBUF: 0, MemoryKind.PSUM: 1, MemoryKind.DRAM: 2}
_HORIZON_EVERY = 256
#: Instances between two progress reports.
PROGRESS_EVERY = 1 << 16

#: ``progress(done, total)``: instances checked so far, of all.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Race:
    """One unordered conflicting pair, ``first`` before ``second`` in program order."""

    kind: str
    first: str
    second: str
    memory: str
    partitions: tuple[int, int] | None
    bytes: tuple[int, int]
    alias: str | None = None
    first_id: int = -1
    second_id: int = -1

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind, "first": self.first, "second": self.second, "memory": self.memory}
        if self.partitions is not None:
            out["partitions"] = list(self.partitions)
        out["bytes"] = list(self.bytes)
        if self.alias is not None:
            out["alias"] = self.alias
        return out


@dataclass(frozen=True, slots=True)
class RaceReport:
    """The result of a check: races in spec order and what was examined."""

    races: tuple[Race, ...]
    instances: int
    access_events: int
    total_races: int = -1
    """Races found in all; ``races`` holds the first ones when the list was capped
    (``max_races``).  -1 (the default) means ``len(races)``."""

    def __post_init__(self) -> None:
        if self.total_races < 0:
            object.__setattr__(self, "total_races", len(self.races))

    @property
    def race_free(self) -> bool:
        return not self.total_races

    @property
    def capped(self) -> bool:
        """True when some races found are not listed."""
        return self.total_races > len(self.races)

    def triples(self) -> set[tuple[str, str, str]]:
        """``(kind, first, second)``: what tools comparing reports compare exactly."""
        return {(r.kind, r.first, r.second) for r in self.races}

    def to_json(self) -> dict:
        return {"format": "neuronsim.report/1", "races": [r.to_json() for r in self.races]}


class _Found:
    """Races found so far: the pairs of the current instance, then a bounded heap of all."""

    __slots__ = ("current", "kept", "cap", "total")

    def __init__(self, cap: int | None) -> None:
        self.current: dict[int, dict[tuple[int, int], list]] = {}
        self.kept: list = []  # max-heap on (first, second) via negated keys when capped
        self.cap = cap
        self.total = 0

    def note(self, first: int, kind: int, mem: int, mask: int, lo: int, hi: int, alias: str | None) -> None:
        slot = self.current.get(first)
        if slot is None:
            slot = self.current[first] = {}
        cover = slot.get((kind, mem))
        plo, phi = mask_range(mask) if mask and mem < 2 else (0, 0)
        if cover is None:
            slot[(kind, mem)] = [plo, phi, lo, hi, alias]
            return
        if plo < cover[0]:
            cover[0] = plo
        if phi > cover[1]:
            cover[1] = phi
        if lo < cover[2]:
            cover[2] = lo
        if hi > cover[3]:
            cover[3] = hi

    def close(self, second: int) -> None:
        """The pairs of instance ``second`` are complete: count and keep them."""
        current = self.current
        self.total += len(current)
        cap = self.cap
        for first, slot in current.items():
            kind, mem = min(slot)
            entry = (first, second, kind, mem, slot[(kind, mem)])
            if cap is None:
                self.kept.append(entry)
            elif cap == 0:  # --max-races 0: counted, none listed
                continue
            elif len(self.kept) < cap:
                heapq.heappush(self.kept, (-first, -second, entry))
            elif (-first, -second) > self.kept[0][:2]:
                heapq.heapreplace(self.kept, (-first, -second, entry))
        current.clear()

    def races(self, stream: InstanceStream) -> tuple[Race, ...]:
        entries = self.kept if self.cap is None else [e for _, _, e in self.kept]
        out = []
        for first, second, kind, mem, (plo, phi, lo, hi, alias) in sorted(entries, key=lambda e: (e[0], e[1])):
            out.append(Race(KINDS[kind], stream.instance_name(first), stream.instance_name(second), _MEMORIES[mem],
                            (plo, phi) if mem < 2 else None, (lo, hi), alias, first, second))
        return tuple(out)


def _require_placed(program: Program) -> None:
    virtual = sorted(n for n, t in program.tensors.items() if t.is_virtual)
    if virtual:
        raise ProgramError(f"tensors.{virtual[0]}", "has no placement; checking a program that still has virtual "
                           "tensors is an error (run the allocation passes: neuronsim compile)")


def waits_from_lists(n: int, waits: Sequence[Sequence[int]]) -> Waits:
    """Per-instance target lists as :class:`~neuronsim.machine.order.stream.Waits` (latest first)."""
    if len(waits) != n:
        raise ValueError(f"waits has {len(waits)} entries; the program has {n} instances")
    lengths = np.fromiter((len(w) for w in waits), np.int64, n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    flat = [t for w in waits for t in sorted(w, reverse=True)]
    return Waits(ptr, np.asarray(flat, np.int64), np.full(len(flat), -1, np.int32))


def check_waits(program: Program, waits: Sequence[Sequence[int]] | Waits, stream: InstanceStream | None = None, *,
                max_races: int | None = None, progress: Progress | None = None) -> RaceReport:
    """Race-check ``program`` where instance ``i`` waits for the instances ``waits[i]``.

    ``waits`` must point backwards in program order (every target id smaller than ``i``).
    ``max_races`` caps the races listed (all are counted); ``progress(done, total)`` is called
    every :data:`PROGRESS_EVERY` instances and at the end.
    """
    _require_placed(program)
    stream = getattr(stream, "stream", stream) or stream_of(program)  # an Unrolled carries its stream
    if not isinstance(waits, Waits):
        waits = waits_from_lists(len(stream), waits)
    return check_stream(stream, waits, max_races=max_races, progress=progress)


def check_program(program: Program, *, max_races: int | None = None, progress: Progress | None = None,
                  stop_after: int | None = None, stream: InstanceStream | None = None) -> RaceReport:
    """Race-check ``program`` under its given deps, exactly per the spec's rules 1-4.

    ``max_races`` caps the races listed (``total_races`` counts them all); ``progress(done,
    total)`` reports instances checked (see :func:`check_waits`).  ``stop_after`` ends the walk
    after the instance whose races bring the count to at least that many: the report then
    covers the instances before it only (``instances`` says how many were checked).
    ``stream``: the program's instance stream when at hand (:func:`stream_of` of it).

    Examples
    --------
    >>> from neuronsim.machine.formats.program_json import load_program
    >>> report = check_program(load_program("examples/async_load_then_fill.json"))
    >>> [(r.kind, r.first, r.second, r.memory, r.partitions, r.bytes) for r in report.races]
    [('WAW', 'load', 'fill', 'sbuf', (0, 32), (0, 256))]
    """
    _require_placed(program)
    with collector_paused():  # reading the program makes millions of acyclic tuples and arrays too
        stream = stream if stream is not None else stream_of(program)
        return check_stream(stream, stream.resolve(), max_races=max_races, progress=progress, stop_after=stop_after)


def _backwards(stream: InstanceStream, waits: Waits) -> None:
    counts = np.diff(waits.ptr)
    waiter = np.repeat(np.arange(len(stream), dtype=np.int64), counts)
    bad = np.flatnonzero(waits.target >= waiter)
    if len(bad):
        k = int(bad[0])
        raise ProgramError("", f"{stream.instance_name(int(waiter[k]))} waits on "
                               f"{stream.instance_name(int(waits.target[k]))}, which does not precede it in program "
                               "order")


def check_stream(stream: InstanceStream, waits: Waits, *, max_races: int | None = None,
                 progress: Progress | None = None, stop_after: int | None = None) -> RaceReport:
    """The checker's walk over ``stream`` under ``waits`` (see the module doc)."""
    _backwards(stream, waits)
    with collector_paused():  # millions of small acyclic objects: full collections would find nothing
        if race_free(stream, waits):  # the fast path (one sort); it never lists races itself
            if progress is not None:
                progress(len(stream), len(stream))
            events = int(np.asarray(stream.count, np.int64)[stream.slot_x].sum()) if len(stream.slot_x) else 0
            return RaceReport((), len(stream), events, 0)
        return _walk(stream, waits, max_races, progress, stop_after)


def _prepare(stream: InstanceStream, cells: CellSpace) -> list[tuple]:
    """Per instruction: ``(is_write, pieces or None, memory rank, compiled access)`` per access."""
    out = []
    memo: dict[int, tuple] = {}
    for x in range(stream.m):
        mine = []
        for ca in stream.accesses(x):
            entry = memo.get(id(ca))
            if entry is None:
                alias = isinstance(ca.space, tuple)
                pieces = None if (ca.moves or alias) else cells.pieces(ca.space, ca.space, ca.mask, ca.bytes)
                entry = memo[id(ca)] = (ca.is_write, pieces, 3 if alias else _MEM_RANK[ca.memory], ca)
            mine.append(entry)
        out.append(tuple(mine))
    return out


def _walk(stream: InstanceStream, waits: Waits, max_races: int | None, progress: Progress | None,
          stop_after: int | None = None) -> RaceReport:
    n = checked = len(stream)
    spec = stream.spec
    cells = CellSpace(stream.masks(), cell_bins(spec), None, Histories.copy)
    atom_masks = cells.atom_masks
    prepared = _prepare(stream, cells)
    hb = HappensBefore(spec.dma_queues, wait_counts(waits.target.tolist()))
    trigger, complete, horizon_of = hb.trigger, hb.complete, hb.horizon
    found = _Found(max_races)
    note, close = found.note, found.close
    alias = _AliasShadow()
    instr, seq, comp = stream.instr.tolist(), stream.seq.tolist(), stream.comp.tolist()
    ptr, target = waits.ptr.tolist(), waits.target.tolist()
    active = active_sequencers(stream.seq)
    horizon = (0,) * stream.width
    events = 0
    pieces_of = cells.pieces
    footprint_at = stream.footprint_at
    for i in range(n):
        a, b = ptr[i], ptr[i + 1]
        start, pos = complete(i, seq[i], comp[i], trigger(seq[i], target[a:b]) if a != b else trigger(seq[i]))
        c = comp[i]
        if not i & (_HORIZON_EVERY - 1):
            horizon = horizon_of(active(i))
            if progress is not None and not i & (PROGRESS_EVERY - 1):
                progress(i, n)
        epoch = (pos, i)
        accesses = prepared[instr[i]]
        events += len(accesses)
        for is_write, pieces, mem, ca in accesses:
            if pieces is None:
                mask, byteset = footprint_at(ca, i)
                if mem == 3:
                    alias.access(i, start, c, pos, ca, byteset, is_write, note, horizon)
                    continue
                pieces = pieces_of(ca.space, ca.space, mask, byteset)
            for smap, lo, hi in pieces:
                ii, jj = smap.span(lo, hi)
                values = smap.values
                for k in range(ii, jj):
                    cell = values[k]
                    if cell is None:
                        cell = values[k] = Histories()
                    writes = cell.writes
                    # Fast path (FastTrack's epoch test): is the last epoch of every component
                    # ordered before this access?  Only then is the history walked.
                    racy = False
                    for cc, lst in writes.items():
                        if lst[-1][0] > start[cc]:
                            racy = True
                            break
                    if is_write and not racy:
                        for cc, lst in cell.reads.items():
                            if lst[-1][0] > start[cc]:
                                racy = True
                                break
                    if racy:
                        bounds = smap.bounds
                        atom = atom_masks[smap_atom(smap)] if mem < 2 else 0
                        for e in unordered(writes, start, i):
                            note(e[1], 1 if is_write else 0, mem, atom, bounds[k], bounds[k + 1], None)
                        if is_write:
                            for e in unordered(cell.reads, start, i):
                                note(e[1], 2, mem, atom, bounds[k], bounds[k + 1], None)
                    table = writes if is_write else cell.reads
                    lst = table.get(c)
                    if lst is None:
                        table[c] = [epoch]
                    elif lst[-1][1] != i:
                        lst.append(epoch)
                        if len(lst) > 8 and lst[0][0] <= horizon[c]:
                            prune(lst, horizon[c])
        if found.current:
            close(i)
            if stop_after is not None and found.total >= stop_after:
                checked = i + 1
                break
    if progress is not None:
        progress(checked, n)
    return RaceReport(found.races(stream), checked, events, found.total)


def smap_atom(smap) -> int:
    """The partition atom a map of the cell space covers (its key's second element)."""
    return smap.tag


class _AliasShadow:
    """DRAM alias groups: two accesses to one tensor conflict by their bytes, two accesses to
    different tensors of a group always (their addresses are unknown)."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[int, tuple[CellSpace, Histories]]] = {}

    def access(self, i, start, comp, pos, ca, byteset, is_write, note, horizon) -> None:
        group = ca.space[1]
        tensors = self.groups.setdefault(group, {})
        own = tensors.get(ca.tensor)
        if own is None:
            own = tensors[ca.tensor] = (CellSpace((), {"dram": 1 << 30}, None, Histories.copy), Histories())
        lo_all, hi_all = byteset[0][0], byteset[-1][1]
        for other, (_, whole) in tensors.items():
            if other == ca.tensor:
                continue
            for e in unordered(whole.writes, start, i):
                note(e[1], 1 if is_write else 0, 2, 0, e[2][0], e[2][1], group)
            if is_write:
                for e in unordered(whole.reads, start, i):
                    note(e[1], 2, 2, 0, e[2][0], e[2][1], group)
        space, whole = own
        for smap, lo, hi in space.pieces("t", "dram", 0, byteset):
            ii, jj = smap.span(lo, hi)
            for k in range(ii, jj):
                cell = smap.values[k]
                if cell is None:
                    cell = smap.values[k] = Histories()
                slo, shi = smap.bounds[k], smap.bounds[k + 1]
                for e in unordered(cell.writes, start, i):
                    note(e[1], 1 if is_write else 0, 2, 0, slo, shi, group)
                if is_write:
                    for e in unordered(cell.reads, start, i):
                        note(e[1], 2, 2, 0, slo, shi, group)
                cell.record(comp, (pos, i), is_write, horizon)
        table = whole.writes if is_write else whole.reads
        lst = table.get(comp)
        if lst is not None and lst[-1][1] == i:
            cover = lst[-1][2]
            lst[-1] = (pos, i, (min(cover[0], lo_all), max(cover[1], hi_all)))
        else:
            whole.record(comp, (pos, i, (lo_all, hi_all)), is_write, horizon)
