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
* **costs** (:mod:`neuronsim.machine.model.cost`): nominal duration per instance and, for a DMA, its trigger
  time on the sequencer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from neuronsim.machine.model.cost import OpCost, instruction_cost
from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.program import SEQUENCERS, Node, Program
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


def build_plan(program: Program, waits: Sequence[Iterable[int]] | None = None) -> Plan:
    """Lower ``program`` (placed, already validated) for simulation.

    ``waits`` replaces the program's resolved waits: ``waits[i]`` lists the instance ids that
    instance ``i`` waits for (any ids, even later ones or its own: the simulator then reports
    the deadlock).  By default they come from the program's ``deps``.
    """
    check_simulable(program)
    spec = resolve_machine(program.machine)
    unrolled = unroll(program)
    components = (*SEQUENCERS, *spec.queue_names)
    index = {name: k for k, name in enumerate(components)}
    n = len(unrolled)
    costs: dict[str, OpCost] = {}
    sequencer, queue, is_dma = [0] * n, [-1] * n, [False] * n
    duration, issue, nbytes = [0.0] * n, [0.0] * n, [0] * n
    streams: list[list[int]] = [[] for _ in components]
    completions: list[list[int]] = [[] for _ in components]
    position = [0] * n
    for inst in unrolled:
        instr, i = inst.instr, inst.id
        cost = costs.get(instr.name)
        if cost is None:
            cost = costs[instr.name] = instruction_cost(instr, program.tensors, spec)
        seq = index[instr.engine]
        sequencer[i], duration[i], issue[i], nbytes[i] = seq, cost.duration_ns, cost.issue_ns, cost.bytes
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
    return Plan(program, spec, unrolled, components, sequencer, queue, is_dma, duration, issue, nbytes,
                tuple(tuple(s) for s in streams), position, lowered, instruction_paths(program))
