"""A tensor of blocks read as another dtype and indexed block first
(tests/nki/kernels/blocks_read_as.py): it was refused, "index a block first", though the view
was then indexed by its block."""

from __future__ import annotations

import numpy as np

from neuronsim_tests.nki_kernels import f32, kernel, run


def test_each_block_is_read_as_the_dtype():
    x = f32(2, 128, 1)
    out = run(kernel("blocks_read_as.py::bytes_of_each_block"), x)["return0"]
    np.testing.assert_array_equal(out, x.view(np.uint8).reshape(2, 128, 4))
