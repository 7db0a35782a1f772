"""A mask on a matmul operand's own index bounds that operand and the result axis it maps to
(tests/nki/kernels/matmul_masks.py): it cut every operand's axis at the iterator's position, the
moving operand's N and the result's columns, and the shapes disagreed."""

from __future__ import annotations

import numpy as np

from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_mask_on_the_stationarys_columns_bounds_the_results_rows():
    a, b = f32(128, 192), f32(128, 128, seed=1)
    out = run(kernel("matmul_masks.py::columns_of_a_ragged_stationary"), a, b)["return0"]
    np.testing.assert_allclose(out, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
