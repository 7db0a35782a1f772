"""Races between the two cores of an LNC=2 kernel: HBM bytes both touch with no meeting between.

neuronsim traces a two-core kernel into one program (:mod:`neuronsim.machine.nki.cores`), each
instruction marked with the core that issued it and how many meetings (``nisa.sendrecv``,
``nisa.core_barrier``) both cores had passed (``x-nki-core``: rank, epoch).  The ordering
passes order that program's conflicting accesses in program order, as one core's compiler
does within a core; between the cores only the meetings order anything.  Two instructions of
different cores in the same epoch run concurrently on hardware, so when both touch a byte of
HBM and one of them writes it, what the kernel computes depends on which core gets there
first.  The ISA reference's use of ``core_barrier`` is exactly that case: "both cores can
perform the write to ``data`` in HBM ... and then signal to each other when the write
operation is complete".

Found by one sweep per epoch and HBM storage (a tensor, or a DRAM alias group): the byte
intervals of every instance, sorted by their start, each compared with the intervals of the
other core still open; never a pair search over all instances.  SBUF and PSUM tiles are each
core's own, and a ``sendrecv``'s copies sit between its two meetings, so only HBM is swept.

Whether such a pair matters is then decided on values, as the differential simulator decides
everything else: the program as traced runs core 0 first in every epoch; the same program with
core 1 first in every epoch gives every pair found the other order; a third takes the cores'
nodes in turn.  Then each pair's own two orders: each core keeps its program order, and one
instruction of the pair runs right before the other (the first core's nodes before its
instruction, then the other core's up to and including its one, then the rest): a core that
writes, then reads back, what the other core zeroes in between is found only so (a probe: each
core zeroing a shared scratch, writing its half and reading it back before they meet).  All run
in program order (the sequential reference) on the kernel's inputs.  Outputs that differ make
the pairs an error naming the output and the order; equal outputs (nki-library's MoE kernels
have both cores zero the whole output, the same zeros written twice) make them a warning that
says how many orders were run, for these inputs.

The programs of an SPMD grid (``kernel[4, 2]``, each instruction marked ``x-nki-program`` with
its coordinates) are swept the same way, one epoch, each program a rank: the ``nl.nc`` and
``spmd_dim`` pages have a grid's instances "distributed to different physical neuron cores" as
annotated, or as the compiler decides (``kernel[2, 2]``: "Let compiler decide"), so nothing
orders one program's HBM accesses before another's.  The other order is the programs in reverse.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from neuronsim.machine.ir.program import Instruction, MemoryKind, Program
from neuronsim.machine.ir.source import instance_label
from neuronsim.machine.nki.tracer import CORE_KEY, PROGRAM_KEY
from neuronsim.machine.order.stream import InstanceStream, stream_of

from neuronsim.verify.nki.finding import NkiFinding
from neuronsim.verify.nki.placement import identity_placement

__all__ = ["core_race_findings"]

#: At most this many instruction pairs are reported (a missing barrier repeats on every tile).
MAX_PAIRS = 64
#: Pairs with a read get their own two orders run (each a run of the whole program): every one
#: (up to :data:`MAX_PAIRS`) while the runs stay within this many instances in all, and at least
#: :data:`MIN_PAIR_ORDERS` (harmless pairs found first used up a fixed count of 8, and a racy
#: one after them went untried: a probe).
ORDER_INSTANCES = 50_000
MIN_PAIR_ORDERS = 8

_Interval = tuple[int, int, tuple, bool, int, int]  # low, high, rank, writes, instance, tensor


def _mark(inst: Instruction) -> tuple[int, tuple[int, ...]] | None:
    """``(epoch, rank)`` of an instruction: its core's (a one-tuple) between meetings, or its
    grid program's coordinates in the one epoch of a grid; None when unmarked."""
    core = inst.extras.get(CORE_KEY)
    if core is not None:
        return int(core["epoch"]), (int(core["rank"]),)
    coords = inst.extras.get(PROGRAM_KEY)
    return None if coords is None else (0, tuple(int(c) for c in coords))


def _intervals(program: Program, stream: InstanceStream) -> dict[tuple[int, object], list[_Interval]]:
    """Byte intervals of every HBM access instance of a marked instruction, by (epoch, storage)."""
    marks = {inst.name: mark for inst, _ in program.instructions() if (mark := _mark(inst)) is not None}
    found: dict[tuple[int, object], list[_Interval]] = defaultdict(list)
    for x in range(stream.m):
        mark = marks.get(stream.instrs[x].name)
        if mark is None:
            continue
        for ca in stream.accesses(x):
            if ca.memory != MemoryKind.DRAM:
                continue
            whole = isinstance(ca.space, tuple)  # an alias group: its tensors may sit anywhere
            key = (mark[0], ca.space if whole else ca.tensor)
            for i in stream.instances_of(x).tolist():
                spans = ((0, 1),) if whole else stream.footprint_at(ca, i)[1]
                found[key].extend((lo, hi, mark[1], ca.is_write, i, ca.tensor) for lo, hi in spans)
    return found


def _clashes(intervals: list[_Interval], instr_of: Callable[[int], int], seen: set[tuple[int, int]],
             limit: int) -> list[tuple[int, int, bool, tuple[int, ...]]]:
    """``(instance of the lower rank, instance of the higher, both write, tensors)`` for
    overlapping intervals of two ranks, one of them a write: one instance pair for each pair of
    instructions (``instr_of`` an instance's; the lower rank's first) not in ``seen`` (which it
    extends), the first the sweep meets, until ``seen`` holds ``limit`` pairs.

    A sweep by start byte that keeps, for each instruction and direction with an interval still
    open, the latest-ending interval of each rank, the writes apart from the reads: whether
    another rank's interval of an instruction is open is a look per rank it runs on (one in a
    grid, two on two cores), and a read looks at the writes alone.  Comparing every open
    interval made every pair of a grid's programs storing the same bytes (a kernel that forgot
    ``program_id``): 10,000 programs were 50 million pairs, 111 s and 6.8 GB (probe_bc)."""
    out: list[tuple[int, int, bool, tuple[int, ...]]] = []
    latest: tuple[dict[int, dict[tuple, _Interval]], ...] = ({}, {})  # reads, writes: instr -> rank -> interval
    ends: list[tuple[int, bool, int]] = []  # heap: when an instruction's interval may end
    for iv in sorted(intervals):
        low, high, rank, writes, inst, tensor = iv
        while ends and ends[0][0] <= low:
            _end, was_write, key = heapq.heappop(ends)
            ranks = latest[was_write].get(key)
            if ranks is not None:
                for gone in [r for r, other in ranks.items() if other[1] <= low]:
                    del ranks[gone]
                if not ranks:
                    del latest[was_write][key]
        mine = instr_of(inst)
        for other_writes in ((False, True) if writes else (True,)):
            for other_instr, ranks in latest[other_writes].items():
                for other_rank, other in ranks.items():
                    if other_rank == rank or other[1] <= low:
                        continue
                    lower = other_rank < rank
                    key_pair = (other_instr, mine) if lower else (mine, other_instr)
                    if key_pair in seen:
                        continue
                    seen.add(key_pair)
                    pair = (other[4], inst) if lower else (inst, other[4])
                    out.append((*pair, writes and other_writes, tuple(sorted({tensor, other[5]}))))
                    if len(seen) >= limit:
                        return out
        ranks = latest[writes].setdefault(mine, {})
        if rank not in ranks or high > ranks[rank][1]:
            ranks[rank] = iv
        heapq.heappush(ends, (high, writes, mine))
    return out


def core_race_findings(program: Program, inputs: Mapping[str, Any] | None = None) -> list[NkiFinding]:
    """Every pair of kernel lines whose instances on the two cores (or in two programs of an
    SPMD grid) touch HBM bytes in common with no meeting between them, one a write (module
    doc); nothing for a one-core, one-program kernel.  ``inputs``: the kernel's input arrays
    (default: the seeded pattern)."""
    kinds = {(("ranks" if inst.extras[CORE_KEY].get("ranks") else "cores") if CORE_KEY in inst.extras else "programs")
             for inst, _ in program.instructions() if CORE_KEY in inst.extras or PROGRAM_KEY in inst.extras}
    if not kinds:
        return []
    kind = next(k for k in ("ranks", "cores", "programs") if k in kinds)  # (devices of a launch on ranks: a probe)
    stream = stream_of(identity_placement(program))
    pairs, seen = [], set()
    for (_epoch, _storage), intervals in _intervals(program, stream).items():
        if len(seen) >= MAX_PAIRS:
            break
        for first, second, both_write, tensor_ids in _clashes(intervals, lambda i: int(stream.instr[i]), seen,
                                                              MAX_PAIRS):
            pairs.append((first, second, both_write, tuple(stream.tensor_names[t] for t in tensor_ids)))
    if not pairs:
        return []
    label = _program_label(program, stream) if kind == "programs" else (lambda i: instance_label(stream, i))

    def _on(i: int) -> str:  # an instance with its core (a grid program's label has its program)
        rank = _mark(stream.instrs[int(stream.instr[i])])[1][0]
        return label(i) if kind == "programs" else f"{label(i)} on {kind[:-1]} {rank}"

    other = {"cores": "core 1 first", "ranks": "rank 1 first"}.get(kind, "the programs in reverse order")
    who = {"cores": "the cores'", "ranks": "the ranks'"}.get(kind, "the programs'")
    named = {"first": other, "mixed": f"{who} instructions interleaved"}
    orders: list[tuple[Any, Callable[[], Program]]] = [("first", lambda: core_one_first(program)),
                                                        ("mixed", lambda: interleaved(program))]
    # a read's pairs only: what two writes leave, the whole-core orders already try both ways, and
    # a write the other core makes between a core's own write and read is the read's pair
    node, marks = _top_nodes(program), _node_marks(program)

    def at(i: int) -> int:  # an instance's top-level node
        return node[stream.instrs[int(stream.instr[i])].name]

    first_of: dict[tuple[int, int], tuple[int, int]] = {}  # one instance pair for each pair of nodes
    for a, b, both, _ in pairs:
        if not both:
            first_of.setdefault((at(a), at(b)), (a, b))
    with_read = list(first_of.values())
    for a, b in with_read[:max(MIN_PAIR_ORDERS, ORDER_INSTANCES // (2 * max(1, stream.n)))]:
        for before, after in ((b, a), (a, b)):
            named[(before, after)] = f"{_on(before)} right before {_on(after)}"
            orders.append(((before, after), partial(one_before, program, marks, at(before), at(after))))
    differs, order = _outputs_differing(program, orders, inputs)
    read_pairs = len(orders) // 2 - 1
    tried = (f"{other}, {named['mixed']}, and, for {_pairs(read_pairs, len(with_read))} with a read, its two "
             f"instructions right after one another both ways") if read_pairs else f"{other} and {named['mixed']}"
    if differs:
        severity, note = "error", f"an order {who[:-1]} may take changes {', '.join(differs)} ({named[order]})"
    else:
        severity, note = "warning", f"none of the {len(orders)} orders run changes the outputs on these inputs: {tried}"
    return [NkiFinding(kind=kind, dependence="WAW" if both else "RW", first=label(a), second=label(b),
                       tensors=tensors, severity=severity, note=note)
            for a, b, both, tensors in pairs]


def _pairs(n: int, found: int) -> str:
    counted = "one pair" if n == 1 else f"each of {n} pairs"
    return counted if n == found else f"{counted} of the {found}"


def _program_label(program: Program, stream: InstanceStream):
    """An instance's location with its grid program: ``k.py:11 (program 1)``."""
    coords = {inst.name: inst.extras[PROGRAM_KEY] for inst, _ in program.instructions() if PROGRAM_KEY in inst.extras}

    def label(i: int) -> str:
        where = coords.get(stream.instrs[int(stream.instr[i])].name)
        return f"{instance_label(stream, i)} (program {', '.join(str(c) for c in where or ())})"

    return label


def _first(node: Any) -> Instruction:
    return node if isinstance(node, Instruction) else next(inst for inst, _ in Program({}, (node,)).instructions())


def _node_marks(program: Program) -> list[tuple[int, tuple[int, ...]]]:
    """``(epoch, rank)`` of each top-level node; an unmarked one (a meeting's own node) takes
    the epoch before it and rank 0."""
    marks, epoch = [], 0
    for node in program.body:
        mark = _mark(_first(node))
        epoch, rank = mark if mark else (epoch, (0,))
        marks.append((epoch, rank))
    return marks


def core_one_first(program: Program) -> Program:
    """``program`` with core 1's top-level nodes before core 0's in every epoch (a loop kept as
    a program loop is one core's, between two meetings: it moves whole)."""
    marks = _node_marks(program)  # (a grid's programs: the last first, in the one epoch)
    order = sorted(range(len(program.body)), key=lambda pos: (marks[pos][0], tuple(-c for c in marks[pos][1]), pos))
    return program.with_body(tuple(program.body[pos] for pos in order))


def interleaved(program: Program) -> Program:
    """``program`` with every epoch's top-level nodes taken in turn from each core (or grid
    program): the first of each, then the second of each, ...  Each instance alone may be
    consistent whichever runs first, and still read what another wrote between its own write
    and read (two programs bouncing their rows through one shared scratch: a probe)."""
    by_epoch: dict[int, dict[tuple, list[Any]]] = {}
    for node, (epoch, rank) in zip(program.body, _node_marks(program)):
        by_epoch.setdefault(epoch, {}).setdefault(rank, []).append(node)
    body: list[Any] = []
    for epoch in sorted(by_epoch):
        lists = [by_epoch[epoch][rank] for rank in sorted(by_epoch[epoch])]
        body += [nodes[k] for k in range(max(map(len, lists))) for nodes in lists if k < len(nodes)]
    return program.with_body(tuple(body))


def _top_nodes(program: Program) -> dict[str, int]:
    """Each instruction's top-level node (its position in the body)."""
    return {inst.name: pos for pos, node in enumerate(program.body)
            for inst in ((node,) if isinstance(node, Instruction) else
                         (i for i, _ in Program({}, (node,)).instructions()))}


def one_before(program: Program, where: list[tuple[int, tuple[int, ...]]], at_first: int, at_then: int) -> Program:
    """``program`` with its top-level node ``at_first`` run right before ``at_then``, each core
    (or grid program) keeping its own order (``where``: :func:`_node_marks`): in their epoch,
    ``at_then``'s core's nodes before it, then ``at_first``'s core's nodes up to and including it,
    then the rest as traced."""
    (e, r_then), r_first = where[at_then], where[at_first][1]

    def group(pos: int) -> int:
        epoch, rank = where[pos]
        if epoch != e:
            return 0
        if rank == r_then:
            return 0 if pos < at_then else 2
        return 1 if rank == r_first and pos <= at_first else 3

    order = sorted(range(len(program.body)), key=lambda pos: (where[pos][0], group(pos), pos))
    return program.with_body(tuple(program.body[pos] for pos in order))


def _outputs_differing(program: Program, orders: list[tuple[Any, Callable[[], Program]]],
                       inputs: Mapping[str, Any] | None) -> tuple[list[str], Any]:
    """The outputs that differ between the program as traced and the first of ``orders`` (each
    made when its turn comes) that changes any, each run in program order (the sequential
    reference) on ``inputs``, and that order's key; ``([], None)`` when none does."""
    from neuronsim.verify.nki.simulate import sequential_outputs

    # the deps a kernel gave (depends_on) may point forward once core 1's nodes move first; a
    # program-order run does not need them
    def run(variant: Program) -> dict[str, Any]:
        return sequential_outputs(variant.map_instructions(lambda inst: replace(inst, deps=())), inputs)

    first = run(program)
    for key, made in orders:
        other = run(made())
        differs = [name for name in first if first[name].tobytes() != other[name].tobytes()]
        if differs:
            return differs, key
    return [], None
