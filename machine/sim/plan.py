"""What the simulator needs of a program, computed once and shared by every run.

A :class:`Plan` is the unrolled program lowered to the machine:

* **components**: the five sequencers then the DMA queues (``pe act dve pool sp dma0 ...``);
  each has a stream of instances in program order.  A sequencer's stream holds everything it
  issues (its compute instructions and the DMAs it triggers); a queue's stream holds the
  transfers it carries out.
* **semaphores** (``docs/machine-model.md`` section 3): one counting semaphore per component counts the
  completions on that component in program order: a sequencer's counts its compute
  instructions (a DMA it triggers completes on its queue), a queue's its transfers.  Since a
  component completes its instances in program order (rules 1 and 3), "B has completed" is
  exactly "B's semaphore has reached B's position on its component + 1".
* **waits**: every "Y waits for B" (``Unrolled.resolve_waits``, or an override) lowered to
  ``(component of B, position of B + 1, B)``: Y's sequencer blocks at Y until that semaphore
  reaches that threshold.
* **costs** (:mod:`neuronsim.machine.model.cost`): per compute instance its occupancy and the
  delay from its start to its result; per DMA its trigger time, its latency and its
  DMA-engine shares.
* **after**: per instance, the producers whose *results* it waits for: the instances it waits
  for, plus the recent instructions of its own sequencer that write what it reads (a
  read-after-write hazard the sequencer interlocks; rule 1 needs no wait for it, but the
  result latency still applies).  The engine delays the instance until those results exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat

from neuronsim.machine.model.cost import CostMemo, OpCost, dma_shares, instance_shift, moves_partitions
from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.identity import IdentityMemo
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import SEQUENCERS, MemoryKind, Node, Program
from neuronsim.machine.sim.memory import AccessView, DramLayout, access_view
from neuronsim.machine.model.presets import MachineSpec, resolve_machine
from neuronsim.machine.order.unroll import Unrolled, unroll

__all__ = ["Plan", "build_plan", "instruction_paths", "check_simulable"]


def instruction_paths(program: Program) -> dict[str, str]:
    """Instruction name -> JSON path (``body[3].body[0]``), for located messages."""
    paths: dict[str, str] = {}

    def visit(nodes: tuple[Node, ...], path: str) -> None:
        for i, node in enumerate(nodes):
            here = join_path(path, i)
            body = getattr(node, "body", None)
            if body is not None:
                visit(body, join_path(here, "body"))
            else:
                paths[node.name] = here

    visit(program.body, "body")
    return paths


def check_simulable(program: Program) -> None:
    """Raise :class:`ProgramError` for a program that still has virtual tensors."""
    for name, tensor in program.tensors.items():
        if tensor.is_virtual:
            raise ProgramError(join_path("tensors", name), "virtual tensor (no placement): checking or simulating a "
                               "program that still has virtual tensors is an error; run 'neuronsim compile' first")


@dataclass(frozen=True, slots=True)
class Plan:
    """The lowered program (see the module doc).  Lists are indexed by instance id."""

    program: Program
    spec: MachineSpec
    unrolled: Unrolled
    components: tuple[str, ...]
    """Sequencers then DMA queues."""
    sequencer: list[int]
    """Component index of each instance's sequencer."""
    queue: list[int]
    """Component index of a DMA instance's queue; -1 for compute instances."""
    is_dma: list[bool]
    duration: list[float]
    """Nominal ns: compute time, or a DMA's transfer time."""
    issue: list[float]
    """Nominal ns a DMA trigger occupies its sequencer (0 for compute instances)."""
    nbytes: list[int]
    """Bytes a DMA moves (0 for compute instances)."""
    streams: tuple[tuple[int, ...], ...]
    """Per component, its instance ids in program order."""
    position: list[int]
    """Position of each instance among its semaphore's completions (0-based)."""
    waits: list[tuple[tuple[int, int, int], ...]]
    """Per instance: ``(component, threshold, producer id)`` of every wait."""
    paths: dict[str, str]
    """Instruction name -> JSON path."""
    result: list[float]
    """Compute: ns from its start until a dependent may start (0 for DMAs: their end)."""
    latency: list[float]
    """DMA: ns from its issued trigger until data may move (0 for compute instances)."""
    shares: list[tuple[tuple[int, float, float], ...]]
    """DMA: ``(engine, data ns, hold ns)`` per DMA engine it uses (empty for compute)."""
    after: list[tuple[int, ...]]
    """Per instance: producers whose results it waits for (see the module doc)."""

    def __len__(self) -> int:
        return len(self.is_dma)

    def completer(self, i: int) -> int:
        """Component whose semaphore counts instance ``i``'s completion."""
        return self.queue[i] if self.is_dma[i] else self.sequencer[i]

    def views(self, i: int, dram: DramLayout) -> tuple[list[AccessView], list[AccessView]]:
        """Read and write :class:`AccessView` s of instance ``i``."""
        inst = self.unrolled[i]
        tensors = self.program.tensors
        iteration = inst.iteration
        reads = [access_view(tensors[a.tensor], a, iteration, self.spec, dram) for a in inst.instr.reads]
        writes = [access_view(tensors[a.tensor], a, iteration, self.spec, dram) for a in inst.instr.writes]
        return reads, writes


def _resolved(unrolled: Unrolled) -> list[tuple[int, ...]]:
    return [tuple(sorted({target for _dep, target in entry})) for entry in unrolled.resolve_waits()]


def build_plan(program: Program, waits: Sequence[Iterable[int]] | None = None, *, timed: bool = True) -> Plan:
    """Lower ``program`` (placed, already validated) for simulation.

    ``waits`` replaces the program's resolved waits: ``waits[i]`` lists the instance ids that
    instance ``i`` waits for (any ids, even later ones or its own: the simulator then reports
    the deadlock).  By default they come from the program's ``deps``.  ``timed=False``: a plan
    for :func:`~neuronsim.machine.sim.simulator.run_sequential` alone, its costs, streams and
    waits left empty (a trace reading device values runs one per read: the costs were two
    thirds of lowering each, probe_bb's gathers).
    """
    check_simulable(program)
    spec = resolve_machine(program.machine)
    unrolled = unroll(program)
    components = (*SEQUENCERS, *spec.queue_names)
    n = len(unrolled)
    if not timed:
        zeros, none = list(repeat(0.0, n)), [()] * n
        return Plan(program, spec, unrolled, components, [0] * n, [-1] * n, [False] * n, zeros, zeros, [0] * n,
                    (), [0] * n, none, instruction_paths(program), zeros, zeros, none, none)
    index = {name: k for k, name in enumerate(components)}
    paths = instruction_paths(program)
    memo = CostMemo(program.tensors, spec)
    costs: dict[str, OpCost] = {}
    moving: dict[str, bool] = {}
    sequencer, queue, is_dma = [0] * n, [-1] * n, [False] * n
    duration, issue, result, latency = (list(repeat(0.0, n)) for _ in range(4))
    nbytes = [0] * n
    shares: list[tuple[tuple[int, float, float], ...]] = [()] * n
    streams: list[list[int]] = [[] for _ in components]
    completions: list[list[int]] = [[] for _ in components]
    position = [0] * n
    for inst in unrolled:
        instr, i = inst.instr, inst.id
        cost = costs.get(instr.name)
        if cost is None:
            cost = costs[instr.name] = memo(instr)
            moving[instr.name] = instr.is_dma and moves_partitions(instr, program.tensors)
        seq = index[instr.engine]
        sequencer[i], duration[i], issue[i], nbytes[i] = seq, cost.duration_ns, cost.issue_ns, cost.bytes
        result[i], latency[i], shares[i] = cost.result_ns, cost.latency_ns, cost.shares
        if moving[instr.name] and "cycles" not in instr.attrs:
            shift = instance_shift(instr, program.tensors, inst.iteration)
            shares[i] = dma_shares(instr, program.tensors, spec, shift)
            duration[i] = cost.latency_ns + max((s[1] for s in shares[i]), default=0.0)
        streams[seq].append(i)
        done = seq
        if instr.is_dma:
            is_dma[i] = True
            done = queue[i] = index[instr.queue or "dma0"]
            streams[done].append(i)
        position[i] = len(completions[done])
        completions[done].append(i)
    targets = _resolved(unrolled) if waits is None else [tuple(w) for w in waits]
    if len(targets) != n:
        raise ValueError(f"waits has {len(targets)} entries; the program has {n} instances")
    lowered: list[tuple[tuple[int, int, int], ...]] = []
    for entry in targets:
        row = []
        for b in entry:
            if not 0 <= b < n:
                raise ValueError(f"wait on instance {b}: ids are 0..{n - 1}")
            row.append((queue[b] if is_dma[b] else sequencer[b], position[b] + 1, b))
        lowered.append(tuple(row))
    local = _local_producers(unrolled, streams[:len(SEQUENCERS)], is_dma)
    after = [tuple(sorted({*(b for _c, _k, b in lowered[i]), *local[i]})) for i in range(n)]
    return Plan(program, spec, unrolled, components, sequencer, queue, is_dma, duration, issue, nbytes,
                tuple(tuple(s) for s in streams), position, lowered, paths,
                result, latency, shares, after)


#: How many earlier compute instances of its sequencer an instance is checked against for a
#: read-after-write hazard (older results are ready by the time it issues).
HAZARD_WINDOW = 4


def _local_producers(unrolled: Unrolled, streams: Sequence[Sequence[int]], is_dma: list[bool]) -> list[tuple[int, ...]]:
    """Per instance, the recent compute instances of its sequencer whose writes its reads
    touch (same memory space, shared partitions and byte range).  A matmul's read of the
    PSUM tile it accumulates into is not a hazard: PSUM accumulates near memory."""
    tensors = unrolled.program.tensors
    local: list[tuple[int, ...]] = [()] * len(unrolled)
    placed: IdentityMemo = IdentityMemo()  # a flattened kernel's access objects, shared by its instances

    def fixed(access):
        return footprint(tensors[access.tensor], access, {})

    def at(access, iteration):
        if iteration:
            return footprint(tensors[access.tensor], access, iteration)
        return placed.get(access, fixed)

    for stream in streams:
        recent: list[tuple[int, list]] = []
        for i in stream:
            inst = unrolled[i]
            instr = inst.instr
            if is_dma[i] or not (instr.reads or instr.writes):
                continue
            iteration = inst.iteration
            written = {a.tensor for a in instr.writes} if instr.op == "matmul" else set()
            if recent and instr.reads:
                reads = [at(a, iteration) for a in instr.reads
                         if a.tensor not in written and tensors[a.tensor].memory != MemoryKind.DRAM]
                hits = [p for p, writes in recent if any(_touch(r, w) for r in reads for w in writes)]
                local[i] = tuple(hits)
            writes = [at(a, iteration) for a in instr.writes]
            recent.append((i, writes))
            if len(recent) > HAZARD_WINDOW:
                recent.pop(0)
    return local


def _touch(a, b) -> bool:
    if a.space != b.space or (a.partitions and not a.partitions & b.partitions):
        return False
    (alo, ahi), (blo, bhi) = a.byte_range, b.byte_range
    return alo < bhi and blo < ahi
