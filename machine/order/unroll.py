"""Named instances of a program, on top of the instance stream.

:class:`neuronsim.machine.order.stream.InstanceStream` is the one unrolling of the project (flat arrays, no
object per instance).  :func:`unroll` gives the same instances as :class:`Instance` named
tuples, for the code that wants one object per instance (the simulator's functional run,
reports, oracles): it builds them from the stream on demand, and resolves waits with the
stream's :meth:`~neuronsim.machine.order.stream.InstanceStream.resolve`.

An instruction inside loops ``i, j`` has one instance per index tuple, named ``NAME[i,j]``
(outermost first); an instruction outside every loop has one instance named ``NAME``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from neuronsim.machine.order.deptable import dep_table
from neuronsim.machine.ir.program import Dep, Instruction, Loop, Program
from neuronsim.machine.order.stream import InstanceStream, instance_name, stream_of

__all__ = ["Instance", "Unrolled", "unroll", "instance_name"]


class Instance(NamedTuple):
    """One instance of an instruction in the unrolled program."""

    id: int
    """Position in program order."""
    instr: Instruction
    index: tuple[int, ...]
    loops: tuple[Loop, ...]

    @property
    def name(self) -> str:
        return instance_name(self.instr.name, self.index)

    @property
    def iteration(self) -> dict[str, int]:
        """Loop name -> index, for the footprint of its accesses."""
        return {loop.name: i for loop, i in zip(self.loops, self.index)}


class Unrolled:
    """The instances of a program in program order, with per-instruction lookups."""

    __slots__ = ("program", "stream", "instrs", "_instances")

    def __init__(self, program: Program, stream: InstanceStream | None = None) -> None:
        self.program = program
        self.stream = stream or stream_of(program)
        # The program's own instruction objects, with their deps (a stream may be shared with
        # programs that differ only in deps: passes.state.PipelineState).
        self.instrs = [inst for inst, _ in program.instructions()]
        self._instances: list[Instance] | None = None

    @property
    def instances(self) -> list[Instance]:
        if self._instances is None:
            s = self.stream
            instrs, loops_of = self.instrs, s.loops_of
            xs = s.instr.tolist()
            self._instances = [Instance(i, instrs[x], s.index_of(i) if loops_of[x] else (), loops_of[x])
                               for i, x in enumerate(xs)]
        return self._instances

    def __len__(self) -> int:
        return self.stream.n

    def __iter__(self) -> Iterator[Instance]:
        return iter(self.instances)

    def __getitem__(self, i: int) -> Instance:
        if self._instances is not None:
            return self._instances[i]
        s = self.stream
        x = int(s.instr[i])
        return Instance(i, self.instrs[x], s.index_of(i), s.loops_of[x])

    def name(self, i: int) -> str:
        return self.stream.instance_name(i)

    def ids_of(self, name: str) -> list[int]:
        """Instance ids of an instruction, in program order (row-major over its loops)."""
        return self.stream.instances_of(self.stream.id_of[name]).tolist()

    def loops_of(self, name: str) -> tuple[Loop, ...]:
        return self.stream.loops_of[self.stream.id_of[name]]

    def find(self, name: str, index: tuple[int, ...]) -> int:
        """Id of instance ``name[index]``."""
        return self.stream.find(name, index)

    def by_name(self) -> dict[str, int]:
        """Instance name -> id (built on demand)."""
        return {self.stream.instance_name(i): i for i in range(len(self))}

    def wait_targets(self, inst: Instance, dep: Dep) -> list[int]:
        """Every instance of ``dep.on`` that ``inst`` waits on through ``dep``."""
        return self.stream.targets_one(inst.id, dep)

    def resolve_wait(self, inst: Instance, dep: Dep) -> int | None:
        """The last instance of ``dep.on`` that ``inst`` waits on, or None."""
        t = self.stream.resolve_one(inst.id, dep)
        return None if t < 0 else t

    def resolve_waits(self) -> list[tuple[tuple[Dep, int], ...]]:
        """For every instance, ``(dep, last target id)`` per dep that waits on something."""
        table = dep_table(self.program, self.stream)
        waits = self.stream.resolve(table)
        names = self.stream.names
        deps = [table.dep(r, names) for r in range(len(table))]
        ptr, target, row = waits.ptr.tolist(), waits.target.tolist(), waits.row.tolist()
        out = []
        for i in range(len(self)):
            entries = sorted((row[k], target[k]) for k in range(ptr[i], ptr[i + 1]))  # in the order of the deps
            out.append(tuple((deps[r], t) for r, t in entries))
        return out


def unroll(program: Program) -> Unrolled:
    """Instances of ``program`` in program order.

    >>> from neuronsim.machine.ir.program import Program, Instruction, Loop
    >>> body = (Loop("i", 2, (Instruction("a", "dve", "nop"),)), Instruction("b", "act", "nop"))
    >>> [inst.name for inst in unroll(Program({}, body))]
    ['a[0]', 'a[1]', 'b']
    """
    return Unrolled(program)
