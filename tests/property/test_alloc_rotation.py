"""Multi-buffered allocation: brute-force oracles on generated loop programs.

The contract of ``alloc`` (:mod:`neuronsim.passes.alloc`) is checked three ways on every program:
two tensors never hold one byte at one instance, counting every iteration
(:func:`tests.alloc_oracles.holding_clashes`); no read sees a different writer than in the
program with private storage (:func:`~tests.alloc_oracles.stale_reads`); and a tensor rotates
exactly when it is iteration-private (:func:`~tests.alloc_oracles.private_over`).
"""

from __future__ import annotations

from hypothesis import given, settings

from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes import compile_program
from neuronsim.testing.alloc_oracles import holding_clashes, rotation_mismatches, stale_reads
from neuronsim.verify.strategies import programs
from neuronsim.verify.tile_kernels import tile_kernels


def _check_sharing(program, spec="alloc"):
    placed, ctx = compile_program(program, spec)
    validate_program(placed)
    assert not placed.has_virtual_tensors
    assert holding_clashes(program, placed) == []
    assert stale_reads(program, placed) == []
    return placed, ctx


@given(tile_kernels())
def test_loop_kernels_share_storage_only_between_tensors_never_live_together(program):
    _check_sharing(program)


@given(tile_kernels(max_stages=3))
def test_more_buffers_and_fewer_banks_keep_the_rule(program):
    _check_sharing(program, "alloc{buffers=3,psum_buffers=3,psum_banks=4}")


@given(programs(deps="none", virtual=True, placed=False, max_instructions=10, max_trip=3))
def test_generated_programs_keep_the_rule(program):
    _check_sharing(program)


@given(programs(deps="none", virtual=True, max_instructions=10, max_trip=3))
def test_new_placements_keep_off_placed_tensors_in_every_slot(program):
    _check_sharing(program)


@settings(max_examples=40)
@given(tile_kernels())
def test_a_tensor_rotates_exactly_when_no_value_crosses_iterations(program):
    placed, ctx = compile_program(program, "alloc")
    assert ctx.stats["alloc"].get("fallbacks", 0) == 0
    assert rotation_mismatches(program, placed) == []


@settings(max_examples=40)
@given(programs(deps="none", virtual=True, placed=False, max_instructions=10, max_trip=3))
def test_rotation_decision_is_exact_on_crowded_programs(program):
    placed, ctx = compile_program(program, "alloc")
    assert ctx.stats["alloc"].get("fallbacks", 0) == 0
    assert rotation_mismatches(program, placed) == []


@settings(max_examples=30)
@given(tile_kernels())
def test_rotate_false_is_the_hull_only_allocation(program):
    placed, _ = compile_program(program, "alloc{rotate=false}")
    assert all(t.rotate is None for t in placed.tensors.values())
    assert holding_clashes(program, placed) == []
