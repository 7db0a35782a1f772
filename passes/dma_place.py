"""``dma-place``: which DMA queue each transfer uses, as the hardware spreads them.

What the public documents say (``docs/timing.md``, "DMA placement"): a transfer is submitted
to one queue ID on all 16 DMA engines; on each engine the transfers of one queue run in order,
and the engines serve their queues round robin (DMA overview); a transfer is split into one
packet per engine per group of SBUF partitions (DMA overview: ``A[4, 4096]`` moves on one
engine, ``A[128, 128]`` on all 16; Neuron Explorer's DMA guide).  So the hardware orders two
transfers of one queue only *engine by engine*: the next transfer's packet on an idle engine
does not wait for the previous transfer's packet on a busy one.

The model's queues order whole transfers (the spec's rule 3, which the race checker relies
on): a kernel whose every ``nl.load`` the frontend puts on ``dma0`` has each transfer wait for
the whole of the one before, a serialisation the hardware does not have.  The model already
serves each DMA engine one share at a time, first come first served (the per-engine order);
this pass removes the whole-transfer serialisation by dealing the transfers over the
machine's queues round robin in program order (the scheduled order, when it runs after
``schedule``), as the engines serve their queues.  Transfers on disjoint partition groups
(two 64-partition tiles, one on each half) then overlap as on the hardware; transfers on the
same engines still share them.

Left where they are: spill stores and reloads (``x-spill``: the allocator's own queue, as
profiles show spill / reload queues apart from the kernel's I/O queues; but a rematerialised
reload, the kernel's load of an input issued again, is dealt as the kernel's loads are), software-DGE
transfers (POOL makes their descriptors: its queue) and transfers without a queue.  The
kernel's transfers are dealt over the queues the spills do not use, so that none waits in a
spill queue's order (the profiles' ``qSyncIO0`` beside ``qSyncSpillReload0``); a program
without spills gets every queue.

Contract
    requires: a valid program (placed or not).
    guarantees: the same instructions in the same order, touching the same bytes; only the
    ``queue`` of DMA instructions changes, to one of the machine's queues.  A queue's FIFO
    order may have ordered two conflicting transfers that now sit on different queues: run
    ``dep-opt`` afterwards, which rebuilds the deps for the new queues (``TRACED_PIPELINE``
    does).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.ir.program import Instruction, Loop, Node, Program

from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["DmaPlace", "place_queues", "movable"]


def movable(instr: Instruction) -> bool:
    """True for a transfer whose queue the pass may choose (module doc: not a spill store or
    a reload of a stored value, not a software-DGE transfer, one that has a queue)."""
    if not instr.is_dma or instr.queue is None:
        return False
    if instr.extras and "x-spill" in instr.extras and not instr.extras["x-spill"].get("rematerialised"):
        return False
    return instr.attrs.get("dge", "none") != "swdge"


def place_queues(program: Program, queues: tuple[str, ...]) -> tuple[Program, int]:
    """``program`` with its movable transfers dealt over ``queues`` round robin in program
    order; also how many changed queue."""
    turn = 0
    moved = 0

    def place(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
        nonlocal turn, moved
        out = []
        for node in nodes:
            if isinstance(node, Loop):
                out.append(Loop(node.name, node.trip_count, place(node.body), node.extras))
                continue
            if movable(node):
                queue = queues[turn % len(queues)]
                turn += 1
                if queue != node.queue:
                    node = replace(node, queue=queue)
                    moved += 1
            out.append(node)
        return tuple(out)

    body = place(program.body)
    return (program if not moved else program.with_body(body)), moved


@dataclass(frozen=True, slots=True)
class DmaPlace(Pass):
    """Pass: deal the transfers over the DMA queues the spills leave (module doc); counts
    ``moved``."""

    name: ClassVar[str] = "dma-place"

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        ctx = ctx or PassContext()
        queues = ctx.machine(program).queue_names
        spill_queues = {i.queue for i, _loops in program.instructions() if i.is_dma and not movable(i)
                        and i.extras and "x-spill" in i.extras}
        kernel_queues = tuple(q for q in queues if q not in spill_queues) or queues
        out, moved = place_queues(program, kernel_queues)
        ctx.count(self.name, "moved", moved)
        return out
