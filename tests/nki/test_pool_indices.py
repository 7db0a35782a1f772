"""Index vectors two to a subscript (tests/nki/kernels/pool_indices.py): the tile's axes follow
numpy's broadcast order, so a strided 2-D max-pool reduces its window.  A reduction's mask that
keeps other window ranges for different outputs (padding, a triangle) gives each output its own
box (machine/nki/mask_boxes.py); one that keeps two ranges for one output is refused at its line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_two_by_two_pool_written_with_five_index_vectors():
    x = f32(16, 8, 12)
    out = run(kernel("pool_indices.py::pool2x2"), x)["return0"]
    np.testing.assert_array_equal(out, x.reshape(16, 4, 2, 6, 2).max(axis=(2, 4)))


def test_a_mask_that_pads_the_window_keeps_the_edge_outputs_window_inside_the_image():
    x = f32(16, 8, 8)
    out = run(kernel("pool_indices.py::padded_pool"), x)["return0"]
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::2, ::2]
    np.testing.assert_array_equal(out, windows.max(axis=(3, 4)))


def test_a_triangle_mask_sums_each_column_over_its_own_range():
    x = f32(16, 8, 8)
    out = run(kernel("pool_indices.py::triangle_sum"), x)["return0"]
    expected = np.stack([x[:, a, :8 - a].sum(axis=1, keepdims=True) for a in range(8)], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_a_mask_keeping_two_ranges_of_the_reduced_axis_for_one_output_is_refused_at_the_reduction():
    with pytest.raises(NkiError, match=r"pool_indices.py:\d+: nl.sum with a mask= that keeps, for one output, "
                                       r"reduced indices that are not one range is not supported"):
        trace(kernel("pool_indices.py::holed_sum"), f32(16, 9))
