"""Oracles and generators shared by the reduction tests (plus tests of the oracles).

* :func:`hb_digraph` builds the happens-before graph of rules 1-4 over trigger / start / end
  nodes, keeping apart which edges are waits (rule 4) and which are structure (rules 1-3).
* :func:`nx_kept_waits` is the reference answer: the wait edges that survive
  ``networkx.transitive_reduction`` (a wait that coincides with a rule-1 edge is structure).
* :func:`random_program` draws a loop-free program of opaque ops and DMAs with random deps
  from a seed (no footprints: the reduction looks only at engines and waits);
* :func:`chain_program` is a hand-made program where the program-order fold misses a
  reduction the exact fold finds.
"""

from __future__ import annotations

from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.passes.dep_reduction import instance_waits
from neuronsim_tests.reduction_kit import chain_program, nx_kept_waits, random_program












def test_random_program_is_reproducible():
    assert random_program(30, 7) == random_program(30, 7) != random_program(30, 8)


def test_oracle_on_chain_program():
    program = chain_program()
    assert nx_kept_waits(program) == {(0, 1), (1, 2)}
    waits = instance_waits(program)
    assert [waits.target[k] for k in waits.waits_of(2)] == [1, 0]


def test_oracle_treats_wait_on_sequencer_predecessor_as_structure():
    program = Program({}, (Instruction("a", "pe", "x"), Instruction("b", "pe", "y", deps=(Dep("a"),))))
    assert nx_kept_waits(program) == set()
    dma = Program({}, (Instruction("a", "pe", "dma_copy", queue="dma0"), Instruction("b", "pe", "y", deps=(Dep("a"),))))
    assert nx_kept_waits(dma) == {(0, 1)}  # rule 2: the trigger is not the completion
