"""Access slots and their compiled templates: what the instance stream knows of accesses.

Every access of every instruction is a *slot* (instructions in document order, each one's
reads then writes).  Slots that name equal accesses (the same object or not) that cannot move
with a loop share one *template*; an access that moves gets a template per slot.  The layout
(:func:`lay_out_slots`) depends on the body only; the templates are compiled against a
placement (:func:`compile_templates`), so a program whose tensors were placed anew keeps its
layout and recompiles its templates
(:meth:`neuronsim.machine.order.stream.InstanceStream.for_placement`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, count, repeat
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from neuronsim.machine.model.geometry import ByteSet, base_footprint
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Tensor

__all__ = ["CompiledAccess", "SlotLayout", "lay_out_slots", "compile_templates", "compile_access"]

_VALUE = attrgetter("tensor", "partitions", "offset", "pattern", "per_iteration", "partitions_per_iteration")
_PLACED_VALUE = attrgetter("tensor", "partitions", "offset", "pattern")  # of an access that cannot move
_READS, _WRITES = attrgetter("reads"), attrgetter("writes")
_raw_footprint = base_footprint.__wrapped__  # templates are shared already: skip hashing tensor and access


class CompiledAccess(NamedTuple):
    """One access of an instruction, compiled for the hot loops (a named tuple: cheap)."""

    is_write: bool
    tensor: int
    """Tensor id (position in ``program.tensors``)."""
    space: object
    """``"sbuf"``, ``"psum"``, ``"dram"`` or ``("alias", group)``."""
    memory: MemoryKind
    mask: int
    """Partition bit mask at iteration 0 (0 for DRAM)."""
    bytes: ByteSet
    """Byte intervals at iteration 0."""
    shifts: tuple[tuple[int, int], ...]
    """``(loop position, bytes per iteration)``: how the bytes move with the loop indices."""
    pshifts: tuple[tuple[int, int], ...]
    """``(loop position, partitions per iteration)``."""
    rotation: tuple[int, int, int] | None
    """``(loop position, slots, stride bytes)`` of a rotating tensor."""
    access: Access

    @property
    def moves(self) -> bool:
        return bool(self.shifts or self.pshifts or self.rotation)


class SlotLayout(NamedTuple):
    """The access slots of a body and their templates (see the module doc)."""

    accesses: list[Access]
    """Per template: the access it compiles."""
    writes: list[bool]
    """Per template: whether it is a write."""
    template_x: list[int]
    """Per template: the first instruction using it."""
    slot_x: np.ndarray
    """Per slot: its instruction (int32 below 2**31 slots, as ``slot_t``)."""
    slot_t: np.ndarray
    """Per slot: its template."""


def lay_out_slots(instrs: Sequence[Instruction], *, can_move: bool = True) -> SlotLayout:
    """Name every access slot's template, independently of placements: equal accesses
    share one (by value: generated code makes one object per instruction, and a loader one
    per access it reads); an access that moves with a loop gets one per slot.  Templates are
    numbered in document order of their first slot.

    Values are told apart at C level (per slot one ``attrgetter`` tuple and one
    ``dict.setdefault`` giving the first slot of its value and direction), the rest is numpy
    in linear time; Python visits one step per distinct value only (does it move?).
    ``can_move=False`` says the body has no loops, so no access moves (a valid program's
    shifts name enclosing loops): the value is then the four fields a placement reads, a
    third less per slot (performance notes 2.8).

    >>> from neuronsim.machine.ir.program import Access, Instruction
    >>> body = [Instruction("a", "dve", "op", (Access("x"),), (Access("y"),)),
    ...         Instruction("b", "dve", "op", (Access("x"), Access("y")), (Access("x"),))]
    >>> layout = lay_out_slots(body, can_move=False)
    >>> layout.slot_t.tolist(), layout.writes
    ([0, 1, 0, 2, 3], [False, True, False, True])
    >>> lay_out_slots(body).slot_t.tolist() == layout.slot_t.tolist()
    True
    """
    value_of = _VALUE if can_move else _PLACED_VALUE
    # Each direction's accesses are streamed from the instructions, never held as a list: a
    # list of them (and one of each instruction's tuple) is a pass and 8 B a slot more; the
    # few template accesses are read back from their instructions at the end.
    n_reads = np.fromiter(map(len, map(_READS, instrs)), np.int64, len(instrs))
    counts = n_reads + np.fromiter(map(len, map(_WRITES, instrs)), np.int64, len(instrs))
    n = int(counts.sum())
    # the two per-slot columns the stream keeps are int32 below 2**31 slots (half the bytes)
    ids = np.int32 if n < 2**31 else np.int64
    slot_x = np.repeat(np.arange(len(instrs), dtype=ids), counts)
    within = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    is_write = within >= n_reads[slot_x]
    first_slot = np.empty(n, np.int64)  # per slot: the first slot with its value and direction
    movers: list[int] = []
    for direction, field in ((False, _READS), (True, _WRITES)):
        slots = np.flatnonzero(is_write == direction)
        first_of: dict[tuple, int] = {}  # value -> its first index among this direction's slots
        values = map(value_of, chain.from_iterable(map(field, instrs)))
        first_local = np.fromiter(map(first_of.setdefault, values, count()), np.int64, len(slots))
        first_slot[slots] = slots[first_local]
        if can_move:
            movers += [int(slots[k]) for value, k in first_of.items() if value[4] or value[5]]
    if movers:  # an access that moves is its own template at every slot
        moving = np.zeros(n, bool)
        moving[movers] = True
        moving = moving[first_slot]
        first_slot[moving] = np.flatnonzero(moving)
    is_first = np.zeros(n, bool)
    is_first[first_slot] = True
    first = np.flatnonzero(is_first)  # template t's first slot; numbered in document order
    slot_t = (np.cumsum(is_first) - 1).astype(ids)[first_slot]
    template_write = is_write[first].tolist()
    template_x = slot_x[first].tolist()
    accesses = [instrs[x].writes[k - int(n_reads[x])] if w else instrs[x].reads[k]
                for x, k, w in zip(template_x, within[first].tolist(), template_write)]
    return SlotLayout(accesses, template_write, template_x, slot_x, slot_t)


def compile_templates(layout: SlotLayout, tensors: Mapping[str, Tensor], tensor_id: Mapping[str, int],
                  loops_of: Sequence[tuple[Loop, ...]]) -> list[CompiledAccess]:
    """Accesses that cannot move and touch tensors of one geometry (memory, dtype, shape,
    first partition) with the same partitions, pattern and direction have footprints that
    differ by a byte shift only (:func:`~neuronsim.machine.model.geometry.base_footprint` is affine in the
    tensor's first byte and, with an explicit pattern, in the offset): the first is
    compiled, the others are it shifted."""

    def compile_one(x: int, access: Access, is_write: bool, tensor: Tensor) -> CompiledAccess:
        return compile_access(access, is_write, tensor, tensor_id[access.tensor], loops_of[x])

    info: dict[str, tuple] = {}  # tensor -> (geometry, first byte, item size, id); absent: compile each access
    for name, tensor in tensors.items():
        if tensor.rotate is None and tensor.alias is None and not tensor.is_virtual:
            info[name] = ((tensor.memory, tensor.dtype, tensor.shape, tensor.partition), tensor.byte_base,
                          tensor.itemsize, tensor_id[name])
    protos: dict[tuple, tuple[CompiledAccess, int]] = {}
    # (prototype, shift) -> its shifted bytes: after allocation many tiles share storage, so
    # their templates share one byte set (~170 B each, not one per template)
    shifted: dict[tuple[int, int], ByteSet] = {}
    out = []
    append = out.append
    for x, access, is_write in zip(layout.template_x, layout.accesses, layout.writes):
        about = info.get(access.tensor)
        if about is None or access.per_iteration or access.partitions_per_iteration:
            append(compile_one(x, access, is_write, tensors[access.tensor]))
            continue
        geometry, base, itemsize, tid = about
        pattern = access.pattern
        if pattern is None:
            key = (geometry, access.partitions, None, access.offset, is_write)
            first = base
        else:
            key = (geometry, access.partitions, pattern, None, is_write)
            first = base + (access.offset or 0) * itemsize
        found = protos.get(key)
        if found is None:
            compiled = compile_one(x, access, is_write, tensors[access.tensor])
            protos[key] = (compiled, first)
            append(compiled)
            continue
        proto, shift = found
        shift = first - shift
        byteset = shifted.get((id(proto), shift))
        if byteset is None:
            byteset = shifted[(id(proto), shift)] = tuple([(lo + shift, hi + shift) for lo, hi in proto.bytes])
        append(CompiledAccess(is_write, tid, proto.space, proto.memory, proto.mask, byteset, (), (), None, access))
    return out


def compile_access(access: Access, is_write: bool, tensor: Tensor, tensor_id: int,
                   loops: tuple[Loop, ...]) -> CompiledAccess:
    """One access of an instruction nested in ``loops``, compiled against ``tensor``."""
    fp = _raw_footprint(tensor, access)
    shifts: tuple = ()
    pshifts: tuple = ()
    rotation = None
    if access.per_iteration or access.partitions_per_iteration or tensor.rotate is not None:
        position = {loop.name: k for k, loop in enumerate(loops)}
        shifts = tuple((position[loop], s * tensor.itemsize) for loop, s in access.per_iteration if s)
        pshifts = tuple((position[loop], s) for loop, s in access.partitions_per_iteration if s)
        rot = tensor.rotate
        if rot is not None and rot.slots > 1:
            rotation = (position[rot.loop], rot.slots, rot.stride)
    return CompiledAccess(is_write, tensor_id, fp.space, fp.memory, fp.partitions, fp.bytes,
                          shifts, pshifts, rotation, access)



class Repeated(Sequence):
    """``[value] * n`` without its ``n`` pointers: a flat program's per-instruction constants
    (no loops, one instance, no tail), 8 B an instruction each as lists (performance notes 2.9).

    >>> same = Repeated((), 3)
    >>> len(same), same[2], list(same), same[-1] is same[0]
    (3, (), [(), (), ()], True)
    >>> same[3]
    Traceback (most recent call last):
    IndexError: index 3 out of range for 3 items
    """

    __slots__ = ("value", "n")

    def __init__(self, value: object, n: int) -> None:
        self.value, self.n = value, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.value] * len(range(*i.indices(self.n)))
        if not -self.n <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} items")
        return self.value

    def __iter__(self):
        return repeat(self.value, self.n)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.full(self.n, self.value, dtype)
