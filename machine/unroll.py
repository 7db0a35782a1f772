"""Unrolling: the program's instances in program order and the waits they resolve to.

An instruction inside loops ``i, j`` has one instance per index tuple, named ``NAME[i,j]``
(outermost first); an instruction outside every loop has one instance named ``NAME``.

Wait resolution follows the spec ("Nodes", deps):

* a dep of Y on B waits on the instances of B whose indices agree with Y's on the loops that
  enclose both; with ``loop_carried`` on those whose indices there are the lexicographic
  predecessor of Y's, and on nothing in the very first iteration;
* every instance of one instruction runs on one sequencer (and, for a DMA, one queue), so
  they complete in program order (rules 1 and 3).  Waiting for a set of them is therefore
  the same as waiting for the last of them, and :func:`resolve_waits` returns that one.
  :func:`wait_targets` returns the whole set, for oracles.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import NamedTuple

from machine.ir import Dep, Instruction, Loop, Program

__all__ = ["Instance", "Unrolled", "unroll", "instance_name"]


def instance_name(name: str, index: tuple[int, ...]) -> str:
    """``NAME`` or ``NAME[i,j]``.

    >>> instance_name("mm", (2,)), instance_name("ld", ()), instance_name("x", (0, 3))
    ('mm[2]', 'ld', 'x[0,3]')
    """
    return f"{name}[{','.join(map(str, index))}]" if index else name


class Instance(NamedTuple):
    """One instance of an instruction in the unrolled program.

    A named tuple rather than a frozen dataclass: a program of a million instances builds a
    million of them, and a tuple is several times cheaper to make (performance notes, 2.3).
    """

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

    __slots__ = ("program", "instances", "_ids", "_loops")

    def __init__(self, program: Program, instances: list[Instance], ids: dict[str, list[int]],
                 loops: dict[str, tuple[Loop, ...]]) -> None:
        self.program = program
        self.instances = instances
        self._ids = ids
        self._loops = loops

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[Instance]:
        return iter(self.instances)

    def __getitem__(self, i: int) -> Instance:
        return self.instances[i]

    def ids_of(self, name: str) -> list[int]:
        """Instance ids of an instruction, in program order (row-major over its loops)."""
        return self._ids[name]

    def loops_of(self, name: str) -> tuple[Loop, ...]:
        return self._loops[name]

    def find(self, name: str, index: tuple[int, ...]) -> int:
        """Id of instance ``name[index]``."""
        return self._ids[name][_flat(self._loops[name], index)]

    def by_name(self) -> dict[str, int]:
        """Instance name -> id (built on demand)."""
        return {inst.name: inst.id for inst in self.instances}

    # -- waits -----------------------------------------------------------------------
    def _common(self, a: str, b: str) -> int:
        la, lb = self._loops[a], self._loops[b]
        c = 0
        while c < len(la) and c < len(lb) and la[c] is lb[c]:
            c += 1
        return c

    def _prefix(self, inst: Instance, dep: Dep) -> tuple[int, tuple[int, ...]] | None:
        """Number of common loops and the index prefix B's targets share, or None."""
        c = self._common(inst.instr.name, dep.on)
        prefix = inst.index[:c]
        if not dep.loop_carried:
            return c, prefix
        trips = [loop.trip_count for loop in self._loops[dep.on][:c]]
        digits = list(prefix)
        for pos in range(c - 1, -1, -1):  # lexicographic predecessor
            if digits[pos] > 0:
                digits[pos] -= 1
                return c, tuple(digits)
            digits[pos] = trips[pos] - 1
        return None  # the very first iteration of the common nest waits on nothing

    def wait_targets(self, inst: Instance, dep: Dep) -> list[int]:
        """Every instance of ``dep.on`` that ``inst`` waits on through ``dep``."""
        found = self._prefix(inst, dep)
        if found is None:
            return []
        c, prefix = found
        inner = [range(loop.trip_count) for loop in self._loops[dep.on][c:]]
        return [self.find(dep.on, prefix + rest) for rest in product(*inner)]

    def resolve_wait(self, inst: Instance, dep: Dep) -> int | None:
        """The last instance of ``dep.on`` that ``inst`` waits on, or None."""
        found = self._prefix(inst, dep)
        if found is None:
            return None
        c, prefix = found
        last = tuple(loop.trip_count - 1 for loop in self._loops[dep.on][c:])
        return self.find(dep.on, prefix + last)

    def resolve_waits(self) -> list[tuple[tuple[Dep, int], ...]]:
        """For every instance, ``(dep, last target id)`` per dep that waits on something."""
        out: list[tuple[tuple[Dep, int], ...]] = []
        ids, loops = self._ids, self._loops
        for inst in self.instances:
            deps = inst.instr.deps
            if not deps:
                out.append(())
                continue
            resolved = []
            for dep in deps:
                if not dep.loop_carried and not loops[dep.on]:
                    resolved.append((dep, ids[dep.on][0]))  # B outside every loop: one instance
                    continue
                target = self.resolve_wait(inst, dep)
                if target is not None:
                    resolved.append((dep, target))
            out.append(tuple(resolved))
        return out


def _flat(loops: tuple[Loop, ...], index: tuple[int, ...]) -> int:
    flat = 0
    for loop, i in zip(loops, index):
        flat = flat * loop.trip_count + i
    return flat


def unroll(program: Program) -> Unrolled:
    """Instances of ``program`` in program order.

    >>> from machine.ir import Program, Instruction, Loop
    >>> body = (Loop("i", 2, (Instruction("a", "dve", "nop"),)), Instruction("b", "act", "nop"))
    >>> [inst.name for inst in unroll(Program({}, body))]
    ['a[0]', 'a[1]', 'b']
    """
    instances: list[Instance] = []
    ids: dict[str, list[int]] = {}
    loops_of: dict[str, tuple[Loop, ...]] = {}

    def visit(nodes: tuple, loops: tuple[Loop, ...], index: tuple[int, ...]) -> None:
        for node in nodes:
            if isinstance(node, Loop):
                inner = (*loops, node)
                for i in range(node.trip_count):
                    visit(node.body, inner, (*index, i))
                continue
            if node.name not in loops_of:
                loops_of[node.name] = loops
                ids[node.name] = []
            ids[node.name].append(len(instances))
            instances.append(Instance(len(instances), node, index, loops))

    visit(program.body, (), ())
    return Unrolled(program, instances, ids, loops_of)
