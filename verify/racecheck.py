"""The vector-clock race checker: every unordered conflicting pair of instances.

:func:`check_program` checks a program under its given ``deps`` (spec rules 1-4);
:func:`check_waits` checks it under any per-instance waits (the simulator's trace supplies the
waits it actually met).  Both walk the unrolled program once, in program order:

1. :class:`~machine.hb.ClockMachine` gives each instance its start clock ``S(X)`` and the
   position of its completion on its component;
2. each access of the instance is cut into segments of the shadow map of its memory space
   (:mod:`verify.shadow`); in each segment the epochs of other components that are not ordered
   before ``S(X)`` are the races, reads only against writes, writes against both;
3. the access's epoch is recorded there.

A race is reported once per instance pair with the first kind some shared byte gives (RAW,
then WAW, then WAR), in the first memory (sbuf, psum, dram) where the pair conflicts with that
kind, and the smallest ranges covering the conflicting partitions and bytes there (spec,
"Race report").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from machine.errors import ProgramError
from machine.geometry import Footprint, base_footprint, mask_range, shifted
from machine.ir import SEQUENCERS, MemoryKind, Program
from machine.presets import resolve_machine
from machine.unroll import Unrolled, unroll

from machine.hb import ClockMachine
from verify.shadow import Histories, SegmentMap

__all__ = ["Race", "RaceReport", "check_program", "check_waits", "KINDS", "Progress", "PROGRESS_EVERY"]

KINDS = ("RAW", "WAW", "WAR")
_MEMORIES = ("sbuf", "psum", "dram")
_MEM_RANK = {MemoryKind.SBUF: 0, MemoryKind.PSUM: 1, MemoryKind.DRAM: 2}
_SEQ_INDEX = {name: i for i, name in enumerate(SEQUENCERS)}
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


class _Shadow:
    """All shadow maps of one check, and the pairs found so far."""

    def __init__(self) -> None:
        self.maps: dict[object, SegmentMap] = {}
        self.alias: dict[str, dict[str, tuple[SegmentMap, Histories]]] = {}
        # (first id, second id) -> {(kind rank, memory rank): [plo, phi, blo, bhi, alias]}
        self.found: dict[tuple[int, int], dict[tuple[int, int], list]] = {}
        self.horizon: tuple[int, ...] = ()

    def _note(self, first: int, second: int, kind: int, mem: int, mask: int, lo: int, hi: int, alias: str | None) -> None:
        slot = self.found.setdefault((first, second), {})
        cover = slot.get((kind, mem))
        plo, phi = mask_range(mask) if mask > 0 and mem < 2 else (0, 0)
        if cover is None:
            slot[(kind, mem)] = [plo, phi, lo, hi, alias]
            return
        cover[0], cover[1] = min(cover[0], plo), max(cover[1], phi)
        cover[2], cover[3] = min(cover[2], lo), max(cover[3], hi)

    def access(self, iid: int, start: tuple[int, ...], comp: int, pos: int, fp: Footprint, is_write: bool) -> None:
        """Check and record one access (see :meth:`plain_access` for the hot path)."""
        space = fp.space
        if isinstance(space, tuple):
            self._alias_access(iid, start, comp, pos, fp, is_write, space[1])
            return
        mem = _MEM_RANK[fp.memory]
        self.plain_access(iid, start, comp, pos, self.space_map(space), mem, fp.partitions if mem < 2 else 1,
                          fp.bytes, is_write)

    def space_map(self, space: object) -> SegmentMap:
        smap = self.maps.get(space)
        if smap is None:
            smap = self.maps[space] = SegmentMap()
        return smap

    def plain_access(self, iid: int, start: tuple[int, ...], comp: int, pos: int, smap: SegmentMap, mem: int,
                     mask: int, byteset, is_write: bool) -> None:
        """An SBUF / PSUM / addressed-DRAM access, its map and memory rank already known."""
        epoch = (pos, iid, mask)
        horizon = self.horizon
        bounds, cells = smap.bounds, smap.cells
        for lo, hi in byteset:
            i, j = smap.span(lo, hi)
            for k in range(i, j):
                cell = cells[k]
                # Fast path (FastTrack's epoch test): is the last epoch of every component
                # ordered before this access?  Only then is the history walked.
                racy = False
                for c, lst in cell.writes.items():
                    if lst[-1][0] > start[c]:
                        racy = True
                        break
                if not racy and is_write:
                    for c, lst in cell.reads.items():
                        if lst[-1][0] > start[c]:
                            racy = True
                            break
                if racy:
                    for (_, first, fmask), was_write in cell.concurrent(start, is_write, iid):
                        shared = fmask & mask
                        if shared:
                            kind = 0 if (was_write and not is_write) else (1 if was_write else 2)
                            self._note(first, iid, kind, mem, shared, bounds[k], bounds[k + 1], None)
                # Record the epoch (Histories.record, inlined on the hot path).
                table = cell.writes if is_write else cell.reads
                lst = table.get(comp)
                if lst is None:
                    table[comp] = [epoch]
                elif lst[-1][1] != iid and len(lst) < 8:
                    lst.append(epoch)
                else:
                    cell.record(comp, epoch, is_write, horizon)

    def _alias_access(self, iid, start, comp, pos, fp: Footprint, is_write: bool, group: str) -> None:
        tensors = self.alias.setdefault(group, {})
        own = tensors.get(fp.tensor)
        if own is None:
            own = tensors[fp.tensor] = (SegmentMap(), Histories())
        cover = (fp.bytes[0][0], fp.bytes[-1][1])
        # Another tensor of the group may sit anywhere: every access to it conflicts.
        for name, (_, whole) in tensors.items():
            if name == fp.tensor:
                continue
            for (_, first, fcover), was_write in whole.concurrent(start, is_write, iid):
                kind = 0 if (was_write and not is_write) else (1 if was_write else 2)
                self._note(first, iid, kind, 2, 0, fcover[0], fcover[1], group)
        smap, whole = own
        epoch = (pos, iid, 1)
        for lo, hi in fp.bytes:
            for slo, shi, cell in smap.segments(lo, hi):
                for (_, first, _), was_write in cell.concurrent(start, is_write, iid):
                    kind = 0 if (was_write and not is_write) else (1 if was_write else 2)
                    self._note(first, iid, kind, 2, 0, slo, shi, group)
                cell.record(comp, epoch, is_write, self.horizon)
        whole.record(comp, (pos, iid, cover), is_write, self.horizon)

    def races(self, unrolled: Unrolled) -> tuple[Race, ...]:
        out = []
        for (first, second) in sorted(self.found):
            slot = self.found[(first, second)]
            kind, mem = min(slot)
            plo, phi, lo, hi, alias = slot[(kind, mem)]
            partitions = (plo, phi) if mem < 2 else None
            out.append(Race(KINDS[kind], unrolled[first].name, unrolled[second].name, _MEMORIES[mem],
                            partitions, (lo, hi), alias, first, second))
        return tuple(out)


def check_waits(program: Program, waits: Sequence[Sequence[int]], unrolled: Unrolled | None = None, *,
                max_races: int | None = None, progress: Progress | None = None) -> RaceReport:
    """Race-check ``program`` where instance ``i`` waits for the instances ``waits[i]``.

    ``waits`` must point backwards in program order (every target id smaller than ``i``).
    ``max_races`` caps the races listed (all are counted); ``progress(done, total)`` is called
    every :data:`PROGRESS_EVERY` instances and at the end.
    """
    if program.has_virtual_tensors:
        virtual = sorted(n for n, t in program.tensors.items() if t.is_virtual)
        raise ProgramError(f"tensors.{virtual[0]}", "has no placement; checking a program that still has virtual tensors is an error (run the allocation passes: neuronsim compile)")
    spec = resolve_machine(program.machine)
    unrolled = unrolled or unroll(program)
    queues = len(SEQUENCERS)
    keep: dict[int, int] = {}
    for ws in waits:
        for t in ws:
            keep[t] = keep.get(t, 0) + 1
    clocks = ClockMachine(spec.dma_queues, keep=keep)
    shadow = _Shadow()
    tensors = program.tensors
    last_on_seq = {}
    for inst in unrolled:
        last_on_seq[_SEQ_INDEX[inst.instr.engine]] = inst.id
    cache: dict[int, tuple] = {}
    footprints: dict[object, Footprint] = {}
    events = 0
    step = clocks.step
    access = shadow.access
    plain = shadow.plain_access
    for inst in unrolled:
        iid = inst.id
        instr = inst.instr
        entry = cache.get(id(instr))
        if entry is None:
            queue = queues + int(instr.queue[3:]) if instr.queue is not None else None
            entry = cache[id(instr)] = (_SEQ_INDEX[instr.engine], queue, _plans(instr, tensors, inst, footprints, shadow))
        seq, queue, plans = entry
        targets = waits[iid]
        for target in targets:
            if target >= iid:
                raise ProgramError("", f"{inst.name} waits on {unrolled[target].name}, which does not precede it in program order")
        start, comp, pos = step(iid, seq, queue, targets)
        if iid % _HORIZON_EVERY == 0:
            if progress is not None and iid % PROGRESS_EVERY == 0:
                progress(iid, len(unrolled))
            shadow.horizon = clocks.horizon([s for s, last in last_on_seq.items() if last >= iid])
        for fp, shifts, is_write, smap, mem, mask in plans:
            if shifts:
                delta = sum(inst.index[k] * b for k, b in shifts)
                if delta:
                    fp = shifted(fp, delta)
            if smap is None:
                access(iid, start, comp, pos, fp, is_write)
            else:
                plain(iid, start, comp, pos, smap, mem, mask, fp.bytes, is_write)
        events += len(plans)
    if progress is not None:
        progress(len(unrolled), len(unrolled))
    races = shadow.races(unrolled)
    listed = races if max_races is None else races[:max_races]
    return RaceReport(listed, len(unrolled), events, len(races))


def _plans(instr, tensors, inst, footprints: dict, shadow: _Shadow) -> list:
    """Per access: the footprint at iteration 0, the byte shift per loop index, and what the
    shadow's hot path needs (its segment map, memory rank and partition mask).

    ``footprints`` caches by access *value* (equal accesses of different instructions share a
    footprint; the tensor is named by the access, so hashing the access alone is enough)."""
    plans = []
    for access, is_write in [(a, False) for a in instr.reads] + [(a, True) for a in instr.writes]:
        tensor = tensors[access.tensor]
        shifts = ()
        if access.per_iteration:
            position = {loop.name: k for k, loop in enumerate(inst.loops)}
            shifts = tuple((position[loop], shift * tensor.itemsize) for loop, shift in access.per_iteration if shift)
        fp = footprints.get(access)
        if fp is None:
            fp = footprints[access] = base_footprint(tensor, access)
        if isinstance(fp.space, tuple):  # alias group: the general path
            plans.append((fp, shifts, is_write, None, 2, 0))
        else:
            mem = _MEM_RANK[fp.memory]
            plans.append((fp, shifts, is_write, shadow.space_map(fp.space), mem, fp.partitions if mem < 2 else 1))
    return plans


def check_program(program: Program, *, max_races: int | None = None, progress: Progress | None = None) -> RaceReport:
    """Race-check ``program`` under its given deps, exactly per the spec's rules 1-4.

    ``max_races`` caps the races listed (``total_races`` counts them all); ``progress(done,
    total)`` reports instances checked (see :func:`check_waits`).

    Examples
    --------
    >>> from machine.format import load_program
    >>> report = check_program(load_program("examples/async_load_then_fill.json"))
    >>> [(r.kind, r.first, r.second, r.memory, r.partitions, r.bytes) for r in report.races]
    [('WAW', 'load', 'fill', 'sbuf', (0, 32), (0, 256))]
    """
    unrolled = unroll(program)
    waits = [tuple(t for _, t in ws) for ws in unrolled.resolve_waits()]
    return check_waits(program, waits, unrolled, max_races=max_races, progress=progress)
