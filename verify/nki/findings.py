"""What only an NKI kernel can get wrong: findings located at the kernel's lines.

A program traced from an NKI kernel (``neuronsim.machine.nki``) carries three facts the program format
alone does not: which kept loops were ``nl.affine_range`` (``x-nki-range: "affine"`` on the
loop), which instructions are ``+=`` into a tile (``x-nki-accumulate``), and which tensors the
kernel placed itself (direct allocation: the tensors already placed in the traced program).
The NKI docs say the compiler does not order the iterations of an affine loop (only matmul
accumulation into PSUM may cross them) and that its lifetime checks of directly allocated
tiles may miss races.  neuronsim checks both, exactly, on the instances:

``carried``
    a value flowing across the iterations of an affine loop (the same iteration of the loops
    around it): an instance reads bytes an earlier iteration wrote and its own iteration has
    not written before it (an upward-exposed read), other than PSUM accumulation (both
    instructions accumulate into PSUM).  The NKI docs call such a loop unsafe: the compiler
    reorders and overlaps affine iterations as if no value flowed between them, while it still
    orders the reuse of storage (WAR, WAW), so those are not findings.  A tile the kernel
    creates inside the loop body (``x-nki-scope`` on the tensor names the loop; without it, a
    virtual tensor every access of which lies inside the loop) is a new buffer in every
    iteration: nothing is carried through it; one declared outside is shared by the
    iterations.  Reported per instruction pair with the smallest iteration distance and its
    witness.
``sbuf-accumulate``
    ``+=`` into SBUF bytes that the iterations of an affine loop share: a ``+=`` instance reads
    what the same ``+=`` wrote in an earlier iteration, upward exposed (the ``carried`` test on
    the instruction with itself).  Only PSUM accumulates across iterations.  A ``+=`` into a
    slice of its own per iteration (``sums[i] += x``) or into a tile made in the body is none.
``allocation``
    two placed tensors (the kernel's own placements) on common bytes whose instances the
    kernel's data flow does not order: the deps are computed as the NKI compiler sees the
    kernel, by tile identity (every tensor its own storage), with an affine loop's carried
    flow deps dropped (the compiler does not order values across its iterations), and the
    placed program is race-checked under them (:func:`neuronsim.verify.racecheck.check_program`).  Both lines are named.
    Tiles written over while the other is live in program order (``clobber``) are found by
    :mod:`neuronsim.verify.nki.lifetimes`: wrong whatever the schedule.

Every finding names the kernel lines (``x-source``); ``neuronsim run KERNEL.py::FUNC`` exits 1
when there is any.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from math import prod

import numpy as np

from neuronsim.machine.order.conflicts import conflict_kind, conflicts, pair_kinds
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import PSUM_BANK_BYTES, Instruction, Loop, MemoryKind, Program, Rotation
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.ir.source import instance_label
from neuronsim.machine.order.stream import InstanceStream, stream_of

from neuronsim.verify.nki.finding import NkiFinding
from neuronsim.verify.nki.lifetimes import clobber_findings

__all__ = ["NkiFinding", "nki_findings", "carried_findings", "accumulate_findings", "allocation_findings",
           "AFFINE", "RANGE_KEY", "ACCUMULATE_KEY"]

RANGE_KEY = "x-nki-range"
#: On a tensor: the kept loops around its declaration (``[]``: declared outside them all).
SCOPE_KEY = "x-nki-scope"
ACCUMULATE_KEY = "x-nki-accumulate"
AFFINE = "affine"
_KIND_NAME = {4: "RAW", 3: "WAW", 2: "WAR"}


def _accumulates(inst: Instruction) -> bool:
    return bool(inst.attrs.get("accumulate")) or bool(inst.extras.get(ACCUMULATE_KEY))


def _affine_loops(program: Program) -> Iterator[tuple[Loop, int]]:
    """Every affine loop with its depth (loops around it)."""
    for node, loops in program.walk():
        if isinstance(node, Loop) and node.extras.get(RANGE_KEY) == AFFINE:
            yield node, len(loops)


def _inside(program: Program, loop: Loop) -> list[Instruction]:
    return [inst for inst, loops in program.instructions() if any(l is loop for l in loops)]


def _private(program: Program, loop: Loop) -> set[str]:
    """Virtual tensors declared inside ``loop``'s body: a new buffer in every iteration.  The
    frontend says where a tile was declared (``x-nki-scope``: the kept loops around its
    declaration); without it, a virtual tensor touched only inside the loop counts as declared
    there."""
    inside, outside = set(), set()
    for inst, loops in program.instructions():
        into = inside if any(l is loop for l in loops) else outside
        into.update(a.tensor for a, _ in inst.accesses)
    out = set()
    for name in inside:
        tensor = program.tensors[name]
        scope = tensor.extras.get(SCOPE_KEY) if tensor.extras else None
        if not tensor.is_virtual:
            continue
        if isinstance(scope, (list, tuple)):
            if loop.name in scope:
                out.add(name)
        elif name not in outside:
            out.add(name)
    return out


def _common_tensors(program: Program, a: Instruction, b: Instruction) -> set[str]:
    """Tensors of ``a`` and ``b`` that may share bytes: one tensor, or one DRAM alias group."""
    ta, tb = {x.tensor for x, _ in a.accesses}, {x.tensor for x, _ in b.accesses}
    group = {t: program.tensors[t].alias for t in ta | tb if program.tensors[t].alias is not None}
    shared = ta & tb
    shared |= {t for t in ta | tb if t in group and any(group.get(u) == group[t] for u in (tb if t in ta else ta))}
    return shared


def _grid(stream: InstanceStream, x: int, depth: int) -> np.ndarray:
    """Instance ids of instruction ``x`` as ``(outer iterations, trip of the loop, inner)``."""
    trips = stream.trips[x]
    return stream.instances_of(x).reshape(prod(trips[:depth]), trips[depth], -1)


def _kinds(stream: InstanceStream, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    found = pair_kinds(stream, a, b)
    if found is None:  # alias groups: the exact per-pair test
        found = np.array([conflict_kind(stream, int(i), int(j)) for i, j in zip(a, b)], np.int64)
    return found


def carried_findings(program: Program, stream: InstanceStream | None = None) -> list[NkiFinding]:
    """The ``carried`` findings of every affine loop (module doc), on the identity placement
    (:func:`_identity_placement`: two tensors share bytes only when they are one, or one DRAM
    alias group)."""
    stream = stream or stream_of(_identity_placement(program))
    out = []
    for loop, depth in _affine_loops(program):
        if loop.trip_count < 2:
            continue
        private = _private(program, loop)
        body = _inside(program, loop)
        candidates = []
        for p, first in enumerate(body):
            for second in body[p:]:
                shared = _common_tensors(program, first, second)
                if not shared or shared <= private or (first is second and first.extras.get(ACCUMULATE_KEY)):
                    continue  # tiles made in the body are new each iteration; += into SBUF is its own finding
                if _accumulates(first) and _accumulates(second) and all(
                        program.tensors[t].memory == MemoryKind.PSUM for t in shared if not _only_read(t, first, second)):
                    continue  # PSUM accumulation: the one dependence affine iterations may carry
                candidates.append((first, second))
        for (kind, d, i, j) in _nearest(stream, candidates, depth, loop.trip_count):
            tensors = _tensors_of(stream, i, j)
            if not set(tensors) <= private:
                out.append(NkiFinding("carried", _KIND_NAME[kind], instance_label(stream, i),
                                      instance_label(stream, j), loop.name, d, tensors))
    return out


def _only_read(tensor: str, *insts: Instruction) -> bool:
    return not any(w.tensor == tensor for inst in insts for w in inst.writes)


def _pairs_at(stream: InstanceStream, first: Instruction, second: Instruction, depth: int, trip: int,
              d: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (earlier, later) instance pair of the two instructions ``d`` iterations apart."""
    ga, gb = _grid(stream, stream.id_of[first.name], depth), _grid(stream, stream.id_of[second.name], depth)
    firsts, seconds = [], []
    for early, late in (((ga, gb),) if first is second else ((ga, gb), (gb, ga))):
        shape = (*early[:, :trip - d].shape, late.shape[2])
        firsts.append(np.broadcast_to(early[:, :trip - d, :, None], shape).ravel())
        seconds.append(np.broadcast_to(late[:, d:, None, :], shape).ravel())
    return np.concatenate(firsts), np.concatenate(seconds)


def _nearest(stream: InstanceStream, candidates: list[tuple[Instruction, Instruction]], depth: int,
             trip: int, starts: dict[tuple[int, ...], int] | None = None) -> list[tuple[int, int, int, int]]:
    """Per candidate pair with a value flowing across iterations: ``(RAW, distance, writer id,
    reader id)`` at the smallest distance.  A read counts only when its iteration has not
    written those bytes before it (an upward-exposed read): storage reused from one iteration
    to the next (WAR, WAW, or a read of the iteration's own write) orders nothing the compiler
    leaves unordered.  One vectorised test per distance.  ``starts``: the first instance of
    every iteration (:func:`_iteration_starts`; by default over the candidates' instructions)."""
    found = []
    open_ = list(candidates)
    starts = _iteration_starts(stream, candidates, depth) if starts is None else starts
    exposed: dict[tuple[int, int], bool] = {}
    for d in range(1, trip):
        if not open_:
            break
        pieces = [_pairs_at(stream, a, b, depth, trip, d) for a, b in open_]
        kinds = _kinds(stream, np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]))
        still, start = [], 0
        for pair, (a, b) in zip(open_, pieces):
            part = kinds[start:start + len(a)]
            start += len(a)
            hit = next((k for k in np.flatnonzero(part == 4)[:_WITNESSES].tolist()
                        if _upward_exposed(stream, int(a[k]), int(b[k]), starts, depth, exposed)), None)
            if hit is not None:
                found.append((4, d, int(a[hit]), int(b[hit])))
            else:
                still.append(pair)
        open_ = still
    return found


#: RAW witnesses examined per pair and distance before the pair counts as not carried.
_WITNESSES = 64


def _iteration_starts(stream: InstanceStream, candidates, depth: int) -> dict[tuple[int, ...], int]:
    """First instance id of every iteration (outer indices and the loop's index) of the loop."""
    starts: dict[tuple[int, ...], int] = {}
    for inst in {id(x): x for pair in candidates for x in pair}.values():
        x = stream.id_of[inst.name]
        for i in stream.instances_of(x).tolist():
            key = stream.index_of(i)[:depth + 1]
            if i < starts.get(key, i + 1):
                starts[key] = i
    return starts


def _upward_exposed(stream: InstanceStream, writer: int, reader: int, starts, depth: int, memo) -> bool:
    """True when ``reader`` reads bytes ``writer`` wrote that no earlier instance of its own
    iteration wrote (checked by tensor: an earlier write of the iteration into every tensor of
    the conflict hides it)."""
    key = (writer, reader)
    if key not in memo:
        names = stream.tensor_names
        flowing = {names[pb.tensor] for kind, _pa, pb, _m, _b in conflicts(stream, writer, reader) if kind == "RAW"}
        first = starts.get(stream.index_of(reader)[:depth + 1], reader)
        for k in range(first, reader):
            if not flowing:
                break
            flowing -= {names[pb.tensor] for kind, _pa, pb, _m, _b in conflicts(stream, k, reader) if kind == "RAW"}
        memo[key] = bool(flowing)
    return memo[key]


def _tensors_of(stream: InstanceStream, i: int, j: int) -> tuple[str, ...]:
    found = conflicts(stream, i, j)
    names = stream.tensor_names
    return tuple(dict.fromkeys(names[t] for _, pa, pb, _, _ in found for t in (pa.tensor, pb.tensor)))


def accumulate_findings(program: Program, stream: InstanceStream | None = None) -> list[NkiFinding]:
    """``+=`` into SBUF bytes shared by the iterations of an affine loop (module doc)."""
    stream = stream or stream_of(_identity_placement(program))
    out = []
    for loop, depth in _affine_loops(program):
        if loop.trip_count < 2:
            continue
        private, body, starts = _private(program, loop), _inside(program, loop), None
        for inst in body:
            sbuf = [w.tensor for w in inst.writes
                    if program.tensors[w.tensor].memory == MemoryKind.SBUF and w.tensor not in private]
            if not (inst.extras.get(ACCUMULATE_KEY) and sbuf):
                continue
            if starts is None:  # iterations start at the body's first instance (its zeroing, say)
                starts = _iteration_starts(stream, [(x, x) for x in body], depth)
            for _kind, d, i, j in _nearest(stream, [(inst, inst)], depth, loop.trip_count, starts):
                out.append(NkiFinding("sbuf-accumulate", "RAW", instance_label(stream, i), instance_label(stream, j),
                                      loop.name, d, tuple(dict.fromkeys(sbuf))))
    return out


def _identity_placement(program: Program) -> Program:
    """Every tensor on bytes of its own (a machine with room for all of them; DRAM alias
    groups kept), a rotating one with a slot per iteration: the storage the NKI compiler reasons
    with, where each tile is itself and no two tiles share bytes."""
    loops = {node.name: node.trip_count for node, _ in program.walk() if isinstance(node, Loop)}
    sbuf_next, psum_bank, dram_next, placed = 0, 0, 0, {}
    for name, t in program.tensors.items():
        if t.memory == MemoryKind.DRAM:
            if t.alias is None:
                stride = t.free_elements * t.itemsize
                rotate = Rotation(t.rotate.loop, loops.get(t.rotate.loop, 1), stride) if t.rotate else None
                placed[name] = replace(t, address=dram_next, rotate=rotate)
                dram_next += -(-t.free_elements * t.itemsize * (loops.get(t.rotate.loop, 1) if t.rotate else 1)
                               // 4096) * 4096
            else:
                placed[name] = t
            continue
        slots = loops.get(t.rotate.loop, 1) if t.rotate else 1
        if t.memory == MemoryKind.SBUF:
            stride = max(t.rotate.stride if t.rotate else 0, t.bytes_per_partition)
            rotate = Rotation(t.rotate.loop, slots, stride) if t.rotate else None
            placed[name] = replace(t, partition=t.partition or 0, offset=sbuf_next, bank=None, rotate=rotate)
            sbuf_next += -(-stride * slots // 64) * 64
        else:
            banks = -(-t.bytes_per_partition // PSUM_BANK_BYTES)
            rotate = Rotation(t.rotate.loop, slots, banks * PSUM_BANK_BYTES) if t.rotate else None
            placed[name] = replace(t, partition=t.partition or 0, offset=0, bank=psum_bank, rotate=rotate)
            psum_bank += banks * slots
    spec = resolve_machine(program.machine)
    base = program.machine.get("base", "trn1") if isinstance(program.machine, dict) else program.machine
    machine = {**(program.machine if isinstance(program.machine, dict) else {"base": base}),
               "sbuf_partition_bytes": max(sbuf_next, spec.sbuf_partition_bytes),
               "psum_banks": max(psum_bank, spec.psum_banks), "dram_bytes": max(dram_next, spec.dram_bytes)}
    return replace(program.with_tensors(placed), machine=machine)


CONSTRUCTION_PIPELINE = "alloc,build-fdeps,remove-redundancies,anti-deps"


def _by_identity(program: Program, placed: Program) -> Program:
    """``placed`` with the deps the NKI compiler derives from ``program``: by tile identity
    (:func:`_identity_placement`), an affine loop's carried flow deps dropped (it orders the
    reuse of storage, never a value flowing from one iteration to the next)."""
    from neuronsim.passes import PassContext, run_pipeline

    derived = run_pipeline(_identity_placement(program), CONSTRUCTION_PIPELINE, PassContext(verify=False))
    affine = {loop.name for loop, _ in _affine_loops(program)}
    loops_of = {inst.name: loops for inst, loops in derived.instructions()}
    deps = {}
    for inst, loops in derived.instructions():
        kept = []
        for dep in inst.deps:
            common = [a for a, b in zip(loops, loops_of[dep.on]) if a.name == b.name]
            if not (dep.loop_carried and dep.kind == EdgeKind.FLOW and common and common[-1].name in affine):
                kept.append(dep)
        deps[inst.name] = tuple(kept)
    return placed.map_instructions(lambda inst: replace(inst, deps=deps[inst.name]))


def allocation_findings(program: Program) -> list[NkiFinding]:
    """Races between directly allocated tiles (module doc)."""
    from neuronsim.passes import PassContext, run_pipeline

    from neuronsim.verify.racecheck import check_program

    placed_by_kernel = {n for n, t in program.tensors.items() if t.memory != MemoryKind.DRAM and not t.is_virtual}
    if len(placed_by_kernel) < 2:
        return []
    placed = program  # the compiler's own allocations placed apart from the kernel's
    if program.has_virtual_tensors:
        placed = run_pipeline(program, "alloc", PassContext(verify=False))
    ordered = _by_identity(program, placed)
    stream = stream_of(ordered)
    out, seen = [], set()
    for race in check_program(ordered, max_races=10_000).races:
        tensors = _tensors_of(stream, race.first_id, race.second_id)
        rotating = len(tensors) == 1 and ordered.tensors[tensors[0]].rotate is not None  # slots too few
        if not set(tensors) <= placed_by_kernel or not (len(tensors) > 1 or rotating):
            continue
        key = tuple(sorted(tensors))
        if key in seen:
            continue
        seen.add(key)
        out.append(NkiFinding("allocation", race.kind, instance_label(stream, race.first_id),
                              instance_label(stream, race.second_id), tensors=tensors))
    return out


def nki_findings(program: Program) -> list[NkiFinding]:
    """Every NKI-specific finding of a traced ``program`` (before compilation)."""
    stream = stream_of(_identity_placement(program)) if any(True for _ in _affine_loops(program)) else None
    found = []
    if stream is not None:
        found += accumulate_findings(program, stream) + carried_findings(program, stream)
    clobbered = clobber_findings(program)
    pairs = {frozenset(f.tensors) for f in clobbered}
    return found + clobbered + [f for f in allocation_findings(program) if frozenset(f.tensors) not in pairs]

