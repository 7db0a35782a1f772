"""``dep-opt``: rebuild the deps for the program order a scheduler left (seed pass 104).

After ``list-schedule`` the deps are stale: they still point backwards, but orders they got
from the old engine streams (rule 1) may be gone.  The seed's ``dep_opt`` tears the flow
graph down and re-derives it from the IR, then patches the storage chains.  Ours, in order:

1. ``insert_memsets`` (option ``memsets``, on by default; the seed's level > 0): every read
   of SBUF / PSUM bytes that no earlier instance wrote gets a ``memset`` to 0 of that access,
   placed at the start of the program (DVE for PSUM, POOL for SBUF; when the reader's own
   access breaks a compute rule, e.g. a DMA reading from an odd partition, the whole tensor;
   when that breaks one too the read is left and counted as ``uninitialised-left``);
2. ``constructBIRGraph``: :class:`~neuronsim.passes.build_fdeps.BuildFdeps` with the given deps dropped, which
   also re-serialises PSUM accumulation groups (``sync_psum_accesses``: its accumulation
   chain), RNG state and accumulator groups, and draws the trivial program-order chain when
   the program carries ``x-too-many-spills`` or option ``trivial`` (``draw_trivial_deps``);
3. ``erase_loop_dependencies``: the given loop-carried deps are dropped with the rest; the
   ones the builders do not derive again are counted as ``erased-loop-carried``;
4. the WAR / WAW (and reuse-RAW) deps again: :class:`~neuronsim.passes.anti_deps.AntiDeps`, whose
   contract orders every conflicting pair.

The seed's arch-gated helpers (``sync_dve_pool``, ``sync_tiled_matmult_matmultmx``,
``set_first_matmults``, ``flip_one_matmult``) patch hardware details this IR does not model.

Contract
    requires: placed tensors.
    guarantees: every conflicting pair of instances is ordered (race-free under the spec's
    rules); no read of SBUF / PSUM precedes every write of its bytes unless counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import portion

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Program, frozen_mapping
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import check_instruction

from neuronsim.passes.anti_deps import AntiDeps
from neuronsim.passes.build_fdeps import BuildFdeps
from neuronsim.passes.pipeline import Pass, PassContext, PipelineState

__all__ = ["DepOpt", "insert_memsets", "uninitialised_reads"]


def uninitialised_reads(program: Program) -> list[tuple[int, int, Access]]:
    """``(instance id, access index, access baked at that instance)`` of every on-chip read
    that touches a byte no earlier instance wrote."""
    written: dict[tuple[str, int], portion.Interval] = {}
    # footprints already written, and read footprints found written: the bytes written only
    # grow, so neither needs its partitions' interval sets again (a loop's tiles repeat a few
    # footprints thousands of times; 128 partitions of interval unions each was 2 ms an instance)
    done_writes: set[tuple] = set()
    covered: set[tuple] = set()
    found = []
    tensors = program.tensors
    for inst in unroll(program):
        iteration = inst.iteration
        reads = []
        for k, access in enumerate(inst.instr.reads):
            tensor = tensors[access.tensor]
            if tensor.memory == MemoryKind.DRAM:
                continue
            fp = footprint(tensor, access, iteration)
            key = (fp.space, fp.partitions, fp.bytes)
            if key in covered:
                continue
            parts = [p for p in range(fp.partitions.bit_length()) if fp.partitions >> p & 1]
            wanted = portion.empty()
            for lo, hi in fp.bytes:
                wanted |= portion.closedopen(lo, hi)
            if any(not written.get((fp.space, p), portion.empty()).contains(wanted) for p in parts):
                offset = (access.offset or 0) + sum(s * iteration[loop] for loop, s in access.per_iteration)
                baked = Access(access.tensor, access.partitions, offset if access.per_iteration else access.offset,
                               access.pattern)
                reads.append((inst.id, k, baked))
            else:
                covered.add(key)
        found.extend(reads)
        for access in inst.instr.writes:
            tensor = tensors[access.tensor]
            if tensor.memory == MemoryKind.DRAM:
                continue
            fp = footprint(tensor, access, iteration)
            key = (fp.space, fp.partitions, fp.bytes)
            if key in done_writes:
                continue
            done_writes.add(key)
            span = portion.empty()
            for lo, hi in fp.bytes:
                span |= portion.closedopen(lo, hi)
            for p in range(fp.partitions.bit_length()):
                if fp.partitions >> p & 1:
                    key = (fp.space, p)
                    written[key] = written.get(key, portion.empty()) | span
    return found


def insert_memsets(program: Program) -> tuple[Program, int, int]:
    """The program with memsets for its uninitialised reads; ``(program, inserted, left)``."""
    spec = resolve_machine(program.machine)
    tensors = dict(program.tensors)
    taken = {node.name for node, _ in program.walk()}
    memsets: list[Instruction] = []
    seen: set[Access] = set()
    left = 0
    for _, _, access in uninitialised_reads(program):
        if access in seen:
            continue
        seen.add(access)
        tensor = tensors[access.tensor]
        engine = "dve" if tensor.memory == MemoryKind.PSUM else "pool"
        made = None
        for candidate in (access, Access(access.tensor)):
            name = f"memset_init{len(memsets)}"
            while name in taken:
                name += "_"
            inst = Instruction(name=name, engine=engine, op="memset", writes=(candidate,),
                               attrs=frozen_mapping({"value": 0}))
            try:
                check_instruction(inst, tensors, spec, name)
            except ProgramError:
                continue
            made = inst
            break
        if made is None:
            left += 1
            continue
        taken.add(made.name)
        memsets.append(made)
    if not memsets:
        return program, 0, left
    return program.with_body((*memsets, *program.body)), len(memsets), left


@dataclass(frozen=True, slots=True)
class DepOpt(Pass):
    """Pass: rebuild the deps after scheduling (see the module documentation)."""

    name: ClassVar[str] = "dep-opt"
    memsets: bool = True
    trivial: bool = False

    def run(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        start, old = state, state.listed_deps()
        if self.memsets:
            program, inserted, left = insert_memsets(state.program)
            ctx.count(self.name, "memsets", inserted)
            ctx.count(self.name, "uninitialised-left", left)
            if inserted:
                state = state.with_structure(program)
        # state to state: the stream the builders compile is built once for both, and the
        # deps are written into the instructions once, at the end (issue 31: a third of the
        # pass on a flattened kernel of 25,000 instances went to a second stream and writing)
        state = AntiDeps().run(BuildFdeps(trivial=self.trivial).run(state, ctx), ctx).changed_since(start)
        new = state.listed_deps()
        ctx.count(self.name, "deps-before", len(old))
        ctx.count(self.name, "deps-after", len(new))
        ctx.count(self.name, "flow", sum(k == EdgeKind.FLOW for k in new.values()))
        ctx.count(self.name, "erased-loop-carried", sum(1 for key in old if key[2] and key not in new))
        return state
