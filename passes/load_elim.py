"""``load-elim``: loads a compiler does not repeat (loop-invariant hoisting, redundant loads).

A traced kernel loads what its source says, where its source says it; a compiler keeps a
tile it already holds.  Two rewrites, both on the loop form before ``alloc`` (so the
allocator places what they leave, and its placement bounds the schedule as usual):

1. **Hoisting.**  A load at the top level of a loop's body whose DRAM source and SBUF tile do
   not move with that loop, into a tile written by nothing else and used only inside the loop
   after the load, from DRAM bytes nothing in the loop writes, loads the same bytes in every
   iteration: it moves in front of the loop, its tile declared outside it (the loop leaves
   the tile's ``x-nki-scope``).  Only when SBUF allows: the tiles declared in the loop plus
   the hoisted ones, counted without reuse, fit one SBUF partition (a bound that needs no
   allocation).  Innermost loops first, so a load invariant in two loops leaves both.
   With ``nests=true`` (``load-elim{nests=true}``), also a load deeper in the loop that moves
   only with the loops inside it: it leaves with one tile slot per inner iteration
   (:mod:`~neuronsim.passes.load_hoist_nest`).  Off by default: the published figures
   disagree on whether neuronx-cc does it (``docs/timing.md``, "Loads that move with inner
   loops").
2. **Redundant loads.**  In one block, a load of exactly the DRAM bytes an earlier load of the
   block put into a tile of the same shape, with neither tile written by anything else and
   the DRAM bytes not written in between, is dropped: its readers read the earlier tile.
   A traced kernel's loops are unrolled (NKI 0.7), so its whole body is one block, and a load
   finds its twin in any earlier iteration.  Not across an unrolled sequential loop (a legacy
   kernel's Python ``range``, ``nl.sequential_range``), which the compiler keeps a loop and
   does not optimize across: there, as in the loop form, a twin is in the same iteration
   (:func:`same_sequential_iteration`); nor across the programs of an SPMD grid, each of
   which holds its own tiles (:func:`same_program`).  With ``within_iteration=true``
   (``load-elim{within_iteration=true}``) only a twin of the same iteration counts (the
   loads' ``x-source`` indices agree, :func:`same_iteration`), as in the loop form, where
   each iteration's tiles are new buffers.  Off by default: the published figures support it
   on bytes moved and on the matmul tutorial's variant order but not on NKIBench's
   latencies (``docs/timing.md``, "Loads again in the next iteration").

Contract
    requires: a valid program; it rewrites only virtual SBUF tiles (run it before ``alloc``)
    and leaves a program with deps as it is (a traced kernel has none unless it says
    ``depends_on``: the pipeline derives them after scheduling).
    guarantees: the same DRAM results and the same values read by every remaining
    instruction; fewer (never more) load instances; ``x-nki-scope`` of a hoisted tile drops
    the loop it left.  Counted: ``hoisted`` instructions, ``hoisted-nests`` (loads that left
    with their slots), ``eliminated`` instructions, and
    ``loads-before`` / ``loads-after`` instances (``verify/sync_counts.py`` counts ``loads``
    per stage of the footprint).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Node, Program, frozen_mapping
from neuronsim.machine.ir.source import CORE_KEY, PROGRAM_KEY, source_of

from neuronsim.passes.iteration_order import IN_ORDER_KEY
from neuronsim.passes.load_hoist_nest import hoist_nests
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["LoadElim", "load_count", "is_load", "sbuf_allows", "same_iteration", "same_program",
           "same_sequential_iteration"]


def is_load(instr: Instruction, tensors) -> bool:
    """A plain DRAM-to-SBUF ``dma_copy``: one DRAM read, one SBUF write."""
    if instr.op != "dma_copy" or len(instr.reads) != 1 or len(instr.writes) != 1:
        return False
    return (tensors[instr.reads[0].tensor].memory == MemoryKind.DRAM
            and tensors[instr.writes[0].tensor].memory == MemoryKind.SBUF)


def load_count(program: Program) -> int:
    """Instances of DRAM-to-on-chip transfers (each counted once per iteration of its loops)."""
    total = 0
    dram = {name for name, t in program.tensors.items() if t.memory == MemoryKind.DRAM}
    for instr, loops in program.instructions():
        if instr.is_dma and any(a.tensor in dram for a in instr.reads) \
                and any(a.tensor not in dram for a in instr.writes):
            runs = 1
            for loop in loops:
                runs *= loop.trip_count
            total += runs
    return total


def _instructions(nodes: tuple[Node, ...]) -> Iterator[Instruction]:
    for node in nodes:
        if isinstance(node, Loop):
            yield from _instructions(node.body)
        else:
            yield node


def _moves_with(access: Access, loop: str) -> bool:
    return any(name == loop for name, _ in access.per_iteration) or \
        any(name == loop for name, _ in access.partitions_per_iteration)


def _dram_group(tensors, name: str) -> str:
    return tensors[name].alias or name


class _Program:
    """Who writes and who touches each tensor, over the whole program."""

    def __init__(self, program: Program) -> None:
        self.tensors = dict(program.tensors)
        self.writers: dict[str, list[str]] = {}
        for instr, _ in program.instructions():
            for access in instr.writes:
                self.writers.setdefault(access.tensor, []).append(instr.name)

    def sole_writer(self, tensor: str, instr: Instruction) -> bool:
        return self.writers.get(tensor) == [instr.name]

    def dram_written(self, nodes, group: str) -> bool:
        """Does any instruction of ``nodes`` write a DRAM tensor of alias group ``group``?"""
        return any(self.tensors[a.tensor].memory == MemoryKind.DRAM and _dram_group(self.tensors, a.tensor) == group
                   for instr in _instructions(nodes) for a in instr.writes)


def _hoistable(info: _Program, loop: Loop, instr: Instruction, outside: set[str]) -> bool:
    if not is_load(instr, info.tensors):
        return False
    source, target = instr.reads[0], instr.writes[0]
    tile = info.tensors[target.tensor]
    if _moves_with(source, loop.name) or _moves_with(target, loop.name) or not tile.is_virtual or tile.rotate:
        return False
    if target.tensor in outside or not info.sole_writer(target.tensor, instr):
        return False
    first = next(i for i in _instructions(loop.body) if any(a.tensor == target.tensor for a, _w in i.accesses))
    return first is instr and not info.dram_written(loop.body, _dram_group(info.tensors, source.tensor))


def sbuf_room(program: Program, spec) -> int:
    """SBUF bytes per partition left when every tile of ``program`` is counted once
    (negative: :func:`sbuf_allows` does not hold)."""
    return spec.sbuf_allocatable_bytes - sum(t.bytes_per_partition for t in program.tensors.values()
                                             if t.memory == MemoryKind.SBUF)


def sbuf_allows(program: Program, spec) -> bool:
    """The hoisting bound: every SBUF tile of the program, each counted once and none sharing
    bytes with another, fits one partition.  A hoisted tile is one of them (it only lives
    longer), so under this bound no hoist can make the allocation fail; the allocator's
    rings (several buffers of a tile declared in a loop) come on top, and ``alloc`` gives
    them up first when they do not fit (``passes/alloc.py``)."""
    return sbuf_room(program, spec) >= 0


def _hoist(info: _Program, nodes: tuple[Node, ...], room: list[int], paths, loop_names: set[str],
           counts: dict, nest: bool) -> tuple[Node, ...]:
    """Hoist in ``nodes`` (a block), innermost loops first (none unless SBUF allows: ``room``,
    the bytes per partition left with every tile counted once; slots of a nest take from it);
    ``nest``: loads that move with inner loops too (:mod:`~neuronsim.passes.load_hoist_nest`)."""
    out: list[Node] = []
    for node in nodes:
        if not isinstance(node, Loop):
            out.append(node)
            continue
        body = _hoist(info, node.body, room, paths, loop_names, counts, nest)
        inside = {a.tensor for i in _instructions(body) for a, _w in i.accesses}
        outside = {t for t in inside if any(node.name not in path for path in paths.get(t, ()))}
        moved = [child for child in body
                 if room[0] >= 0 and isinstance(child, Instruction) and _hoistable(info, node, child, outside)]
        for instr in moved:
            tile = info.tensors[instr.writes[0].tensor]
            scope = [s for s in (tile.extras or {}).get("x-nki-scope", ()) if s != node.name]
            info.tensors[tile.name] = replace(tile, extras=frozen_mapping({**tile.extras, "x-nki-scope": scope}))
        counts["hoisted"] += len(moved)
        out.extend(moved)
        keep = Loop(node.name, node.trip_count, tuple(child for child in body if not any(child is m for m in moved)),
                    node.extras)
        if nest and room[0] >= 0:
            nests, keep = hoist_nests(
                keep, info.tensors, is_load=lambda i: is_load(i, info.tensors), sole_writer=info.sole_writer,
                dram_written=lambda loop, t: info.dram_written(loop.body, _dram_group(info.tensors, t)),
                only_inside=lambda t, name: all(name in path for path in paths.get(t, ())),
                loop_names=loop_names, room=room)
            counts["hoisted-nests"] += len(nests)
            out.extend(nests)
        out.append(keep)
    return tuple(out)


def _load_key(instr: Instruction, tensors) -> tuple | None:
    """What makes two loads the same (module doc, 2): the DRAM bytes read, the tile's view and
    its shape and dtype; None for a load into a placed or rotating tile (never the same)."""
    read, write = instr.reads[0], instr.writes[0]
    tile = tensors[write.tensor]
    if not tile.is_virtual or tile.rotate:
        return None
    return (read, replace(write, tensor=""), tile.shape, tile.dtype)


def _eliminate(info: _Program, nodes: tuple[Node, ...], counts: dict, renamed: dict[str, str],
               within_iteration: bool = False) -> tuple[Node, ...]:
    """Drop the redundant loads of each block (module doc, 2), renaming their tiles' reads.

    The earlier loads still valid are kept by the DRAM group they read, each by its
    :func:`_load_key`: a load finds its twin by one lookup, and a write to DRAM forgets the
    loads of that group at once (a scan of every kept load per load or per store was quadratic
    in an unrolled loop's thousands of tiles)."""
    out: list[Node] = []
    kept: dict[object, dict[tuple, Instruction]] = {}  # DRAM group -> load key -> the earliest such load
    for node in nodes:
        if isinstance(node, Loop):
            node = Loop(node.name, node.trip_count, _eliminate(info, node.body, counts, renamed, within_iteration),
                        node.extras)
            for group in {_dram_group(info.tensors, a.tensor) for i in _instructions(node.body) for a in i.writes}:
                kept.pop(group, None)
            out.append(node)
            continue
        node = _renamed(node, renamed)
        if is_load(node, info.tensors) and info.sole_writer(node.writes[0].tensor, node):
            key = _load_key(node, info.tensors)
            group = kept.setdefault(_dram_group(info.tensors, node.reads[0].tensor), {})
            earlier = group.get(key) if key is not None else None
            if earlier is not None and (not same_sequential_iteration(earlier, node)
                                        or not same_program(earlier, node)
                                        or within_iteration and not same_iteration(earlier, node)):
                group[key] = node  # a later iteration's load: it is the one kept from here on
                out.append(node)
                continue
            if earlier is not None and not any(node.writes[0].tensor == a.tensor for a in node.reads):
                renamed[node.writes[0].tensor] = earlier.writes[0].tensor
                counts["eliminated"] += 1
                continue
            if key is not None:
                group.setdefault(key, node)
        for a in node.writes:
            if info.tensors[a.tensor].memory == MemoryKind.DRAM:
                kept.pop(_dram_group(info.tensors, a.tensor), None)
        out.append(node)
    return tuple(out)


def same_program(first: Instruction, second: Instruction) -> bool:
    """Whether two instructions were issued by the same program of an SPMD grid (equal
    ``x-nki-program``) and by the same core (``x-nki-core``): the grid's programs are traced
    one after another into one program, but each runs on its own, and its on-chip tiles are
    its own (``docs/nki.md``), as each core's SBUF is, so one program's (or core's) load is
    never another's twin.  True when neither is marked.

    >>> from neuronsim.machine.ir.program import Instruction, frozen_mapping
    >>> def of(*pid):
    ...     return Instruction("x", "sp", "dma_copy", extras=frozen_mapping({PROGRAM_KEY: list(pid)}))
    >>> same_program(of(0), of(0)), same_program(of(0), of(1)), same_program(Instruction("x", "sp", "dma_copy"), of())
    (True, False, True)
    """
    return _marked_alike(first, second, PROGRAM_KEY) and _core_of(first) == _core_of(second)


def _core_of(instr: Instruction) -> object:
    """The core that issued ``instr`` in a two-core kernel (``x-nki-core``'s rank; each core has
    its own SBUF, so core 1 never reads core 0's tile: a probe), None when unmarked."""
    core = instr.extras.get(CORE_KEY) if instr.extras else None
    return core.get("rank") if isinstance(core, Mapping) else None


def same_sequential_iteration(first: Instruction, second: Instruction) -> bool:
    """Whether two instructions of an unrolled trace ran in one iteration of the same unrolled
    sequential loops (equal ``x-in-order`` marks, :mod:`~neuronsim.passes.iteration_order`): a
    legacy kernel's Python ``range`` or ``nl.sequential_range``, which the compiler keeps a loop
    and does not optimize across ("much more conservative loop-level optimizations", the
    ``sequential_range`` page).  As in the loop form, where each loop body is a block of its
    own, a load inside such a loop has no twin outside it, nor in another iteration or another
    loop.  True when neither is marked.

    >>> from neuronsim.machine.ir.program import Instruction, frozen_mapping
    >>> def at(*marks):
    ...     return Instruction("x", "sp", "dma_copy", extras=frozen_mapping({IN_ORDER_KEY: [list(m) for m in marks]}))
    >>> same_sequential_iteration(at((1, 0, 2)), at((1, 0, 2))), same_sequential_iteration(at(), at())
    (True, True)
    >>> same_sequential_iteration(at((1, 0, 2)), at((1, 0, 3))), same_sequential_iteration(at((1, 0, 2)), at())
    (False, False)
    >>> same_sequential_iteration(at((1, 0, 2)), at((1, 0, 2), (2, 0, 0)))  # a loop inside that iteration
    False
    """
    return _marked_alike(first, second, IN_ORDER_KEY)


def _marked_alike(first: Instruction, second: Instruction, key: str) -> bool:
    """Whether two instructions carry the same ``key`` mark (neither marked counts as alike)."""
    a = first.extras.get(key) if first.extras else None
    b = second.extras.get(key) if second.extras else None
    return (a or []) == (b or [])


def same_iteration(first: Instruction, second: Instruction) -> bool:
    """Whether two instructions of an unrolled trace ran in the same iteration of every loop
    around both: their ``x-source`` indices (each loop variable's value, Python ``range`` loops
    included) agree on every variable both name.  True when either has no indices (a program
    built or loaded without them: its blocks are its loops' bodies).

    >>> from neuronsim.machine.ir.program import Instruction, frozen_mapping
    >>> def at(**indices):
    ...     src = {"file": "k.py", "line": 3, "indices": indices}
    ...     return Instruction("x", "sp", "dma_copy", extras=frozen_mapping({"x-source": src}))
    >>> same_iteration(at(m=0, n=1), at(m=0, n=1, k=2)), same_iteration(at(m=0, n=1), at(m=0, n=2))
    (True, False)
    """
    a, b = source_of(first), source_of(second)
    if a is None or b is None:
        return True
    theirs = dict(b.indices)
    return all(theirs[var] == value for var, value in a.indices if var in theirs)


def _renamed(instr: Instruction, renamed: dict[str, str]) -> Instruction:
    if not renamed or not (any(a.tensor in renamed for a in instr.reads)
                           or any(a.tensor in renamed for a in instr.writes)):
        return instr
    def swap(accesses: tuple[Access, ...]) -> tuple[Access, ...]:
        return tuple(replace(a, tensor=renamed[a.tensor]) if a.tensor in renamed else a for a in accesses)
    return replace(instr, reads=swap(instr.reads), writes=swap(instr.writes))


def _loop_paths(program: Program) -> dict[str, set[tuple[str, ...]]]:
    """Per tensor, the loop nests (names, outermost first) of the instructions touching it."""
    paths: dict[str, set[tuple[str, ...]]] = {}
    names: dict[tuple[Loop, ...], tuple[str, ...]] = {}  # one tuple per nest (an unrolled kernel has one)
    for instr, loops in program.instructions():
        path = names.get(loops)
        if path is None:
            path = names[loops] = tuple(loop.name for loop in loops)
        for access in (*instr.reads, *instr.writes):
            held = paths.get(access.tensor)
            if held is None:
                paths[access.tensor] = {path}
            else:
                held.add(path)
    return paths


@dataclass(frozen=True, slots=True)
class LoadElim(Pass):
    """Pass: hoist loop-invariant loads and drop redundant ones (module doc)."""

    name: ClassVar[str] = "load-elim"
    hoist: bool = True
    eliminate: bool = True
    nests: bool = False
    within_iteration: bool = False

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        ctx = ctx or PassContext()
        if any(i.deps for i, _ in program.instructions()):
            # deps written by hand (NKI's depends_on, a program file) may order a load: leave it
            ctx.count(self.name, "skipped-deps", 1)
            return program
        before = load_count(program)
        info = _Program(program)
        counts = {"hoisted": 0, "hoisted-nests": 0, "eliminated": 0}
        body = program.body
        if self.hoist:
            room = [sbuf_room(program, ctx.machine(program))]
            ctx.count(self.name, "sbuf-allows", int(room[0] >= 0))
            if any(isinstance(node, Loop) for node in body):  # (an unrolled trace has none to hoist from)
                loop_names = {loop.name for _i, loops in program.instructions() for loop in loops}
                body = _hoist(info, body, room, _loop_paths(program), loop_names, counts, self.nests)
        renamed: dict[str, str] = {}
        if self.eliminate:
            body = _eliminate(info, body, counts, renamed, self.within_iteration)
        tensors = {n: t for n, t in info.tensors.items() if n not in renamed}
        out = program if body == program.body and not counts["hoisted"] and not counts["hoisted-nests"] else Program(
            frozen_mapping(tensors), body, program.machine, program.extras)
        for key, value in counts.items():
            ctx.count(self.name, key, value)
        ctx.count(self.name, "loads-before", before)
        ctx.count(self.name, "loads-after", load_count(out))
        return out
