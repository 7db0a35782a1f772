"""A loop body whose tiles overflow SBUF runs: traced again with every loop unrolled, its tiles
spilled between iterations (the public Mamba kernel's case), the outputs as numpy's."""

from __future__ import annotations

import io

import numpy as np
import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Loop
from neuronsim.machine.nki import load_kernel, trace
from neuronsim.passes import PassContext, run_pipeline
from neuronsim.passes.schedule import TRACED_PIPELINE
from neuronsim.verify.app.progress import Progress
from neuronsim.verify.nki.run import run_kernel, run_traced
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module

KERNEL = GROUP_KERNELS / "legacy_loop_overflow.py"


def test_the_kept_loop_overflows_sbuf_with_no_gap_to_spill_over():
    arrays = kernel_module(KERNEL).inputs(0)
    traced = trace(load_kernel(f"{KERNEL}::overflowing_body"), **arrays)
    assert any(isinstance(node, Loop) for node in traced.program.body)
    with pytest.raises(ProgramError, match="SBUF has no room"):
        run_pipeline(traced.program, TRACED_PIPELINE, PassContext())


def test_run_traces_again_unrolled_and_spills_between_iterations():
    module = kernel_module(KERNEL)
    arrays = module.inputs(0)
    outputs, report = run_kernel(f"{KERNEL}::overflowing_body", *arrays.values(), reference=module.reference,
                                 seeds=(None,))
    assert report.unrolled
    assert not any(isinstance(node, Loop) for node in report.program.body)
    spills = [i for i, _ in report.run.compiled.instructions() if "x-spill" in i.extras]
    assert spills, "the unrolled trace fits only by spilling"
    np.testing.assert_allclose(outputs, module.reference(**arrays)["return0"], rtol=1e-4, atol=1e-4)
    assert not report.problems(), report.problems()


def test_a_retraced_kernel_reports_its_second_trace():
    """The stage line counts what ran: the second trace beside the compiles (the first trace
    is the caller's stage; a compile that found no room counts: tests/unit's progress tests)."""
    module = kernel_module(KERNEL)
    arrays = module.inputs(0)
    kernel = load_kernel(f"{KERNEL}::overflowing_body")
    traced = trace(kernel, **arrays)
    retraced = []

    def retrace():
        retraced.append(trace(kernel, **arrays, unroll_loops=True))
        return retraced[-1]

    with Progress(live=False, stream=io.StringIO()) as progress:
        report = run_traced(traced, "overflowing_body", seeds=(None,), progress=progress, retrace=retrace)
    assert report.unrolled and len(retraced) == 1
    assert progress.seconds.get("trace", 0.0) > 0.0, progress.seconds
