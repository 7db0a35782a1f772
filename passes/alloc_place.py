"""Placement primitives of ``alloc`` (:mod:`neuronsim.passes.alloc`): tensor placements, slots
by rotation (freed longest ago first), the SBUF first-fit packing by liveness, and PSUM banks
by rotation.

The sharing rule these keep, and its proof, are in :mod:`neuronsim.passes.alloc`: two blocks
share a byte only when :func:`~neuronsim.passes.analysis.lifetimes.may_share` says so.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from operator import attrgetter

import numpy as np

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import MemoryKind, Program, Rotation, Tensor
from neuronsim.machine.model.geometry import merged_runs
from neuronsim.machine.model.presets import MachineSpec

from neuronsim.passes.analysis.lifetimes import Life, may_share

__all__ = ["ALONE_TRIED", "FOREVER", "PackItem", "PsumFull", "SbufFull", "align_up", "declared_at", "extent",
           "first_fit", "fit_rings", "most_live", "place_psum", "placed", "rotate_slots", "rotation", "storage_use",
           "where_declared"]


class SbufFull(ProgramError):
    """The virtual SBUF tiles do not fit as placed (spilling may make room)."""


class PsumFull(ProgramError):
    """The virtual PSUM tiles live together need more banks than there are (spilling some to
    SBUF may make room)."""


#: Life of an already placed tensor: it clashes with everything.
FOREVER = Life(-(1 << 62), 1 << 62)

_TENSOR_FIELDS = tuple(f.name for f in fields(Tensor) if f.init)
_TENSOR_VALUES = attrgetter(*_TENSOR_FIELDS)
_TENSOR_FIELD_AT = {name: k for k, name in enumerate(_TENSOR_FIELDS)}


def placed(t: Tensor, **placement) -> Tensor:
    """``dataclasses.replace(t, **placement)`` without its per-call field introspection (one
    call per placed tensor: a sizeable share of the pass on large programs)."""
    values = list(_TENSOR_VALUES(t))
    for name, value in placement.items():
        values[_TENSOR_FIELD_AT[name]] = value
    return Tensor(*values)


def align_up(x: int, a: int) -> int:
    return -(-x // a) * a


def rotation(life: Life, stride: int) -> Rotation | None:
    return Rotation(life.loop, life.slots, stride) if life.loop is not None and stride else None


def extent(t: Tensor) -> int:
    """Bytes from a placed tensor's base to the end of its last slot."""
    slots = (t.rotate.slots - 1) * t.rotate.stride if t.rotate is not None else 0
    return slots + t.bytes_per_partition


def rotate_slots(items: list[tuple[str, int, int]], buffers: int) -> dict[str, int]:
    """Slot per item ``(name, live start, live end)``, rotating through ``buffers`` slots.

    Each item takes, among the slots whose items are dead at its start, the one freed longest
    ago (a ring: the reuse that orders the new item after the oldest use, leaving the recent
    ones free to overlap it), opening slots up to ``buffers`` first and a new one beyond when
    every slot is live.  Items sharing a slot have pairwise disjoint ``[start, end]`` ranges.

    >>> rotate_slots([("t0", 0, 1), ("t1", 2, 3), ("t2", 4, 5), ("t3", 6, 7)], 2)
    {'t0': 0, 't1': 1, 't2': 0, 't3': 1}
    >>> rotate_slots([("a", 0, 9), ("b", 1, 2), ("c", 3, 4)], 1)   # a still live: new slot
    {'a': 0, 'b': 1, 'c': 1}
    >>> rotate_slots([("x0", 0, 5), ("y0", 4, 7), ("x1", 8, 12), ("y1", 11, 15), ("x2", 16, 20)], 4)
    {'x0': 0, 'y0': 1, 'x1': 2, 'y1': 3, 'x2': 0}
    >>> rotate_slots([("a", 0, 8), ("b", 1, 2), ("c", 3, 4), ("d", 9, 10)], 2)  # slot 1 freed at 4, slot 0 at 8
    {'a': 0, 'b': 1, 'c': 1, 'd': 1}
    """
    free: list[tuple[int, int]] = []  # (freed at, slot) of the slots opened, a heap by time freed
    live: list[tuple[int, int]] = []  # (end, slot) of the slots in use, a heap by end
    opened = 0
    out: dict[str, int] = {}
    for name, start, end in sorted(items, key=lambda it: (it[1], it[0])):
        while live and live[0][0] < start:
            heapq.heappush(free, heapq.heappop(live))
        if opened < buffers or not free:
            chosen, opened = opened, opened + 1
        else:
            chosen = heapq.heappop(free)[1]
        heapq.heappush(live, (end, chosen))
        out[name] = chosen
    return out


def most_live(spans: list[tuple[str, int, int]]) -> int:
    """The most items ``(name, start, end)`` live at one instance (ranges inclusive; an item
    never accessed has ``start > end`` and counts nowhere), at least 1.

    >>> most_live([("x0", 0, 5), ("y0", 4, 7), ("x1", 8, 12), ("y1", 11, 15), ("unused", 9, -1)])
    2
    """
    edges = sorted([(start, 0) for _, start, end in spans if start <= end]
                   + [(end, 1) for _, start, end in spans if start <= end])
    live, most = 0, 1
    for _, is_end in edges:
        live += -1 if is_end else 1
        most = max(most, live)
    return most


def _declaration(t: Tensor) -> Mapping | None:
    """A traced kernel's tile's declaration (``x-source``: file, line, call, variable), None for
    a tensor without one."""
    source = t.extras.get("x-source") if t.extras else None
    return source if isinstance(source, Mapping) and source.get("file") and source.get("line") else None


def declared_at(t: Tensor) -> tuple | None:
    """``(file, line, variable)`` of the kernel line that declared a traced tile: its family (an
    unrolled loop's tiles of one declaration, a split block array's blocks); None without one."""
    source = _declaration(t)
    return None if source is None else (source["file"], source["line"], source.get("variable"))


def where_declared(t: Tensor) -> tuple[str, str]:
    """``(path, label)`` of an allocation error about ``t``: a traced kernel's tile carries its
    declaration, so the error names that line and the kernel's variable; any other tensor is
    named by its JSON path."""
    source = _declaration(t)
    origin = (t.extras or {}).get("x-spill-of")  # a reload alloc made: named by the program's tile it reloads
    origin = origin if isinstance(origin, str) else None
    if source is not None:
        variable = source.get("variable") or source.get("call") or t.name
        return (f"{source['file']}:{source['line']}",
                f"tile {variable!r} ({source.get('call', 'declared')}, {origin or t.name})")
    if origin is not None:
        return f"tensors.{origin}", f"{origin} (reloaded after a spill)"
    return f"tensors.{t.name}", t.name


@dataclass(frozen=True, slots=True)
class PackItem:
    """One block to pack: ``bytes`` per partition over ``partitions`` partitions, live over
    ``[lo, hi]`` (the hull of its tensors), at one of the partition ``bases``."""

    label: str
    partitions: int
    bytes: int
    lo: int
    hi: int
    bases: tuple[int, ...]


def first_fit(items: list[PackItem], fixed: list[tuple[int, int, int, int, int, int]], capacity: int,
              align: int) -> dict[str, tuple[int, int]]:
    """``label -> (partition base, byte offset)``: blocks in order of birth each take the
    lowest byte range (then the lowest base) that no live block overlaps in partitions and
    bytes; ``fixed`` blocks ``(first instance, last instance, first partition, end partition,
    first byte, end byte)`` are live over their instances (:data:`FOREVER`'s bounds: all
    along).  Blocks of any shape share bytes when their hulls are disjoint (rule 1 of the
    allocator).  Raises a :class:`ProgramError` carrying the label of a block that fits nowhere
    (``path``: the label).

    >>> item = PackItem("t", 128, 64, 10, 20, (0,))
    >>> first_fit([item], [(0, 5, 0, 128, 0, 64)], 128, 32)   # the fixed block is dead by then
    {'t': (0, 0)}
    >>> first_fit([item], [(15, 30, 0, 128, 0, 64)], 128, 32)  # born while t lives
    {'t': (0, 64)}
    """
    live: list[tuple[int, int, int, int, int]] = []
    out: dict[str, tuple[int, int]] = {}
    for item in sorted(items, key=lambda it: (it.lo, it.label)):
        # Items come in order of birth: a block dead before this one is born never clashes again.
        live = [b for b in live if b[0] >= item.lo]
        around = live + [f[1:] for f in fixed if f[0] <= item.hi and f[1] >= item.lo]
        best: tuple[int, int] | None = None
        for base in item.bases:
            end = base + item.partitions
            offset = 0
            for lo, hi in sorted((b[3], b[4]) for b in around if b[1] < end and base < b[2]):
                if offset + item.bytes <= lo:
                    break
                offset = max(offset, align_up(hi, align))
            if best is None or (offset, base) < best:
                best = (offset, base)
        if best is None or best[0] + item.bytes > capacity:
            raise ProgramError(item.label, f"needs {item.bytes} bytes a partition beside the tiles live with it")
        offset, base = best
        live.append((item.hi, base, base + item.partitions, offset, offset + item.bytes))
        out[item.label] = (base, offset)
    return out


def _fit_psum(regions, banks: int, cursor: int, life: Life, need: int, nbytes: int, size: int,
              align: int, scoped: bool) -> tuple[int, int] | None:
    """``(first bank, offset)`` for a tensor of ``life`` (a ring takes ``n`` consecutive
    banks, slot ``s`` in the ``s``-th), or None; ``scoped``: sharing by rule 4 of the allocator
    too (:func:`~neuronsim.passes.analysis.lifetimes.may_share`)."""
    n = life.slots if life.loop is not None else 1
    bases = banks - n + 1
    if bases < 1:
        return None
    order = [(cursor + step) % bases for step in range(bases)]

    def clashes(k: int) -> list[tuple[int, int]]:
        return sorted((lo, hi) for s in range(n) for lo, hi, other, slot in regions[k + s]
                      if not may_share(other, slot, life, s, scoped))

    for k in order:  # rotation: banks where nothing live clashes
        if not clashes(k):
            return k, 0
    for k in order:  # first fit beside the regions that clash
        offset = 0
        for lo, hi in clashes(k):
            if offset + need <= lo:
                break
            offset = max(offset, align_up(hi, align))
        if offset + nbytes <= size:
            return k, offset
    return None


def place_psum(program: Program, lives: Mapping[str, Life], banks: int, align: int,
               spec: MachineSpec) -> tuple[dict[str, Tensor], int]:
    """Placements and the number of rings placed without rotation (no banks for them).

    The kernel's own PSUM tiles (placed already) keep their banks all along, so the
    compiler's tiles go to other banks; when that leaves no room, again with each placed
    tile's banks taken only while it lives (a compiler allocates around tiles placed in
    advance by their lifetimes: eight banks placed, each dead after its copy, leave room for
    a later tile).  When rings still do not fit, every tile of a loop body takes one
    placement, its iterations one after another (a body whose tiles fill the banks, eight
    one-bank tiles: rings of two would need sixteen)."""
    kernel_placed = any(t.memory == MemoryKind.PSUM and not t.is_virtual for t in program.tensors.values())
    rings = [name for name, life in lives.items() if life.loop is not None]
    plain = {**lives, **{name: lives[name].plain for name in rings}}
    tries = [(each, lasting) for each in ((lives, plain) if rings else (lives,))
             for lasting in (True, False) if lasting or kernel_placed]
    for k, (each, lasting) in enumerate(tries):
        try:
            out, fallbacks = _place_psum(program, each, banks, align, spec, lasting=lasting)
        except PsumFull:
            if k == len(tries) - 1:
                raise
            continue
        return out, (sum(1 for name in rings if name in out) if each is plain else fallbacks)
    raise AssertionError("unreachable: the last try returns or raises")


def _place_psum(program: Program, lives: Mapping[str, Life], banks: int, align: int,
                spec: MachineSpec, *, lasting: bool) -> tuple[dict[str, Tensor], int]:
    banks = min(banks or spec.psum_banks, spec.psum_banks)
    size = spec.psum_bank_bytes
    # regions[k]: (lo, hi, life, slot) inside bank k.
    regions: list[list[tuple[int, int, Life, int]]] = [[] for _ in range(spec.psum_banks)]
    for t in program.tensors.values():
        if t.memory == MemoryKind.PSUM and not t.is_virtual:
            held = FOREVER if lasting else lives.get(t.name, FOREVER).plain
            for s in range(t.rotate.slots if t.rotate is not None else 1):
                first = t.byte_base + (t.rotate.stride * s if t.rotate is not None else 0)
                for byte in range(first - first % size, first + t.bytes_per_partition, size):  # each bank it spans
                    bank = min(byte // size, spec.psum_banks - 1)
                    regions[bank].append((max(first - byte, 0), min(first + t.bytes_per_partition - byte, size),
                                          held, 0))
    virtual = sorted((t for t in program.tensors.values() if t.memory == MemoryKind.PSUM and t.is_virtual),
                     key=lambda t: (lives[t.name].lo, t.name))
    out: dict[str, Tensor] = {}
    cursor = fallbacks = 0
    for t in virtual:
        if t.bytes_per_partition > size:  # whole banks side by side (NKI 0.4 on), one placement
            k = _place_wide_psum(t, lives[t.name].plain if lives[t.name].loop is not None else lives[t.name],
                                 regions, banks, cursor, size)
            cursor = k + -(-t.bytes_per_partition // size)
            out[t.name] = placed(t, partition=0, offset=0, bank=k, rotate=None)
            continue
        life = lives[t.name]
        # Tensors come in order of first use: what died before this one was born can never
        # clash again (disjoint hulls), so it leaves the banks' region lists.
        regions = [[r for r in bank if r[2].hi >= life.lo] for bank in regions]
        need = min(align_up(t.bytes_per_partition, align), size)
        # a ring, else one placement, each first where no other stretch of a loop body the
        # tile is private to uses the bytes (sharing by rule 4 costs the overlap of those
        # stretches: a last resort, for bodies whose tiles outnumber the banks)
        choice = None
        for scoped in (False, True):
            choice = _fit_psum(regions, banks, cursor, life, need, t.bytes_per_partition, size, align, scoped)
            if choice is None and life.loop is not None:
                plain = _fit_psum(regions, banks, cursor, life.plain, need, t.bytes_per_partition, size, align,
                                  scoped)
                if plain is not None:
                    life, fallbacks, choice = life.plain, fallbacks + 1, plain
            if choice is not None:
                break
        if choice is None:
            path, label = where_declared(t)
            raise PsumFull(path, f"no PSUM bank has room for {label} while it is live ({banks} banks)")
        k, offset = choice
        n = life.slots if life.loop is not None else 1
        for s in range(n):
            regions[k + s].append((offset, offset + need, life, s))
        cursor = k + n
        out[t.name] = placed(t, partition=0, offset=offset, bank=k, rotate=rotation(life, size))
    return out, fallbacks


def _place_wide_psum(t: Tensor, life: Life, regions: list, banks: int, cursor: int, size: int) -> int:
    """The first of the consecutive whole banks a PSUM tensor wider than a bank takes while
    ``life`` lasts (NKI 0.4 on: ``tile_size.psum_bank_fmax`` is per bank, a tensor may span
    banks, each matmul writing within one), recorded in ``regions``; refused at its declaring
    line when no run of banks is free."""
    width = -(-t.bytes_per_partition // size)
    bases = banks - width + 1
    for scoped in (False, True):
        for k in ((cursor + step) % bases for step in range(max(bases, 0))):
            if all(may_share(other, slot, life, 0, scoped) for s in range(width) for _lo, _hi, other, slot in
                   regions[k + s] if other.hi >= life.lo):
                for s in range(width):
                    regions[k + s].append((0, size, life, 0))
                return k
    path, label = where_declared(t)
    if width > banks:
        raise ProgramError(path, f"PSUM {label} holds {t.bytes_per_partition} bytes a partition, more than "
                                 f"the {banks} banks of {size} bytes")
    raise PsumFull(path, f"no {width} free PSUM banks side by side for {label} while it is live ({banks} banks)")


def storage_use(tensors: Iterable[Tensor]) -> tuple[int, int]:
    """``(alone, used)``: bytes (partitions x bytes, all slots) the tensors would take each in
    storage of its own, and the bytes of the union of their placements.

    >>> from neuronsim.machine.ir.program import Tensor, MemoryKind
    >>> a = Tensor("a", MemoryKind.SBUF, "float32", (128, 16), partition=0, offset=0)
    >>> b = Tensor("b", MemoryKind.SBUF, "float32", (64, 16), partition=64, offset=32)
    >>> storage_use([a, b])       # b shares 64 partitions x 32 bytes with a
    (12288, 10240)
    """
    # Byte ranges of every slot, per (memory, first partition, end partition) row.
    rows: dict[tuple[object, int, int], list[tuple[int, int]]] = {}
    alone = 0
    for t in tensors:
        p0, p1 = (0, 1) if t.memory == MemoryKind.DRAM else (t.partition, t.partition + t.shape[0])
        nbytes, base = t.bytes_per_partition, t.byte_base
        spans = rows.setdefault((t.memory, p0, p1), [])
        if t.rotate is None:
            spans.append((base, base + nbytes))
            alone += (p1 - p0) * nbytes
        else:
            stride = t.rotate.stride
            spans.extend((base + s * stride, base + s * stride + nbytes) for s in range(t.rotate.slots))
            alone += (p1 - p0) * nbytes * t.rotate.slots
    used = 0
    for space in {key[0] for key in rows}:
        mine = {(p0, p1): spans for (sp, p0, p1), spans in rows.items() if sp == space}
        cuts = sorted({p for key in mine for p in key})
        for lo, hi in zip(cuts, cuts[1:]):
            spans = [span for (p0, p1), row in mine.items() if p0 <= lo and hi <= p1 for span in row]
            used += (hi - lo) * _union_length(spans)
    return alone, used


def _union_length(spans: list[tuple[int, int]]) -> int:
    """Bytes covered by half-open ``(lo, hi)`` ranges (their merged runs)."""
    if not spans:
        return 0
    ranges = np.array(spans, np.int64)
    run_lo, run_hi = merged_runs(ranges[:, 0], ranges[:, 1])
    return int((run_hi - run_lo).sum())


#: The cheapest ring groups ``fit_rings`` tries to make plain one at a time (a placement each).
ALONE_TRIED = 32


def fit_rings(program: Program, lives: dict[str, Life], place: Callable[[Mapping[str, Life]], dict[str, Tensor]]
              ) -> tuple[dict[str, Tensor], dict[str, Life], int]:
    """``(placements, lives used, ring groups made plain)``: SBUF placed with every ring, else
    with as few ring groups made plain as this search finds.

    A ring group is the SBUF rings of one loop and one shape and dtype (they share lanes).
    When all rings do not fit, the cheapest group (bytes per partition times slots) whose loss
    alone makes the rest fit is made plain.  When none alone does, and every group made plain
    fits, the fewest of the largest groups that do are found by bisection and the last of them
    swapped for the cheapest group that does as well.  A kernel whose rings overflow SBUF by
    one buffer keeps double buffering everywhere else, as an allocator short of memory would,
    instead of losing every ring at once.  Fitting is not monotone in the groups made plain (a
    plain tile holds its bytes over its whole hull, a ring only over its stretch of each
    iteration: the published Mamba v3 at seq 8192 fits with one group plain, not with all), so
    the bisection answers only where every group plain is known to fit.  When it does not, no
    further search runs and the caller spills: the old search, rounds of every group made plain
    alone with the largest given up between rounds, made a kernel that spilled try the groups'
    square in every spill round (Autocomp's attention, 256 groups of an unrolled kernel: minutes
    in ``alloc``; a probe).  Alone, the :data:`ALONE_TRIED` cheapest groups are tried, so a
    spill round costs at most that many placements and two.
    """
    groups: dict[tuple, list[str]] = {}
    for name, life in lives.items():
        tensor = program.tensors[name]
        if tensor.memory == MemoryKind.SBUF and life.loop is not None:
            groups.setdefault((life.loop, tensor.shape, tensor.dtype), []).append(name)
    try:
        return place(lives), lives, 0
    except SbufFull:
        if not groups:
            raise  # no ring to give up: SBUF is short even with one placement per tensor
    cost = {key: sum(program.tensors[n].bytes_per_partition * lives[n].slots for n in names)
            for key, names in groups.items()}
    cheapest_first = sorted(groups, key=lambda k: (cost[k], repr(k)))

    def plain(keys: Iterable[tuple]) -> dict[str, Life]:
        return {**lives, **{n: lives[n].plain for key in keys for n in groups[key]}}

    def cheapest_that_fits(kept: tuple, candidates: list[tuple]) -> tuple | None:
        for key in candidates:
            trial = plain((*kept, key))
            try:
                return place(trial), trial
            except SbufFull:
                continue
        return None

    alone = cheapest_that_fits((), cheapest_first[:ALONE_TRIED])
    if alone is not None:
        return (*alone, 1)
    largest_first = cheapest_first[::-1]
    fits = {len(largest_first): place(plain(largest_first))}  # SbufFull: spills, not rings, make room
    # the largest groups made plain: too few (one is, where every group was tried alone), enough
    short, enough = int(len(largest_first) <= ALONE_TRIED), len(largest_first)
    while enough - short > 1:
        middle = (short + enough) // 2
        try:
            fits[middle] = place(plain(largest_first[:middle]))
            enough = middle
        except SbufFull:
            short = middle
    swapped = cheapest_that_fits(tuple(largest_first[:enough - 1]), cheapest_first[:-enough])  # cheaper than the last
    if swapped is not None:
        return (*swapped, enough)
    return fits[enough], plain(largest_first[:enough]), enough
