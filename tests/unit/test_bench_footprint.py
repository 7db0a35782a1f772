"""``bench/bench_footprint.py``: its kernel is a real tiled matmul (the numpy product, the
rotating slots and banks ordered by the default pipeline at the minimum).  Timings are
printed by the script, never asserted here."""

from __future__ import annotations

import doctest

import numpy as np

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import DEFAULT_PIPELINE, compile_program
from neuronsim_tests.docs_kit import load_script
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.sync_counts import sync_report

def bench():
    return load_script("bench/bench_footprint.py")


def test_doctests():
    result = doctest.testmod(bench())
    assert result.attempted > 0 and result.failed == 0


def test_the_kernel_computes_the_product_and_compiles_to_the_minimum():
    program = bench().tiled_matmul(2, 3, 3)
    compiled, _ = compile_program(program, DEFAULT_PIPELINE)
    assert check_program(compiled).race_free
    (stage,) = sync_report([("compiled", compiled)], simulate=False).stages
    assert stage.figures.waits == stage.minimum.figures.waits > 0
    bf16 = numpy_dtype("bfloat16")
    rng = np.random.default_rng(0)
    lhs_t = rng.uniform(-1, 1, program.tensors["lhsT"].shape).astype(bf16)
    rhs = rng.uniform(-1, 1, program.tensors["rhs"].shape).astype(bf16)
    run = simulate(compiled, seeds=[None, 1, 2], inputs={"lhsT": lhs_t, "rhs": rhs}).runs
    want = lhs_t.astype(np.float64).T @ rhs.astype(np.float64)
    for result in run:
        assert not result.differs
        assert np.allclose(result.outputs["result"].astype(np.float64), want, rtol=2e-2, atol=2e-2)
