"""Index vectors two to a subscript (tests/nki/kernels/pool_indices.py): the tile's axes follow
numpy's broadcast order, so a strided 2-D max-pool reduces its window; a mask that keeps other
window ranges for different outputs (padding) is refused at its line, where the reduction, once
per box of the mask, would keep the last box's maximum."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_two_by_two_pool_written_with_five_index_vectors():
    x = f32(16, 8, 12)
    out = run(kernel("pool_indices.py::pool2x2"), x)["return0"]
    np.testing.assert_array_equal(out, x.reshape(16, 4, 2, 6, 2).max(axis=(2, 4)))


def test_a_mask_that_pads_the_window_is_refused_at_the_reduction():
    with pytest.raises(NkiError, match=r"pool_indices.py:\d+: nl.max with a mask= that keeps other ranges of the "
                                       r"reduced axes for different outputs is not supported"):
        trace(kernel("pool_indices.py::padded_pool"), f32(16, 8, 8))
