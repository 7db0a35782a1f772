"""Values carried across ``affine_range`` iterations, found by one sweep per tensor.

For every tensor read and written inside an affine loop, the accesses of its instances are
replayed in program order over an array holding, per element (partition x byte granule), the
instance that wrote it last.  A read whose bytes were last written in an earlier iteration of
an enclosing loop (the first loop, outermost first, where the writer's and the reader's
indices differ) takes a value across that loop's iterations; when that loop is affine, the
pair is a finding.  Bytes the reader's own iteration wrote before it are not upward exposed
and carry nothing, exactly because the later write replaced the earlier writer.  A write over
bytes an earlier iteration wrote is the same sweep's second kind of pair (``output``): the
errors page's "unexpected output dependencies", since parallel iterations leave either value.
A write over bytes an earlier iteration read (the first read since their last write) is the
third (``anti``): run in another order, that iteration reads the new value.

Cost: one pass over the access events of each tensor, plus the bytes each touches; memory:
one tensor's last-writer array at a time and its events, never a pair of instances.  (The
earlier search built every instance pair of two instructions at each distance: on a kernel of
33k instances it outgrew 24 GB.)

What the pair becomes (:func:`sweep_loops`): nothing when the tensor was declared in the
loop's body (a new buffer every iteration: ``x-nki-scope``), or when both instructions are
matmuls accumulating into PSUM (the one carried value the NKI docs allow); ``accumulate`` when
both are ``+=`` into SBUF (an associative reduction: the documentation and the SDK maintainers
disagree on it, see ``docs/nki-checks.md``), ``psum-accumulate`` when both are ``+=`` into PSUM
and not both matmuls (a DVE add of ``nl.sum`` results); ``carried`` otherwise.  A write pair
is ``output``, but none when both instructions accumulate (the read says it) or the tensor
is one the kernel placed itself (its blocks share slots by the kernel's placement, which the
``allocation`` checks own).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from itertools import chain
from dataclasses import dataclass

import numpy as np

from neuronsim.machine.ir.program import Instruction, Loop, MemoryKind, Program
from neuronsim.machine.nki.ops import ONE_PARTITION_KEY
from neuronsim.machine.nki.tracer import UNROLLED_AFFINE_KEY
from neuronsim.machine.order.stream import InstanceStream
from neuronsim.machine.model.geometry import sorted_distinct

__all__ = ["CarriedPair", "sweep_loops", "has_unrolled_affine", "RANGE_KEY", "SCOPE_KEY", "ACCUMULATE_KEY",
           "LOOP_REDUCE_KEY", "AFFINE"]

RANGE_KEY = "x-nki-range"
#: On a tensor: the kept loops around its declaration (``[]``: declared outside them all).
SCOPE_KEY = "x-nki-scope"
ACCUMULATE_KEY = "x-nki-accumulate"
LOOP_REDUCE_KEY = "x-nki-loop-reduce"
AFFINE = "affine"


@dataclass(frozen=True, slots=True)
class CarriedPair:
    """One writer / reader instruction pair a loop carries a value between, at its nearest."""

    kind: str
    """``carried``, ``accumulate`` (both instructions ``+=`` into SBUF), ``psum-accumulate``
    (both ``+=`` into PSUM, not both matmuls), ``output`` (``reader`` writes over what
    ``writer`` wrote) or ``anti`` (``reader`` writes over what ``writer``, an earlier
    iteration's instance, read: an in-place stencil, ``t[j] = t[j] + t[j + 1]``)."""
    loop: str
    distance: int
    writer: int
    """Instance id of the witness write (``reader`` reads what it wrote)."""
    reader: int
    tensors: tuple[str, ...]
    partial: int | None = None
    """For an accumulation continued across the loop (``+=``, a matmul's into PSUM): an instance
    of an instruction inside the loop that reads the partial sum (the pair is then ``carried``)."""


def accumulates(inst: Instruction) -> bool:
    """A ``+=`` of the kernel or an accumulating matmul."""
    return bool(inst.attrs.get("accumulate")) or bool(inst.extras.get(ACCUMULATE_KEY))


def _private_loops(program: Program, stream: InstanceStream) -> dict[str, set[str]]:
    """Per tensor, the loops whose body declared it (a new buffer every iteration).  The
    frontend says so with ``x-nki-scope``; without it, a virtual tensor counts as declared in
    every loop enclosing all of its accesses."""
    enclosing: dict[str, set[str] | None] = {}
    for x, inst in enumerate(stream.instrs):
        names = {loop.name for loop in stream.loops_of[x]}
        for access, _ in inst.accesses:
            seen = enclosing.get(access.tensor)
            enclosing[access.tensor] = set(names) if seen is None else seen & names
    out = {}
    for name, tensor in program.tensors.items():
        scope = tensor.extras.get(SCOPE_KEY) if tensor.extras else None
        if not tensor.is_virtual:
            out[name] = set()
        elif isinstance(scope, (list, tuple)):
            out[name] = set(scope)
        else:
            out[name] = enclosing.get(name) or set()
    return out


def _rows(mask: int, memory: MemoryKind):
    """Partitions of a mask as a slice (contiguous) or an index array; DRAM is one row."""
    if memory == MemoryKind.DRAM or mask == 0:
        return slice(0, 1)
    low = mask & -mask
    if (mask + low) & mask == 0:
        return slice(low.bit_length() - 1, mask.bit_length())
    return np.flatnonzero([(mask >> p) & 1 for p in range(mask.bit_length())])


def _events(stream: InstanceStream, storage: list[tuple[int, int]]) -> Iterator[tuple[int, object]]:
    """``(instance, access)`` of every access slot in ``storage`` in program order, reads of
    an instance before its writes."""
    ids, order, slots = [], [], []
    for x, k in storage:
        found = stream.instances_of(x)
        ca = stream.accesses(x)[k]
        ids.append(found)
        order.append(np.full(len(found), 2 * k + int(ca.is_write), np.int64))
        slots.append(np.full(len(found), len(slots), np.int64))
    ids_all, order_all, slot_all = np.concatenate(ids), np.concatenate(order), np.concatenate(slots)
    writes_last = np.array([int(stream.accesses(x)[k].is_write) for x, k in storage], np.int64)[slot_all]
    sequence = np.lexsort((order_all, writes_last, ids_all))
    for i, s in zip(ids_all[sequence].tolist(), slot_all[sequence].tolist()):
        x, k = storage[s]
        yield i, stream.accesses(x)[k]


#: Above this many byte runs a footprint's cells are gathered at once (a strided or patterned
#: access: a slice and its min / max for each run were 3 s of a conv2d's 9,655 instances).
_SPANS_ONE_BY_ONE = 4


def _columns(spans, base: int, grain: int) -> np.ndarray:
    """The last-writer array's columns of the byte runs ``spans``, all of them in one array.

    >>> _columns(((8, 16), (32, 36)), 0, 4).tolist()
    [2, 3, 8]
    """
    runs = (np.asarray(spans, np.int64) - base) // grain
    lengths = runs[:, 1] - runs[:, 0]
    shift = runs[:, 0] - np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return np.repeat(shift, lengths) + np.arange(int(lengths.sum()))


def _kernels_footprint(stream: InstanceStream, ca: object, i: int) -> tuple[int | None, object]:
    """``(partition mask, byte runs)`` of what the kernel's statement itself accesses: a value set
    on one partition off a quadrant's start is lowered to a read-modify-write of the quadrant
    (``ONE_PARTITION_KEY``), whose other rows the kernel neither reads nor writes (a probe:
    ``t[i, 2] = -1.0`` in an affine loop was two findings of carried values); None for none."""
    mask, spans = stream.footprint_at(ca, i)
    row = stream.instrs[int(stream.instr[i])].extras.get(ONE_PARTITION_KEY)
    if row is None or not mask:
        return mask, spans
    if not ca.is_write:
        return None, spans
    return 1 << ((mask & -mask).bit_length() - 1 + int(row)), spans


class _Sweep:
    """The last-writer array of one storage and the carried pairs its reads find."""

    def __init__(self, stream: InstanceStream, affine: dict[int, Loop], storage: list[tuple[int, int]],
                 marks: list[tuple | None]) -> None:
        self.stream, self.affine, self.marks = stream, affine, marks
        footprints = [(i, ca, *_kernels_footprint(stream, ca, i)) for i, ca in _events(stream, storage)]
        footprints = [f for f in footprints if f[2] is not None]
        whole = isinstance(footprints[0][1].space, tuple)  # an alias group: its tensors may sit anywhere
        bounds = [b for *_, spans in footprints for span in spans for b in span]
        self.base = 0 if whole else min(bounds)
        self.grain = 0 if whole else math.gcd(*(b - self.base for b in bounds)) or 1
        width = 1 if whole else (max(bounds) - self.base) // self.grain
        height = 1 if footprints[0][1].memory == MemoryKind.DRAM else 128
        self.whole = whole
        self.footprints = footprints
        self.last = np.full((height, width), -1, np.int64)
        self.first_read = np.full((height, width), -1, np.int64)  # per cell, the first read since its last write
        self.nearest: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self.overwrites: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self.antis: dict[tuple[int, int, int], tuple[int, int, int]] = {}

    def run(self) -> tuple[dict, dict, dict]:
        """``(loop id, writer instruction, reader instruction) -> (distance, writer, reader)``
        for the reads that take a value across a loop, and the same for the writes over bytes
        an earlier iteration wrote (``reader`` then being the later writer) and for the writes
        over bytes an earlier iteration read (``writer`` then being that read, ``reader`` the
        write: the first read since the bytes' last write, the earliest iteration's)."""
        pairs: dict[bool, tuple[list[int], list[int]]] = {False: ([], []), True: ([], [])}
        antis: tuple[list[int], list[int]] = ([], [])
        last, first_read = self.last, self.first_read
        for i, ca, mask, spans in self.footprints:
            rows = _rows(mask, ca.memory)
            if not self.whole and len(spans) > _SPANS_ONE_BY_ONE:  # one gather, not a slice a span
                cols = [_columns(spans, self.base, self.grain)]
                if not isinstance(rows, slice):
                    rows = rows[:, None]
            else:
                cols = [slice(0, 1)] if self.whole else [
                    slice((lo - self.base) // self.grain, (hi - self.base) // self.grain) for lo, hi in spans]
            values = [last[rows, c] for c in cols]
            low, high = min(int(v.min()) for v in values), max(int(v.max()) for v in values)
            earlier, later = pairs[bool(ca.is_write)]
            if high >= 0:  # else never written: nothing flows in, nothing is written over
                if low == high:  # one writer, the common case: no set to build
                    earlier.append(high)
                    later.append(i)
                else:
                    found = sorted_distinct(np.concatenate([v.ravel() for v in values]))
                    found = found[found >= 0].tolist()
                    earlier += found
                    later += [i] * len(found)
            if ca.is_write:
                read = sorted_distinct(np.concatenate([first_read[rows, c].ravel() for c in cols]))
                read = read[read >= 0].tolist()
                antis[0].extend(read)
                antis[1].extend([i] * len(read))
                for c in cols:
                    last[rows, c] = i
                    first_read[rows, c] = -1
            else:
                for c in cols:
                    seen = first_read[rows, c]
                    first_read[rows, c] = np.where(seen < 0, i, seen)
        for is_write, (earlier, later) in pairs.items():
            self._carry(np.asarray(earlier, np.int64), np.asarray(later, np.int64),
                        self.overwrites if is_write else self.nearest)
        self._carry(np.asarray(antis[0], np.int64), np.asarray(antis[1], np.int64), self.antis)
        return self.nearest, self.overwrites, self.antis

    def _carry(self, writer: np.ndarray, reader: np.ndarray, into: dict) -> None:
        """Record each ``writer -> reader`` pair whose first loop where their indices differ
        is affine, the nearest (first found among equals) per loop and instruction pair; the
        pairs of one instruction pair at once (a tiled kernel's reads are thousands of
        instances of a few instructions)."""
        stream = self.stream
        if not len(writer):
            return
        xw_all, xr_all = stream.instr[writer], stream.instr[reader]
        groups, which = np.unique(np.stack([xw_all, xr_all]), axis=1, return_inverse=True)
        # each group's pairs in sweep order (a stable sort: linear in the pairs however many groups)
        order = np.argsort(which.reshape(-1), kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(which.reshape(-1), minlength=groups.shape[1]))]).tolist()
        for g, (xw, xr) in enumerate(groups.T.tolist()):
            common = stream.common(xw, xr)
            unrolled = _unrolled_carry(self.marks[xw], self.marks[xr])
            picked = order[bounds[g]:bounds[g + 1]]
            if common == 0:
                if unrolled is not None:
                    self._note(into, unrolled, xw, xr, int(writer[picked[0]]), int(reader[picked[0]]))
                continue
            w_digits = _index(stream, xw, writer[picked], common)
            r_digits = _index(stream, xr, reader[picked], common)
            differs = w_digits != r_digits
            has_level = differs.any(axis=0)  # else the same iteration of every loop around both
            if unrolled is not None and not has_level.all():  # in one iteration of the kept loops: the unrolled one
                first = int(np.argmin(has_level))
                self._note(into, unrolled, xw, xr, int(writer[picked[first]]), int(reader[picked[first]]))
            level = np.argmax(differs, axis=0)
            for k in sorted_distinct(level[has_level]).tolist():
                loop = stream.loops_of[xr][k]
                if id(loop) not in self.affine:
                    continue
                at = np.flatnonzero(has_level & (level == k))
                gaps = r_digits[k, at] - w_digits[k, at]
                best = int(np.argmin(gaps))  # the first of the nearest
                key, gap = (id(loop), xw, xr), int(gaps[best])
                if key not in into or gap < into[key][0]:
                    into[key] = (gap, int(writer[picked[at[best]]]), int(reader[picked[at[best]]]))

    @staticmethod
    def _note(into: dict, unrolled: tuple[tuple, int], xw: int, xr: int, writer: int, reader: int) -> None:
        """Record a pair an unrolled affine loop carries (``unrolled``: its key and the distance)."""
        key, gap = (unrolled[0], xw, xr), unrolled[1]
        if key not in into or gap < into[key][0]:
            into[key] = (gap, writer, reader)


def has_unrolled_affine(program: Program) -> bool:
    """Whether an instruction of ``program`` sits in a legacy ``affine_range`` loop the trace
    unrolled (:data:`~neuronsim.machine.nki.tracer.UNROLLED_AFFINE_KEY`)."""
    return any(inst.extras and UNROLLED_AFFINE_KEY in inst.extras for inst, _ in program.instructions())


def _unrolled_marks(stream: InstanceStream) -> list[tuple | None]:
    """Per instruction, its unrolled legacy ``affine_range`` loops, ``(occurrence, variable,
    iteration)`` outermost first (:data:`~neuronsim.machine.nki.tracer.UNROLLED_AFFINE_KEY`), or None."""
    out: list[tuple | None] = []
    for inst in stream.instrs:
        marks = inst.extras.get(UNROLLED_AFFINE_KEY) if inst.extras else None
        out.append(tuple(tuple(mark) for mark in marks) if marks else None)
    return out


def _unrolled_carry(writer: tuple | None, reader: tuple | None) -> tuple[tuple, int] | None:
    """``(loop key, distance)`` of the outermost unrolled affine loop both instructions sit in
    (one run of it) at different iterations, or None.  Iterations of an outer loop that differ
    put the inner loops' runs apart, so the first difference found is the loop carrying.

    >>> _unrolled_carry(((1, "k", 0),), ((1, "k", 2),))
    (('unrolled', 1, 'k'), 2)
    >>> _unrolled_carry(((1, "k", 0), (2, "j", 1)), ((1, "k", 0), (2, "j", 3)))
    (('unrolled', 2, 'j'), 2)
    >>> _unrolled_carry(((2, "j", 0),), ((3, "j", 1),)) is None  # two runs of the inner loop
    True
    """
    if not writer or not reader:
        return None
    at = {run: iteration for run, _var, iteration in reader}
    for run, var, iteration in writer:
        later = at.get(run)
        if later is not None and later != iteration:
            return ("unrolled", run, var), later - iteration
    return None


def _index(stream: InstanceStream, x: int, i: np.ndarray, levels: int) -> np.ndarray:
    """The outer ``levels`` loop indices of instances ``i`` of instruction ``x``, one row per
    level (:meth:`InstanceStream.index_of`, cut short: a loop's body may hold more than the
    loop inside it, so each index is a quotient of what the outer ones leave)."""
    rest, out = i - stream.first[x], np.empty((levels, len(i)), np.int64)
    for k, span in enumerate(stream.spans[x][:levels]):
        out[k], rest = np.divmod(rest, span)
    return out


def _storages(stream: InstanceStream, affine: dict[int, Loop], marks: list[tuple | None],
              private: dict[str, set[str]]) -> dict[object, list[tuple[int, int]]]:
    """Access slots ``(instruction, position)`` per storage (a tensor, or a DRAM alias group)
    that some affine loop (kept, or one run of an unrolled one) writes, the storage not being
    declared in that loop's body, in order of first access.

    Read from the stream's access slots as columns: a kernel neuronx-cc printed has a quarter
    of a million slots and half a million unrolled-loop marks (NKIBench's ``gqa_full``: 0.66 s
    as a walk of the slots, 0.29 s so)."""
    temps = stream.templates
    ids: dict[object, int] = {}  # storage -> its number, in order of first access
    key_t = np.fromiter((ids.setdefault(ca.space if isinstance(ca.space, tuple) else ca.tensor, len(ids))
                         for ca in temps), np.int64, len(temps))
    write_t = np.fromiter((ca.is_write for ca in temps), bool, len(temps))
    slot_x = stream.slot_x.astype(np.int64)
    key_s, write_s = key_t[stream.slot_t], write_t[stream.slot_t]
    storages = list(ids)
    carries = np.zeros(len(storages), bool)
    if affine:  # a kept affine loop writes it, the storage not being declared in its body
        kept = [[loop.name for loop in loops if id(loop) in affine] for loops in stream.loops_of]
        at = np.flatnonzero(write_s & np.fromiter(map(bool, kept), bool, stream.m)[slot_x])
        for key, x in set(zip(key_s[at].tolist(), slot_x[at].tolist())):
            storage = storages[key]
            own = () if isinstance(storage, tuple) else private.get(stream.tensor_names[storage], ())
            carries[key] |= any(name not in own for name in kept[x])
    runs = [(x, run, iteration) for x, found in enumerate(marks) if found for run, _var, iteration in found]
    if runs:  # one run of an unrolled affine loop writes it, and its slots span two iterations
        carries[_spanning_runs(runs, slot_x, key_s, write_s, stream.m)] = True
    bounds = np.searchsorted(slot_x, np.arange(stream.m + 1))
    chosen = np.flatnonzero(carries[key_s])
    chosen = chosen[np.argsort(key_s[chosen], kind="stable")]  # by storage, each in slot order
    out: dict[object, list[tuple[int, int]]] = {storages[key]: [] for key in np.flatnonzero(carries).tolist()}
    for key, x, k in zip(key_s[chosen].tolist(), slot_x[chosen].tolist(), (chosen - bounds[slot_x[chosen]]).tolist()):
        out[storages[key]].append((x, k))
    return out


def _spanning_runs(runs: list[tuple[int, int, int]], slot_x: np.ndarray, key_s: np.ndarray, write_s: np.ndarray,
                   m: int) -> np.ndarray:
    """The storages (numbers, ``key_s`` per slot) some run of an unrolled loop writes whose
    slots in that run lie in two iterations or more; ``runs``: ``(instruction, run,
    iteration)`` of every instruction's marks."""
    x, run, iteration = np.fromiter(chain.from_iterable(runs), np.int64, 3 * len(runs)).reshape(-1, 3).T
    per_x = np.bincount(x, minlength=m)
    count = per_x[slot_x]  # one row per slot and mark of its instruction
    slot = np.repeat(np.arange(len(slot_x)), count)
    if not len(slot):
        return np.zeros(0, np.int64)
    row = np.repeat(np.cumsum(per_x)[slot_x] - np.cumsum(count), count) + np.arange(len(slot))  # its mark
    key, run, iteration, written = key_s[slot], run[row], iteration[row], write_s[slot]
    order = np.lexsort((iteration, run, key))
    key, run, iteration, written = key[order], run[order], iteration[order], written[order]
    first = np.ones(len(key), bool)  # the first row of each (storage, run)
    first[1:] = (key[1:] != key[:-1]) | (run[1:] != run[:-1])
    another = np.zeros(len(key), bool)  # a second iteration in its (storage, run)
    another[1:] = ~first[1:] & (iteration[1:] != iteration[:-1])
    group = np.cumsum(first) - 1
    spans = np.bincount(group, weights=another, minlength=int(group[-1]) + 1) > 0
    writes = np.bincount(group, weights=written, minlength=len(spans)) > 0
    return key[first][spans & writes]


def _partial_reader(program: Program, stream: InstanceStream, marks: list[tuple | None], loop: object,
                    tensors: list[str], readers: dict[tuple[object, str], list[int]]) -> int | None:
    """An instance of an instruction inside ``loop`` that reads one of ``tensors`` and does not
    accumulate into it, else None.  ``loop``: a kept loop's name, or an unrolled affine loop's
    key (``("unrolled", run, variable)``: its instructions are those one run of it traced).
    ``readers`` (empty at first) gathers once, by loop and tensor, the stream index of every
    such instruction."""
    if not readers:
        index = {inst.name: x for x, inst in enumerate(stream.instrs)}
        for inst, loops in program.instructions():
            x = index.get(inst.name)
            if x is None or accumulates(inst):
                continue
            keys = [*(enclosing.name for enclosing in loops),
                    *(("unrolled", run, var) for run, var, _iteration in marks[x] or ())]
            for access in inst.reads:
                for key in keys:
                    readers.setdefault((key, access.tensor), []).append(x)
        readers.setdefault(("", ""), [])  # gathered, even when nothing reads
    for x in (x for tensor in tensors for x in readers.get((loop, tensor), ())):
        if len(stream.instances_of(x)):
            return int(stream.instances_of(x)[0])
    return None


def _declared_reduction(inst: Instruction, loop: str) -> bool:
    """``inst`` is an ``nl.loop_reduce`` whose ``loop_indices`` name ``loop`` (``true``: every
    loop, as a call whose indices named none, or a program saved before the loops were kept)."""
    declared = inst.extras.get(LOOP_REDUCE_KEY)
    return declared is True or (isinstance(declared, list) and loop in declared)


def _tagged(flows: dict, overwrites: dict, antis: dict) -> Iterator[tuple[tuple, str]]:
    """The sweep's pairs, each with its dependence: ``RAW`` (a read of an earlier iteration's
    write), ``WAW`` (a write over one), ``WAR`` (a write over an earlier iteration's read)."""
    for pairs, dependence in ((flows, "RAW"), (overwrites, "WAW"), (antis, "WAR")):
        for item in pairs.items():
            yield item, dependence


def sweep_loops(program: Program, stream: InstanceStream) -> list[CarriedPair]:
    """Every value an affine loop carries (module doc), nearest distance per instruction pair,
    ``stream`` being the program's on the identity placement (each tensor on bytes of its own)."""
    affine = {id(node): node for node, _ in program.walk()
              if isinstance(node, Loop) and node.extras.get(RANGE_KEY) == AFFINE and node.trip_count > 1}
    marks = _unrolled_marks(stream)
    if not affine and not any(marks):
        return []
    private = _private_loops(program, stream)
    partial_readers: dict[tuple[str, str], list[int]] = {}  # (loop, tensor) -> readers (_partial_reader)
    found: dict[tuple[str, str, int, int], CarriedPair] = {}
    allowed: set[tuple[str, str]] = set()  # (loop, tensor) a reduction the docs allow carries
    for storage in _storages(stream, affine, marks, private).values():
        flows, overwrites, antis = _Sweep(stream, affine, storage, marks).run()
        # per instruction, the tensors it names here (not a scan of the storage per pair found)
        names: dict[int, set[str]] = defaultdict(set)
        for x, k in storage:
            names[x].add(stream.tensor_names[stream.accesses(x)[k].tensor])
        for ((loop_id, xw, xr), (distance, w, r)), dependence in _tagged(flows, overwrites, antis):
            over = dependence != "RAW"  # (a write over what another iteration wrote or read)
            tensors = sorted(names[xw] | names[xr])
            if isinstance(loop_id, tuple):  # an unrolled loop: each iteration declares its tiles anew
                loop_name = loop_id[2]
            else:
                loop_name = affine[loop_id].name
                tensors = [t for t in tensors if loop_name not in private[t]]
            if not tensors:
                continue  # a tile declared in the body: a new buffer every iteration
            writer, reader = stream.instrs[xw], stream.instrs[xr]
            memory = program.tensors[tensors[0]].memory
            both = accumulates(writer) and accumulates(reader)
            partial = None
            if both and not over:
                # an accumulation is a reduction (the carried value affine loops allow, a matmul's
                # into PSUM without a word) only while the loop's body does not read the partial sum:
                # an accumulator zeroed outside the output tile's loop gives each tile the sums of the
                # ones before it (it ran without a word, a probe; so did an SBUF +=, and the PSUM
                # one when both loops were unrolled, probe_v)
                partial = _partial_reader(program, stream, marks, loop_id if isinstance(loop_id, tuple) else loop_name,
                                          tensors, partial_readers)
                if partial is None and memory == MemoryKind.PSUM and writer.op == reader.op == "matmul":
                    allowed.update((loop_name, t) for t in tensors)
                    continue
            if _declared_reduction(writer, loop_name) and _declared_reduction(reader, loop_name):
                allowed.update((loop_name, t) for t in tensors)
                continue  # nl.loop_reduce over this loop: a reduction the kernel declared
            if dependence == "WAW" and both:
                continue  # a += writes what it read: its read already says what the loop carries
            if over:
                # a tile the kernel placed itself (direct allocation): which bytes its blocks and
                # iterations share is the allocation's, and the 'allocation' checks own it
                tensors = [t for t in tensors
                           if program.tensors[t].is_virtual or program.tensors[t].memory == MemoryKind.DRAM]
                if not tensors:
                    continue
            if over:
                kind = "output" if dependence == "WAW" else "anti"
            else:
                kind = {MemoryKind.SBUF: "accumulate", MemoryKind.PSUM: "psum-accumulate"}.get(memory, "carried") \
                    if both and partial is None else "carried"
            key = (kind, loop_name, xw, xr)
            old = found.get(key)
            if old is None or distance < old.distance:
                merged = tuple(dict.fromkeys([*(old.tensors if old else ()), *tensors]))
                found[key] = CarriedPair(kind=kind, loop=loop_name, distance=distance, writer=w, reader=r,
                                         tensors=merged, partial=partial)
            else:
                found[key] = CarriedPair(kind=old.kind, loop=old.loop, distance=old.distance, writer=old.writer,
                                         reader=old.reader, tensors=tuple(dict.fromkeys([*old.tensors, *tensors])),
                                         partial=old.partial)
    # a write over an earlier iteration's read says nothing new where the loop already carries
    # a value or an overwrite of the same tensor (a scratch tile rewritten every iteration)
    told = allowed | {(p.loop, t) for p in found.values() if p.kind != "anti" for t in p.tensors}
    kept = [p for p in found.values() if p.kind != "anti" or not all((p.loop, t) in told for t in p.tensors)]
    return sorted(kept, key=lambda p: (p.reader, p.writer))
