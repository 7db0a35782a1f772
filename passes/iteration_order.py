"""Iterations the compiler keeps in order on each engine: NKI's sequential loops.

NKI's legacy loop iterators tell the compiler what it may do across iterations (the API pages
of ``nl.affine_range`` and ``nl.sequential_range``): affine iterations "could be
parallelized/pipelined on different compute engines"; ``sequential_range`` "informs Neuron
compiler to respect inter-loop dependency and perform much more conservative loop-level
optimizations", and "any use of Python range(...) will be replaced with sequential_range(...)".
The scheduler reads the second as: no software pipelining across a sequential loop's
iterations.  On each engine the instructions of iteration ``j + 1`` start only after every
instruction of iteration ``j`` on that engine has started (a DMA counts on the engine that
triggers it).  The engines still run ahead of one another, each through its own instruction
stream, and the instructions of one iteration are scheduled freely among themselves.

A *gate* is one run of a sequential loop (the loop inside one iteration of each loop around
it); an instance carries ``(gate, iteration)`` for every sequential loop around it: a program
loop marked sequential (:data:`RANGE_KEY`), or one the NKI trace unrolled, named in the
instruction's :data:`~neuronsim.machine.nki.kernel_range.IN_ORDER_KEY`.

>>> from neuronsim.machine.ir.program import Instruction, Loop, Program
>>> body = (Loop("s", 2, (Instruction("a", "dve", "memset"),), {"x-nki-range": "sequential"}),)
>>> iteration_gates(Program({}, body))
[((0, 0),), ((0, 1),)]
>>> gates = InOrder([((0, 0),), ((0, 1),), ()], lambda i: ("dve",))
>>> gates.closed(1, "dve"), gates.closed(2, "dve")
(True, False)
>>> gates.take(0, ("dve",)), gates.closed(1, "dve")
([], False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from neuronsim.machine.ir.program import Loop, Node, Program

__all__ = ["RANGE_KEY", "IN_ORDER_KEY", "iteration_gates", "InOrder"]

#: The instruction extra of a sequential loop the NKI trace unrolled (``[[run, kept, iteration], ...]``:
#: ``machine/nki/kernel_range.py``, which passes may not import).
IN_ORDER_KEY = "x-in-order"
#: The loop extra the NKI frontend writes: ``"affine"``, ``"sequential"`` (``nl.sequential_range``,
#: and a legacy kernel's Python ``range``).
RANGE_KEY = "x-nki-range"

Gates = tuple[tuple[int, int], ...]


def iteration_gates(program: Program) -> list[Gates] | None:
    """Per instance of ``program`` in program order (the order :func:`~neuronsim.machine.order.unroll.unroll`
    and the flattening give), its ``(gate, iteration)`` pairs; None when no loop is sequential.

    >>> from neuronsim.machine.ir.program import Instruction, Program
    >>> marked = [Instruction(f"a{i}", "dve", "memset", extras={IN_ORDER_KEY: [[1, 0, i]]}) for i in range(2)]
    >>> iteration_gates(Program({}, tuple(marked)))
    [((0, 0),), ((0, 1),)]
    """
    out: list[Gates] = []
    ids: dict[tuple, int] = {}

    def walk(nodes: Sequence[Node], prefix: tuple[int, ...], gates: Gates) -> None:
        for node in nodes:
            if not isinstance(node, Loop):
                unrolled = (node.extras or {}).get(IN_ORDER_KEY) if node.extras else None
                out.append((*gates, *((ids.setdefault((run, prefix[:kept]), len(ids)), i) for run, kept, i in unrolled))
                           if unrolled else gates)
                continue
            sequential = (node.extras or {}).get(RANGE_KEY) == "sequential"
            gid = ids.setdefault((node.name, prefix), len(ids)) if sequential else None
            for i in range(node.trip_count):
                walk(node.body, (*prefix, i), (*gates, (gid, i)) if sequential else gates)

    walk(program.body, (), ())
    return _monotone(out) if ids else None


def _monotone(gates: list[Gates]) -> list[Gates]:
    """Each gate's iterations made non-decreasing in program order: an instance takes the lowest
    iteration of its gate at or after it.  The trace places a few instructions away from their
    iteration (a tile's first fill, emitted where the tile is declared, before the loop); for
    the schedule to make progress, an iteration may never need a later instance to start first
    (every dep and conflict points forward in program order, so the first instance not yet
    started is always open)."""
    lowest: dict[int, int] = {}
    out: list[Gates] = []
    for pairs in reversed(gates):
        fixed = []
        for gid, j in pairs:
            j = min(j, lowest.get(gid, j))
            lowest[gid] = j
            fixed.append((gid, j))
        out.append(tuple(fixed))
    out.reverse()
    return out


class InOrder:
    """The gates' state during a list schedule: which iteration of each gate each engine is in.

    ``resources(i)`` names the engines node ``i`` may start on.  A node is *closed* on an
    engine while an earlier iteration of one of its gates still has a node to start there;
    the scheduler parks it (:meth:`park`) and :meth:`take` hands it back when the iteration
    before it has started on that engine."""

    def __init__(self, gates: Sequence[Gates], resources: Callable[[int], Sequence[str]]) -> None:
        self.gates = gates
        left: dict[tuple[int, str], dict[int, int]] = {}
        for i, pairs in enumerate(gates):
            for res in resources(i):
                for gid, j in pairs:
                    counts = left.setdefault((gid, res), {})
                    counts[j] = counts.get(j, 0) + 1
        self.left = left
        self.turns = {key: sorted(counts) for key, counts in left.items()}
        self.at = dict.fromkeys(left, 0)
        self.parked: dict[tuple[int, str], list[int]] = {}

    def _blocking(self, i: int, res: str) -> tuple[int, str] | None:
        for gid, j in self.gates[i]:
            key = (gid, res)
            if self.turns[key][self.at[key]] != j:
                return key
        return None

    def closed(self, i: int, res: str) -> bool:
        return self._blocking(i, res) is not None

    def park(self, i: int, res: str) -> None:
        self.parked.setdefault(self._blocking(i, res), []).append(i)

    def take(self, i: int, resources: Sequence[str]) -> list[tuple[int, str]]:
        """Node ``i`` started: the ``(node, engine)`` pairs this opens (parked nodes to offer
        again; each may be parked anew behind another of its gates)."""
        opened: list[tuple[int, str]] = []
        for gid, j in self.gates[i]:
            for res in resources:
                key = (gid, res)
                counts = self.left[key]
                counts[j] -= 1
                if counts[j] == 0:
                    turns = self.turns[key]
                    while self.at[key] < len(turns) - 1 and self.left[key][turns[self.at[key]]] == 0:
                        self.at[key] += 1
                    opened.extend((k, res) for k in self.parked.pop(key, ()))
        return opened
