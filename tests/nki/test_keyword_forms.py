"""Keyword forms of the documented signatures, nl.loop_reduce, nl.no_reorder, reductions over
middle free axes, masks in other affine forms and the style neuronx-cc prints NKI in: each
traced, compiled, simulated and compared with numpy (tests/nki/kernels/keyword_forms.py,
legacy_masks_affine.py)."""

from __future__ import annotations


import numpy as np
import pytest

from neuronsim.machine.nki import trace
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import compile_program
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_keyword_forms_and_compiler_style():
    x = f32(128, 64)
    out = run(kernel("keyword_forms.py::keywords")[2], x)
    # the grid's two instances write the same shared tensor: the last one (row 1) stays
    np.testing.assert_allclose(out["return0"], 2 * x + 1.0, rtol=1e-6)


def test_loop_reduce_both_spellings():
    x = f32(128, 256)
    parts = x.reshape(128, 4, 64)
    out = run(kernel("keyword_forms.py::loop_reduce_sum"), x)
    expected = parts.sum(axis=1) + np.maximum(parts.max(axis=1), 0.0)  # max starts from the zeros
    np.testing.assert_allclose(out["return0"], expected, rtol=1e-5)


def test_no_reorder_chains_the_block_in_program_order():
    x = f32(128, 64)
    traced = trace(kernel("keyword_forms.py::ordered"), x)
    insts = [inst for inst, _ in traced.program.instructions()]
    block = [inst for inst in insts if inst.extras["x-source"]["call"] != "nl.store"]
    assert len(block) == 3
    for before, after in zip(block, block[1:]):
        assert [dep.on for dep in after.deps] == [before.name], after
    assert not block[0].deps and not insts[-1].deps  # nothing outside the block is ordered
    np.testing.assert_allclose(run(kernel("keyword_forms.py::ordered"), x)["return0"], x + 3.0, rtol=1e-6)


def test_reductions_over_middle_axes():
    x = f32(128, 4, 8, 2)
    out = run(kernel("keyword_forms.py::middle_axes"), x)
    np.testing.assert_allclose(out["return0"], x.sum(axis=(1, 3)) + x.max(axis=(1, 3)), rtol=1e-5)


def test_expand_dims_and_buffer_predicates():
    x = f32(128, 64)
    x[:, ::3] = 0.0
    out = run(kernel("keyword_forms.py::expanded"), x)
    np.testing.assert_array_equal(out["return0"], (x == 0).astype(np.float32)[:, None, :])


def test_masks_with_negative_coefficients_and_or():
    x = f32(128, 64)
    traced = trace(kernel("legacy_masks_affine.py::masked"), x, np.zeros((128, 64), np.float32))
    compiled, _ = compile_program(traced.program)
    out = simulate(compiled, inputs=traced.run_inputs).runs[0].outputs["out"]
    expected = np.zeros((128, 64), np.float32)
    expected[:96, :16] = x[:96, :16]  # rows kept by 127 - i_p >= 32, columns by (< 8) | ([4, 16))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("func, keep", [
    ("holes", lambda p, f: (f < 8) | (f >= 16)),
    ("two_axes", lambda p, f: p + f < 100),
])
def test_masks_beyond_one_box_run_once_per_box(func, keep):
    # tests/nki/test_followups.py holds more of these (one instruction per box)
    x = f32(128, 64)
    out = run(kernel(f"legacy_masks_affine.py::{func}"), x, np.zeros((128, 64), np.float32))
    kept = keep(*np.mgrid[0:128, 0:64])
    np.testing.assert_array_equal(out["out"][kept], x[kept])  # the rest is the output's initial bytes


def test_legacy_trace_decorator_and_spmd_dim_grid():
    x = f32(128, 64)
    grid = kernel("legacy_masks_affine.py::grid")
    out = run(grid[4], x, np.zeros((128, 64), np.float32))
    np.testing.assert_array_equal(out["out"], x)
    # launch is a plain function returning a grid launch on its arguments: traced as the launch
    launched = run(kernel("legacy_masks_affine.py::launch"), x, np.zeros((128, 64), np.float32))
    np.testing.assert_array_equal(launched["out"], x)
    from neuronsim.machine.nki import standins
    with standins():
        import neuronxcc.nki.language as nl
        assert nl.spmd_dim(2, nl.nc(2)) == 4 and nl.nc(2) == 2
