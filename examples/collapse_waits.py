"""An example pass, written as ``docs/writing-a-pass.md`` explains: ``collapse-waits``.

A cheap reduction of the kind a backend's semaphore lowering does, in two steps:

1. a wait on a compute instruction of the waiter's own sequencer is dropped: the sequencer
   completes it before it triggers anything after it (rule 1, ``E(X) <= T(Y)``);
2. when an instruction waits for several instructions that complete on the same component
   (a sequencer, or a DMA queue), the wait on the latest implies the others, which are
   dropped: two compute instructions of one sequencer complete in order (rule 1:
   ``E(X1) <= T(X2) <= E(X2)``), and so do two transfers of one DMA queue (rule 3:
   ``E(X1) <= S(X2) <= E(X2)``), so ``E(X2) <= T(Y)`` (rule 4) gives ``E(X1) <= T(Y)``.

A DMA completes on its *queue*, not on the sequencer that triggered it (rule 2 only orders
triggers).  Taking the triggering sequencer as a DMA's component is the classic bug: both
steps then drop waits that are needed.  :class:`CollapseWaitsBySequencer` plants exactly that
one, for the fuzzer to find.

Contract
    requires: a valid program.
    guarantees: deps are a subset of the input's; every loop-carried dep is kept; the
    happens-before relation over the instances is unchanged.

A dep limited to some iterations (``x-iterations``) is kept and stands for no other: in the
iterations it leaves out it implies nothing (the fuzzer found that one: a copy in a loop kept
only its wait on a matmul of the loop, limited to the second iteration, and dropped the one on
a matmul before the loop, so the first iteration raced).

Only deps that are not loop-carried are collapsed: for those, the instance each one resolves
to follows document order (an instance of an earlier instruction precedes the instance of a
later one that the same waiter resolves), so "latest" is simply "latest in the document".

On the flash-attention scenario after dependence construction it drops 6 of 32 deps (the
exact reduction, ``remove-redundancies`` then ``dep-reduction``, keeps 16), and the result
is still race-free:

>>> from neuronsim.machine.formats.program_json import load_program
>>> from neuronsim.passes import compile_program
>>> from neuronsim.verify.racecheck import check_program
>>> built, _ = compile_program(load_program("scenarios/flash_attention.json"), "alloc,build-fdeps,anti-deps")
>>> out = CollapseWaits().apply(built, None)
>>> sum(len(i.deps) for i, _ in built.instructions()), sum(len(i.deps) for i, _ in out.instructions())
(32, 26)
>>> check_program(out).race_free
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.ir.program import Instruction, Program
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["CollapseWaits", "CollapseWaitsBySequencer", "collapse_waits"]


def completes_on(instr: Instruction) -> str:
    """The component whose completions are in program order for ``instr``."""
    return instr.queue if instr.is_dma else instr.engine


def collapse_waits(program: Program, component=completes_on) -> Program:
    """``program`` where each instruction drops its non-loop-carried deps on its own sequencer's
    instructions and keeps, per other component, only the latest one."""
    position = {instr.name: k for k, (instr, _) in enumerate(program.instructions())}
    by_name = program.instruction_map()

    def collapse(instr: Instruction) -> Instruction:
        latest: dict[str, str] = {}
        for dep in instr.deps:
            if dep.loop_carried or dep.iterations:  # (a dep of some iterations stands for none of the others')
                continue
            where = component(by_name[dep.on])
            if where == instr.engine:
                continue  # step 1: the sequencer orders it itself
            if where not in latest or position[dep.on] > position[latest[where]]:
                latest[where] = dep.on
        keep = tuple(d for d in instr.deps
                     if d.loop_carried or d.iterations or latest.get(component(by_name[d.on])) == d.on)
        return instr if len(keep) == len(instr.deps) else replace(instr, deps=keep)

    return program.map_instructions(collapse)


@dataclass(frozen=True, slots=True)
class CollapseWaits(Pass):
    """``collapse-waits``: no wait on the own sequencer, one per other component (see the module doc)."""

    name: ClassVar[str] = "collapse-waits"

    def apply(self, program: Program, ctx: PassContext | None) -> Program:
        return collapse_waits(program)


@dataclass(frozen=True, slots=True)
class CollapseWaitsBySequencer(Pass):
    """The planted bug: DMAs grouped by the sequencer that triggers them (rule 2 forgotten)."""

    name: ClassVar[str] = "collapse-waits"

    def apply(self, program: Program, ctx: PassContext | None) -> Program:
        return collapse_waits(program, component=lambda instr: instr.engine)
