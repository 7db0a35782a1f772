"""The instance stream: a program's instances in program order, on flat arrays.

A program keeps its loops; every analysis (the race checker, the dependence passes, the
reduction, the sync counts, the simulator) works on its *instances*.  :class:`InstanceStream`
is the one unrolling of the project.  It builds no object per instance:

* instructions are numbered in document order (``x``); instance ids are positions in
  program order (``i``).  An instruction nested in loops ``L1..Ln`` has the instance ids
  ``first[x] + sum(i_k * span_k)``, ``span_k`` being the instances one iteration of ``L_k``
  holds, so ids, loop indices and wait targets are arithmetic;
* per instance, numpy arrays give the instruction, the sequencer that issues it, the clock
  component it completes on (its sequencer, or its DMA queue) and its 1-based position
  among that component's completions (:attr:`instr`, :attr:`seq`, :attr:`comp`, :attr:`pos`);
* :meth:`resolve` turns instruction-level deps (a :class:`~neuronsim.machine.order.deptable.DepTable`) into
  per-instance waits, vectorised over each dep's instances (:class:`Waits`, compressed rows,
  latest target first);
* :meth:`accesses` gives each instruction's compiled accesses (:class:`CompiledAccess`: the
  bytes and partitions at iteration 0 and how they move with the loop indices), laid out
  and compiled once per distinct access by :mod:`neuronsim.machine.order.slots`.

Components are numbered ``pe act dve pool sp`` (0-4) then the DMA queues (``dma0`` = 5, ...),
the order of the spec's rules and of the simulator's semaphores.

Examples
--------
>>> from neuronsim.machine.ir.program import Instruction, Loop, Program, Dep
>>> a, b = Instruction("a", "dve", "nop"), Instruction("b", "act", "nop", deps=(Dep("a", loop_carried=True),))
>>> s = InstanceStream(Program({}, (Loop("i", 3, (a, b)),)))
>>> s.instr.tolist(), s.instance_name(3), s.index_of(3)
([0, 1, 0, 1, 0, 1], 'b[1]', (1,))
>>> w = s.resolve()
>>> [w.targets(i) for i in range(6)]          # b[i] waits for a[i-1]
[[], [], [], [0], [], [2]]
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from neuronsim.machine.order.deptable import DepTable, dep_table
from neuronsim.machine.model.geometry import ByteSet, sorted_distinct
from neuronsim.machine.ir.program import SEQUENCERS, Instruction, Loop, Node, Program, loop_nest
from neuronsim.machine.model.presets import MachineSpec, resolve_machine
from neuronsim.machine.order.slots import CompiledAccess, Repeated, SlotLayout, compile_templates, lay_out_slots

__all__ = ["InstanceStream", "Waits", "CompiledAccess", "instance_name", "component_names", "NUM_SEQUENCERS",
           "stream_of"]

NUM_SEQUENCERS = len(SEQUENCERS)
_SEQ = {name: i for i, name in enumerate(SEQUENCERS)}
_ENGINE, _QUEUE, _NAME = attrgetter("engine"), attrgetter("queue"), attrgetter("name")


def instance_name(name: str, index: tuple[int, ...]) -> str:
    """``NAME`` or ``NAME[i,j]``.

    >>> instance_name("mm", (2,)), instance_name("ld", ()), instance_name("x", (0, 3))
    ('mm[2]', 'ld', 'x[0,3]')
    """
    return f"{name}[{','.join(map(str, index))}]" if index else name


def component_names(num_queues: int) -> tuple[str, ...]:
    """Names of the clock components: the sequencers, then the DMA queues.

    >>> component_names(3)
    ('pe', 'act', 'dve', 'pool', 'sp', 'dma0', 'dma1', 'dma2')
    """
    return SEQUENCERS + tuple(f"dma{i}" for i in range(num_queues))


class Waits(NamedTuple):
    """Per-instance waits in compressed rows: instance ``i`` waits for ``target[ptr[i]:ptr[i+1]]``
    (latest first), each through dep row ``row[k]`` of the table they were resolved from."""

    ptr: np.ndarray
    target: np.ndarray
    row: np.ndarray

    def targets(self, i: int) -> list[int]:
        return self.target[self.ptr[i]:self.ptr[i + 1]].tolist()

    def __len__(self) -> int:
        return len(self.target)

    def as_lists(self) -> list[list[int]]:
        """``targets(i)`` of every instance (for callers that index per instance)."""
        bounds = self.ptr.tolist()
        flat = self.target.tolist()
        return [flat[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]


class InstanceStream:
    """Instances of ``program`` in program order (see the module doc).

    ``spec`` defaults to the program's machine.  Virtual tensors are compiled at partition 0
    / offset 0 (logical coordinates), which is what the analyses before allocation need.
    """

    def __init__(self, program: Program, spec: MachineSpec | None = None) -> None:
        self.program = program
        structure = program
        self.spec = spec or resolve_machine(program.machine)
        self.width = NUM_SEQUENCERS + self.spec.dma_queues
        self.instrs: list[Instruction] = []
        """Instructions in document order.  Read their deps from a table (:meth:`resolve`): a
        pipeline shares one stream among programs that differ only in deps
        (:class:`neuronsim.passes.state.PipelineState`)."""
        self.loops_of: list[tuple[Loop, ...]] = []
        self.first: list[int] | range = []
        self.spans: list[tuple[int, ...]] = []
        self.loop_names: list[str] = []
        queue_base = NUM_SEQUENCERS
        sizes: dict[int, int] = {}

        def size(nodes: tuple[Node, ...]) -> int:
            total = 0
            for node in nodes:
                if isinstance(node, Loop):
                    inner = sizes[id(node)] = size(node.body)
                    total += inner * node.trip_count
                else:
                    total += 1
            return total

        nested = any(map(isinstance, structure.body, repeat(Loop)))
        self.n = size(structure.body) if nested else len(structure.body)
        seq_x: list[int] = []
        comp_x: list[int] = []
        instrs, loops_of, first, spans = self.instrs, self.loops_of, self.first, self.spans
        self.has_loops = False

        def walk(nodes: tuple[Node, ...], loops: tuple[Loop, ...], span: tuple[int, ...],
                 offset: int) -> np.ndarray | None:
            """Instruction ids of one pass over ``nodes`` (None for a flat program)."""
            pieces: list = []
            run: list[int] = []
            for node in nodes:
                if isinstance(node, Loop):
                    self.has_loops = True
                    self.loop_names.append(node.name)
                    body = sizes[id(node)]
                    if run:
                        pieces.append(np.asarray(run, np.int32))
                        run = []
                    inner = walk(node.body, (*loops, node), (*span, body), offset)
                    pieces.append(np.tile(inner, node.trip_count))
                    offset += body * node.trip_count
                    continue
                x = len(instrs)
                instrs.append(node)
                loops_of.append(loops)
                first.append(offset)
                spans.append(span)
                s = _SEQ[node.engine]
                seq_x.append(s)
                comp_x.append(queue_base + int(node.queue[3:]) if node.queue is not None else s)
                run.append(x)
                offset += 1
            if not self.has_loops and not loops:
                return None  # flat so far: instance ids are instruction ids
            if run:
                pieces.append(np.asarray(run, np.int32))
            return np.concatenate(pieces) if pieces else np.zeros(0, np.int32)

        if nested:
            order = walk(structure.body, (), (), 0)
        else:  # flat: instance = instruction, laid out without the walk
            order = None
            instrs.extend(structure.body)
            # constants, not lists: a list holds 8 B per instruction (~40 B for the five of them)
            self.loops_of = loops_of = Repeated((), len(instrs))
            self.first = first = range(len(instrs))  # a list would hold ~40 B per instruction
            self.spans = spans = Repeated((), len(instrs))
            seq_x = np.fromiter(map(_SEQ.__getitem__, map(_ENGINE, instrs)), np.int32, len(instrs))
            queues = list(map(_QUEUE, instrs))
            component = {q: -1 if q is None else queue_base + int(q[3:]) for q in set(queues)}
            comp_x = np.fromiter(map(component.__getitem__, queues), np.int32, len(instrs))
            comp_x = np.where(comp_x < 0, seq_x, comp_x)
        self.m = len(instrs)
        self.names = list(map(_NAME, instrs))
        self._id_of: dict[str, int] | None = None
        self.seq_x = np.asarray(seq_x, np.int32)
        self.comp_x = np.asarray(comp_x, np.int32)
        self.dma_x = self.comp_x >= queue_base
        self.instr = np.arange(self.n, dtype=np.int32) if order is None else order.astype(np.int32)
        if order is None:
            self.trips, self.count, self.tail = Repeated((), self.m), Repeated(1, self.m), Repeated((0,), self.m)
            self.last = first
        else:
            self.trips = [tuple(loop.trip_count for loop in loops) for loops in loops_of]
            self.count = [int(np.prod(t)) if t else 1 for t in self.trips]
            # tail[x][c]: id offset of the last instance among those sharing a loop prefix of length c.
            self.tail = []
            for x in range(self.m):
                t = [0] * (len(self.trips[x]) + 1)
                for c in range(len(self.trips[x]) - 1, -1, -1):
                    t[c] = t[c + 1] + (self.trips[x][c] - 1) * self.spans[x][c]
                self.tail.append(tuple(t))
            self.last = [f + t[0] for f, t in zip(self.first, self.tail)]
        self.seq = self.seq_x[self.instr]
        self.comp = self.comp_x[self.instr]
        self.dma = self.dma_x[self.instr]
        self.pos = _positions(self.comp, self.width)
        self.tensor_names = list(program.tensors)
        self.tensor_id = {name: t for t, name in enumerate(self.tensor_names)}
        self._accesses: list[tuple[CompiledAccess, ...]] | None = None
        self._slot_bounds: np.ndarray | None = None  # per instruction, its first access slot (and the end)
        self._asked = 0  # instructions whose accesses were made one at a time (accesses())
        # One cell shared by every placement of this body (:meth:`for_placement` copies the
        # reference): whichever stream lays the slots out first, the others reuse it (after an
        # allocation the verification lays out the old stream, the next pass reads the new one).
        self._layout: list[SlotLayout] = []
        self._templates: list[CompiledAccess] | None = None
        self._masks: set[int] | None = None
        self._depth: np.ndarray | None = None
        self._common: dict[tuple[int, int], int] = {}

    def for_placement(self, program: Program) -> InstanceStream:
        """This stream for ``program``, which has this one's instructions in the same order
        (their deps aside) and differs only in where its tensors are placed, as after allocation.

        The structure (order, components, positions) is shared and the access slots too; each
        distinct compiled access (:attr:`templates`) is compiled again against the new
        tensors, once, and the per-instruction tuples are rebuilt only when asked for."""
        other = object.__new__(InstanceStream)
        other.__dict__.update(self.__dict__)
        other.program = program
        other.tensor_names = list(program.tensors)
        other.tensor_id = {name: t for t, name in enumerate(other.tensor_names)}
        other._accesses = None
        other._masks = None
        other._templates = None  # compiled again, lazily, against the new placements
        return other

    def share_accesses(self, other: InstanceStream | None) -> bool:
        """Take ``other``'s access slots and compiled accesses when this stream's instructions
        hold the very same access tuples, in the same loops, over the same tensors and machine
        (a pass that moved transfers to other queues or wrote deps; the compiled program and
        its reduction): a tiled kernel's templates are then compiled once, not per program."""
        if (other is None or other is self or other.m != self.m or other.spec != self.spec
                or other.program.tensors is not self.program.tensors):
            return False
        if not all(map(_same_accesses, self.instrs, other.instrs)):
            return False
        if (self.has_loops or other.has_loops) and list(map(loop_nest, self.loops_of)) != list(
                map(loop_nest, other.loops_of)):
            return False
        self._layout = other._layout  # the shared cell: whichever compiles first serves both
        self._templates, self._masks = other._templates, other._masks
        return True

    # -- structure -------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n

    @property
    def id_of(self) -> dict[str, int]:
        """Instruction name -> id, built when first asked for (~40 B per instruction; a
        pipeline whose deps travel as tables never asks: performance notes, section 2.9)."""
        if self._id_of is None:
            self._id_of = dict(zip(self.names, range(self.m)))
        return self._id_of

    @property
    def components(self) -> tuple[str, ...]:
        return component_names(self.spec.dma_queues)

    @property
    def depth(self) -> np.ndarray:
        """Loops enclosing each instruction."""
        if self._depth is None:
            self._depth = np.fromiter(map(len, self.trips), np.int32, self.m)
        return self._depth

    def common(self, x: int, y: int) -> int:
        """Number of loops enclosing both instructions ``x`` and ``y``."""
        key = (x, y) if x < y else (y, x)
        c = self._common.get(key)
        if c is None:
            la, lb = self.loops_of[x], self.loops_of[y]
            c = 0
            while c < len(la) and c < len(lb) and la[c] is lb[c]:
                c += 1
            self._common[key] = c
        return c

    def index_of(self, i: int) -> tuple[int, ...]:
        """Loop indices of instance ``i`` (outermost first)."""
        x = int(self.instr[i])
        rest = i - self.first[x]
        out = []
        for span in self.spans[x]:
            digit, rest = divmod(rest, span)
            out.append(digit)
        return tuple(out)

    def columns(self, *names: str) -> tuple[memoryview, ...]:
        """Per-instance columns (``"instr"``, ``"seq"``, ``"comp"``, ``"pos"``, ``"dma"``) for a
        walk in Python, read in place: a memoryview indexes about as fast as a list and holds
        nothing, where a list of a million ints holds ~40 MB (performance notes 2.9)."""
        return tuple(memoryview(getattr(self, name)) for name in names)

    def instance_name(self, i: int) -> str:
        return instance_name(self.names[int(self.instr[i])], self.index_of(i))

    def iteration(self, i: int) -> dict[str, int]:
        """Loop name -> index of instance ``i``."""
        x = int(self.instr[i])
        return {loop.name: k for loop, k in zip(self.loops_of[x], self.index_of(i))}

    def find(self, name: str, index: tuple[int, ...] = ()) -> int:
        """Instance id of ``name[index]``."""
        x = self.id_of[name]
        return self.first[x] + sum(k * s for k, s in zip(index, self.spans[x]))

    def instances_of(self, x: int) -> np.ndarray:
        """Instance ids of instruction ``x`` in program order."""
        ids = np.array([self.first[x]], np.int64)
        for trip, span in zip(self.trips[x], self.spans[x]):
            ids = (ids[:, None] + np.arange(trip, dtype=np.int64)[None, :] * span).ravel()
        return ids

    def digits_of(self, x: int) -> np.ndarray:
        """Loop indices of every instance of ``x``: shape ``(count, depth)``, program order."""
        trips = self.trips[x]
        if not trips:
            return np.zeros((1, 0), np.int64)
        return np.indices(trips, dtype=np.int64).reshape(len(trips), -1).T

    # -- waits -------------------------------------------------------------------------
    def resolve(self, table: DepTable | None = None) -> Waits:
        """The waits ``table`` (default: the program's deps) gives every instance.

        An instance waits on the instances of B whose indices agree with its own on the loops
        enclosing both; a loop-carried dep with distance ``d`` on those ``d`` iterations back
        in that nest (none in the first ``d``), and a dep restricted to iteration ranges only
        at the instances inside them (spec "Nodes", :mod:`neuronsim.machine.ir.extensions`).  All instances
        of one instruction complete in program order on one component (rules 1 and 3), so
        the wait is on the last of the instances named, the one returned.
        """
        table = dep_table(self.program, self) if table is None else table
        rows = len(table)
        if not rows:
            return Waits(np.zeros(self.n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))
        waiter, former = table.waiter, table.former
        n = self.n
        # Deps whose waiter sits in no loop resolve to one wait: on the last instance of B.
        simple = (self.depth[waiter] == 0) & (table.distance == 0)
        if not self.has_loops and simple.all():  # flat: instance ids are instruction ids
            w_all, t_all = waiter.astype(np.int64), former.astype(np.int64)
            order = np.argsort(w_all * n + (n - 1 - t_all), kind="stable")  # ties keep row order
            r_all = order
        else:
            first = np.asarray(self.first, np.int64)
            last = np.asarray(self.last, np.int64)
            w_parts = [first[waiter[simple]]]
            t_parts = [last[former[simple]]]
            r_parts = [np.flatnonzero(simple)]
            for r in np.flatnonzero(~simple).tolist():
                w, t = self._resolve_row(int(waiter[r]), int(former[r]), int(table.distance[r]), table.iterations(r))
                w_parts.append(w)
                t_parts.append(t)
                r_parts.append(np.full(len(w), r, np.int64))
            w_all = np.concatenate(w_parts)
            t_all = np.concatenate(t_parts)
            r_all = np.concatenate(r_parts)
            if n * n * max(rows, 1) < 1 << 62:  # one combined key: much faster than a lexsort
                order = np.argsort((w_all * n + (n - 1 - t_all)) * rows + r_all)
            else:
                order = np.lexsort((r_all, -t_all, w_all))
            r_all = r_all[order]
        w_all, t_all = w_all[order], t_all[order]
        ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(w_all, minlength=n), out=ptr[1:])
        return Waits(ptr, t_all.astype(np.int32), r_all.astype(np.int32))

    def _resolve_row(self, y: int, x: int, distance: int, ranges) -> tuple[np.ndarray, np.ndarray]:
        """``(waiter instances, targets)`` of one dep of ``y`` on ``x``."""
        c = self.common(x, y)
        digits = self.digits_of(y)
        spans_y = np.asarray(self.spans[y], np.int64)
        waiters = self.first[y] + (digits @ spans_y if len(spans_y) else np.zeros(len(digits), np.int64))
        keep = np.ones(len(digits), bool)
        if ranges:
            position = {loop.name: k for k, loop in enumerate(self.loops_of[y])}
            for loop, lo, hi in ranges:
                column = digits[:, position[loop]]
                keep &= (column >= lo) & (column < hi)
        prefix = digits[:, :c]
        if distance:
            trips = np.asarray(self.trips[x][:c], np.int64)
            radix = np.ones(c, np.int64)
            for k in range(c - 2, -1, -1):
                radix[k] = radix[k + 1] * trips[k + 1]
            flat = prefix @ radix - distance
            keep &= flat >= 0
            flat = np.where(flat >= 0, flat, 0)
            prefix = (flat[:, None] // radix[None, :]) % trips[None, :]
        spans_x = np.asarray(self.spans[x][:c], np.int64)
        targets = self.first[x] + self.tail[x][c] + (prefix @ spans_x if c else 0)
        return waiters[keep], np.broadcast_to(targets, waiters.shape)[keep]

    def resolve_one(self, i: int, dep) -> int:
        """The last instance of ``dep.on`` that instance ``i`` waits on through ``dep``
        (a :class:`~neuronsim.machine.ir.program.Dep`), or -1 when it waits on nothing there."""
        if dep.iterations:
            y = int(self.instr[i])
            index = self.index_of(i)
            position = {loop.name: k for k, loop in enumerate(self.loops_of[y])}
            if not all(lo <= index[position[loop]] < hi for loop, lo, hi in dep.iterations):
                return -1
        return self.target_of(i, self.id_of[dep.on], dep.distance if dep.loop_carried else 0)

    def target_of(self, i: int, x: int, distance: int) -> int:
        """The last instance of instruction ``x`` that instance ``i`` waits on through a dep
        ``distance`` iterations back (0: an ordinary dep), or -1 when there is none."""
        c = self.common(x, int(self.instr[i]))
        if not c:
            return -1 if distance else self.last[x]
        digits = list(self.index_of(i)[:c])
        if distance:
            trips = self.trips[x]
            flat = 0
            for d, trip in zip(digits, trips[:c]):
                flat = flat * trip + d
            flat -= distance
            if flat < 0:
                return -1
            for k in range(c - 1, -1, -1):
                flat, digits[k] = divmod(flat, trips[k])
        return self.first[x] + self.tail[x][c] + sum(d * s for d, s in zip(digits, self.spans[x]))

    def targets_one(self, i: int, dep) -> list[int]:
        """Every instance of ``dep.on`` that instance ``i`` waits on through ``dep``."""
        last = self.resolve_one(i, dep)
        return [] if last < 0 else self.waited_with(last, i)

    def waited_with(self, last: int, i: int) -> list[int]:
        """Every instance a wait of instance ``i`` names when it resolves to ``last``: the
        instances of ``last``'s instruction in ``last``'s iteration of the loops around both
        (a wait from outside a loop waits for all of its iterations), ``last`` the latest."""
        x = int(self.instr[last])
        c = self.common(x, int(self.instr[i]))
        ids = [last - self.tail[x][c]]  # the first instance sharing the target's common prefix
        for trip, span in zip(self.trips[x][c:], self.spans[x][c:]):
            ids = [t + k * span for t in ids for k in range(trip)]
        return ids

    # -- accesses ----------------------------------------------------------------------
    def accesses(self, x: int) -> tuple[CompiledAccess, ...]:
        """The compiled accesses of instruction ``x``: reads first, then writes.

        Read from :attr:`all_accesses` once something built it; until then made for ``x``
        alone from the access slots, so a pass that asks for a few instructions' accesses does not
        hold a tuple per instruction (~65 B each: performance notes, section 2.9).  Past a
        quarter of the instructions asked for, every tuple is built at once (a walk of them all
        is cheaper so)."""
        if self._accesses is not None:
            return self._accesses[x]
        if self._slot_bounds is None:
            self._slot_bounds = np.searchsorted(self.slot_x, np.arange(self.m + 1))
        self._asked += 1
        if self._asked > self.m // 4:
            return self.all_accesses[x]
        lo, hi = self._slot_bounds[x:x + 2].tolist()
        temps = self.templates
        return tuple([temps[t] for t in self.slot_t[lo:hi].tolist()])

    @property
    def all_accesses(self) -> list[tuple[CompiledAccess, ...]]:
        """:meth:`accesses` of every instruction, by instruction id."""
        if self._accesses is None:
            self._accesses = self._compile_accesses()
        return self._accesses

    @property
    def templates(self) -> list[CompiledAccess]:
        """Each distinct access compiled once against this stream's placements, by template id
        (:func:`neuronsim.machine.order.slots.compile_templates`)."""
        if self._templates is None:
            self._templates = compile_templates(self.layout, self.program.tensors, self.tensor_id, self.loops_of)
        return self._templates

    @property
    def layout(self) -> SlotLayout:
        """The access slots and their templates (:func:`neuronsim.machine.order.slots.lay_out_slots`): the
        same for every placement of the body."""
        if not self._layout:
            self._layout.append(lay_out_slots(self.instrs, can_move=self.has_loops))
        return self._layout[0]

    @property
    def slot_x(self) -> np.ndarray:
        """Per access slot (instructions in document order, each one's reads then writes):
        its instruction."""
        return self.layout.slot_x

    @property
    def slot_t(self) -> np.ndarray:
        """Per access slot: its template (:attr:`templates` index)."""
        return self.layout.slot_t

    @property
    def template_x(self) -> list[int]:
        """Per template: the first instruction using it."""
        return self.layout.template_x

    def _compile_accesses(self) -> list[tuple[CompiledAccess, ...]]:
        """:attr:`all_accesses`: each instruction's templates, from the access slots."""
        temps = self.templates
        bounds = np.searchsorted(self.slot_x, np.arange(self.m + 1)).tolist()
        slots = [temps[t] for t in self.slot_t.tolist()]
        return [tuple(slots[bounds[x]:bounds[x + 1]]) for x in range(self.m)]

    def masks(self) -> set[int]:
        """Every partition mask some access touches in some instance (0 for DRAM)."""
        if self._masks is None:
            self._masks = self._all_masks()
        return self._masks

    def _all_masks(self) -> set[int]:
        out: set[int] = {ca.mask for ca in self.templates if not ca.pshifts}
        moving = [t for t, ca in enumerate(self.templates) if ca.pshifts]
        if moving:
            wanted = np.isin(self.slot_t, moving)
            for x, t in zip(self.slot_x[wanted].tolist(), self.slot_t[wanted].tolist()):
                ca = self.templates[t]
                digits = self.digits_of(x)
                coef = np.zeros(digits.shape[1], np.int64)
                for k, s in ca.pshifts:
                    coef[k] += s
                for d in sorted_distinct(digits @ coef).tolist():
                    out.add(ca.mask << d if d >= 0 else ca.mask >> -d)
        return out

    def shift_at(self, ca: CompiledAccess, i: int) -> tuple[int, int]:
        """``(bytes, partitions)`` access ``ca`` has moved by at instance ``i``."""
        if not (ca.shifts or ca.pshifts or ca.rotation):
            return 0, 0
        index = self.index_of(i)
        delta = 0
        for k, s in ca.shifts:
            delta += index[k] * s
        if ca.rotation is not None:
            k, slots, stride = ca.rotation
            delta += (index[k] % slots) * stride
        pdelta = 0
        for k, s in ca.pshifts:
            pdelta += index[k] * s
        return delta, pdelta

    def footprint_at(self, ca: CompiledAccess, i: int) -> tuple[int, ByteSet]:
        """``(partition mask, bytes)`` of access ``ca`` at instance ``i``."""
        delta, pdelta = self.shift_at(ca, i)
        mask = ca.mask
        if pdelta:
            mask = mask << pdelta if pdelta > 0 else mask >> -pdelta
        if not delta:
            return mask, ca.bytes
        return mask, tuple((lo + delta, hi + delta) for lo, hi in ca.bytes)

    def is_shared(self, tensor: int) -> bool:
        """Shared DRAM: an alias group, or placed by the shared-DRAM allocation."""
        t = self.program.tensors[self.tensor_names[tensor]]
        return t.alias is not None or "x-shared" in t.extras

    def instance_footprints(self, i: int) -> Iterator[tuple[CompiledAccess, int, ByteSet]]:
        """``(access, mask, bytes)`` of every access of instance ``i``."""
        for ca in self.accesses(int(self.instr[i])):
            mask, byteset = self.footprint_at(ca, i)
            yield ca, mask, byteset


def _positions(comp: np.ndarray, width: int) -> np.ndarray:
    """1-based position of each instance among the completions of its component."""
    pos = np.empty(len(comp), np.int64)
    for c in range(width):
        where = np.flatnonzero(comp == c)
        pos[where] = np.arange(1, len(where) + 1)
    return pos


def stream_of(program: Program, spec: MachineSpec | None = None, like: InstanceStream | None = None) -> InstanceStream:
    """The stream of ``program`` (spec: its machine's unless given), sharing ``like``'s
    compiled accesses where :meth:`InstanceStream.share_accesses` allows."""
    stream = InstanceStream(program, spec)
    stream.share_accesses(like)
    return stream


def _same_accesses(a: Instruction, b: Instruction) -> bool:
    return a.reads is b.reads and a.writes is b.writes

