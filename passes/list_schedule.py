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
from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.ir.identity import IdentityMemo
from neuronsim.machine.ir.fast_dataclasses import quick_init
from neuronsim.machine.model.cost import CostMemo
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Instruction, Loop, Node, Program
from neuronsim.machine.model.optable import ENGINE_CHOICE_KEY, engine_choices
from neuronsim.machine.model.presets import MachineSpec, resolve_machine

from neuronsim.passes.iteration_order import Gates, InOrder
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["list_schedule", "ListSchedule", "block_order"]

_RNG_OPS = frozenset({"random", "set_rand_state"})
_NONE: frozenset = frozenset()


@quick_init
@dataclass(frozen=True, slots=True)
class _Summary:
    """What a node of a block touches and costs."""

    names: frozenset[str]
    extents: tuple[tuple[object, str, int, int, int, bool, tuple | None], ...]
    """``(space, tensor, partition mask, lo, hi, is_write, runs)`` per access over every
    iteration; ``runs``: the byte runs inside ``[lo, hi)`` of an access outside loops made of
    several (a column block of a row-major tensor), else None."""
    rng: frozenset[str]
    groups: frozenset
    cost: float
    op_cost: object = None
    """An instruction's :class:`~neuronsim.machine.model.cost.OpCost` (None for a loop)."""


def _extent(program: Program, instr: Instruction, loops: tuple[Loop, ...], flat: _FlatExtents):
    """``(space, tensor, partition mask, lo, hi, is_write)`` of each access over every
    iteration; ``flat`` memoizes an access outside loops (a flattened block repeats a few:
    ring slots, PSUM banks, tiles reloaded)."""
    if not loops:  # a flattened block: one instance, one footprint (half the work)
        for access, is_write in instr.accesses:
            space, tensor, mask, lo, hi, runs = flat(access)
            yield space, tensor, mask, lo, hi, is_write, runs
        return
    trips = {loop.name: loop.trip_count - 1 for loop in loops}
    for access, is_write in instr.accesses:
        tensor = program.tensors[access.tensor]
        # the footprint moves monotonically with each index, downwards for a negative shift
        shifts = dict(access.per_iteration)
        low = {name: (last if shifts.get(name, 0) < 0 else 0) for name, last in trips.items()}
        high = {name: (0 if shifts.get(name, 0) < 0 else last) for name, last in trips.items()}
        a, b = footprint(tensor, access, low), footprint(tensor, access, high)
        lo, hi = a.bytes[0][0], b.bytes[-1][1]
        rot = tensor.rotate
        if rot is not None and rot.loop in trips:
            # a rotating tile's slots wrap, not move: its middle iterations reach slots the first
            # and last do not (a kept loop of odd trips ended on slot 0 and its extent missed
            # slot 1, a PSUM bank the scheduler then moved another tile's accumulation onto:
            # probe_u, BASED attention's den rows off by 2.8)
            reached = [rot.delta(k) for k in range(min(rot.slots, trips[rot.loop] + 1))]
            lo += min(reached) - rot.delta(low[rot.loop])
            hi += max(reached) - rot.delta(high[rot.loop])
        # partitions that move with a loop: every partition (-1, all bits: the first and last
        # iterations' masks do not cover those between)
        mask = -1 if access.partitions_per_iteration else a.partitions
        yield a.space, tensor.name, mask, lo, hi, is_write, None


class _FlatExtents:
    """The extents of accesses outside loops, by access object and by value (a flattened block
    repeats a few: ring slots, PSUM banks, tiles reloaded; expand-scheduling-units shares one
    object per distinct access, :mod:`neuronsim.machine.ir.identity`)."""

    __slots__ = ("program", "by_value", "by_object")

    def __init__(self, program: Program) -> None:
        self.program = program
        self.by_value: dict = {}
        self.by_object: IdentityMemo[tuple] = IdentityMemo()

    def __call__(self, access) -> tuple:
        return self.by_object.get(access, self._of_value)

    def _of_value(self, access) -> tuple:
        found = self.by_value.get(access)
        if found is None:
            a = footprint(self.program.tensors[access.tensor], access, {})
            runs = a.bytes if len(a.bytes) > 1 else None  # (the footprint's own tuple: no copy)
            found = self.by_value[access] = (a.space, access.tensor, a.partitions, a.bytes[0][0], a.bytes[-1][1],
                                             runs)
        return found


def _summarize(program: Program, node: Node, loops: tuple[Loop, ...], costs: CostMemo,
               flat: _FlatExtents) -> _Summary:
    if not loops and not isinstance(node, Loop):  # a flattened block's instruction: the common case
        c = costs(node)
        return _Summary(frozenset((node.name,)), tuple(_extent(program, node, loops, flat)),
                        frozenset((node.engine,)) if node.op in _RNG_OPS else _NONE,
                        frozenset(((node.op == "matmul", node.attrs["group"]),)) if "group" in node.attrs else _NONE,
                        c.issue_ns + c.duration_ns, c)
    names, extents, rng, groups = set(), [], set(), set()
    cost = 0.0
    op_cost = None
    stack = [(node, loops, 1)]
    while stack:
        item, outer, times = stack.pop()
        if isinstance(item, Loop):
            inner = (*outer, item)
            stack.extend((child, inner, times * item.trip_count) for child in item.body)
            continue
        names.add(item.name)
        extents.extend(_extent(program, item, outer, flat))
        if item.op in _RNG_OPS:
            rng.add(item.engine)
        if "group" in item.attrs:
            groups.add((item.op == "matmul", item.attrs["group"]))
        c = op_cost = costs(item)
        cost += times * (c.issue_ns + c.duration_ns)
    return _Summary(frozenset(names), tuple(extents), frozenset(rng), frozenset(groups), cost,
                    None if isinstance(node, Loop) else op_cost)


def _bucket_key(program: Program, space: object, tensor: str) -> object:
    """Where an extent can meet another: a virtual tensor shares no byte with any other
    tensor until it is placed, an alias group's tensors all meet, placed tensors meet by
    space (narrowed to tensors whose extents overlap by :func:`_split_placed`)."""
    if program.tensors[tensor].is_virtual:
        return ("virtual", tensor)
    return space


def _shares(a: tuple, b: tuple) -> bool:
    """Do extents ``(tensor, mask, lo, hi, alias, runs)`` ``a`` and ``b`` of one bucket, both
    without runs, share a byte?"""
    if a[4] and a[0] != b[0]:
        return True  # two tensors of one alias group may coincide anywhere
    return _masks_meet(a[1], b[1]) and a[2] < b[3] and b[2] < a[3]  # (extents with runs: _overlapping_runs)


def _masks_meet(m: int, n: int) -> bool:
    """Partition masks that share a partition (0: DRAM, no partitions; -1: every partition)."""
    return not m or not n or bool(m & n)


def _overlapping(extents: list[tuple]) -> dict[tuple, list[tuple]]:
    """For each distinct extent of a bucket, the distinct extents sharing a byte with it
    (itself included): a sweep by start byte, except in an alias group, where any two
    tensors share; by their byte runs when some have several (the column blocks of one
    row-major tensor: each block's hull spans nearly all of it, so every pair of hulls met,
    quadratic in the blocks though no two share a byte: probe_u)."""
    ordered = sorted(extents, key=lambda e: e[2])
    alias = any(e[4] for e in ordered)
    if not alias and any(e[5] for e in ordered):
        return _overlapping_runs(ordered)
    meets: dict[tuple, list[tuple]] = {e: [e] for e in ordered}
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b[2] >= a[3] and not alias:
                break  # b and every later extent start past a's end
            if _shares(a, b):
                meets[a].append(b)
                meets[b].append(a)
    return meets


def _overlapping_runs(extents: list[tuple]) -> dict[tuple, list[tuple]]:
    """:func:`_overlapping` by a sweep over every extent's byte runs: only runs that overlap
    are compared (then the partition masks)."""
    runs = sorted((lo, hi, k) for k, e in enumerate(extents) for lo, hi in (e[5] or ((e[2], e[3]),)))
    meets: dict[tuple, list[tuple]] = {e: [e] for e in extents}
    active: list[tuple[int, int]] = []  # (end, extent) of the runs begun and not ended
    met: set[tuple[int, int]] = set()
    for lo, hi, k in runs:
        while active and active[0][0] <= lo:
            heapq.heappop(active)
        for _end, j in active:
            pair = (j, k) if j < k else (k, j)
            if j != k and pair not in met:
                met.add(pair)
                if _masks_meet(extents[j][1], extents[k][1]):
                    meets[extents[j]].append(extents[k])
                    meets[extents[k]].append(extents[j])
        heapq.heappush(active, (hi, k))
    return meets


def _order_edges(entries: list[tuple], edges: set[tuple[int, int]]) -> None:
    """Edges that keep every conflicting pair of ``entries`` (``(extent, write, node)`` in
    node order) in order, transitively: per distinct extent the last write and the reads
    since it, as a dependence builder keeps them.  A conflicting pair ``x`` before ``y``
    gets a path: ``x`` writes, then ``x`` (or a later write of its extent, chained to it)
    precedes ``y``; ``x`` reads and ``y`` writes, then ``x`` is among the reads since the
    last write of its extent (or that later write follows it) when ``y`` comes.

    A write ``w`` that orders the pending reads of an extent it overlaps (not its own) then
    stands for them: the reads precede ``w``, so a later write meeting that extent needs only
    an edge from ``w``.  Without it every write of one extent would take an edge from every
    read of an overlapping extent ever made (quadratic: 132,000 edges for one PSUM bank of a
    Mamba step); with it the edges stay about linear in the accesses, at the price of an
    order between ``w`` and that later write that the bytes alone may not need."""
    if not any(write for _e, write, _k in entries):
        return  # reads alone never conflict (a read-only input's thousands of tile loads)
    # outside an alias group an extent is its bytes: the tiles an allocator puts on the same
    # bytes one after another (an unrolled loop's) are one extent, chained write to write,
    # not hundreds of extents each meeting all the others (quadratic in the loop's trips)
    entries = [(e if e[4] else ("", *e[1:4], False, e[5]), write, k) for e, write, k in entries]
    meets = _overlapping(list({e for e, _w, _k in entries}))
    last_write: dict[tuple, int] = {}
    reads: dict[tuple, list[int]] = {}
    for extent, write, k in entries:
        for other in meets[extent]:
            w = last_write.get(other)
            if w is not None and w != k:
                edges.add((w, k))
            if write:
                pending = reads.get(other)
                if pending:
                    for r in pending:
                        if r != k:
                            edges.add((r, k))
                    if other != extent:
                        reads[other] = [k]
        if write:
            last_write[extent] = k
            reads[extent] = []
        else:
            reads.setdefault(extent, []).append(k)


def _conflict_edges(program: Program, info: list[_Summary]) -> set[tuple[int, int]]:
    """Edges ``(i, k)``, ``i < k``, whose transitive closure orders every pair of nodes that
    must keep their order: one writes a byte the other touches, or they share an engine's RNG
    state or an accumulation group.

    Extents meet only within a bucket (one virtual tensor, an alias group, or the placed
    tensors of one space whose overall extents overlap); in a bucket each access is tied to
    the last write and the reads since it of every extent it overlaps
    (:func:`_order_edges`): about linear in the accesses, where comparing every pair of
    nodes would be quadratic in a flattened kernel's thousands of instructions.
    """
    buckets: dict[object, list[tuple]] = {}
    for k, summary in enumerate(info):
        for space, tensor, mask, lo, hi, write, runs in summary.extents:
            entry = ((tensor, mask, lo, hi, isinstance(space, tuple), runs), write, k)
            buckets.setdefault(_bucket_key(program, space, tensor), []).append(entry)
        for engine in summary.rng:
            buckets.setdefault(("rng", engine), []).append((("", 0, 0, 1, False, None), True, k))
        for group in summary.groups:
            buckets.setdefault(("group", group), []).append((("", 0, 0, 1, False, None), True, k))
    edges: set[tuple[int, int]] = set()
    for key, entries in buckets.items():
        for group in _split_placed(entries) if isinstance(key, str) else (entries,):
            _order_edges(group, edges)
    return edges


def _split_placed(entries: list[tuple]) -> list[list[tuple]]:
    """The extents of one space's placed tensors, grouped so that two tensors whose overall
    extents (partition mask, byte hull) overlap fall in one group (union-find)."""
    hull: dict[str, list[int]] = {}
    for (tensor, mask, lo, hi, _alias, _runs), _write, _k in entries:
        h = hull.setdefault(tensor, [0, lo, hi])
        h[0] |= mask
        h[1], h[2] = min(h[1], lo), max(h[2], hi)
    parent = {t: t for t in hull}

    def root(t: str) -> str:
        while parent[t] != t:
            parent[t] = t = parent[parent[t]]
        return t

    # tensors with one hull (an allocator's slot reused by an unrolled loop's tiles) share it:
    # one group at once, and the sweep below visits each distinct hull once (it compared every
    # pair of them, quadratic in the loop's trips)
    first_of: dict[tuple[int, int, int], str] = {}
    for t, h in hull.items():
        first = first_of.setdefault((h[0], h[1], h[2]), t)
        if first != t and h[1] < h[2]:
            parent[t] = first
    ordered = sorted(first_of.values(), key=lambda t: hull[t][1])
    for i, a in enumerate(ordered):  # sweep by start: only tensors starting below a's end
        for b in ordered[i + 1:]:
            if hull[b][1] >= hull[a][2]:
                break
            if not hull[a][0] or hull[a][0] & hull[b][0]:
                parent[root(b)] = root(a)
    groups: dict[str, list[tuple]] = {}
    for e in entries:
        groups.setdefault(root(e[0][0]), []).append(e)
    return list(groups.values())


@dataclass(frozen=True, slots=True)
class _Timing:
    """How a node occupies the machine in the timed scheduler: ``resource`` (an engine, or
    ``""`` for a loop atom, which contends with nothing) for ``busy_ns``; its dependents may
    start ``result_ns`` after it starts; a DMA also holds ``queue`` (FIFO: its data starts when
    the queue's previous transfer completes) for ``data_ns`` after ``latency_ns``."""

    resource: str
    busy_ns: float
    result_ns: float
    queue: str | None = None
    latency_ns: float = 0.0
    data_ns: float = 0.0


def _timing(node: Node, summary: _Summary) -> _Timing:
    if isinstance(node, Loop):
        return _Timing("", summary.cost, summary.cost)
    c = summary.op_cost
    if node.is_dma:
        return _Timing(node.engine, c.issue_ns, c.issue_ns + c.duration_ns, node.queue, c.latency_ns,
                       c.duration_ns - c.latency_ns)
    return _Timing(node.engine, c.duration_ns, max(c.result_ns, c.duration_ns))


def _timed_order(timing: list[_Timing], succs: list[set[int]], level: list[float],
                 choices: dict[int, list[_Timing]] | None = None, chosen: dict[int, str] | None = None,
                 gates: list[Gates] | None = None) -> list[int]:
    """List scheduling over the engines: repeatedly start the ready node that can start
    earliest (its producers' results in, its engine free), the highest level among equals,
    program order last.  Per resource the ready nodes wait in a heap by ready time until the
    resource's free time passes it, then in a heap by level: each step looks at one candidate
    per resource, so the whole order is O(n log n) for the few engines a machine has.

    ``choices``: for a node the compiler may run on several engines, its timing on each; it
    waits in the heaps of all of them and starts on the first that takes it (its entries in
    the others are dropped when they come up); ``chosen`` receives that engine.

    ``gates``: per node, the sequential-loop iterations it belongs to (:mod:`.iteration_order`):
    on each engine a node waits until the iterations before its own have started there."""
    n = len(timing)
    choices = choices or {}
    preds = [0] * n
    for i in range(n):
        for k in succs[i]:
            preds[k] += 1
    ready_at = [0.0] * n
    taken = [False] * n
    free: dict[str, float] = {}
    queue_free: dict[str, float] = {}
    waiting: dict[str, list] = {}   # resource -> heap of (ready time, -level, index)
    runnable: dict[str, list] = {}  # resource -> heap of (-level, index), ready before the resource frees

    def on(i: int, res: str) -> _Timing:
        return next(c for c in choices[i] if c.resource == res) if i in choices else timing[i]

    def resources(i: int) -> list[str]:
        return [t.resource for t in choices.get(i, (timing[i],))]

    in_order = InOrder(gates, resources) if gates else None

    def offer(i: int, res: str) -> None:
        if in_order is not None and in_order.closed(i, res):
            in_order.park(i, res)
            return
        heapq.heappush(waiting.setdefault(res, []), (ready_at[i], -level[i], i))
        runnable.setdefault(res, [])
        free.setdefault(res, 0.0)

    def release(i: int) -> None:
        for res in resources(i):
            offer(i, res)

    for i in range(n):
        if preds[i] == 0:
            release(i)
    order: list[int] = []
    while len(order) < n:
        best = None
        for res, heap in waiting.items():
            now = free[res] if res else float("-inf")  # a loop atom waits for its producers only
            avail = runnable[res]
            while heap and (heap[0][0] <= now or taken[heap[0][2]]):
                _t, neg, i = heapq.heappop(heap)
                if not taken[i]:
                    heapq.heappush(avail, (neg, i))
            while avail and taken[avail[0][1]]:  # started on another of its engines
                heapq.heappop(avail)
            if avail:
                start, neg, i = free[res], avail[0][0], avail[0][1]
            elif heap:
                start, neg, i = max(heap[0][0], free[res]), heap[0][1], heap[0][2]
            else:
                continue
            # one node on two engines starting together: the earlier result, then its own engine
            key = (start, neg, i, start + on(i, res).result_ns, res != timing[i].resource, res)
            if best is None or key < best:
                best = key
        start, _neg, i, _done, _other, res = best
        if runnable[res] and runnable[res][0][1] == i:
            heapq.heappop(runnable[res])
        else:
            heapq.heappop(waiting[res])
        taken[i] = True
        if in_order is not None:
            for k, opened in in_order.take(i, resources(i)):
                if not taken[k]:
                    offer(k, opened)
        t = on(i, res)
        if i in choices and chosen is not None:
            chosen[i] = res
        order.append(i)
        if res:
            free[res] = start + t.busy_ns
        done = start + t.result_ns
        if t.queue is not None:  # data after the latency and the queue's previous transfer
            done = max(start + t.busy_ns + t.latency_ns, queue_free.get(t.queue, 0.0)) + t.data_ns
            queue_free[t.queue] = done
        for k in succs[i]:
            ready_at[k] = max(ready_at[k], done)
            preds[k] -= 1
            if preds[k] == 0:
                release(k)
    return order


def _choices(nodes: tuple[Node, ...], costs: CostMemo) -> dict[int, list[_Timing]]:
    """Per instruction whose engine the kernel left to the compiler, its timing on each engine
    it may run on (:func:`~neuronsim.machine.model.optable.engine_choices`)."""
    out: dict[int, list[_Timing]] = {}
    for k, node in enumerate(nodes):
        if isinstance(node, Loop) or node.is_dma or not node.extras or ENGINE_CHOICE_KEY not in node.extras:
            continue
        engines = engine_choices(node)
        if len(engines) > 1:
            out[k] = [_timing(moved, _Summary(frozenset(), (), frozenset(), frozenset(), 0.0, costs(moved)))
                      for moved in (replace(node, engine=e) for e in engines)]
    return out


def block_order(program: Program, nodes: tuple[Node, ...], loops: tuple[Loop, ...], spec: MachineSpec,
                timed: bool = False, costs: CostMemo | None = None, chosen: dict[int, str] | None = None,
                gates: list[Gates] | None = None) -> list[int]:
    """The scheduled order of a block's nodes (indices into ``nodes``): highest level first,
    or, ``timed``, the earliest start over the engines (:func:`_timed_order`), where an
    instruction the kernel left to the compiler's choice of engine runs on the engine that
    takes it first (``chosen`` receives it, by index)."""
    n = len(nodes)
    if n < 2:
        return list(range(n))
    costs = costs or CostMemo(program.tensors, spec)
    flat = _FlatExtents(program)
    info = [_summarize(program, node, loops, costs, flat) for node in nodes]
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
    for i, k in _conflict_edges(program, info):
        succs[i].add(k)
    timing = [_timing(node, s) for node, s in zip(nodes, info)] if timed else None
    level = [0.0] * n
    for i in range(n - 1, -1, -1):
        own = timing[i].result_ns if timing else info[i].cost
        level[i] = own + max((level[k] for k in succs[i]), default=0.0)
    if timing:
        return _timed_order(timing, succs, level, _choices(nodes, costs), chosen, gates)
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


def list_schedule(program: Program, spec: MachineSpec | None = None, timed: bool = False,
                  gates: list[Gates] | None = None) -> Program:
    """Reorder every block by critical path (see the module documentation); ``timed``: by
    earliest start over the engines, critical path among equals; ``gates`` (timed, a program
    without loops): each instruction's sequential-loop iterations (:mod:`.iteration_order`)."""
    spec = spec or resolve_machine(program.machine)
    costs = CostMemo(program.tensors, spec)

    def schedule(nodes: tuple[Node, ...], loops: tuple[Loop, ...]) -> tuple[Node, ...]:
        inner = tuple(Loop(node.name, node.trip_count, schedule(node.body, (*loops, node)), node.extras)
                      if isinstance(node, Loop) else node for node in nodes)
        chosen: dict[int, str] = {}
        order = block_order(program, inner, loops, spec, timed, costs, chosen, None if loops else gates)
        return tuple(replace(inner[i], engine=chosen[i]) if i in chosen and chosen[i] != inner[i].engine
                     else inner[i] for i in order)

    body = schedule(program.body, ())
    return program if body == program.body else program.with_body(body)


@dataclass(frozen=True, slots=True)
class ListSchedule(Pass):
    """Pass: :func:`list_schedule` (counts the instructions that changed place)."""

    name: ClassVar[str] = "list-schedule"
    timed: bool = False

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        out = list_schedule(program, ctx.machine(program) if ctx is not None else None, self.timed)
        if ctx is not None:
            before = [i.name for i, _ in program.instructions()]
            after = [i.name for i, _ in out.instructions()]
            ctx.count(self.name, "moved", sum(a != b for a, b in zip(before, after)))
        return out
