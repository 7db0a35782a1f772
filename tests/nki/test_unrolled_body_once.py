"""A legacy symbolic loop the trace unrolls runs its body's Python once, as NKI's single trace
does (machine/nki/frames.restore_locals): ``cols = cols // 2`` in the body halves ``cols`` once,
in every iteration and after the loop.  Unrolled, it used to halve it in every iteration (a
CS149 student's conv2d with pooling was refused for a store of the wrong width)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "unrolled_body_once.py"


@pytest.mark.parametrize("func, unrolled", [("unrolled", True), ("kept", False)])
def test_the_body_runs_once_whether_the_loop_is_kept_or_unrolled(func: str, unrolled: bool) -> None:
    module = kernel_module(KERNELS)
    traced = trace_file(KERNELS, func, module.inputs(0))
    loops = [loop for _inst, loop in traced.program.instructions() if loop]
    assert (not loops) is unrolled  # the block tile unrolled the first kernel's loop
    arrays = module.inputs(0)
    outputs, report = run_kernel(f"{KERNELS}::{func}", *arrays.values(), reference=module.reference, seeds=(None,))
    assert not report.problems(), report.problems()
    np.testing.assert_allclose(outputs, module.reference(**arrays)["return0"])
