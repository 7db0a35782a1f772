"""``expand_scheduling_units``: flatten every loop (scheduling unit, opcode 105) in place.

The seed's pass splices each unit's constituents into the parent block, recursively, in
program order, under a unique name, and touches no dependency edge: the binary's edges are
held by the instructions themselves.  In our IR a dep is written against an *instruction*
and resolved per instance through the loops that enclose both ends (spec, "Nodes"), so
once the loops are gone the dep must be re-expressed against the instance it resolved to.
That is a change of spelling, not of meaning:

* instance ``NAME[i,j]`` becomes an instruction literally named ``NAME[i,j]``, so race
  reports on the expanded program name the same instances as on the original;
* its accesses keep their bytes: ``per_iteration`` shifts are folded into ``offset`` and
  ``x-partitions_per_iteration`` shifts into ``partitions``;
* its deps are the instance-level waits of the original, each on the *last* instance the
  dep waited on (:meth:`neuronsim.machine.order.unroll.Unrolled.resolve_wait`): the other instances of the
  same instruction complete before that one on the same engine, so waiting for the last is
  waiting for all of them.  Kinds are kept; a loop-carried dep becomes an ordinary one on
  the previous iteration's instance, and disappears in the first iteration;
* a rotating tensor (``x-rotate``, as ``alloc`` multi-buffers loop-body tiles) has no loop left
  to rotate with, so each slot becomes a tensor of its own, placed where the slot sits: slot 0
  keeps the name (and the role), slot ``k`` is ``NAME@k`` (``NAME@k#2``... if taken), and
  every instance reads or writes the slot its iteration selects.  The seed needs no such step
  (its rotation is already an address per instruction); here it is what keeps the bytes.

Hence the happens-before order of the expanded program equals the original's, instance for
instance (tested on the transitive closure of both graphs).

>>> from neuronsim.machine.ir.program import Instruction, Loop, Program, Dep
>>> body = (Loop("k", 2, (Instruction("ld", "sp", "op", deps=(Dep("mm", loop_carried=True),)),
...                       Instruction("mm", "pe", "op", deps=(Dep("ld"),)))),
...         Instruction("out", "act", "op", deps=(Dep("mm"),)))
>>> flat = expand_scheduling_units(Program({}, body))
>>> [(i.name, [d.on for d in i.deps]) for i in flat.body]
[('ld[0]', []), ('mm[0]', ['ld[0]']), ('ld[1]', ['mm[0]']), ('mm[1]', ['ld[1]']), ('out', ['mm[1]'])]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import PSUM_BANK_BYTES, Access, Dep, Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.machine.order.unroll import Instance, Unrolled, unroll

from neuronsim.machine.ir.source import bind_source
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["expand_scheduling_units", "ExpandSchedulingUnits"]


def _bake(access: Access, iteration: dict[str, int], slot_names: dict[tuple[str, int], str],
          tensors: Mapping[str, Tensor], baked: dict[tuple, Access]) -> Access:
    """The access at one iteration: no loop shift, no rotating tensor.  ``baked`` keeps one
    object per distinct result (a tiled kernel's instances repeat a few: ring slots, PSUM
    banks, a tile reloaded), cheaper to make and to hash downstream."""
    tensor = tensors[access.tensor]
    if not access.moves and tensor.rotate is None:
        return access
    name = access.tensor
    if tensor.rotate is not None:
        name = slot_names[(name, iteration[tensor.rotate.loop] % tensor.rotate.slots)]
    offset = access.offset
    if access.per_iteration:
        offset = (access.offset or 0) + sum(shift * iteration[loop] for loop, shift in access.per_iteration)
    partitions = access.partitions
    if access.partitions_per_iteration:
        start, count, step = partitions or (0, tensor.shape[0], 1)
        start += sum(shift * iteration[loop] for loop, shift in access.partitions_per_iteration)
        partitions = (start, count, step)
    key = (id(access), name, partitions, offset)  # ``access`` lives as long as the program being expanded
    found = baked.get(key)
    if found is None:
        found = baked[key] = Access(name, partitions, offset, access.pattern, (), access.extras)
    return found


def _slot_tensor(tensor: Tensor, name: str, slot: int) -> Tensor:
    """Slot ``slot`` of a rotating tensor as a tensor of its own (no rotation)."""
    assert tensor.rotate is not None
    delta = slot * tensor.rotate.stride
    moved: dict[str, int | None] = {}
    if tensor.memory == MemoryKind.DRAM:
        moved["address"] = (tensor.address or 0) + delta
    elif tensor.memory == MemoryKind.PSUM:
        moved["bank"], moved["offset"] = divmod(tensor.byte_base + delta, PSUM_BANK_BYTES)
    else:
        moved["offset"] = (tensor.offset or 0) + delta
    role = tensor.role if slot == 0 else "internal"
    return dataclasses.replace(tensor, name=name, rotate=None, role=role, **moved)


def resolve_rotations(program: Program, taken: set[str]) -> tuple[dict[str, Tensor], dict[tuple[str, int], str]]:
    """The tensors with every rotating one split into its slots, and ``(tensor, slot) -> name``
    (names in ``taken`` or of other tensors are avoided)."""
    tensors: dict[str, Tensor] = {}
    slot_names: dict[tuple[str, int], str] = {}
    taken = taken | set(program.tensors)
    for name, tensor in program.tensors.items():
        if tensor.rotate is None:
            tensors[name] = tensor
            continue
        for slot in range(tensor.rotate.slots):
            slot_name = name
            if slot:
                slot_name, k = f"{name}@{slot}", 1
                while slot_name in taken:
                    k += 1
                    slot_name = f"{name}@{slot}#{k}"
                taken.add(slot_name)
            slot_names[(name, slot)] = slot_name
            tensors[slot_name] = _slot_tensor(tensor, slot_name, slot)
    return tensors, slot_names


def _flatten(inst: Instance, label: str, unrolled: Unrolled, slot_names: dict[tuple[str, int], str],
             tensors: Mapping[str, Tensor], baked: dict[tuple, Access]) -> Instruction:
    instr = inst.instr
    merged: dict[str, Dep] = {}
    for dep in instr.deps:
        target = unrolled.resolve_wait(inst, dep)
        if target is None:
            continue
        name = unrolled[target].name
        old = merged.get(name)
        if old is None or dep.kind > old.kind:
            merged[name] = Dep(name, dep.kind)
    iteration = inst.iteration
    reads = tuple(_bake(a, iteration, slot_names, tensors, baked) for a in instr.reads)
    writes = tuple(_bake(a, iteration, slot_names, tensors, baked) for a in instr.writes)
    return Instruction(name=label, engine=instr.engine, op=instr.op, reads=reads, writes=writes,
                       attrs=instr.attrs, deps=tuple(merged.values()), queue=instr.queue,
                       extras=bind_source(instr.extras, iteration))


def expand_scheduling_units(program: Program) -> Program:
    """The program with every loop flattened into one block of instance instructions.

    Requires a valid program.  Guarantees: no loop is left; instructions appear in program
    order, one per instance, named as the instance; the happens-before order and every
    instance's footprint (its bytes: a rotating tensor's slots become tensors) are unchanged.
    Raises :class:`ProgramError` when an instance name collides with the name of another
    instruction or loop.
    """
    if not any(isinstance(node, Loop) for node in program.body):
        return program
    unrolled = unroll(program)
    taken = {node.name for node, _ in program.walk() if isinstance(node, Loop)}
    taken |= {inst.name for inst, loops in program.instructions() if not loops}
    tensors, slot_names = resolve_rotations(program, set())
    body = []
    baked: dict[tuple, Access] = {}
    for inst in unrolled:
        name = inst.name  # built from the indices each time it is asked for
        if inst.loops:
            if name in taken:
                raise ProgramError("body", f"cannot expand loops: instance {name} would take the name of an "
                                           f"existing instruction or loop")
            taken.add(name)
        body.append(_flatten(inst, name, unrolled, slot_names, program.tensors, baked))
    flat = program.with_body(tuple(body))
    return flat.with_tensors(tensors) if slot_names else flat


@dataclass(frozen=True, slots=True)
class ExpandSchedulingUnits(Pass):
    """Pass: :func:`expand_scheduling_units` (counts the instructions it created)."""

    name: ClassVar[str] = "expand-scheduling-units"

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        flat = expand_scheduling_units(program)
        if ctx is not None and flat is not program:
            ctx.count(self.name, "instructions-before", sum(1 for _ in program.instructions()))
            ctx.count(self.name, "instructions-after", len(flat.body))
        return flat
