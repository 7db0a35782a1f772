"""``expand_scheduling_units``: flatten every loop (scheduling unit, opcode 105) in place.

The seed's pass splices each unit's constituents into the parent block, recursively, in
program order, under a unique name, and touches no dependency edge: the binary's edges are
held by the instructions themselves.  In our IR a dep is written against an *instruction*
and resolved per instance through the loops that enclose both ends (spec, "Nodes"), so
once the loops are gone the dep must be re-expressed against the instance it resolved to.
That is a change of spelling, not of meaning:

* instance ``NAME[i,j]`` becomes an instruction literally named ``NAME[i,j]``, so race
  reports on the expanded program name the same instances as on the original;
* its accesses keep their bytes: ``per_iteration`` shifts are folded into ``offset``;
* its deps are the instance-level waits of the original, each on the *last* instance the
  dep waited on (:meth:`neuronsim.machine.order.unroll.Unrolled.resolve_wait`): the other instances of the
  same instruction complete before that one on the same engine, so waiting for the last is
  waiting for all of them.  Kinds are kept; a loop-carried dep becomes an ordinary one on
  the previous iteration's instance, and disappears in the first iteration.

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

from dataclasses import dataclass
from typing import ClassVar

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Dep, Instruction, Loop, Program
from neuronsim.machine.order.unroll import Instance, Unrolled, unroll

from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["expand_scheduling_units", "ExpandSchedulingUnits"]


def _bake(access: Access, iteration: dict[str, int]) -> Access:
    """The access at one iteration, without ``per_iteration``."""
    if not access.per_iteration:
        return access
    offset = (access.offset or 0) + sum(shift * iteration[loop] for loop, shift in access.per_iteration)
    return Access(access.tensor, access.partitions, offset, access.pattern, (), access.extras)


def _flatten(inst: Instance, unrolled: Unrolled) -> Instruction:
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
    reads = tuple(_bake(a, iteration) for a in instr.reads)
    writes = tuple(_bake(a, iteration) for a in instr.writes)
    return Instruction(inst.name, instr.engine, instr.op, reads, writes, instr.attrs, tuple(merged.values()),
                       instr.queue, instr.extras)


def expand_scheduling_units(program: Program) -> Program:
    """The program with every loop flattened into one block of instance instructions.

    Requires a valid program.  Guarantees: no loop is left; instructions appear in program
    order, one per instance, named as the instance; the happens-before order and every
    instance's footprint are unchanged.  Raises :class:`ProgramError` when an instance name
    collides with the name of another instruction or loop.
    """
    if not any(isinstance(node, Loop) for node in program.body):
        return program
    unrolled = unroll(program)
    taken = {node.name for node, _ in program.walk() if isinstance(node, Loop)}
    taken |= {inst.name for inst, loops in program.instructions() if not loops}
    body = []
    for inst in unrolled:
        if inst.loops:
            if inst.name in taken:
                raise ProgramError("body", f"cannot expand loops: instance {inst.name} would take the name of an "
                                           f"existing instruction or loop")
            taken.add(inst.name)
        body.append(_flatten(inst, unrolled))
    return program.with_body(tuple(body))


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
