"""The unrolled instance stream the dependence passes analyse, and folding into deps.

The program format keeps loops, so a dep is an *instruction*-level edge that resolves per
instance (spec, "Nodes", deps).  The passes reason about *instances* exactly and then fold each
instance-level order they need ("instance ``b`` must wait for the earlier instance ``a``")
into an instruction-level dep:

* not loop-carried when ``a``'s indices agree with ``b``'s on the loops enclosing both: the
  dep then makes ``b`` wait on the last instance of ``a``'s instruction with that prefix,
  which completes after ``a`` (all instances of one instruction complete in program order
  on one engine or queue: rules 1 and 3);
* loop-carried when ``a`` lies in an earlier iteration of that common loop nest.  At
  distance 1 this is exact; at distance >= 2 the distance-1 dep is a conservative cover (it
  waits on a later instance of the same instruction, hence also after ``a``), because the
  format cannot say "two iterations back".

Instance ids are positions in program order.  An instruction nested in loops ``L1..Ln`` has
instance ids ``first + sum(i_k * span_k)`` where ``span_k`` is the number of instances one
iteration of ``L_k`` contains, so ids, indices and dep targets are computed arithmetically
(no per-instance objects).

Examples
--------
>>> from machine.ir import Instruction, Loop, Program
>>> a, b, c = (Instruction(n, "dve", "nop") for n in "abc")
>>> s = Stream(Program({}, (a, Loop("i", 3, (b, c)))))
>>> list(s.inst_instr), s.index_of(4), s.instance_name(4)
([0, 1, 2, 1, 2, 1, 2], (1,), 'c[1]')
>>> s.fold(2, 3)                      # c[0] before b[1]: previous iteration -> loop-carried
(2, 1, True)
>>> s.resolve(5, 1, 2, True)          # b[2] waiting loop-carried on c: c[1]
4
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

from machine.geometry import ByteSet, Footprint, Overlap, footprint, overlap
from machine.ir import SEQUENCERS, Access, Instruction, Loop, MemoryKind, Node, Program
from machine.presets import MachineSpec, resolve_machine
from machine.unroll import instance_name

__all__ = ["Stream", "InstrInfo", "Plan", "component_of", "shift_bytes"]

_SEQ = {name: i for i, name in enumerate(SEQUENCERS)}
_NSEQ = len(SEQUENCERS)

#: An access compiled for the passes: ``(is_write, tensor id, space, memory, partition mask,
#: bytes at index 0, ((loop position, byte shift), ...), access)``.  Plain tuples: the hot
#: loops unpack millions of them.
Plan = tuple


def component_of(instr: Instruction) -> int:
    """Clock component an instruction completes on: its sequencer, or its DMA queue.

    >>> component_of(Instruction("x", "sp", "dma_copy", queue="dma1"))
    6
    """
    if instr.queue is not None:
        return _NSEQ + int(instr.queue[3:])
    return _SEQ[instr.engine]


def shift_bytes(byteset: ByteSet, delta: int) -> ByteSet:
    """``byteset`` moved by ``delta`` bytes."""
    return tuple((lo + delta, hi + delta) for lo, hi in byteset) if delta else byteset


class InstrInfo:
    """What the passes need about one instruction (document order ``id``)."""

    __slots__ = ("id", "instr", "name", "loops", "first", "spans", "trips", "count", "seq", "comp",
                 "is_dma", "plans", "_tail")

    def __init__(self, xid: int, instr: Instruction, loops: tuple[Loop, ...], first: int, spans: tuple[int, ...]):
        self.id = xid
        self.instr = instr
        self.name = instr.name
        self.loops = loops
        self.first = first
        self.spans = spans
        self.trips = tuple(loop.trip_count for loop in loops)
        count = 1
        for t in self.trips:
            count *= t
        self.count = count
        self.seq = _SEQ[instr.engine]
        self.comp = component_of(instr)
        self.is_dma = instr.queue is not None
        self.plans: tuple[Plan, ...] = ()
        # _tail[c]: id offset of the last instance among those sharing a prefix of length c.
        tail = [0] * (len(loops) + 1)
        for c in range(len(loops) - 1, -1, -1):
            tail[c] = tail[c + 1] + (self.trips[c] - 1) * spans[c]
        self._tail = tuple(tail)

    @property
    def last(self) -> int:
        """Id of the last instance."""
        return self.first + self._tail[0]


class Stream:
    """Instances of a program in program order, with compiled footprints.

    Parameters
    ----------
    program:
        Any valid program; virtual tensors are analysed at partition 0 / offset 0 (logical
        coordinates), which is what the flow builder needs before allocation.
    spec:
        The machine (default: resolved from the program).
    """

    def __init__(self, program: Program, spec: MachineSpec | None = None) -> None:
        self.program = program
        self.spec = spec or resolve_machine(program.machine)
        self.tensor_names: list[str] = list(program.tensors)
        self.tensor_id = {name: i for i, name in enumerate(self.tensor_names)}
        self.tensors = [program.tensors[n] for n in self.tensor_names]
        self.infos: list[InstrInfo] = []
        self.loop_ids: dict[int, int] = {}
        sizes: dict[int, int] = {}

        def size(nodes: tuple[Node, ...]) -> int:
            total = 0
            for node in nodes:
                if isinstance(node, Loop):
                    inner = size(node.body)
                    sizes[id(node)] = inner
                    total += inner * node.trip_count
                else:
                    total += 1
            return total

        self.count = size(program.body)

        def walk(nodes: tuple[Node, ...], loops: tuple[Loop, ...], spans: tuple[int, ...], offset: int) -> array:
            order = array("i")
            for node in nodes:
                if isinstance(node, Loop):
                    self.loop_ids[id(node)] = len(self.loop_ids)
                    body = sizes[id(node)]
                    inner = walk(node.body, (*loops, node), (*spans, body), offset)
                    order.extend(inner * node.trip_count)
                    offset += body * node.trip_count
                else:
                    xid = len(self.infos)
                    self.infos.append(InstrInfo(xid, node, loops, offset, spans))
                    order.append(xid)
                    offset += 1
            return order

        self.inst_instr: array = walk(program.body, (), (), 0)
        self.by_name = {info.name: info.id for info in self.infos}
        self.has_loops = bool(self.loop_ids)
        self._common: dict[tuple[int, int], int] = {}
        self._plan_cache: dict[tuple[Access, bool], Plan] = {}
        self._plan_by_id: dict[tuple[int, bool], Plan] = {}
        for info in self.infos:
            info.plans = self._plans(info)

    # -- structure -------------------------------------------------------------------
    def __len__(self) -> int:
        return self.count

    def info(self, iid: int) -> InstrInfo:
        return self.infos[self.inst_instr[iid]]

    def common(self, x: int, y: int) -> int:
        """Number of loops enclosing both instructions ``x`` and ``y``."""
        key = (x, y) if x < y else (y, x)
        c = self._common.get(key)
        if c is None:
            la, lb = self.infos[x].loops, self.infos[y].loops
            c = 0
            while c < len(la) and c < len(lb) and la[c] is lb[c]:
                c += 1
            self._common[key] = c
        return c

    def index_of(self, iid: int) -> tuple[int, ...]:
        """Loop indices of instance ``iid`` (outermost first)."""
        info = self.infos[self.inst_instr[iid]]
        if not info.spans:
            return ()
        rest = iid - info.first
        out = []
        for span in info.spans:
            digit, rest = divmod(rest, span)
            out.append(digit)
        return tuple(out)

    def instance_name(self, iid: int) -> str:
        return instance_name(self.infos[self.inst_instr[iid]].name, self.index_of(iid))

    def iteration(self, iid: int) -> dict[str, int]:
        info = self.infos[self.inst_instr[iid]]
        return {loop.name: i for loop, i in zip(info.loops, self.index_of(iid))}

    # -- folding -----------------------------------------------------------------------
    def fold(self, a: int, b: int) -> tuple[int, int, bool]:
        """``(former, waiter, loop_carried)``: the dep making instance ``b`` wait for the
        earlier instance ``a`` (or for a later instance of the same instruction)."""
        inst_instr = self.inst_instr
        x, y = inst_instr[a], inst_instr[b]
        if not self.has_loops:
            return x, y, False
        c = self.common(x, y)
        if c == 0:
            return x, y, False
        return x, y, self.index_of(a)[:c] != self.index_of(b)[:c]

    def resolve(self, b: int, y: int, x: int, loop_carried: bool) -> int:
        """The last instance of ``x`` that instance ``b`` (of ``y``) waits on through a dep,
        or -1 when it waits on nothing (loop-carried, first iteration)."""
        ix = self.infos[x]
        if not self.has_loops:
            return ix.first
        c = self.common(x, y)
        if c == 0:
            return -1 if loop_carried else ix.last
        digits = list(self.index_of(b)[:c])
        if loop_carried:
            pos = c - 1
            while pos >= 0 and digits[pos] == 0:
                digits[pos] = ix.trips[pos] - 1
                pos -= 1
            if pos < 0:
                return -1
            digits[pos] -= 1
        target = ix.first + ix._tail[c]
        for d, span in zip(digits, ix.spans):
            target += d * span
        return target

    # -- footprints --------------------------------------------------------------------
    def _plans(self, info: InstrInfo) -> tuple[Plan, ...]:
        instr = info.instr
        by_id = self._plan_by_id
        reads, writes = instr.reads, instr.writes
        out = []
        for group, is_write in ((reads, False), (writes, True)):  # reads first: every walk's order
            for access in group:
                plan = by_id.get((id(access), is_write))
                if plan is None:
                    plan = self._plan(access, is_write, info)
                    if not plan[6]:  # ids are stable: self.program keeps every access alive
                        by_id[(id(access), is_write)] = plan
                out.append(plan)
        return tuple(out)

    def _plan(self, access: Access, is_write: bool, info: InstrInfo) -> Plan:
        # Accesses that move with a loop depend on where that loop sits: not cached.
        key = (access, is_write) if not access.per_iteration else None
        cache = self._plan_cache
        plan = cache.get(key) if key is not None else None
        if plan is None:
            tensor = self.program.tensors[access.tensor]
            fp = footprint(tensor, access, {})
            position = {loop.name: k for k, loop in enumerate(info.loops)}
            shifts = tuple((position[loop], s * tensor.itemsize) for loop, s in access.per_iteration if s)
            plan = (is_write, self.tensor_id[access.tensor], fp.space, fp.memory, fp.partitions,
                    fp.bytes, shifts, access)
            if key is not None:
                cache[key] = plan
        return plan

    def plan_bytes(self, plan: Plan, iid: int) -> ByteSet:
        """The bytes ``plan`` touches at instance ``iid``."""
        shifts = plan[6]
        if not shifts:
            return plan[5]
        index = self.index_of(iid)
        delta = 0
        for k, s in shifts:
            delta += index[k] * s
        return shift_bytes(plan[5], delta)

    def accesses(self, iid: int) -> Iterator[tuple[Plan, ByteSet]]:
        """``(plan, bytes)`` of every access of instance ``iid``."""
        for plan in self.infos[self.inst_instr[iid]].plans:
            yield plan, self.plan_bytes(plan, iid)

    def is_shared(self, tensor_id: int) -> bool:
        """Shared DRAM: an alias group, or placed by the shared-DRAM allocation."""
        t = self.tensors[tensor_id]
        return t.alias is not None or "x-shared" in t.extras

    def memory_of(self, tensor_id: int) -> MemoryKind:
        return self.tensors[tensor_id].memory

    # -- exact conflicts (explain, precision accounting, tests) ------------------------
    def footprints(self, iid: int) -> list[tuple[bool, Footprint]]:
        """``(is_write, footprint)`` of every access of instance ``iid``."""
        out = []
        for plan, byteset in self.accesses(iid):
            is_write, t, space, memory, mask = plan[:5]
            out.append((is_write, Footprint(memory, space, self.tensor_names[t], mask, byteset)))
        return out

    def conflicts(self, a: int, b: int) -> list[tuple[str, Footprint, Footprint, Overlap]]:
        """Every access pair of instances ``a`` (earlier) and ``b`` sharing a byte that one of
        them writes: ``(kind, fa, fb, overlap)`` with kind RAW, WAW or WAR (spec order)."""
        out = []
        fa_list, fb_list = self.footprints(a), self.footprints(b)
        for wa, fa in fa_list:
            for wb, fb in fb_list:
                if not (wa or wb):
                    continue
                shared = overlap(fa, fb)
                if shared is not None:
                    kind = "RAW" if wa and not wb else ("WAW" if wa else "WAR")
                    out.append((kind, fa, fb, shared))
        return out

    # -- labels ------------------------------------------------------------------------
    def instances_of(self, x: int) -> list[int]:
        """Every instance id of instruction ``x``, in program order."""
        info = self.infos[x]
        ids = [info.first]
        for trip, span in zip(info.trips, info.spans):
            ids = [i + k * span for i in ids for k in range(trip)]
        return ids

    def wait_targets(self, b: int, y: int, x: int, loop_carried: bool) -> list[int]:
        """Every instance of ``x`` that instance ``b`` (of ``y``) waits on through a dep."""
        last = self.resolve(b, y, x, loop_carried)
        if last < 0:
            return []
        ix = self.infos[x]
        c = self.common(x, y) if self.has_loops else 0
        ids = [last - ix._tail[c]]  # the first instance sharing the target's common prefix
        for trip, span in zip(ix.trips[c:], ix.spans[c:]):
            ids = [i + k * span for i in ids for k in range(trip)]
        return ids

    def conflict_kind(self, a: int, b: int, floor: int = 0) -> int:
        """Strongest kind (as an :class:`~machine.edges.EdgeKind` value) the footprints of
        instances ``a`` (earlier) and ``b`` give: 4 RAW, 3 WAW, 2 WAR; ``floor`` if none is
        stronger.  Two tensors of one alias group always share."""
        best = floor
        later = list(self.accesses(b))
        for pa, ba in self.accesses(a):
            wa = pa[0]
            for pb, bb in later:
                wb = pb[0]
                kind = 4 if wa and not wb else 3 if wa else 2 if wb else 0
                if kind <= best or pa[2] != pb[2]:
                    continue
                if pa[3] != MemoryKind.DRAM and not pa[4] & pb[4]:
                    continue
                if (isinstance(pa[2], tuple) and pa[1] != pb[1]) or _intersects(ba, bb):
                    best = kind
                    if best == 4:
                        return best
        return best


def _intersects(a: ByteSet, b: ByteSet) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] < b[j][1] and b[j][0] < a[i][1]:
            return True
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return False
