"""How big a program's work is, estimated before any of it starts.

A loop of a billion iterations is a valid program of a few lines; unrolled, checked or
simulated it would take hours and more memory than any machine has.  :func:`estimate_size`
says how much work a program is **without unrolling it** (a walk of its nodes, so a
billion-iteration loop costs microseconds), and the command line refuses work beyond a limit
with the figure and the option that raises it, instead of running for hours or being killed
by the kernel with no output.

The figures:

* ``instances``: the sum over instructions of the product of their enclosing trip counts,
  exactly the number of instances :func:`neuronsim.machine.order.unroll.unroll` would make;
* ``simulated_bytes``: the byte arrays one simulated run allocates: SBUF and PSUM of the
  machine and the DRAM layout the program needs (:mod:`neuronsim.machine.sim.memory`), plus every
  virtual DRAM tensor (the allocation passes may place it past the others);
* ``footprint_starts``: contiguous byte runs the footprints of the program's distinct
  accesses are made of, at most (the geometry enumerates them when it first meets an access);
* ``instance_runs``: the byte runs beyond the first of every access instance (the dependence
  and race analyses make an event of each run of each instance).

:meth:`SizeEstimate.memory_bytes` turns them into the memory a command needs, with per-instance
costs measured on this code base and rounded up (``bench/bench_guard.py`` prints them):
:data:`BYTES_PER_INSTANCE` for unrolling, analyses and the race check,
:data:`BYTES_PER_PLANNED_INSTANCE` more for a simulation's plan, and
:data:`BYTES_PER_RUN_INSTANCE` more per simulated run (its trace, timings and waits).
What the host has to hold that memory (the machine, its control group's limit) is the
application's question, not the program's: :mod:`neuronsim.verify.app.host`.

>>> from neuronsim.machine.ir.program import Instruction, Loop, Program
>>> body = (Loop("i", 10**9, (Instruction("a", "dve", "nop"), Loop("j", 4, (Instruction("b", "act", "nop"),)))),)
>>> size = estimate_size(Program({}, body))
>>> size.instances, size.largest
(5000000000, ('b', 4000000000, ('i', 'j')))
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronsim.machine.model.geometry import access_extent
from neuronsim.machine.ir.identity import WhileAlive
from neuronsim.machine.ir.program import Instruction, Loop, MemoryKind, Node, Program
from neuronsim.machine.model.presets import resolve_machine

__all__ = ["SizeEstimate", "estimate_size", "BYTES_PER_INSTANCE", "BYTES_PER_PLANNED_INSTANCE",
           "BYTES_PER_RUN_INSTANCE", "BYTES_PER_FOOTPRINT_START", "BYTES_PER_INSTANCE_RUN", "SIMULATED_COPIES",
           "run_starts"]

#: Memory per instance of unrolling, the passes and the race check (measured: 300-400 bytes).
BYTES_PER_INSTANCE = 512
#: Memory per instance of a simulation's plan, whatever the runs (measured: about 300 bytes).
BYTES_PER_PLANNED_INSTANCE = 512
#: Memory per instance and simulated run: its trace, timings and waits (measured: about 530 bytes).
BYTES_PER_RUN_INSTANCE = 640
#: Memory per byte-run start while the geometry enumerates a footprint (numpy grid, list, tuple).
BYTES_PER_FOOTPRINT_START = 96
#: Memory per byte run of an access instance beyond its first, unrolled: the event columns the
#: dependence and race analyses build (measured: about 55 bytes; probe_bd's 50,000 stores of a
#: 1,024-run block took 2.4 GB the instances did not foresee).
BYTES_PER_INSTANCE_RUN = 64
#: Simulated memories alive at once: the initial one, the sequential reference's, the run's,
#: and the seeded pattern being drawn.
SIMULATED_COPIES = 4


@dataclass(frozen=True, slots=True)
class SizeEstimate:
    """The size of a program's work (see the module doc)."""

    instances: int
    instructions: int
    largest: tuple[str, int, tuple[str, ...]] | None
    """The instruction with the most instances: ``(name, instances, enclosing loop names)``."""
    simulated_bytes: int
    footprint_starts: int
    instance_runs: int = 0

    def memory_bytes(self, *, unrolled: bool = True, simulated_runs: int = 0, functional: bool = True) -> int:
        """Memory the work needs, roughly: the footprints of the accesses, the instances when
        the work is ``unrolled`` (analyses, the race check), and ``simulated_runs`` runs (with
        the simulated memories when they are ``functional``, not timing only)."""
        need = self.footprint_starts * BYTES_PER_FOOTPRINT_START
        if unrolled:
            need += self.instances * BYTES_PER_INSTANCE + self.instance_runs * BYTES_PER_INSTANCE_RUN
        if simulated_runs:
            need += self.simulated_bytes * SIMULATED_COPIES if functional else 0
            need += self.instances * (BYTES_PER_PLANNED_INSTANCE + BYTES_PER_RUN_INSTANCE * simulated_runs)
        return need


def run_starts(pattern: tuple[tuple[int, int], ...]) -> int:
    """Run starts of a pattern: the product of its counts but a unit-stride innermost one's,
    and but those of the dimensions that continue it (a block of whole rows is one run).

    >>> run_starts(((4096, 128), (1, 8)))   # an 8-column block of a 128-row tensor: a run a row
    128
    >>> run_starts(((512, 128), (1, 512)))  # 128 whole rows of 512: one run
    1
    """
    dims = [(abs(s), c) for s, c in pattern if c > 1 and s != 0]
    span = 1  # elements the innermost run covers so far
    while dims and dims[-1][0] == span:
        span *= dims.pop()[1]
    starts = 1
    for _, count in dims:
        starts *= count
    return starts


#: The estimate of every program alive that was estimated: a command guards its program, then
#: sizes its progress bars by the same object (three walks of a flattened kernel's 25 k
#: instructions were 0.17 s of a 4096^3 matmul's ``run``).
_ESTIMATED: WhileAlive[SizeEstimate] = WhileAlive()


def estimate_size(program: Program) -> SizeEstimate:
    """The figures of ``program`` (valid, as :func:`neuronsim.machine.formats.program_json.load_program` returns it)."""
    known = _ESTIMATED.get(program)
    return known if known is not None else _ESTIMATED.put(program, _estimate(program))


def _estimate(program: Program) -> SizeEstimate:
    spec = resolve_machine(program.machine)
    instances = 0
    instructions = 0
    largest: tuple[str, int, tuple[str, ...]] | None = None
    seen: dict[tuple, int] = {}
    starts = extra_runs = 0

    def visit(nodes: tuple[Node, ...], mult: int, loops: tuple[str, ...]) -> None:
        nonlocal instances, instructions, largest, starts, extra_runs
        for node in nodes:
            if isinstance(node, Loop):
                visit(node.body, mult * node.trip_count, (*loops, node.name))
                continue
            assert isinstance(node, Instruction)
            instances += mult
            instructions += 1
            if largest is None or mult > largest[1]:
                largest = (node.name, mult, loops)
            for access, _ in node.accesses:
                tensor = program.tensors.get(access.tensor)
                if tensor is None:
                    continue
                key = (access.tensor, access.offset, access.pattern)
                runs = seen.get(key)
                if runs is None:
                    runs = seen[key] = run_starts(access_extent(tensor, access)[1])
                    starts += runs
                extra_runs += mult * (runs - 1)

    visit(program.body, 1, ())
    sbuf = spec.sbuf_partitions * spec.sbuf_partition_bytes
    psum = spec.sbuf_partitions * spec.psum_banks * spec.psum_bank_bytes
    return SizeEstimate(instances, instructions, largest, sbuf + psum + _dram_bytes(program), starts, extra_runs)


def _dram_bytes(program: Program) -> int:
    """Simulated DRAM: the end of the addressed tensors, the alias groups after them (each as
    long as its longest tensor, 4 KiB aligned) and every virtual tensor."""
    end = 0
    groups: dict[str, int] = {}
    virtual = 0
    for tensor in program.tensors.values():
        if tensor.memory != MemoryKind.DRAM:
            continue
        nbytes = tensor.bytes_per_partition
        if tensor.alias is not None:
            groups[tensor.alias] = max(groups.get(tensor.alias, 0), nbytes)
        elif tensor.address is not None:
            end = max(end, tensor.address + nbytes)
        else:
            virtual += nbytes
    return end + sum(-(-n // 4096) * 4096 + 4096 for n in groups.values()) + virtual
