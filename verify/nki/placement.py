"""The storage NKI's compiler reasons with: every tensor on bytes of its own.

The NKI findings ask what a kernel means, not where the allocator happened to put its tiles,
so they run on this placement, where two tiles share bytes only when the kernel placed them so
(direct allocation) and never because their lifetimes let ``alloc`` reuse the bytes.
"""

from __future__ import annotations

from dataclasses import replace

from neuronsim.machine.ir.program import PSUM_BANK_BYTES, Loop, MemoryKind, Program, Rotation
from neuronsim.machine.model.presets import resolve_machine


def identity_placement(program: Program) -> Program:
    """Every tensor on bytes of its own (a machine with room for all of them; DRAM alias
    groups kept), a rotating one with a slot per iteration (one the kernel placed: its own
    slots): the storage the NKI compiler reasons with, where each tile is itself and no two
    tensors share bytes."""
    loops = {node.name: node.trip_count for node, _ in program.walk() if isinstance(node, Loop)}
    sbuf_next, psum_bank, dram_next, placed = 0, 0, 0, {}
    for name, t in program.tensors.items():
        if t.memory == MemoryKind.DRAM:
            if t.alias is None:
                stride = t.free_elements * t.itemsize
                rotate = Rotation(t.rotate.loop, loops.get(t.rotate.loop, 1), stride) if t.rotate else None
                placed[name] = replace(t, address=dram_next, rotate=rotate)
                dram_next += -(-t.free_elements * t.itemsize * (loops.get(t.rotate.loop, 1) if t.rotate else 1)
                               // 4096) * 4096
            else:
                placed[name] = t
            continue
        # A rotation the kernel placed itself (mod_alloc) keeps its own slots: the compiler orders
        # a slot's reuse across iterations (the direct-allocation guide: with one physical tile
        # "iterations serialize", the next write waits for the last read), so that reuse is no
        # race.  Only tiles of different tensors on common bytes are left to the kernel.
        slots = 1 if not t.rotate else t.rotate.slots if not t.is_virtual else loops.get(t.rotate.loop, 1)
        if t.memory == MemoryKind.SBUF:
            stride = max(t.rotate.stride if t.rotate else 0, t.bytes_per_partition)
            rotate = Rotation(t.rotate.loop, slots, stride) if t.rotate else None
            placed[name] = replace(t, partition=t.partition or 0, offset=sbuf_next, bank=None, rotate=rotate)
            sbuf_next += -(-stride * slots // 64) * 64
        else:
            banks = -(-t.bytes_per_partition // PSUM_BANK_BYTES)
            rotate = Rotation(t.rotate.loop, slots, banks * PSUM_BANK_BYTES) if t.rotate else None
            placed[name] = replace(t, partition=t.partition or 0, offset=0, bank=psum_bank, rotate=rotate)
            psum_bank += banks * slots
    spec = resolve_machine(program.machine)
    base = program.machine.get("base", "trn1") if isinstance(program.machine, dict) else program.machine
    machine = {**(program.machine if isinstance(program.machine, dict) else {"base": base}),
               "sbuf_partition_bytes": max(sbuf_next, spec.sbuf_partition_bytes),
               "psum_banks": max(psum_bank, spec.psum_banks), "dram_bytes": max(dram_next, spec.dram_bytes)}
    return replace(program.with_tensors(placed), machine=machine)
