"""Reads no write can reach: they share bytes with other reads only, so no conflict involves them.

Used by the access events (:mod:`neuronsim.machine.order.events`: the builders and the race check), the
footprint's minimum and its check of a program's own deps.

Every conflict (and so every race and every wait of the minimum) pairs a write with an access
sharing a byte of it.  A read of bytes that no instruction of the program ever writes (a
kernel's input tiles in DRAM, constants) conflicts with nothing, in any instance.  On loop
kernels these reads are most of the work of a byte-exact walk: a strided DRAM load of a
[128, 128] tile touches 128 separate byte runs per instance, and a tiled matmul loads two
such tiles per K step against one store per output tile.

The test is conservative (a read it keeps may still conflict with nothing, a read it drops
never conflicts): per memory space (``sbuf``, ``psum``, ``dram``; a DRAM alias group is one
space whose tensors all meet), the byte range an access covers over all its instances
(:func:`reach`, partitions ignored) is compared with the union of the writes' ranges.

Examples
--------
>>> from neuronsim.machine.formats.program_json import load_program
>>> program = load_program("examples/matmul_k_loop.json")
>>> [(name, len(instr.reads)) for name, instr in program.instruction_map().items()][:2]
[('ld_x0', 1), ('ld_w0', 1)]
>>> stripped = without_unreached_reads(program)
>>> [(name, len(instr.reads)) for name, instr in stripped.instruction_map().items()][:2]
[('ld_x0', 0), ('ld_w0', 0)]
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.order.stream import CompiledAccess, InstanceStream, stream_of

__all__ = ["reach", "reached", "reached_templates", "conflicting_accesses", "without_unreached_reads"]


def reach(ca: CompiledAccess, trips: tuple[int, ...]) -> tuple[int, int]:
    """``[lo, hi)`` covering the bytes of access ``ca`` in every instance of its instruction,
    whose loops have ``trips`` iterations (a rotation counts all its slots: an upper bound)."""
    lo, hi = ca.bytes[0][0], ca.bytes[-1][1]
    spans = [s * (trips[k] - 1) for k, s in ca.shifts]
    if ca.rotation is not None:
        _, slots, stride = ca.rotation
        spans.append(stride * (slots - 1))
    for span in spans:
        lo, hi = lo + min(0, span), hi + max(0, span)
    return lo, hi


def reached_templates(stream: InstanceStream) -> np.ndarray:
    """Per compiled access (:attr:`~neuronsim.machine.order.stream.InstanceStream.templates`): whether it can
    conflict (every write can).  A template shared by several instructions cannot move with a
    loop, so the instruction it was first compiled for gives its reach."""
    temps, trips, first_x = stream.templates, stream.trips, stream.template_x
    spans: dict[object, list[tuple[int, int]]] = {}
    for t, ca in enumerate(temps):
        if ca.is_write and ca.bytes:
            spans.setdefault(ca.space, []).append(reach(ca, trips[first_x[t]]))
    starts: dict[object, list[int]] = {}
    ends: dict[object, list[int]] = {}
    for space, ranges in spans.items():  # each space's written bytes, as sorted disjoint ranges
        merged: list[list[int]] = []
        for lo, hi in sorted(ranges):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        starts[space], ends[space] = [m[0] for m in merged], [m[1] for m in merged]

    def can_conflict(ca: CompiledAccess, x: int) -> bool:
        if ca.is_write:
            return True
        if ca.space not in starts or not ca.bytes:
            return False
        if isinstance(ca.space, tuple):
            return True  # an alias group someone writes: its tensors' addresses are unknown
        lo, hi = reach(ca, trips[x])
        first, last = starts[ca.space], ends[ca.space]
        k = bisect_right(first, lo) - 1  # the last written range starting at or before lo
        return (k >= 0 and last[k] > lo) or (k + 1 < len(first) and first[k + 1] < hi)

    return np.fromiter((can_conflict(ca, first_x[t]) for t, ca in enumerate(temps)), bool, len(temps))


def reached(stream: InstanceStream) -> list[tuple[bool, ...]]:
    """Per instruction, per access (:attr:`~neuronsim.machine.order.stream.InstanceStream.all_accesses`: its
    reads, then its writes): whether the access can conflict (:func:`reached_templates`)."""
    keep = reached_templates(stream)[stream.slot_t].tolist()
    bounds = np.searchsorted(stream.slot_x, np.arange(stream.m + 1)).tolist()
    return [tuple(keep[bounds[x]:bounds[x + 1]]) for x in range(stream.m)]


def conflicting_accesses(stream: InstanceStream) -> list[tuple[CompiledAccess, ...]]:
    """Per instruction, its compiled accesses that can conflict (:func:`reached`)."""
    return [tuple(ca for ca, keep in zip(accesses, keeps) if keep)
            for accesses, keeps in zip(stream.all_accesses, reached(stream))]


def without_unreached_reads(program: Program) -> Program:
    """``program`` without the reads no write reaches: the same conflicts, races and minimum
    (for the checkers only: the instructions lose operands their semantics need)."""
    stream = stream_of(program)
    keeps = {stream.names[x]: flags for x, flags in enumerate(reached(stream))}
    if all(all(flags) for flags in keeps.values()):
        return program

    def strip(instr):
        flags = keeps[instr.name]
        if all(flags[:len(instr.reads)]):
            return instr
        return replace(instr, reads=tuple(a for a, keep in zip(instr.reads, flags) if keep))

    return program.map_instructions(strip)
