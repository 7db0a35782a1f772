"""``data[b, idx, i_f]`` (tests/nki/kernels/indirect_leading_index.py): a gather by a tile of row
numbers after an integer index is a ``[128, C]`` tile; it was ``(1, 128, C)``, the index tile's
rows placed as a middle axis, and a 1280-column gather was refused as too large for SBUF."""

from __future__ import annotations

import numpy as np

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader: the index tile is read)

from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_gather_after_an_integer_index_loads_the_rows_it_names():
    data = f32(2, 256, 1280)
    out = run(kernel("indirect_leading_index.py::even_rows"), data)["return0"]
    np.testing.assert_array_equal(out, data[:, ::2, :])
