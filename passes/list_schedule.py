"""``list-schedule``: reorder each block by critical path under the cost model.

A block is the program body or a loop body.  As the seed's pre-scheduler, a loop (scheduling
unit) is one atom of its parent block: its own body is scheduled inside it, and it moves as a
whole.  In each block the scheduler builds a DAG over the block's nodes and emits a
topological order, highest *level* first (list scheduling, "highest level first"): the level
of a node is its cost plus the longest level among its successors, with the cost of
:func:`neuronsim.machine.model.cost.instruction_cost` (a DMA: its trigger plus its transfer; a loop: trip
count times its body's costs).  Ties keep program order, so the result is deterministic.

Edges of the block DAG (a pair keeps its order when any holds):

* a dep between instructions of two nodes of the block (not loop-carried: those name the
  previous iteration, which reordering a body cannot move);
* the two nodes touch a common byte, one writing it, in some iteration: tested on each
  access's extent over every iteration (partition mask, byte range from the lowest to the
  highest instance), which over-approximates the conflicts, never misses one; DRAM tensors of
  one alias group always conflict;
* both use the RNG state of one engine (``random`` / ``set_rand_state``), or both belong to
  one accumulation ``group``: their values depend on the order.

Contract
    requires: a valid program.
    guarantees: the same instructions and loops, each block a permutation of itself; every
    non-loop-carried dep still points backwards; every pair of conflicting instances keeps its
    relative order, so the sequential semantics are unchanged.  Deps that relied on the old
    *engine* order (rule 1) to order a pair transitively may no longer do so: run ``dep-opt``
    afterwards, which rebuilds the deps for the new order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import ClassVar

from neuronsim.machine.model.cost import instruction_cost
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Instruction, Loop, Node, Program
from neuronsim.machine.model.presets import MachineSpec, resolve_machine

from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["list_schedule", "ListSchedule", "block_order"]

_RNG_OPS = frozenset({"random", "set_rand_state"})


@dataclass(frozen=True, slots=True)
class _Summary:
    """What a node of a block touches and costs."""

    names: frozenset[str]
    extents: tuple[tuple[object, str, int, int, int, bool], ...]
    """``(space, tensor, partition mask, lo, hi, is_write)`` per access over every iteration."""
    rng: frozenset[str]
    groups: frozenset
    cost: float


def _extent(program: Program, instr: Instruction, loops: tuple[Loop, ...]):
    trips = {loop.name: loop.trip_count - 1 for loop in loops}
    for access, is_write in instr.accesses:
        tensor = program.tensors[access.tensor]
        # the footprint moves monotonically with each index, downwards for a negative shift
        shifts = dict(access.per_iteration)
        low = {name: (last if shifts.get(name, 0) < 0 else 0) for name, last in trips.items()}
        high = {name: (0 if shifts.get(name, 0) < 0 else last) for name, last in trips.items()}
        a, b = footprint(tensor, access, low), footprint(tensor, access, high)
        yield a.space, tensor.name, a.partitions, a.bytes[0][0], b.bytes[-1][1], is_write


def _summarize(program: Program, node: Node, loops: tuple[Loop, ...], spec: MachineSpec) -> _Summary:
    names, extents, rng, groups = set(), [], set(), set()
    cost = 0.0
    stack = [(node, loops, 1)]
    while stack:
        item, outer, times = stack.pop()
        if isinstance(item, Loop):
            inner = (*outer, item)
            stack.extend((child, inner, times * item.trip_count) for child in item.body)
            continue
        names.add(item.name)
        extents.extend(_extent(program, item, outer))
        if item.op in _RNG_OPS:
            rng.add(item.engine)
        if "group" in item.attrs:
            groups.add((item.op == "matmul", item.attrs["group"]))
        c = instruction_cost(item, program.tensors, spec)
        cost += times * (c.issue_ns + c.duration_ns)
    return _Summary(frozenset(names), tuple(extents), frozenset(rng), frozenset(groups), cost)


def _conflict(a: _Summary, b: _Summary) -> bool:
    if a.rng & b.rng or a.groups & b.groups:
        return True
    for space, tensor, mask, lo, hi, write in a.extents:
        for space2, tensor2, mask2, lo2, hi2, write2 in b.extents:
            if space != space2 or not (write or write2):
                continue
            if isinstance(space, tuple) and tensor != tensor2:
                return True  # two tensors of one alias group always share
            if (not mask or mask & mask2) and lo < hi2 and lo2 < hi:
                return True
    return False


def block_order(program: Program, nodes: tuple[Node, ...], loops: tuple[Loop, ...], spec: MachineSpec) -> list[int]:
    """The scheduled order of a block's nodes (indices into ``nodes``)."""
    n = len(nodes)
    if n < 2:
        return list(range(n))
    info = [_summarize(program, node, loops, spec) for node in nodes]
    owner = {name: k for k, s in enumerate(info) for name in s.names}
    succs: list[set[int]] = [set() for _ in range(n)]
    for k, node in enumerate(nodes):
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, Loop):
                stack.extend(item.body)
                continue
            for dep in item.deps:
                j = owner.get(dep.on)
                if j is not None and j != k and not dep.loop_carried:
                    succs[j].add(k)
    for i in range(n):
        for k in range(i + 1, n):
            if k not in succs[i] and _conflict(info[i], info[k]):
                succs[i].add(k)
    level = [0.0] * n
    for i in range(n - 1, -1, -1):
        level[i] = info[i].cost + max((level[k] for k in succs[i]), default=0.0)
    preds = [0] * n
    for i in range(n):
        for k in succs[i]:
            preds[k] += 1
    ready = [(-level[i], i) for i in range(n) if preds[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for k in succs[i]:
            preds[k] -= 1
            if preds[k] == 0:
                heapq.heappush(ready, (-level[k], k))
    return order


def list_schedule(program: Program, spec: MachineSpec | None = None) -> Program:
    """Reorder every block by critical path (see the module documentation)."""
    spec = spec or resolve_machine(program.machine)

    def schedule(nodes: tuple[Node, ...], loops: tuple[Loop, ...]) -> tuple[Node, ...]:
        inner = tuple(Loop(node.name, node.trip_count, schedule(node.body, (*loops, node)), node.extras)
                      if isinstance(node, Loop) else node for node in nodes)
        return tuple(inner[i] for i in block_order(program, inner, loops, spec))

    body = schedule(program.body, ())
    return program if body == program.body else program.with_body(body)


@dataclass(frozen=True, slots=True)
class ListSchedule(Pass):
    """Pass: :func:`list_schedule` (counts the instructions that changed place)."""

    name: ClassVar[str] = "list-schedule"

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        out = list_schedule(program, ctx.machine(program) if ctx is not None else None)
        if ctx is not None:
            before = [i.name for i, _ in program.instructions()]
            after = [i.name for i, _ in out.instructions()]
            ctx.count(self.name, "moved", sum(a != b for a, b in zip(before, after)))
        return out
