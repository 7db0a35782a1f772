"""``dep-opt``'s uninitialised reads (the memsets it inserts) against a brute force: every byte
of every partition an on-chip read touches, checked against the set of bytes written before.
The pass skips footprints it has already written or found written; the oracle never does."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes import PassContext, run_pipeline
from neuronsim.passes.dep_opt import uninitialised_reads
from neuronsim.verify.strategies import programs


def _bytes(program: Program, access, iteration) -> set[tuple]:
    fp = footprint(program.tensors[access.tensor], access, iteration)
    return {(fp.space, p, b) for p in range(fp.partitions.bit_length()) if fp.partitions >> p & 1
            for lo, hi in fp.bytes for b in range(lo, hi)}


def _brute_force(program: Program) -> list[tuple[int, int]]:
    written: set[tuple] = set()
    found = []
    for inst in unroll(program):
        for k, access in enumerate(inst.instr.reads):
            if program.tensors[access.tensor].memory != MemoryKind.DRAM:
                if not _bytes(program, access, inst.iteration) <= written:
                    found.append((inst.id, k))
        for access in inst.instr.writes:
            if program.tensors[access.tensor].memory != MemoryKind.DRAM:
                written |= _bytes(program, access, inst.iteration)
    return found


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(deps="none", virtual=True, max_instructions=8, max_loops=2, max_trip=4))
def test_uninitialised_reads_are_those_of_the_byte_by_byte_oracle(program):
    placed = run_pipeline(program, "alloc", PassContext())  # on-chip tensors placed, rings rotating
    assert [(i, k) for i, k, _ in uninitialised_reads(placed)] == _brute_force(placed)
