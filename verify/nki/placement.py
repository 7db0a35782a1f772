"""The storage NKI's compiler reasons with: every tensor on bytes of its own.

The NKI findings ask what a kernel means, not where the allocator happened to put its tiles,
so they run on this placement, where two tiles share bytes only when the kernel placed them so
(direct allocation) and never because their lifetimes let ``alloc`` reuse the bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from itertools import islice
from typing import Any, NamedTuple

import portion

from neuronsim.machine.ir.identity import WhileAlive
from neuronsim.machine.ir.program import PSUM_BANK_BYTES, Loop, MemoryKind, Program, Rotation
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki.alloc import ALLOC_GROUP_KEY
from neuronsim.machine.nki.liveness import Retired
from neuronsim.passes.alloc_place import placed as _placed  # (dataclasses.replace without its introspection)


#: The placements of the programs alive, by ``kernel_bytes``: three checks of one traced
#: kernel ask for it (the carried sweep's stream, the PSUM checks, a run's ``uninitialised``
#: check), 0.37 s each at ``gqa_full``'s 86 k instructions (NKIBench).
_PLACED: WhileAlive[Program] = WhileAlive()


def identity_placement(program: Program, kernel_bytes: bool = False) -> Program:
    """:func:`place_apart` of ``program``, computed once per program alive."""
    placed = _PLACED.get(program, kernel_bytes)
    return placed if placed is not None else _PLACED.put(program, place_apart(program, kernel_bytes), kernel_bytes)


def place_apart(program: Program, kernel_bytes: bool = False) -> Program:
    """Every tensor on bytes of its own (a machine with room for all of them; DRAM alias
    groups kept), a rotating one with a slot per iteration: the storage the NKI compiler reasons
    with, where each tile is itself and no two tensors share bytes.  The blocks of one directly
    allocated kernel tensor (``x-nki-alloc``) keep their bytes relative to each other, its
    rotations their slots: the compiler orders the reuse of a physical tile among the logical
    tiles of one allocation (the direct-allocation guide: with one physical tile "iterations
    serialize", the next write waiting for the last read), so that reuse is no race.

    ``kernel_bytes``: every tile the kernel placed itself keeps its bytes relative to every
    other such tile (one group per memory), as the compiler's dependence construction sees
    them: it runs after allocation, on addresses, so the reuse of a bank or of SBUF bytes by
    another kernel tensor is ordered too (docs/nki-checks.md, ``allocation``).  The compiler's
    own tiles (virtual here) stay apart."""
    return _place(program, kernel_bytes, None).program


class Reuse(NamedTuple):
    """Where a placement that reuses the bytes of retired tiles left off: the SBUF bytes and
    PSUM banks free again, the span of each tile placed and not retired yet (``(memory, first,
    end)``), and how many retirements it has taken in."""

    free: tuple[Any, Any]
    spans: dict[str, tuple[int, int, int]]
    taken: int


_NO_REUSE = Reuse((portion.empty(), portion.empty()), {}, 0)


class Apart(NamedTuple):
    """A placement apart (:func:`place_apart`) and where it left off: the tensors it placed (the
    declarations, in order), the next free SBUF byte, PSUM bank and DRAM byte, and the
    allocation groups it placed; whether one of its tensors rotates; whether it placed only the
    tensors declared after another placement's (:func:`place_apart_after`); what it reused."""

    program: Program
    declared: tuple
    cursors: tuple[int, int, int]
    groups: frozenset
    rotating: bool
    resumed: bool
    reuse: Reuse = _NO_REUSE


def place_apart_after(program: Program, before: Apart | None, retired: Mapping[str, Retired] | None = None) -> Apart:
    """:func:`place_apart` of ``program``, placing only the tensors declared after ``before``'s
    when its tensors are ``program``'s first ones, the same declarations (a trace that reads a
    device value places the program so far at every read: placing every tensor each time was
    quadratic).  The tensors placed before keep their bytes, as a placement from scratch gives
    them: it places the tensors in order, each after the last.  From scratch when a tensor
    rotates (its slots follow its loop's trip count, maybe of a loop not traced yet) or joins a
    group placed before.

    ``retired``: tiles the kernel can no longer reach, in the order they went
    (:mod:`~neuronsim.machine.nki.liveness`).  A virtual tile declared after one went may take
    its bytes (first fit, else after the last), as an allocator reuses them; the memory a trace
    of a tile per iteration reads on then follows what the kernel holds at once.  Resumed or
    from scratch, the same retirements give the same bytes."""
    return _place(program, False, before if before is not None and _appends(program, before) else None, retired)


def _appends(program: Program, before: Apart) -> bool:
    # (== of tuples compares by identity first: at C speed for the declarations kept)
    values = tuple(program.tensors.values())
    n = len(before.declared)
    return not before.rotating and len(values) >= n and values[:n] == before.declared and not any(
        t.rotate is not None or t.extras.get(ALLOC_GROUP_KEY) in before.groups for t in values[n:])


def _place(program: Program, kernel_bytes: bool, before: Apart | None,
           retired: Mapping[str, Retired] | None = None) -> Apart:
    """Place ``program``'s tensors after ``before``'s (all of them when None), reusing the bytes
    of ``retired`` tiles."""
    start = len(before.declared) if before is not None else 0
    items = list(program.tensors.items())[start:]
    # (the trip counts only a rotating tensor needs: a trace reading device values places the
    # program so far at every read, and a walk of it each time was quadratic)
    rotating = any(t.rotate is not None for _, t in items)
    loops = {node.name: node.trip_count for node, _ in program.walk() if isinstance(node, Loop)} if rotating else {}
    groups: dict[str, list[str]] = {}
    for name, t in items:
        if t.memory != MemoryKind.DRAM and not t.is_virtual and (kernel_bytes or ALLOC_GROUP_KEY in t.extras):
            groups.setdefault(f"kernel:{t.memory.value}" if kernel_bytes else t.extras[ALLOC_GROUP_KEY],
                              []).append(name)
    done: set[str] = set()
    if before is None:
        (sbuf_next, psum_bank, dram_next), placed, reuse = (0, 0, 0), {}, _NO_REUSE
    else:
        (sbuf_next, psum_bank, dram_next), placed, reuse = before.cursors, dict(before.program.tensors), before.reuse
    free, spans = list(reuse.free), dict(reuse.spans)
    gone = list(islice(retired.items(), reuse.taken, None)) if retired else []
    taken = 0
    for index, (name, t) in enumerate(items, start):
        while taken < len(gone) and gone[taken][1].declared <= index:  # went before this one was declared
            span = spans.pop(gone[taken][0], None)
            if span is not None:
                free[span[0]] |= portion.closedopen(span[1], span[2])
            taken += 1
        reusable = retired is not None and t.is_virtual and t.rotate is None
        if t.memory == MemoryKind.DRAM:
            if t.alias is None:
                stride = t.free_elements * t.itemsize
                rotate = Rotation(t.rotate.loop, loops.get(t.rotate.loop, 1), stride) if t.rotate else None
                placed[name] = _placed(t, address=dram_next, rotate=rotate)
                dram_next += -(-t.free_elements * t.itemsize * (loops.get(t.rotate.loop, 1) if t.rotate else 1)
                               // 4096) * 4096
            else:
                placed[name] = t
            continue
        group = None if t.is_virtual else f"kernel:{t.memory.value}" if kernel_bytes else t.extras.get(ALLOC_GROUP_KEY)
        if group is not None:
            if group not in done:
                done.add(group)
                members = {n: program.tensors[n] for n in groups[group]}
                if t.memory == MemoryKind.SBUF:
                    sbuf_next = _keep_sbuf(members, sbuf_next, placed)
                else:
                    psum_bank = _keep_psum(members, psum_bank, placed)
            continue
        slots = loops.get(t.rotate.loop, 1) if t.rotate else 1
        if t.memory == MemoryKind.SBUF:
            stride = max(t.rotate.stride if t.rotate else 0, t.bytes_per_partition)
            rotate = Rotation(t.rotate.loop, slots, stride) if t.rotate else None
            need = -(-stride * slots // 64) * 64
            at = _first_fit(free, 0, need) if reusable else None
            if at is None:
                at, sbuf_next = sbuf_next, sbuf_next + need
            placed[name] = _placed(t, partition=t.partition or 0, offset=at, bank=None, rotate=rotate)
            kind = 0
        else:
            banks = -(-t.bytes_per_partition // PSUM_BANK_BYTES)
            rotate = Rotation(t.rotate.loop, slots, banks * PSUM_BANK_BYTES) if t.rotate else None
            need = banks * slots
            at = _first_fit(free, 1, need) if reusable else None
            if at is None:
                at, psum_bank = psum_bank, psum_bank + need
            placed[name] = _placed(t, partition=t.partition or 0, offset=0, bank=at, rotate=rotate)
            kind = 1
        if reusable:
            spans[name] = (kind, at, at + need)
    spec = resolve_machine(program.machine)
    base = program.machine.get("base", "trn1") if isinstance(program.machine, dict) else program.machine
    machine = {**(program.machine if isinstance(program.machine, dict) else {"base": base}),
               "sbuf_partition_bytes": max(sbuf_next, spec.sbuf_partition_bytes),
               "psum_banks": max(psum_bank, spec.psum_banks), "dram_bytes": max(dram_next, spec.dram_bytes)}
    return Apart(program=replace(program.with_tensors(placed), machine=machine),
                 declared=tuple(program.tensors.values()), cursors=(sbuf_next, psum_bank, dram_next),
                 groups=frozenset(groups) | (before.groups if before is not None else frozenset()),
                 rotating=rotating or (before is not None and before.rotating), resumed=before is not None,
                 reuse=Reuse((free[0], free[1]), spans, reuse.taken + taken))


def _first_fit(free: list, kind: int, need: int) -> int | None:
    """The lowest start of ``need`` free units in ``free[kind]`` (taken out of it), or None."""
    for run in free[kind]:
        if run.upper - run.lower >= need:
            free[kind] -= portion.closedopen(run.lower, run.lower + need)
            return run.lower
    return None


def _keep_sbuf(members: dict[str, Any], base: int, placed: dict[str, Any]) -> int:
    """The SBUF blocks of one kernel allocation from byte ``base`` on, as far apart as the
    kernel placed them; the next free byte."""
    low = min(t.offset for t in members.values())
    end = base
    for name, t in members.items():
        offset = base + t.offset - low
        placed[name] = replace(t, offset=offset)
        span = (t.rotate.stride * t.rotate.slots) if t.rotate else t.bytes_per_partition
        end = max(end, offset + max(span, t.bytes_per_partition))
    return -(-end // 64) * 64


def _keep_psum(members: dict[str, Any], base: int, placed: dict[str, Any]) -> int:
    """The PSUM blocks of one kernel allocation from bank ``base`` on, on the banks the kernel
    gave them relative to each other; the next free bank."""
    low = min(t.bank for t in members.values())
    end = base
    for name, t in members.items():
        bank = base + t.bank - low
        placed[name] = replace(t, bank=bank)
        banks = -(-(t.offset + t.bytes_per_partition) // PSUM_BANK_BYTES)
        slots = t.rotate.slots if t.rotate else 1
        stride_banks = -(-t.rotate.stride // PSUM_BANK_BYTES) if t.rotate else banks
        end = max(end, bank + stride_banks * (slots - 1) + banks)
    return end
