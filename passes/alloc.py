"""Allocation: place virtual tensors by liveness, reusing storage like a real allocator.

Anti and output dependences are an artifact of storage reuse, so an allocator that never reused anything
would hide them.  This one reuses the way NKI's ``mod_alloc`` does (``docs/kernel-patterns.md`` 1.4, 7.1,
7.6): logical buffers of one *shape class* share physical slots by liveness, and a tile declared inside a
loop gets ``n`` rotating slots, iteration ``k`` using slot ``k mod n`` (``n = 2`` is double buffering).

Lifetimes (:mod:`neuronsim.passes.analysis.lifetimes`; instance ids are program order, loops unrolled)
    The *hull* of a tensor is ``[first, last]`` instance touching it (``input`` DRAM tensors:
    all along, they hold the caller's data; ``output`` ones: to the end).  A virtual tensor
    every access of which is inside a loop ``L`` is *iteration-private* over ``L`` when every
    byte an instance reads from it was written earlier in the same iteration of ``L`` (decided
    exactly from the partition x byte footprints): no value flows between iterations.  Such a
    tensor becomes a *ring* over the innermost such ``L`` of trip count >= 2: ``x-rotate``
    with ``n = min(buffers, trip)`` slots (PSUM: ``min(psum_buffers, banks, trip)`` slots one
    bank apart, ``stride`` 2048).  Its *relative range* ``[a, b]`` is where its first and last
    access of an iteration sit within the iteration (the same in every iteration: each runs
    the same instructions).  Accumulators, running maxima and anything read before it is
    written in an iteration keep one placement.
Placement
    * SBUF (partition x byte): classes are ``(partitions, bytes, ring loop, n)``.  Within a
      class, tensors take slots by rotation (:func:`rotate_slots`: of the slots whose tensors
      are dead, the one freed longest ago, else a new one) on their hulls, or for a ring
      class on their relative ranges.  A class rotates through ``buffers`` slots for each
      tile family in it (a traced kernel's tiles of one declaration, ``x-source``) or for each
      tensor live at once, whichever is more: families that share a shape, a load's target
      beside a store's source, are each multi-buffered as if alone, not one slot each
      (rotation through two slots in all would alternate the two families); when those slots
      overflow, through ``buffers`` per tensor live at once, then ``buffers`` in all
      (:data:`SPREADS`).  A slot of a ring class is a *lane*: ``n`` consecutive class-sized
      slots, tensor slot ``s`` at ``lane + s * bytes``.  Slots are then packed: each goes to
      the partition base (0, 32, 64, 96) where it can sit lowest, among the
      bases that keep every compute access within the partition-start rule, above every
      placed byte (placed tensors' rotating slots included).  When that overflows, every
      block (plain tensor or lane) is packed first fit in order of birth instead
      (:func:`~neuronsim.passes.alloc_place.first_fit`): the lowest bytes no live block holds,
      so tiles of *different* shapes share bytes when their hulls are disjoint (rule 1 below);
      the kernel's placed tiles hold their bytes all along, or, when that leaves no room,
      over their hulls only (so does PSUM: a kernel that placed every bank, each tile dead
      after its copy, leaves the banks to a later tile).
      When the rings do not fit either way, ring groups (one loop, one shape and dtype) are
      made plain, the fewest this search finds (:func:`~.alloc_place.fit_rings`), each counted as a fallback.
    * Spilling (:mod:`neuronsim.passes.alloc_spill`): when even one placement per tensor does
      not fit, tiles not in use over a run of top-level nodes are stored to DRAM after their
      last use before it and reloaded into a new tensor before their next use (Belady's rule
      picks them, against an estimate of the room that shrinks each round until the tiles
      fit), and allocation starts again on that program.  What no spill can place is
      refused at once: a tile wider than an SBUF partition or a PSUM bank, or tiles that do
      not fit together where none has a gap in its uses (all inside one loop).  PSUM tiles
      that need more banks together than there are are spilled first, the same way, to SBUF
      and back by ACT copies (``alloc_spill``, "PSUM"; counted as ``psum-spills``): the SBUF
      copies are then placed (or spilled on to DRAM) like any SBUF tile.
    * PSUM: tensors in order of first use go to banks by rotation (``psum.mod_alloc``): the
      next bank (ring: ``n`` consecutive banks) after the last one used where nothing clashes,
      else the first with a free byte range beside what clashes; at most ``psum_banks``
      banks (0: all).  Two regions clash unless :func:`~neuronsim.passes.analysis.lifetimes.may_share`.
      Rings that do not fit are all made plain, fallbacks (:func:`~.alloc_place.place_psum`).
    * DRAM: virtual DRAM tensors are classed by size (and ring) like SBUF, slots laid out
      above every addressed byte.  Alias-group tensors are placements already: they stay.

The sharing rule and why it is safe
    Slot ``s`` of a tensor ``T`` *holds* a byte at instance ``i`` when a value written there
    before ``i`` is read at or after ``i``.  The pass guarantees that two different tensors
    never hold one byte at one instance, because it lets slot ``s`` of ``T`` and slot ``s'`` of
    ``U`` share a byte only when (:func:`~neuronsim.passes.analysis.lifetimes.may_share`):

    1. their hulls are disjoint (a slot is only ever held inside its tensor's hull); or
    2. both are rings over the same loop ``L`` with the same ``n`` and ``s != s'``: slot
       ``s`` is touched only in iterations ``k = s (mod n)``, ``s'`` only in
       ``k = s' (mod n)``, and distinct iterations of ``L`` are disjoint runs of instances; or
    3. both are rings over ``L`` with the same ``n``, ``s = s'`` and disjoint relative
       ranges: in each iteration ``T`` holds the slot within ``[W + a_T, W + b_T]`` and ``U``
       within ``[W + a_U, W + b_U]`` (``W`` the iteration's first instance), disjoint; or
    4. both are iteration-private over one loop ``P`` (private over a loop is private over
       every loop around it, so their ring loops may differ) and their relative ranges over
       ``P`` are disjoint, whatever the slots: no value of either crosses a window of ``P``,
       so each holds its slots only inside its own range of every window (the tiles of a
       kept loop's body, each in an inner loop of its own).

    SBUF and DRAM slots of different classes never overlap (packed apart), and within a class
    :func:`rotate_slots` puts two tensors in one slot only with disjoint hulls (1) or, in a
    lane, disjoint relative ranges (3); a lane's slots are class-sized, so slot ``s`` of one
    tensor meets only slot ``s`` of another.  PSUM tests every pair of regions in a bank with
    the rule, 4 only where 1-3 leave no bank (it costs the overlap of a body's stretches).
    Values are then those of the program with every virtual tensor in storage of its own:
    another tensor never writes a byte ``T`` holds, and a ring's reads see only bytes written
    in the same iteration, hence into the same slot.  Ordering the instances that now share
    bytes (WAR / WAW, and a slot reused ``n`` iterations later) is the dependence passes' work.

``alloc-shared-dram`` is the later shared-DRAM allocation: it gives each alias group its own
region, rotates the group's tensors through slots inside it by liveness (hulls, no rings), and
marks them ``"x-shared": GROUP`` so ``anti-deps{spaces=shared}`` can run again after it.

Counters (``ctx.stats["alloc"]``, printed by ``compile`` and ``footprint``): ``placed``, ``rotated`` (rings),
``slots`` (theirs in all), ``bytes-used`` (the union of every placed slot, partitions x bytes) and
``bytes-saved`` (what storage of its own for every tensor would use beyond that); ``fallbacks`` (SBUF ring
groups made plain, PSUM rings with no banks); when something was spilled, ``spills``, ``spill-transfers`` and
``spill-bytes``, and ``psum-spills`` (two ACT copies each; :func:`neuronsim.verify.sync_counts.spill_traffic`
counts the same).

Errors name where the tensor came from: a traced kernel's tile its declaration (``x-source``:
"no room" names that ``file:line`` and variable), any other tensor its JSON path ``tensors.NAME``.

Contract (``alloc``)
    requires: a valid program; when it spills, dependence construction after it (as the default pipeline does:
    ``build-fdeps`` derives the spill DMAs' deps, ``anti-deps`` the reuse of their bytes; the DMAs carry none of
    their own).
    guarantees: no virtual tensor left; the program is the given one unless SBUF or PSUM overflows with one
    placement per tensor, and then differs only by spills (a top-level store and reload per spill, the later
    accesses renamed to the reloaded tensor: the same values); placed tensors unchanged and never overlapped by
    a new placement; a new tensor rotates (``x-rotate``) only when it is iteration-private over its loop; two
    new placements share a byte only under the rule above, so no two tensors hold a byte at the same instance,
    counting every iteration; every compute access keeps the partition-start rule; every placement passes
    :func:`neuronsim.machine.formats.validate.validate_program`; no-op without virtual tensors.  With
    ``rotate=false`` no tensor rotates and the result is the hull-only allocation (two new tensors share storage
    only with disjoint hulls).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, partial
from operator import attrgetter
from typing import ClassVar

import numpy as np

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import MemoryKind, Program, Tensor, frozen_mapping, keeps_partition_start
from neuronsim.machine.ir.source import SOURCE_KEY
from neuronsim.machine.model.presets import MachineSpec
from neuronsim.machine.order.stream import InstanceStream, stream_of

from neuronsim.passes.alloc_place import (FOREVER, PackItem, SbufFull, align_up as _align, declared_at,
                                          extent as _extent, first_fit, fit_rings, most_live, place_psum,
                                          placed as _placed, rotate_slots, rotation as _rotation, storage_use,
                                          where_declared)
from neuronsim.passes.alloc_spill import (ROOM_STEP, SPILL_ROUNDS, apply_spills, fit_psum, plan_spills,
                                          refuse_unplaceable, sbuf_room, spill_weights)
from neuronsim.passes.analysis.lifetimes import Life, TensorUsers, lifetimes, live_ranges, tensor_users
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["Alloc", "AllocSharedDram", "SbufFull", "live_ranges", "rotate_slots", "storage_use"]

_OP, _PARTITIONS = attrgetter("op"), attrgetter("partitions")


def _blocks(members: list[Tensor], lives: Mapping[str, Life], buffers: int, size_class):
    """``(blocks, hulls, keys)`` of one memory's tensors: a plain tensor is a block of its own;
    ring tensors of one ``(key, loop, n)`` take *lanes* of ``n`` slots by rotation on their
    relative ranges, a lane being one block.  Blocks are named by their first tensor:
    ``blocks[label]`` lists ``(tensor, stride)`` (stride: class bytes in a lane, 0 when
    plain), ``hulls[label]`` the hull of their hulls, ``keys[(*key, block bytes)]`` the labels.
    """
    rings: dict[tuple, list[Tensor]] = {}
    for t in members:
        life = lives[t.name]
        if life.loop is not None:
            rings.setdefault((size_class(t), life.loop, life.slots), []).append(t)
    lane_of: dict[str, tuple] = {}
    for ring_key, group in rings.items():
        for name, lane in rotate_slots([(t.name, *lives[t.name].rel) for t in group], buffers).items():
            lane_of[name] = (ring_key, lane)
    label_of: dict[tuple, str] = {}
    blocks: dict[str, list[tuple[Tensor, int]]] = {}
    hulls: dict[str, list[int]] = {}
    keys: dict[tuple, list[str]] = {}  # slot key -> its blocks
    for t in members:
        key, nbytes = size_class(t)
        life = lives[t.name]
        lane = lane_of.get(t.name)
        if lane is None:
            label, stride, block = t.name, 0, nbytes
        else:
            label, stride, block = label_of.setdefault(lane, t.name), nbytes, nbytes * life.slots
        hull = hulls.get(label)
        if hull is None:
            keys.setdefault((*key, block), []).append(label)
            blocks[label], hulls[label] = [(t, stride)], [life.lo, life.hi]
        else:
            blocks[label].append((t, stride))
            hull[0], hull[1] = min(hull[0], life.lo), max(hull[1], life.hi)
    return blocks, hulls, keys


#: How widely :func:`_physical_slots` spreads a class, tried in turn until the slots fit:
#: ``buffers`` slots for each tile family in the class (or each tile live at once, if more),
#: for each tile live at once, then ``buffers`` in all.
SPREADS = ("families", "live", "shared")


def _physical_slots(found: tuple[dict, dict, dict], buffers: int,
                    spread: str = "shared") -> dict[tuple, list[list[tuple[Tensor, int]]]]:
    """Physical slots of one memory: ``key -> [[(tensor, stride), ...], ...]``.

    ``found`` is :func:`_blocks`' ``(blocks, hulls, keys)`` (its ``size_class(t)`` is ``(key,
    bytes)``: the tensors of one key share slots of ``bytes``; computed once, whatever the
    spread).  The blocks (plain tensors and lanes, as ``(key, block bytes)``) take
    physical slots by rotation on their hulls, through ``buffers`` slots times the class's
    width, which ``spread`` (:data:`SPREADS`) says: the tile families that share the class (a
    traced kernel's declarations: a load's target beside a store's source, a transpose's input
    beside its output), the most blocks live at once, or 1.  Two families rotating through
    two slots in all would each land in one and every load would wait for the last use of the
    tile before it; each family multi-buffered as if alone is what ``buffers`` means.
    """
    blocks, hulls, keys = found
    out: dict[tuple, list[list[tuple[Tensor, int]]]] = {}
    for key, labels in keys.items():
        spans = [(b, *hulls[b]) for b in labels]
        width = 1 if spread == "shared" else most_live(spans)
        if spread == "families":
            width = max(width, len({declared_at(blocks[b][0][0]) for b in labels} - {None}))
        slot_of = rotate_slots(spans, buffers * width)
        by_slot: dict[int, list[tuple[Tensor, int]]] = {}
        for b in labels:  # a slot's tensors in the order of their blocks
            by_slot.setdefault(slot_of[b], []).extend(blocks[b])
        out[key] = [by_slot[slot] for slot in sorted(by_slot)]
    return out


def _start_ok(first: int, span: int) -> bool:
    """The partition-start rule of compute accesses (:mod:`neuronsim.machine.model.optable`)."""
    if span > 64:
        return first == 0
    if span > 32:
        return first in (0, 64)
    return first % 32 == 0


def _start_masks(stream: InstanceStream, users: TensorUsers, spec: MachineSpec) -> np.ndarray:
    """Per tensor id, the SBUF partition bases (bit ``j``: base ``32 j``) at which every
    compute (non-DMA) access of the tensor keeps the partition-start rule.

    Vectorised over the accesses: those covering the whole tensor (no ``partitions``, the
    usual case) are one rule per tensor height; only explicit partition ranges are visited.
    """
    bases = range(0, spec.sbuf_partitions, 32)

    @cache
    def allowed(start: int, span: int) -> int:
        return sum(1 << j for j, b in enumerate(bases) if _start_ok(b + start, span))

    ops = list(map(_OP, stream.instrs))
    bound = {op: keeps_partition_start(op) for op in set(ops)}  # compute ops; not DMA or register ops
    compute = np.fromiter(map(bound.__getitem__, ops), bool, len(ops))[users.access_instr]
    parts = list(map(_PARTITIONS, users.accesses))
    explicit = np.fromiter(map(bool, parts), bool, len(parts))  # None (or empty): the whole tensor
    tensors = list(stream.program.tensors.values())
    masks = np.full(len(tensors), (1 << len(bases)) - 1, np.int64)
    whole = np.flatnonzero(np.bincount(users.access_tensor[compute & ~explicit], minlength=len(tensors))).tolist()
    masks[whole] &= np.array([allowed(0, tensors[tid].shape[0]) for tid in whole], np.int64)
    ranged: dict[tuple, int] = {}  # each distinct range at its first access: the line a refusal names
    for k in np.flatnonzero(compute & explicit).tolist():
        ranged.setdefault((users.access_tensor[k], parts[k]), k)
    for (tid, (start, count, step)), k in ranged.items():
        masks[tid] &= allowed(start, (count - 1) * step + 1)
        if not masks[tid] and tensors[tid].memory == MemoryKind.SBUF and tensors[tid].partition is None:
            raise _no_base(stream, tensors[tid], int(users.access_instr[k]), start, count, step)
    return masks


def _no_base(stream: InstanceStream, tensor: Tensor, x: int, start: int, count: int, step: int) -> ProgramError:
    """The refusal of a virtual tile no partition base can place: at the line of the access
    that leaves none (the one whose partitions no base puts on a start the rule allows, given
    the tile's other accesses), naming the partitions and where the tile was declared."""
    inst = stream.instrs[x]
    source = (inst.extras or {}).get(SOURCE_KEY) or {}
    path = f"{source['file']}:{source['line']}" if "file" in source else f"instruction {inst.name!r}"
    declared, label = where_declared(tensor)
    what = f"partition {start}" if count == 1 else f"partitions {start} to {start + (count - 1) * step}"
    call = f"{source['call']} " if source.get("call") else ""
    return ProgramError(path, f"{call}reads or writes {what} of {label}, declared at {declared}: a compute "
                              "engine starts an access at partition 0, 32, 64 or 96 (the partition-start rule), "
                              "and no placement of the tile puts these partitions there beside its other "
                              "accesses (copy the rows to a tile of their own by DMA)")


def _sbuf_bases(tensors: list[Tensor], parts: int, spec: MachineSpec, start_masks: np.ndarray,
                tensor_id: Mapping[str, int]) -> list[int]:
    """Partition bases (0, 32, 64, 96) where ``tensors`` keep the partition-start rule."""
    mask = int(np.bitwise_and.reduce(start_masks[[tensor_id[t.name] for t in tensors]]))
    bases = [b for b in range(0, spec.sbuf_partitions, 32) if b + parts <= spec.sbuf_partitions
             and mask >> (b // 32) & 1]
    if not bases:
        path, label = where_declared(tensors[0])
        raise ProgramError(path, f"no partition base keeps the compute accesses of {label} within the "
                                 "partition-start rule")
    return bases


def _short(t: Tensor, need: int, spec: MachineSpec) -> SbufFull:
    path, label = where_declared(t)
    return SbufFull(path, f"SBUF has no room for {label} ({need} bytes a partition) beside the tiles live with "
                          f"it ({spec.sbuf_allocatable_bytes} bytes a partition below the compiler's reserve)")


def _place_sbuf(program: Program, lives: Mapping[str, Life], buffers: int, align: int, spec: MachineSpec,
                start_masks: np.ndarray, tensor_id: Mapping[str, int]) -> dict[str, Tensor]:
    """The class-slot placement (slots stacked above one another); when it overflows, the
    first-fit packing of :func:`_pack_sbuf`, which shares bytes across shapes."""
    virtual = [t for t in program.tensors.values() if t.memory == MemoryKind.SBUF and t.is_virtual]
    quadrants = -(-spec.sbuf_partitions // 32)
    hwm = [0] * quadrants
    for t in program.tensors.values():
        if t.memory == MemoryKind.SBUF and not t.is_virtual:
            for q in range(t.partition // 32, (t.partition + t.shape[0] - 1) // 32 + 1):
                hwm[q] = max(hwm[q], t.offset + _extent(t))
    classes: dict[tuple, tuple[tuple[int, int], int]] = {}
    # One slot has one partition base: the tiles of one shape and dtype share slots when some
    # base keeps every one's compute accesses in the partition-start rule (the usual case);
    # when none does (tiles of one shape accessed from different partitions), each set of
    # allowed bases is a class of its own
    joint: dict[tuple, int] = {}
    for t in virtual:
        joint[t.shape, t.dtype] = joint.get((t.shape, t.dtype), -1) & int(start_masks[tensor_id[t.name]])

    def size_class(t: Tensor) -> tuple[tuple[int, int], int]:  # computed once per class
        mask = joint[t.shape, t.dtype] or int(start_masks[tensor_id[t.name]])
        found = classes.get((t.shape, t.dtype, mask))
        if found is None:
            # a tile whose padding to the alignment would pass the usable bytes is the partition's
            # alone (nl.tile_size.total_available_sbuf_size on trn2, 212,984 bytes, is no multiple of 64)
            block = min(_align(t.bytes_per_partition, align), max(spec.sbuf_allocatable_bytes, t.bytes_per_partition))
            found = classes[t.shape, t.dtype, mask] = (t.shape[0], mask), block
        return found

    found = _blocks(virtual, lives, buffers, size_class)
    for spread in SPREADS:  # each family its own buffers when they fit, else fewer slots
        placed = _stack_slots(_physical_slots(found, buffers, spread), list(hwm), lives, align, spec, start_masks,
                              tensor_id)
        if placed is not None:
            return placed
    return _pack_sbuf(program, virtual, lives, buffers, align, spec, start_masks, tensor_id, size_class)


def _stack_slots(slots: dict[tuple, list[list[tuple[Tensor, int]]]], hwm: list[int], lives: Mapping[str, Life],
                 align: int, spec: MachineSpec, start_masks: np.ndarray,
                 tensor_id: Mapping[str, int]) -> dict[str, Tensor] | None:
    """The class slots stacked above the placed bytes (``hwm`` per quadrant, updated), or
    None when they overflow SBUF."""
    placed: dict[str, Tensor] = {}
    for (parts, _bases, block), physical in slots.items():
        for pairs in physical:
            tensors = [t for t, _ in pairs]
            bases = _sbuf_bases(tensors, parts, spec, start_masks, tensor_id)
            best = min(bases, key=lambda b: (_align(max(hwm[b // 32:(b + parts - 1) // 32 + 1]), align), b))
            offset = _align(max(hwm[best // 32:(best + parts - 1) // 32 + 1]), align)
            if offset + block > spec.sbuf_allocatable_bytes:
                return None
            for q in range(best // 32, (best + parts - 1) // 32 + 1):
                hwm[q] = offset + block
            for t, stride in pairs:
                placed[t.name] = _placed(t, partition=best, offset=offset, rotate=_rotation(lives[t.name], stride))
    return placed


def _pack_sbuf(program: Program, virtual: list[Tensor], lives: Mapping[str, Life], buffers: int, align: int,
               spec: MachineSpec, start_masks: np.ndarray, tensor_id: Mapping[str, int],
               size_class) -> dict[str, Tensor]:
    """Every block (plain tensor or ring lane) placed first fit in order of birth
    (:func:`~neuronsim.passes.alloc_place.first_fit`): tiles of any shape share bytes when
    their hulls are disjoint, placed tensors stay where they are (holding their bytes all
    along, else over their hulls only)."""
    blocks, hulls, keys = _blocks(virtual, lives, buffers, size_class)
    items = [PackItem(label, parts, block, *hulls[label],
                      tuple(_sbuf_bases([t for t, _ in blocks[label]], parts, spec, start_masks, tensor_id)))
             for (parts, _bases, block), labels in keys.items() for label in labels]
    kernels = [t for t in program.tensors.values() if t.memory == MemoryKind.SBUF and not t.is_virtual]
    rects = [(t.partition, t.partition + t.shape[0], t.offset, t.offset + _extent(t)) for t in kernels]
    # The kernel's own tiles keep their bytes all along; when that leaves no room, only while
    # each lives (as in PSUM: a compiler allocates around them by their lifetimes).
    attempts = [[(FOREVER.lo, FOREVER.hi, *r) for r in rects]]
    if kernels:
        attempts.append([(lives[t.name].lo, lives[t.name].hi, *r) for t, r in zip(kernels, rects)])
    for k, fixed in enumerate(attempts):
        try:
            spots = first_fit(items, fixed, spec.sbuf_allocatable_bytes, align)
            break
        except ProgramError as err:
            if k + 1 == len(attempts):
                first = blocks[err.path][0][0]
                raise _short(first, _align(first.bytes_per_partition, align), spec) from None
    placed: dict[str, Tensor] = {}
    for label, (base, offset) in spots.items():
        for t, stride in blocks[label]:
            placed[t.name] = _placed(t, partition=base, offset=offset, rotate=_rotation(lives[t.name], stride))
    return placed


def _dram_end(program: Program) -> int:
    return max((t.address + _extent(t) for t in program.tensors.values()
                if t.memory == MemoryKind.DRAM and t.address is not None), default=0)


def _place_dram(members: list[Tensor], lives: Mapping[str, Life], buffers: int, align: int, base: int,
                spec: MachineSpec, shared: str | None) -> tuple[dict[str, Tensor], int]:
    """Slots by size class (and ring) and rotation, laid out from ``base``; returns
    placements and end."""
    placed: dict[str, Tensor] = {}
    address = _align(base, align)
    def size_class(t: Tensor) -> tuple[tuple, int]:  # inputs are live all along: a slot of their own
        return (t.name if t.role == "input" else None,), _align(t.bytes_per_partition, align)

    for (_, block), physical in _physical_slots(_blocks(members, lives, buffers, size_class), buffers).items():
        for pairs in physical:
            for t, stride in pairs:
                extras = dict(t.extras)
                if shared is not None:
                    extras["x-shared"] = shared
                placed[t.name] = _placed(t, address=address, extras=frozen_mapping(extras),
                                         rotate=_rotation(lives[t.name], stride))
            address += block
    if address > spec.dram_bytes:
        raise ProgramError(where_declared(members[0])[0],
                           f"virtual DRAM tensors run past the end of DRAM ({spec.dram_bytes} bytes)")
    return placed, address


def _with_placements(program: Program, placed: dict[str, Tensor]) -> Program:
    if not placed:
        return program
    return program.with_tensors({name: placed.get(name, t) for name, t in program.tensors.items()})


@dataclass(frozen=True, slots=True)
class Alloc(Pass):
    """Place every virtual tensor by liveness; multi-buffer loop-body tiles.

    Options: ``buffers`` (slots a class rotates through, and slots of an SBUF / DRAM ring),
    ``psum_banks`` (banks used, 0: all), ``psum_buffers`` (slots of a PSUM ring, one bank
    each), ``align`` (bytes), ``rotate`` (false: no rings, the hull-only allocation).

    Contract
        requires: a valid program; deps constructed after it when it spills.
        guarantees: see the module documentation: no virtual tensor left; placed tensors
        unchanged and never overlapped; a tensor rotates only when iteration-private over its
        loop; two tensors never hold one byte at one instance, counting every iteration;
        the partition-start rule kept; tiles that do not fit spilled to DRAM and reloaded
        (same values, counted), the rest refused at the declaring line; no-op without
        virtual tensors.
    """

    name: ClassVar[str] = "alloc"
    places: ClassVar[bool] = True
    buffers: int = 2
    psum_banks: int = 0
    align: int = 64
    rotate: bool = True
    psum_buffers: int = 2

    def __post_init__(self) -> None:
        if not (1 <= self.buffers <= 1024 and 1 <= self.psum_buffers <= 64 and 0 <= self.psum_banks <= 64
                and 1 <= self.align <= 65536):  # beyond these no machine has room: a typo, refused as one
            raise ValueError("buffers 1-1024, psum_buffers 1-64, psum_banks 0 (all) to 64, align 1-65536 bytes")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        if not program.has_virtual_tensors:
            return program  # allocation only when needed
        spec = ctx.machine(program)
        refuse_unplaceable(program, spec)
        banks = min(self.psum_banks or spec.psum_banks, spec.psum_banks)
        slots = {MemoryKind.SBUF: self.buffers, MemoryKind.DRAM: self.buffers,
                 MemoryKind.PSUM: min(self.psum_buffers, banks)} if self.rotate else {}
        program, psum_spills, known = fit_psum(program, ctx, slots, self.psum_banks, self.align, spec,
                                               SPILL_ROUNDS, ROOM_STEP)
        room, spills, moved = sbuf_room(program, spec), [0, 0, 0], False
        psum_known = known[3] if known is not None else None
        for _round in range(SPILL_ROUNDS + 1):
            if known is not None:  # the PSUM fit's, for this very program (first round only)
                (stream, users, lives, _), known = known, None
            else:
                stream = ctx.stream(program)  # kept in the context: the placed program's stream derives from it
                users = tensor_users(stream)
                lives = lifetimes(stream, slots, users)
            start_masks = _start_masks(stream, users, spec)
            try:
                # bound now: fit_rings calls the placement within this round, on this round's program
                place = partial(_place_sbuf, program, buffers=self.buffers, align=self.align, spec=spec,
                                start_masks=start_masks, tensor_id=stream.tensor_id)
                placed, lives, fallbacks = fit_rings(program, lives, place)
                break
            except SbufFull as short:
                weights = spill_weights(program, self.align, spec)
                plan = plan_spills(program, weights, room) if _round < SPILL_ROUNDS else []
                while not plan and room > min(weights.values(), default=0) and _round < SPILL_ROUNDS:
                    room *= ROOM_STEP  # the estimate was too kind to the packing: aim lower
                    plan = plan_spills(program, weights, room)
                if not plan:
                    what = "spilling the tiles not in use there to DRAM makes no room" if moved else \
                        "no tile live with it has a gap in its uses to spill it over"
                    raise SbufFull(short.path, f"{short.message}; {what}") from None
                result = apply_spills(program, plan, spec)
                program, moved = result.program, True
                for k, amount in enumerate((result.spills, result.transfers, result.bytes)):
                    spills[k] += amount
                room *= ROOM_STEP
        # Without an SBUF spill the program is the PSUM fit's and the lives differ from its only
        # in SBUF rings made plain: its PSUM placement stands.
        psum, psum_fallbacks = psum_known if psum_known is not None and not moved else \
            place_psum(program, lives, self.psum_banks, self.align, spec)
        placed.update(psum)
        dram = [t for t in program.tensors.values() if t.memory == MemoryKind.DRAM and t.is_virtual]
        if dram:
            placed.update(_place_dram(dram, lives, self.buffers, self.align, _dram_end(program), spec, None)[0])
        rings = [t.rotate for t in placed.values() if t.rotate is not None]
        alone, used = storage_use(placed.values())
        for key, amount in (("placed", len(placed)), ("rotated", len(rings)), ("slots", sum(r.slots for r in rings)),
                            ("bytes-used", used), ("bytes-saved", alone - used)):
            ctx.count(self.name, key, amount)
        if fallbacks + psum_fallbacks:
            ctx.count(self.name, "fallbacks", fallbacks + psum_fallbacks)
        if moved:
            for key, amount in zip(("spills", "spill-transfers", "spill-bytes"), spills):
                ctx.count(self.name, key, amount)
        if psum_spills:
            ctx.count(self.name, "psum-spills", psum_spills)
        return _with_placements(program, placed)


@dataclass(frozen=True, slots=True)
class AllocSharedDram(Pass):
    """Give alias-group tensors addresses (shared-DRAM allocation), marked ``x-shared``.

    Contract
        requires: a valid program.
        guarantees: no alias-group tensor left; each group gets its own region above every
        addressed tensor; inside it, two tensors overlap only if their hulls are disjoint;
        no tensor rotates.
    """

    name: ClassVar[str] = "alloc-shared-dram"
    buffers: int = 2
    align: int = 64

    def __post_init__(self) -> None:
        if not (1 <= self.buffers <= 1024 and 1 <= self.align <= 65536):  # as alloc's: a typo, refused as one
            raise ValueError("buffers 1-1024, align 1-65536 bytes")

    def apply(self, program: Program, ctx: PassContext) -> Program:
        groups: dict[str, list[Tensor]] = {}
        for t in program.tensors.values():
            if t.alias is not None:
                groups.setdefault(t.alias, []).append(t)
        if not groups:
            return program
        spec = ctx.machine(program)
        lives = {name: Life(lo, hi) for name, (lo, hi) in live_ranges(stream_of(program, spec)).items()}
        end = _dram_end(program)
        placed: dict[str, Tensor] = {}
        for group, members in groups.items():
            mine, end = _place_dram([replace(t, alias=None) for t in members], lives, self.buffers, self.align, end,
                                    spec, group)
            placed.update(mine)
        ctx.count(self.name, "placed", len(placed))
        return _with_placements(program, placed)
