"""Planted bugs the fuzzer must find (issue #7, item 4).

Each is a realistic way to get a pass or the simulator wrong:

* :class:`DropPsumAccumulation` - a build_fdeps that drops the PSUM accumulation chain: an
  accumulating matmul no longer waits for the earlier writers of the PSUM tile it reads;
* :class:`AntiDepsFirstPartition` - an anti-dependence analyzer that ignores partitions
  (it keys every SBUF / PSUM access by its first partition only);
* :class:`ProgramOrderFoldReduction` - a reduction that folds predecessors in program order
  and builds the closures the wrong way: a DMA counts as complete on its sequencer as soon as
  it is triggered (the async window of rule 2 forgotten);
* :class:`OneFifoReduction` - a reduction that keeps rule 2 but takes every DMA queue for one
  FIFO: a transfer counts as complete once a later one of any queue is (probe_y's p05, which
  4,000 examples of the old program mix never caught: it needs one instruction waiting on
  transfers of two queues);
* :func:`simulator_ignoring_one_wait` - a simulator that skips the first wait it meets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes.anti_deps import AntiDeps
from neuronsim.passes.build_fdeps import BuildFdeps
from neuronsim.passes.pipeline import Pass, PassContext

SEQ = ("pe", "act", "dve", "pool", "sp")


@dataclass(frozen=True, slots=True)
class DropPsumAccumulation(BuildFdeps):
    name: ClassVar[str] = "build-fdeps"

    def apply(self, program: Program, ctx: PassContext) -> Program:
        built = BuildFdeps.apply(self, program, ctx)
        tensors = built.tensors
        psum_writers = {i.name for i, _ in built.instructions()
                        if any(tensors[a.tensor].memory == MemoryKind.PSUM for a in i.writes)}

        def drop(inst):
            if inst.op != "matmul" or not any(tensors[a.tensor].memory == MemoryKind.PSUM for a in inst.reads):
                return inst
            return replace(inst, deps=tuple(d for d in inst.deps if d.on not in psum_writers))

        return built.map_instructions(drop)


@dataclass(frozen=True, slots=True)
class AntiDepsFirstPartition(AntiDeps):
    name: ClassVar[str] = "anti-deps"

    def apply(self, program: Program, ctx: PassContext) -> Program:
        def first_partition_only(inst):
            def squash(access):
                tensor = program.tensors[access.tensor]
                if tensor.memory == MemoryKind.DRAM:
                    return access
                start = access.partitions[0] if access.partitions else 0
                return replace(access, partitions=(start, 1, 1))

            return replace(inst, reads=tuple(map(squash, inst.reads)), writes=tuple(map(squash, inst.writes)))

        distorted = program.map_instructions(first_partition_only)
        analysed = AntiDeps.apply(self, distorted, PassContext(verify=False))
        deps = {i.name: i.deps for i, _ in analysed.instructions()}
        return program.map_instructions(lambda inst: replace(inst, deps=deps[inst.name]))


def _fold_reduction(program: Program, *, triggered_is_done: bool, one_fifo: bool,
                    latest_first: bool | None = None) -> Program:
    """A vector-clock reduction with one of two planted mistakes.  An instruction's waits are
    folded earliest first, or latest first (by default with ``one_fifo``): a later transfer's
    completion then stands for an earlier one's, as a transitive reduction over FIFO edges has
    it.  Either order is sound without the mistakes."""
    latest_first = one_fifo if latest_first is None else latest_first
    unrolled = unroll(program)
    width = len(SEQ) + 16
    seq_clock = {s: (0,) * width for s in SEQ}
    queue_clock: dict[str, tuple] = {}
    count = [0] * width
    end: dict[int, tuple] = {}
    needed: set[tuple[str, int]] = set()
    join = lambda a, b: tuple(x if x > y else y for x, y in zip(a, b))  # noqa: E731
    for inst, waits in zip(unrolled, unrolled.resolve_waits()):
        instr = inst.instr
        state = seq_clock[instr.engine]
        for dep, target in sorted(waits, key=lambda wait: wait[1], reverse=latest_first):  # (sorted is stable)
            comp, pos = end[target][-2:]
            if state[comp] >= pos:
                continue
            needed.add((instr.name, instr.deps.index(dep)))
            state = join(state, end[target][0])
        if instr.is_dma:
            fifo = "dma" if one_fifo else instr.queue  # the second bug: one FIFO for every queue
            q = len(SEQ) + (0 if one_fifo else int(instr.queue[3:]))
            start = join(state, queue_clock.get(fifo, (0,) * width))
            comp = q
        else:
            fifo, start, comp = None, state, SEQ.index(instr.engine)
        count[comp] += 1
        clock = start[:comp] + (count[comp],) + start[comp + 1:]
        end[inst.id] = (clock, comp, count[comp])
        if fifo is not None:
            queue_clock[fifo] = clock
        # The first bug: the sequencer treats a triggered DMA as completed (rule 2 forgotten).
        seq_clock[instr.engine] = clock if triggered_is_done or not instr.is_dma else state

    def keep(instr):
        return replace(instr, deps=tuple(d for k, d in enumerate(instr.deps) if (instr.name, k) in needed))

    return program.map_instructions(keep)


@dataclass(frozen=True, slots=True)
class ProgramOrderFoldReduction(Pass):
    name: ClassVar[str] = "dep-reduction"

    def apply(self, program: Program, ctx: PassContext) -> Program:
        return _fold_reduction(program, triggered_is_done=True, one_fifo=False)


@dataclass(frozen=True, slots=True)
class OneFifoReduction(Pass):
    name: ClassVar[str] = "dep-reduction"

    def apply(self, program: Program, ctx: PassContext) -> Program:
        return _fold_reduction(program, triggered_is_done=False, one_fifo=True)


def simulator_ignoring_one_wait(program: Program, **options):
    """``neuronsim.machine.sim.simulator.simulate``, except that the first wait of the program is skipped."""
    unrolled = unroll(program)
    waits = [[t for _, t in ws] for ws in unrolled.resolve_waits()]
    for row in waits:
        if row:
            row.pop(0)
            break
    return simulate(program, waits=waits, **options)
