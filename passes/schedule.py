"""``schedule``: the backend's scheduler slot (seed: between ``expand_scheduling_units``, 96,
and ``dep_opt``, 104): flatten the loops, then list-schedule the instructions over the engines.

neuronx-cc unrolls a kernel's loops and its schedulers interleave the independent chains of
different iterations on each engine before ``dep_opt`` rebuilds the flow graph for the new
order (dependence-reduction seed, sections 1, 2 and 5).  This pass does the same with the
two passes that already hold each step:

1. ``expand-scheduling-units`` (:func:`~neuronsim.passes.expand_scheduling_units.expand_scheduling_units`)
   unrolls every loop, each ring slot of the allocator becoming a tensor of its own, when
   the program has at most ``max_instances`` instances and the flat schedule's estimated
   memory (:func:`flat_memory`) is at most ``max_flat_memory`` bytes (otherwise the loops
   stay atoms and only their bodies are scheduled, so the pass stays linear in the program
   text);
2. ``list-schedule{timed=true}`` (:func:`~neuronsim.passes.list_schedule.list_schedule`):
   repeatedly the ready instruction that can start earliest under the timing model's costs
   (:mod:`neuronsim.machine.model.cost`: its producers' results in, its engine free, a DMA's
   queue in FIFO order), the longest remaining critical path among equals.

**Sequential loops** (``in_order``, on by default): the iterations of an NKI sequential loop
(``nl.sequential_range``, a legacy kernel's Python ``range``) start in order on each engine,
as the compiler does not pipeline them (:mod:`~neuronsim.passes.iteration_order`); affine
iterations interleave freely.  Only where the program is scheduled flat (every loop unrolled).

**Pressure.**  The pass runs on placed tensors (after ``alloc``): every SBUF / PSUM byte an
instruction touches is already assigned, and two instructions that touch a common byte, one
writing it, keep their order.  A ring slot is reused only after every use of its previous
tile (the write-after-read pair is such a conflict), so iteration ``i + buffers`` cannot
start loading before iteration ``i`` has finished with the slot: the schedule's live tiles
are the allocation's, and it fits wherever the allocation fits, SBUF, PSUM banks and rings
alike.  A compiler whose scheduler ran before allocation would have to count live bytes;
here the allocator's rings are the bound (``docs/timing.md``, "The compiler between the
trace and the timing model").

Contract
    requires: no virtual tensor (run ``alloc`` first).
    guarantees: the program's extras carry ``x-scheduled`` (what its makespan is); with
    ``in_order``, on each engine no instance of a sequential loop's iteration ``j + 1`` comes
    before one of its iteration ``j`` (up to the few instances the trace placed away from their
    iteration, :func:`~neuronsim.passes.iteration_order.iteration_gates`); the same
    instances (names ``NAME[i,j]`` when loops were unrolled), each touching the same bytes;
    every pair of instances that touch a common byte, one writing
    it, in their original order, so the sequential semantics are unchanged.  Deps are stale
    (they may rely on engine orders that changed): run ``dep-opt`` next, which rebuilds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Instruction, Loop, Program, frozen_mapping
from neuronsim.machine.model.geometry import access_extent
from neuronsim.machine.order.work_estimate import run_starts
from neuronsim.machine.sim.accuracy import SCHEDULED_KEY

from neuronsim.passes.expand_scheduling_units import expand_scheduling_units
from neuronsim.passes.iteration_order import iteration_gates
from neuronsim.passes.list_schedule import list_schedule
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["Schedule", "TRACED_PIPELINE", "instance_count", "flat_memory", "FLAT_BYTES_PER_INSTANCE",
           "FLAT_BYTES_PER_RUN", "scheduled_flat_memory"]

#: The pipeline a traced NKI kernel is compiled with: loads the compiler does not repeat
#: (``load-elim``, on the loop form), the allocation, the scheduler slot, the transfers dealt
#: over the DMA queues in the scheduled order (``dma-place``) and the rebuild of the deps for
#: the new order and queues (``memsets=false``: a traced kernel initialises what it reads, and a
#: read it does not is an NKI finding, not something to paper over); the caller appends
#: ``dep-reduction``.  ``docs/timing.md``, "The compiler between the trace and the timing model".
TRACED_PIPELINE = "load-elim,alloc,schedule,dma-place,dep-opt{memsets=false}"


def instance_count(program: Program) -> int:
    """Instances of ``program``'s instructions (each counted once per iteration of its loops)."""
    total = 0
    stack = [(node, 1) for node in program.body]
    while stack:
        node, times = stack.pop()
        if isinstance(node, Loop):
            stack.extend((child, times * node.trip_count) for child in node.body)
        else:
            total += times
    return total


#: Memory the flattened program costs ``schedule``, ``dma-place`` and ``dep-opt`` per instance,
#: and per byte run of a footprint that moves with its loops (each instance of a column block of
#: a row-major DRAM tensor holds a run per row), measured by ``bench/bench_guard.py`` (about
#: 2,750 and 320 bytes) and rounded up.
FLAT_BYTES_PER_INSTANCE = 4096
FLAT_BYTES_PER_RUN = 384


def flat_memory(program: Program) -> int:
    """Bytes the flat schedule of ``program`` needs, roughly: :data:`FLAT_BYTES_PER_INSTANCE`
    an instance, :data:`FLAT_BYTES_PER_RUN` a byte run of each distinct footprint (an access
    has one per iteration of the loops it moves with; the flattened program shares the others,
    as a tile loaded once and read in every iteration of an inner loop), and of each instance of
    a write of several runs, which the dependence passes order run by run whether it moves or not.

    >>> from neuronsim.machine.ir.program import Access, Tensor, MemoryKind
    >>> x = Tensor("x", MemoryKind.DRAM, "float32", (128, 4096), address=0)
    >>> block = Access("x", pattern=((4096, 128), (1, 8)), per_iteration=(("i", 8),))
    >>> load = Instruction("ld", "sp", "dma_copy", reads=(block,))
    >>> body = (Loop("i", 512, (Loop("j", 4, (load,)),)),)   # moves with i, not with j
    >>> flat_memory(Program({"x": x}, body)) == 2048 * FLAT_BYTES_PER_INSTANCE + 512 * 128 * FLAT_BYTES_PER_RUN
    True
    """
    total = 0
    stack: list[tuple[object, dict[str, int]]] = [(node, {}) for node in program.body]
    while stack:
        node, trips = stack.pop()
        if isinstance(node, Loop):
            inner = {**trips, node.name: node.trip_count}
            stack.extend((child, inner) for child in node.body)
            continue
        assert isinstance(node, Instruction)
        total += math.prod(trips.values()) * FLAT_BYTES_PER_INSTANCE
        for access, is_write in node.accesses:
            tensor = program.tensors.get(access.tensor)
            if tensor is None:
                continue
            runs = run_starts(access_extent(tensor, access)[1])
            if is_write and runs > 1:  # each instance's write of several runs is ordered run by run, shared or not
                total += math.prod(trips.values()) * runs * FLAT_BYTES_PER_RUN  # (50,000 stores of one
                continue  # 1,024-run block estimated 0.2 GB, took 3.4 GB: probe_bd)
            moving = {loop for loop, shift in (*access.per_iteration, *access.partitions_per_iteration) if shift}
            if tensor.rotate is not None:
                moving.add(tensor.rotate.loop)
            distinct = math.prod(trips.get(loop, 1) for loop in moving)
            total += distinct * runs * FLAT_BYTES_PER_RUN
    return total


def scheduled_flat_memory(program: Program, passes: Sequence[Pass]) -> int:
    """The memory :func:`flat_memory` foresees when ``passes`` hold a ``schedule`` that will
    flatten ``program`` (within both of its bounds), else 0: what a command's memory guard adds
    before any work (``--max-memory``: a flat schedule outgrew the estimate, probe_az)."""
    schedule = next((p for p in passes if isinstance(p, Schedule)), None)
    if schedule is None or not any(isinstance(node, Loop) for node in program.body):
        return 0
    return schedule.flat_need(program) or 0


@dataclass(frozen=True, slots=True)
class Schedule(Pass):
    """Pass: flatten (up to ``max_instances``) and list-schedule over the engines (module doc)."""

    name: ClassVar[str] = "schedule"
    max_instances: int = 250_000  # the scheduler's time bound (docs/timing.md, "How far it flattens")
    max_flat_memory: int = 1 << 31  # and its memory bound (flat_memory; the same section)
    flatten: bool = True
    in_order: bool = True

    def __post_init__(self) -> None:
        if self.max_instances < 0:
            raise ValueError(f"max_instances must be at least 0, got {self.max_instances}")
        if self.max_flat_memory < 0:
            raise ValueError(f"max_flat_memory must be at least 0, got {self.max_flat_memory}")

    def flat_need(self, program: Program) -> int | None:
        """:func:`flat_memory` of ``program`` when this pass flattens it (within both bounds), else None."""
        if not self.flatten or instance_count(program) > self.max_instances:
            return None
        need = flat_memory(program)
        return need if need <= self.max_flat_memory else None

    def apply(self, program: Program, ctx: PassContext) -> Program:
        virtual = sorted(name for name, t in program.tensors.items() if t.is_virtual)
        if virtual:
            raise ProgramError(f"tensors.{virtual[0]}", "pass 'schedule' needs placed tensors (its memory bound is "
                                                        "the allocation): run alloc before it")
        spec = ctx.machine(program)
        has_loops = any(isinstance(node, Loop) for node in program.body)
        flat = not has_loops or self.flat_need(program) is not None
        # each instance's sequential-loop iterations, read off the loop form (before flattening)
        gates = iteration_gates(program) if self.in_order and flat else None
        if flat and has_loops:
            program = expand_scheduling_units(program)
            ctx.count(self.name, "flattened", 1)
        out = list_schedule(program, spec, timed=True, gates=gates)
        # says what a makespan of this program is (neuronsim.machine.sim.accuracy.makespan_kind)
        out = Program(out.tensors, out.body, out.machine, frozen_mapping({**out.extras, SCHEDULED_KEY: self.name}))
        after = [i.name for i, _ in out.instructions()]
        ctx.count(self.name, "instructions", len(after))
        ctx.count(self.name, "moved", sum(a != b for a, b in zip(after, (i.name for i, _ in program.instructions()))))
        ctx.count(self.name, "loops-kept", sum(1 for node, _ in out.walk() if isinstance(node, Loop)))
        return out
