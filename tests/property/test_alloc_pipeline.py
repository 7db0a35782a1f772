"""Multi-buffered allocation end to end: the default pipeline orders what the allocator shares.

After ``alloc`` and the default pipeline, generated loop kernels must be race-free under the
exact race checker and every interleaving must compute what the sequential reference does;
and since the kernels read no uninitialised byte, multi-buffering must not change a single
output byte against one placement per tensor.  The reuse figures of
``bench/bench_alloc_reuse.py`` are asserted here at a floor, so the allocator keeps creating
the reuse the dependence passes are tested on.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import DEFAULT_PIPELINE, compile_program
from neuronsim.testing.alloc_oracles import reuse_pairs
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.tile_kernels import examples, tile_kernels

ONE_PLACEMENT = DEFAULT_PIPELINE.replace("alloc", "alloc{rotate=false}", 1)


def _outputs(program):
    sim = simulate(program, seeds=[None, 0, 1, 2], compare="all")
    assert not sim.differs, sim.first_difference
    return sim.runs[0].outputs


@settings(max_examples=25)
@given(tile_kernels())
def test_compiled_loop_kernels_are_race_free_and_placement_independent(program):
    compiled, ctx = compile_program(program)
    report = check_program(compiled)
    assert report.races == (), report.races[:3]
    multi = _outputs(compiled)
    single, _ = compile_program(program, ONE_PLACEMENT)
    one = _outputs(single)
    assert multi.keys() == one.keys()
    for name in multi:
        assert np.array_equal(multi[name].view(np.uint8), one[name].view(np.uint8)), name


def test_generated_loop_kernels_have_allocator_created_reuse():
    sample = examples(tile_kernels(), 30)
    reuse = rotating = saved = 0
    for program in sample:
        placed, ctx = compile_program(program, "alloc")
        reuse += reuse_pairs(program, placed) > 0
        rotating += ctx.stats["alloc"]["rotated"] > 0
        saved += ctx.stats["alloc"]["bytes-saved"]
    # bench/bench_alloc_reuse.py prints these shares (about three quarters at 200 programs)
    assert reuse >= 0.5 * len(sample) and rotating >= 0.5 * len(sample) and saved > 0, (reuse, rotating, saved)
