"""Allocation: place virtual tensors by liveness, reusing storage like a real allocator.

Anti and output dependences are an artifact of storage reuse, so an allocator that never
reused anything would hide them.  This one reuses the way NKI's ``mod_alloc`` does
(``../shared/reference/kernels.md`` 1.4): logical buffers of one *shape class* rotate through
``buffers`` physical slots, tile ``i`` landing in slot ``i mod n`` when its predecessors are
dead, so a slot is reused every ``n`` buffers (double buffering for ``n = 2``).

* **Liveness**: a tensor is live from the first to the last instance touching it (instance
  ids are program order, loops unrolled); ``input`` DRAM tensors all along (they hold the
  caller's data), ``output`` ones to the end.  Two tensors share storage only if their live ranges are disjoint, so
  every access of one precedes every access of the other in program order.
* **SBUF coloring** (partition x byte): classes are ``(partitions, bytes)``.  Within a class,
  tensors in order of first use take slots by rotation (the next slot after the last one
  used whose tensors are dead, else a new slot).  Slots are then packed: each goes to the
  partition base (0, 32, 64, 96) where it can sit lowest, among the bases that keep every
  compute access to its tensors within the partition-start rule, above every placed tensor.
* **PSUM bank coloring**: tensors in order of first use go to banks by rotation
  (``psum.mod_alloc``): the next bank after the last one used that holds no live tensor,
  else the first bank with a free byte range; at most ``psum_banks`` banks (0: all).
* **DRAM**: virtual DRAM tensors are classed by size and rotate through slots placed above
  every addressed tensor.  Alias-group tensors are placements already: they stay aliases.

``alloc-shared-dram`` is the later shared-DRAM allocation: it gives each alias group its own
region, rotates the group's tensors through slots inside it by liveness, and marks them
``"x-shared": GROUP`` so ``anti-deps{spaces=shared}`` can run again after it.

Contract (``alloc``)
    requires: a valid program.
    guarantees: no virtual tensor; placed tensors unchanged; two tensors placed by this pass
    overlap only if their live ranges are disjoint, and never overlap a tensor that was
    already placed; every placement passes :func:`machine.validate.validate_program`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from machine.errors import ProgramError
from machine.ir import MemoryKind, Program, Tensor, frozen_mapping

from machine.stream import InstanceStream as Stream
from passes.pipeline import Pass, PassContext

__all__ = ["Alloc", "AllocSharedDram", "live_ranges", "rotate_slots"]


def live_ranges(stream: Stream) -> dict[str, tuple[int, int]]:
    """``name -> (first instance, last instance)`` touching the tensor.

    Tensors nobody touches get ``(n, -1)``: disjoint from everything.
    """
    n = len(stream)
    live = {name: (n, -1) for name in stream.tensor_names}
    for x in range(stream.m):
        for ca in stream.accesses(x):
            name = stream.tensor_names[ca.tensor]
            lo, hi = live[name]
            live[name] = (min(lo, stream.first[x]), max(hi, stream.last[x]))
    for name, tensor in stream.program.tensors.items():
        lo, hi = live[name]
        if tensor.memory == MemoryKind.DRAM and tensor.role == "input":
            lo, hi = -1, n  # the caller's data: never overwritten by another tensor
        if tensor.memory == MemoryKind.DRAM and tensor.role == "output":
            hi = n
        live[name] = (lo, hi)
    return live


def rotate_slots(items: list[tuple[str, int, int]], buffers: int) -> dict[str, int]:
    """Slot per item ``(name, live start, live end)``, rotating through ``buffers`` slots.

    >>> rotate_slots([("t0", 0, 1), ("t1", 2, 3), ("t2", 4, 5), ("t3", 6, 7)], 2)
    {'t0': 0, 't1': 1, 't2': 0, 't3': 1}
    >>> rotate_slots([("a", 0, 9), ("b", 1, 2), ("c", 3, 4)], 1)   # a still live: new slot
    {'a': 0, 'b': 1, 'c': 1}
    """
    busy: list[int] = []
    cursor = 0
    out: dict[str, int] = {}
    for name, start, end in sorted(items, key=lambda it: (it[1], it[0])):
        slots = max(len(busy), buffers)
        chosen = slots
        for step in range(slots):
            s = (cursor + step) % slots
            if s >= len(busy) or busy[s] < start:
                chosen = s
                break
        while len(busy) <= chosen:
            busy.append(-2)
        busy[chosen] = max(busy[chosen], end)
        cursor = chosen + 1
        out[name] = chosen
    return out


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def _start_ok(first: int, span: int) -> bool:
    """The partition-start rule of compute accesses (:mod:`machine.optable`)."""
    if span > 64:
        return first == 0
    if span > 32:
        return first in (0, 64)
    return first % 32 == 0


def _compute_spans(program: Program) -> dict[str, list[tuple[int, int]]]:
    """Per tensor, ``(relative start, span)`` of every compute (non-DMA) access."""
    out: dict[str, list[tuple[int, int]]] = {}
    for inst, _ in program.instructions():
        if inst.is_dma:
            continue
        for access, _ in inst.accesses:
            tensor = program.tensors[access.tensor]
            start, count, step = access.partitions or (0, tensor.shape[0], 1)
            out.setdefault(access.tensor, []).append((start, (count - 1) * step + 1))
    return out


def _place_sbuf(program: Program, live, buffers: int, align: int, spec) -> dict[str, Tensor]:
    virtual = [t for t in program.tensors.values() if t.memory == MemoryKind.SBUF and t.is_virtual]
    quadrants = -(-spec.sbuf_partitions // 32)
    hwm = [0] * quadrants
    for t in program.tensors.values():
        if t.memory == MemoryKind.SBUF and not t.is_virtual:
            for q in range(t.partition // 32, (t.partition + t.shape[0] - 1) // 32 + 1):
                hwm[q] = max(hwm[q], t.offset + t.bytes_per_partition)
    spans = _compute_spans(program)
    classes: dict[tuple[int, int], list[Tensor]] = {}
    for t in virtual:
        classes.setdefault((t.shape[0], _align(t.bytes_per_partition, align)), []).append(t)
    placed: dict[str, Tensor] = {}
    for (parts, nbytes), members in classes.items():
        slot_of = rotate_slots([(t.name, *live[t.name]) for t in members], buffers)
        for slot in sorted(set(slot_of.values())):
            tensors = [t for t in members if slot_of[t.name] == slot]
            bases = [b for b in range(0, spec.sbuf_partitions, 32) if b + parts <= spec.sbuf_partitions
                     and all(_start_ok(b + s, span) for t in tensors for s, span in spans.get(t.name, ()))]
            if not bases:
                raise ProgramError(f"tensors.{tensors[0].name}", "no partition base keeps its compute accesses within the partition-start rule")
            best = min(bases, key=lambda b: (_align(max(hwm[b // 32:(b + parts - 1) // 32 + 1]), align), b))
            offset = _align(max(hwm[best // 32:(best + parts - 1) // 32 + 1]), align)
            if offset + nbytes > spec.sbuf_partition_bytes:
                raise ProgramError(f"tensors.{tensors[0].name}", f"virtual SBUF tensors need more than the {spec.sbuf_partition_bytes} bytes of a partition")
            for q in range(best // 32, (best + parts - 1) // 32 + 1):
                hwm[q] = offset + nbytes
            for t in tensors:
                placed[t.name] = Tensor(t.name, t.memory, t.dtype, t.shape, partition=best, offset=offset, extras=t.extras)
    return placed


def _place_psum(program: Program, live, banks: int, align: int, spec) -> dict[str, Tensor]:
    banks = min(banks or spec.psum_banks, spec.psum_banks)
    size = spec.psum_bank_bytes
    # regions[k]: (lo, hi, busy until) inside bank k; placed tensors are busy forever.
    regions: list[list[tuple[int, int, float]]] = [[] for _ in range(spec.psum_banks)]
    for t in program.tensors.values():
        if t.memory == MemoryKind.PSUM and not t.is_virtual:
            regions[t.bank].append((t.offset, t.offset + t.bytes_per_partition, float("inf")))
    virtual = sorted((t for t in program.tensors.values() if t.memory == MemoryKind.PSUM and t.is_virtual),
                     key=lambda t: (live[t.name][0], t.name))
    placed: dict[str, Tensor] = {}
    cursor = 0
    for t in virtual:
        start, end = live[t.name]
        need = min(_align(t.bytes_per_partition, align), size)
        order = [(cursor + s) % banks for s in range(banks)]
        choice = None
        for k in order:  # rotation: a bank with no live tensor
            if all(until < start for _, _, until in regions[k]):
                choice = (k, 0)
                break
        if choice is None:  # first fit among live regions
            for k in order:
                live_regions = sorted((lo, hi) for lo, hi, until in regions[k] if until >= start)
                offset = 0
                for lo, hi in live_regions:
                    if offset + need <= lo:
                        break
                    offset = max(offset, _align(hi, align))
                if offset + t.bytes_per_partition <= size:
                    choice = (k, offset)
                    break
        if choice is None:
            raise ProgramError(f"tensors.{t.name}", f"no PSUM bank has room while it is live ({banks} banks)")
        k, offset = choice
        regions[k].append((offset, offset + need, end))
        cursor = k + 1
        placed[t.name] = Tensor(t.name, t.memory, t.dtype, t.shape, partition=0, offset=offset, bank=k, extras=t.extras)
    return placed


def _dram_end(program: Program) -> int:
    return max((t.address + t.bytes_per_partition for t in program.tensors.values()
                if t.memory == MemoryKind.DRAM and t.address is not None), default=0)


def _place_dram(members: list[Tensor], live, buffers: int, align: int, base: int, spec, shared: str | None) -> tuple[dict[str, Tensor], int]:
    """Slots by size class and rotation, laid out from ``base``; returns placements and end."""
    classes: dict[object, list[Tensor]] = {}
    for t in members:  # inputs are live all along: a slot of their own, outside the rotation
        key = _align(t.bytes_per_partition, align)
        classes.setdefault((key, t.name) if t.role == "input" else key, []).append(t)
    placed: dict[str, Tensor] = {}
    address = _align(base, align)
    for key, group in classes.items():
        nbytes = key[0] if isinstance(key, tuple) else key
        slot_of = rotate_slots([(t.name, *live[t.name]) for t in group], buffers)
        for slot in sorted(set(slot_of.values())):
            for t in group:
                if slot_of[t.name] == slot:
                    extras = dict(t.extras)
                    if shared is not None:
                        extras["x-shared"] = shared
                    placed[t.name] = Tensor(t.name, t.memory, t.dtype, t.shape, address=address, role=t.role,
                                            extras=frozen_mapping(extras))
            address += nbytes
    if address > spec.dram_bytes:
        raise ProgramError(f"tensors.{members[0].name}", f"virtual DRAM tensors run past the end of DRAM ({spec.dram_bytes} bytes)")
    return placed, address


def _with_placements(program: Program, placed: dict[str, Tensor]) -> Program:
    if not placed:
        return program
    return program.with_tensors({name: placed.get(name, t) for name, t in program.tensors.items()})


@dataclass(frozen=True, slots=True)
class Alloc(Pass):
    """Place every virtual tensor by liveness, rotating through ``buffers`` slots per class.

    Contract
        requires: a valid program.
        guarantees: no virtual tensor left; placed tensors unchanged and never overlapped by a
        new placement; two new placements overlap only if their live ranges are disjoint;
        every compute access keeps the partition-start rule; no-op without virtual tensors.
    """

    name: ClassVar[str] = "alloc"
    places: ClassVar[bool] = True
    buffers: int = 2
    psum_banks: int = 0
    align: int = 64

    def __post_init__(self) -> None:
        if self.buffers < 1 or self.align < 1 or self.psum_banks < 0:
            raise ValueError("buffers and align must be >= 1, psum_banks >= 0")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        if not program.has_virtual_tensors:
            return program  # allocation only when needed
        spec = ctx.machine(program)
        live = live_ranges(ctx.stream(program))
        placed = _place_sbuf(program, live, self.buffers, self.align, spec)
        placed.update(_place_psum(program, live, self.psum_banks, self.align, spec))
        dram = [t for t in program.tensors.values() if t.memory == MemoryKind.DRAM and t.is_virtual]
        if dram:
            placed.update(_place_dram(dram, live, self.buffers, self.align, _dram_end(program), spec, None)[0])
        ctx.count(self.name, "placed", len(placed))
        return _with_placements(program, placed)


@dataclass(frozen=True, slots=True)
class AllocSharedDram(Pass):
    """Give alias-group tensors addresses (shared-DRAM allocation), marked ``x-shared``.

    Contract
        requires: a valid program.
        guarantees: no alias-group tensor left; each group gets its own region above every
        addressed tensor; inside it, two tensors overlap only if their live ranges are
        disjoint.
    """

    name: ClassVar[str] = "alloc-shared-dram"
    buffers: int = 2
    align: int = 64

    def apply(self, program: Program, ctx: PassContext) -> Program:
        groups: dict[str, list[Tensor]] = {}
        for t in program.tensors.values():
            if t.alias is not None:
                groups.setdefault(t.alias, []).append(t)
        if not groups:
            return program
        spec = ctx.machine(program)
        live = live_ranges(ctx.stream(program))
        end = _dram_end(program)
        placed: dict[str, Tensor] = {}
        for group, members in groups.items():
            mine, end = _place_dram(members, live, self.buffers, self.align, end, spec, group)
            placed.update(mine)
        ctx.count(self.name, "placed", len(placed))
        return _with_placements(program, placed)
