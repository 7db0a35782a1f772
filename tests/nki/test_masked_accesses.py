"""``t[...][cond]``, an operand carrying its own mask as neuronx-cc prints NKI
(tests/nki/kernels/masked_accesses.py): refused before ("a comparison of indices used as an
index"), it bounds the call as its mask= does, read in the operand's own indices.  With it, a
matmul mask's roles and a transpose's masked destination as the printed kernels write them."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import trace
from neuronsim.machine.nki.errors import NkiError
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_masks_on_operands_bound_the_call():
    a, b = f32(128, 64), f32(128, 64, seed=1)
    out = run(kernel("masked_accesses.py::elementwise"), a, b)["return0"]
    want = np.zeros((128, 64), np.float32)
    want[:90, :40] = 2 * (a[:90, :40] + b[:90, :40])
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_mask_on_the_moving_rows_bounds_the_contraction_of_both_operands():
    a, b = f32(192, 128), f32(192, 512, seed=1)
    out = run(kernel("masked_accesses.py::ragged_contraction"), a, b)["return0"]
    np.testing.assert_allclose(out, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_a_matmul_mask_of_its_own_arange_bounds_the_result_rows():
    a, b = f32(128, 128), f32(128, 128, seed=1)
    out = run(kernel("masked_accesses.py::result_rows"), a, b)["return0"]
    want = np.zeros((128, 128))
    want[:72] = (a.T.astype(np.float64) @ b)[:72]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_a_transpose_mask_bounds_the_destination_columns():
    a = f32(128, 128)
    out = run(kernel("masked_accesses.py::transpose_rows"), a)["return0"]
    want = np.zeros((128, 128), np.float32)
    want[:, :72] = a[:72].T
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name, message", [
    ("masked_attribute", r"masked_accesses.py:\d+: a masked access t\[\.\.\.\]\[cond\] has no attribute 'shape'"),
    ("masked_arithmetic", r"masked_accesses.py:\d+: a masked access t\[\.\.\.\]\[cond\] is an operand of an NKI call"),
    ("masked_without_mask_keyword", r"masked_accesses.py:\d+: nl.zeros_like takes no mask="),
    ("mask_before_index", r"masked_accesses.py:\d+: a masked access is indexed before its mask"),
])
def test_a_masked_access_elsewhere_is_refused_at_its_line(name, message):
    with pytest.raises(NkiError, match=message):
        trace(kernel(f"masked_accesses.py::{name}"), f32(128, 64))


@pytest.mark.parametrize("sliced", [False, True])
def test_a_mask_on_the_moving_operands_second_free_axis_bounds_the_results_third(sliced):
    w, x = f32(9, 5), f32(9, 4, 4, seed=1)
    out = run(kernel("masked_accesses.py::moving_second_free_axis"), w, x, sliced=sliced)["return0"]
    want = np.einsum("km,kab->mab", w.astype(np.float64), x)
    want[:, :, 3:] = 0
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, shape", [("whole_tile_transpose", (100, 12)), ("square_tile_transpose", (128, 5))])
def test_a_transpose_of_a_whole_tile_reads_a_mask_of_its_shape_as_the_sources(name, shape):
    a = f32(*shape)
    np.testing.assert_array_equal(run(kernel(f"masked_accesses.py::{name}"), a)["return0"], a.T)


def test_a_reductions_mask_on_a_kept_axis_bounds_its_own_result_there():
    a = f32(16, 5, 10)
    want = np.zeros((16, 10), np.float32)
    want[:, :7] = a[:, :, :7].sum(axis=1)
    np.testing.assert_allclose(run(kernel("masked_accesses.py::reduce_kept_axis"), a)["return0"], want, rtol=1e-5)
