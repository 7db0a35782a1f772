"""Spilling for ``alloc``: when the SBUF tiles live together do not fit, store some to DRAM
and load them back before their next use, as a compiler's allocator does.

A spill splits one virtual SBUF tensor ``T`` over a *gap*: a run of top-level nodes of the
program body (instructions, or whole kept loops) that do not touch ``T``, between a node that
does (``after``) and the next one that does (``before``).  The split adds

* right after ``after``, a DMA ``store`` of the whole of ``T`` into a new virtual DRAM tensor
  ``T_spillJ`` (same shape and dtype), and
* right before ``before``, a DMA ``reload`` of it into a new virtual SBUF tensor
  ``T_reloadJ`` (``T``'s declaration, ``x-source``, kept), which every access of ``T`` from
  ``before`` on then names instead of ``T``.

Values are those of the program without the split: the reload holds every byte ``T`` held
after ``after`` (nothing touches ``T`` inside the gap), and the later accesses read them
from it.  ``T`` and ``T_reloadJ`` are two tensors whose hulls the gap separates, so the
allocator may give the gap's bytes to other tiles.  Splits are only ever placed between
top-level nodes: inside a kept loop a new tensor would be the same in every iteration, and a
loop runs its body once per iteration.  The new instructions carry no deps: dependence
construction after allocation (``build-fdeps``, ``anti-deps``: the default pipeline) orders
them by the bytes they touch, as it orders every other instruction; each is marked
``x-spill`` (``store`` / ``reload``, the tensor spilled), carries the declaration of the tile it
spills as its ``x-source`` (a profile charges it to that line), and is triggered by the SP sequencer
on the machine's last DMA queue, as profiles show the compiler's spills on a queue of their
own beside SP's input loads (``docs/kernel-patterns.md`` 1.2: ``qSyncSpillReload0``); the
simulator charges them as any transfer.

A tile that holds a DRAM tensor's bytes unchanged is not stored: its one writer is a load of
the whole tile from a DRAM tensor that nothing in the program writes, so its reload is that
load again, from the same source (rematerialisation: a compiler does not save what it can
fetch again; the store would move the same bytes the load already moved).  ``load-elim``
makes such tiles when it keeps a loaded tile for a later use instead of loading it again; a
spill of one then costs what the load it removed did.  That reload is the kernel's load issued
again, so it keeps the load's engine, queue and kernel line (``x-source``), marked
``x-spill`` with ``rematerialised``: ``dma-place`` deals it over the queues as it deals the
kernel's own loads (profiles show input loads on the kernel's I/O queues, stored values'
reloads on the spill queue).

PSUM: the compiler's allocator also runs out of PSUM banks (a kernel whose PSUM tiles live
together need more than the eight banks: the attention tutorial's ``qk`` scores, one bank per
block, all computed before the softmax reads them).  A PSUM tensor is spilled the same way,
except that DMA never touches PSUM: the store is an ACT ``tensor_copy`` into a new virtual SBUF
tensor ``T_spillJ`` (which SBUF allocation places, and may spill to DRAM in turn), the reload
an ACT ``tensor_copy`` back into a new virtual PSUM tensor, as a compiler evicts PSUM through
ACT or DVE; both are marked ``x-psum-spill``.

Which tensors: :func:`plan_spills` walks the body with the bytes a partition each live tensor
needs (its *weight*); where the sum exceeds the room, it spills the tensors whose gap
covers that node, the one used again furthest ahead first (Belady's rule), until it fits.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from neuronsim.machine.ir.identity import WhileAlive
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Node, Program, Tensor, frozen_mapping
from neuronsim.machine.model.presets import MachineSpec
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.source import SOURCE_KEY
from neuronsim.passes.alloc_place import PsumFull, align_up, extent, place_psum, where_declared
from neuronsim.passes.analysis.lifetimes import Life, lifetimes, tensor_users

__all__ = ["PSUM_SPILL_KEY", "Spill", "SpillResult", "fit_psum", "plan_spills", "apply_spills", "clean_loads",
           "top_level_users", "refuse_unplaceable", "spill_weights", "sbuf_room", "SPILL_ROUNDS", "ROOM_STEP"]

#: Marks a PSUM spill's copy (``{"tensor", "kind": "store" | "reload"}``): an ACT instruction,
#: not a transfer, so the footprint's ``x-spill`` DMA counts leave it out.
PSUM_SPILL_KEY = "x-psum-spill"


@dataclass(frozen=True, slots=True)
class Spill:
    """Store ``tensor`` after top-level node ``after``, reload it before node ``before``."""

    tensor: str
    after: int
    before: int


@dataclass(frozen=True, slots=True)
class SpillResult:
    """The program with its spills, and what they move."""

    program: Program
    spills: int
    transfers: int
    bytes: int
    """Bytes every transfer moves, summed (a spill stores and reloads the tensor: twice its size)."""


def top_level_users(program: Program) -> dict[str, list[int]]:
    """Tensor name -> the indices of the top-level nodes touching it, ascending (shared: the
    caller does not change it; a spill round plans and applies on the same program)."""
    known = _USERS.get(program)
    return known if known is not None else _USERS.put(program, _top_level_users(program))


#: :func:`top_level_users` of each program alive (a flattened kernel's 25 k nodes walked once).
_USERS: WhileAlive[dict[str, list[int]]] = WhileAlive()


def _top_level_users(program: Program) -> dict[str, list[int]]:
    users: dict[str, list[int]] = {}
    for k, node in enumerate(program.body):
        names: set[str] = set()
        stack: list[Node] = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, Loop):
                stack.extend(n.body)
            else:
                names.update(a.tensor for a, _w in n.accesses)
        for name in names:
            users.setdefault(name, []).append(k)
    return users


def plan_spills(program: Program, weight: Mapping[str, float], room: float) -> list[Spill]:
    """Spills that keep the weight of the tensors resident at each top-level node within
    ``room`` where a gap allows it (Belady's rule: the tensor used again furthest ahead goes
    first; ties: the heavier).  A node whose own tensors exceed ``room`` gets what its gaps
    give; the allocator then says whether that is enough."""
    users = top_level_users(program)
    nodes = len(program.body)
    delta = np.zeros(nodes + 1)
    opening: dict[int, list[tuple[int, str, int]]] = {}
    for name, w in weight.items():
        at = users.get(name)
        if not at:
            continue
        delta[at[0]] += w
        delta[at[-1] + 1] -= w
        for p, q in zip(at, at[1:]):
            if q > p + 1:
                opening.setdefault(p + 1, []).append((q, name, p))
    pressure = np.cumsum(delta)[:nodes]
    gaps: dict[str, tuple[int, int]] = {}  # the gaps open at the current node, by tensor
    # The open gaps in spill order, furthest reuse first (a heap: sorting every open gap at
    # every node over the room was quadratic in a flattened kernel); entries of gaps since
    # closed or spilled are skipped when they come up.
    order: list[tuple[int, float, str, int, int]] = []
    closing: dict[int, list[str]] = {}
    spills: list[Spill] = []
    for k in range(nodes):
        for name in closing.pop(k, ()):
            gaps.pop(name, None)
        for q, name, p in opening.get(k, ()):
            gaps[name] = (p, q)
            heapq.heappush(order, (-q, -weight[name], name, p, q))
            closing.setdefault(q, []).append(name)
        while pressure[k] > room and order:
            _q, _w, name, p, q = heapq.heappop(order)
            if gaps.get(name) != (p, q):
                continue
            del gaps[name]
            pressure[k:q] -= weight[name]
            spills.append(Spill(name, p, q))
    return spills


def _fresh(name: str, taken: set[str]) -> str:
    out, k = name, 1
    while out in taken:
        out, k = f"{name}_{k}", k + 1
    taken.add(out)
    return out


def _declared_at(tensor: Tensor, name: str, kind: str) -> dict:
    """The spilled tile's declaration as the transfer's ``x-source`` (a profile charges the
    spill to the line that declared the tile, ``store of x_sb (a spill)``: it was '(no kernel
    line)', a quarter of a tutorial attention's critical path: probe_t), or nothing."""
    where = tensor.extras.get(SOURCE_KEY)
    if not (isinstance(where, Mapping) and isinstance(where.get("file"), str) and isinstance(where.get("line"), int)):
        return {}
    return {SOURCE_KEY: {"file": where["file"], "line": where["line"],
                         "call": f"{kind} of {where.get('variable') or name} (a spill)", "indices": {}}}


def _renamed(node: Node, renames: Mapping[str, str]) -> Node:
    if isinstance(node, Loop):
        return Loop(node.name, node.trip_count, tuple(_renamed(n, renames) for n in node.body), node.extras)
    if not any(a.tensor in renames for a, _w in node.accesses):
        return node
    return replace(node, reads=tuple(replace(a, tensor=renames[a.tensor]) if a.tensor in renames else a
                                     for a in node.reads),
                   writes=tuple(replace(a, tensor=renames[a.tensor]) if a.tensor in renames else a
                                for a in node.writes))


def clean_loads(program: Program) -> dict[str, Instruction]:
    """SBUF tensor -> its one writer, when that is a top-level load of the whole tensor from a
    DRAM tensor no instruction writes: the tensor holds those DRAM bytes unchanged (module doc)."""
    writers: dict[str, list[Instruction]] = {}
    for inst, _loops in program.instructions():
        for access in inst.writes:
            writers.setdefault(access.tensor, []).append(inst)
    top = {id(node) for node in program.body if isinstance(node, Instruction)}
    out: dict[str, Instruction] = {}
    for name, (inst, *more) in writers.items():
        tensor = program.tensors[name]
        if more or tensor.memory != MemoryKind.SBUF or id(inst) not in top or not inst.is_dma:
            continue
        (dst,), reads = inst.writes, inst.reads
        whole = dst.partitions is None and not dst.offset and dst.pattern is None and not dst.per_iteration \
            and not dst.partitions_per_iteration
        src = program.tensors[reads[0].tensor] if len(reads) == 1 else None
        if whole and src is not None and src.memory == MemoryKind.DRAM and src.alias is None \
                and src.name not in writers:
            out[name] = inst
    return out


def apply_spills(program: Program, spills: list[Spill], spec: MachineSpec,
                 memory: MemoryKind = MemoryKind.SBUF) -> SpillResult:
    """``program`` with every spill's store, reload and renamed accesses (module doc).
    ``memory``: what the spilled tensors are; PSUM ones are copied to SBUF and back (module
    doc, "PSUM").  A tile :func:`clean_loads` names is reloaded from its source, not stored."""
    users = top_level_users(program)
    clean = clean_loads(program) if memory == MemoryKind.SBUF else {}
    tensors = dict(program.tensors)
    taken_tensors = set(tensors)
    taken_names = {inst.name for inst, _ in program.instructions()}
    queue = spec.queue_names[-1]
    psum = memory == MemoryKind.PSUM
    after: dict[int, list[Instruction]] = {}
    before: dict[int, list[Instruction]] = {}
    renames: dict[int, dict[str, str]] = {}
    moved = transfers = 0
    by_tensor: dict[str, list[Spill]] = {}
    for spill in spills:
        by_tensor.setdefault(spill.tensor, []).append(spill)
    for name in sorted(by_tensor):
        source = tensors[name]
        segment = name  # the tensor holding the value before the next spill
        mine = sorted(by_tensor[name], key=lambda s: s.after)
        load = clean.get(name)
        for j, spill in enumerate(mine, start=1):
            reload = _fresh(f"{name}_reload{j}", taken_tensors)
            origin = source.extras.get("x-spill-of", name)  # the program's own tile, through reloads of reloads
            tensors[reload] = Tensor(reload, memory, source.dtype, source.shape,
                                     extras=frozen_mapping({**source.extras, "x-spill-of": origin}))
            if load is not None:  # loaded again from its source: no store
                label = _fresh(f"reload_{name}_{j}", taken_names)
                before.setdefault(spill.before, []).append(replace(
                    load, name=label, writes=(Access(reload),), deps=(),
                    extras=frozen_mapping({**load.extras,
                                           "x-spill": {"tensor": name, "kind": "reload", "rematerialised": True}})))
                transfers += 1
                moved += source.shape[0] * source.bytes_per_partition
                steps: tuple = ()
            else:
                held = _fresh(f"{name}_spill{j}", taken_tensors)
                tensors[held] = Tensor(held, MemoryKind.SBUF if psum else MemoryKind.DRAM, source.dtype,
                                       source.shape, extras=frozen_mapping({"x-spill-of": name, **{
                                           k: v for k, v in source.extras.items() if k == SOURCE_KEY}}))
                transfers += 2
                moved += 2 * source.shape[0] * source.bytes_per_partition
                steps = ((spill.after, "store", segment, held), (spill.before, "reload", held, reload))
            for k, kind, src, dst in steps:
                into = after if kind == "store" else before
                label = _fresh(f"{'spill' if kind == 'store' else 'reload'}_{name}_{j}", taken_names)
                marks = {PSUM_SPILL_KEY if psum else "x-spill": {"tensor": name, "kind": kind},
                         **_declared_at(source, name, kind)}
                into.setdefault(k, []).append(
                    Instruction(label, "act", "tensor_copy", reads=(Access(src),), writes=(Access(dst),),
                                extras=frozen_mapping(marks))
                    if psum else
                    Instruction(label, "sp", "dma_copy", reads=(Access(src),), writes=(Access(dst),), queue=queue,
                                extras=frozen_mapping(marks)))
            end = mine[j].before if j < len(mine) else len(program.body)
            for k in users[name]:
                if spill.before <= k < end:
                    renames.setdefault(k, {})[name] = reload
            segment = reload
    body: list[Node] = []
    for k, node in enumerate(program.body):
        body.extend(before.get(k, ()))
        body.append(_renamed(node, renames[k]) if k in renames else node)
        body.extend(after.get(k, ()))
    out = Program(frozen_mapping(tensors), tuple(body), program.machine, program.extras)
    return SpillResult(out, len(spills), transfers, moved)


def _psum_weight(t: Tensor, life: Life, align: int, bank: int) -> float:
    """Bytes a partition a virtual PSUM tile takes in the spill estimate: whole banks for one
    wider than a bank (NKI 0.4 on), a bank a slot for a ring, else its bytes aligned, at most a
    bank."""
    if t.bytes_per_partition > bank:
        return float(-(-t.bytes_per_partition // bank) * bank)
    if life.loop is not None:
        return float(bank * life.slots)
    return float(min(align_up(t.bytes_per_partition, align), bank))


def fit_psum(program: Program, ctx, slots: Mapping[MemoryKind, int], psum_banks: int, align: int, spec: MachineSpec,
             rounds: int, step: float) -> tuple[Program, int, tuple]:
    """``(program, PSUM tiles spilled, (stream, users, lives, psum))``: the program with PSUM tiles
    spilled to SBUF and reloaded (module doc, "PSUM") until the tiles live together fit
    the banks, as for SBUF; unchanged when they fit.  A tile takes its bytes rounded up to
    ``align`` (a ring one bank per slot); the room is the banks' bytes, lowered each round the
    banks' fragmentation defeats the estimate.  What no spill helps is refused at the declaring
    line of a tile that found no bank.  ``ctx``: the pass context (its ``stream``);
    ``rounds`` / ``step``: as the SBUF spilling's.  The last item is the returned program's
    stream, :func:`tensor_users`, :func:`lifetimes` under ``slots`` and :func:`place_psum` on
    them, handed back so that the SBUF placement does not compute them again (a second walk of
    every access at 1e6)."""
    banks = min(psum_banks or spec.psum_banks, spec.psum_banks)
    room, spilled = float(banks * spec.psum_bank_bytes), 0
    for _round in range(rounds + 1):
        stream = ctx.stream(program)
        users = tensor_users(stream)
        lives = lifetimes(stream, slots, users)
        try:
            psum = place_psum(program, lives, psum_banks, align, spec)
            return program, spilled, (stream, users, lives, psum)
        except PsumFull as short:
            weights = {t.name: _psum_weight(t, lives[t.name], align, spec.psum_bank_bytes)
                       for t in program.tensors.values() if t.memory == MemoryKind.PSUM and t.is_virtual}
            plan = plan_spills(program, weights, room) if _round < rounds else []
            while not plan and room > min(weights.values(), default=0) and _round < rounds:
                room *= step
                plan = plan_spills(program, weights, room)
            if not plan:
                what = "spilling the tiles not in use there to SBUF makes no room" if spilled else \
                    "no tile live with it has a gap in its uses to spill it over"
                raise PsumFull(short.path, f"{short.message}; {what}") from None
            program = apply_spills(program, plan, spec, MemoryKind.PSUM).program
            spilled += len(plan)
            room *= step
    return program, spilled, None  # not reached: the last round places the tiles or refuses


#: Spill rounds at most (each plans against a smaller room estimate), and the step of the room.
SPILL_ROUNDS, ROOM_STEP = 12, 0.8


def refuse_unplaceable(program: Program, spec: MachineSpec) -> None:
    """A tile wider than an SBUF partition or PSUM: no allocation or spill places it."""
    # Width depends on memory, dtype and shape only: each distinct one judged once, on its first
    # tensor (so the first too wide tensor in order is the one named), not 1e5 tiles one by one.
    first: dict[tuple, Tensor] = {}
    for t in program.tensors.values():
        if t.memory != MemoryKind.DRAM and t.is_virtual:
            first.setdefault((t.memory, t.dtype, t.shape), t)
    for t in first.values():
        limit, what = ((spec.sbuf_allocatable_bytes, "an SBUF partition below the compiler's reserve")
                       if t.memory == MemoryKind.SBUF  # (a PSUM tile may span banks: NKI 0.4 on)
                       else (spec.psum_banks * spec.psum_bank_bytes, f"the {spec.psum_banks} PSUM banks"))
        if t.bytes_per_partition > limit:
            path, label = where_declared(t)
            raise ProgramError(path, f"{label} holds {t.bytes_per_partition} bytes a partition, more than the "
                                     f"{limit} of {what}: split it into tiles that fit")


def spill_weights(program: Program, align: int, spec: MachineSpec) -> dict[str, float]:
    """Bytes of a partition each virtual SBUF tensor takes, averaged over the partitions'
    quadrants (a 32-partition tile leaves three quadrants to others)."""
    quadrants = -(-spec.sbuf_partitions // 32)
    return {t.name: align_up(t.bytes_per_partition, align) * -(-t.shape[0] // 32) / quadrants
            for t in program.tensors.values() if t.memory == MemoryKind.SBUF and t.is_virtual}


def sbuf_room(program: Program, spec: MachineSpec) -> float:
    """Bytes of a partition left to virtual tiles beside the placed ones (quadrant average)."""
    quadrants = -(-spec.sbuf_partitions // 32)
    fixed = sum(extent(t) * -(-t.shape[0] // 32) / quadrants for t in program.tensors.values()
                if t.memory == MemoryKind.SBUF and not t.is_virtual)
    return max(spec.sbuf_allocatable_bytes - fixed, 0.0)
