"""``nl.arange(E)[:, None] + start`` with ``start`` a loaded tile: a tile of row numbers for an
indirect DMA (neuronx-distributed's find_index and indexed_flatten kernels).  It was an
internal error (exit 3) reading it, a refusal writing it."""

from __future__ import annotations

import numpy as np

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader the offsets need)

from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_read_from_a_loaded_row_offset() -> None:
    x = f32(32, 16)
    got = run(kernel("index_plus_offset.py::rows_from_offset"), x, start=np.array([[5]], np.int32))["return0"]
    np.testing.assert_array_equal(got, x[5:13])


def test_blocks_written_at_loaded_row_offsets() -> None:
    x = f32(2, 8, 16)
    got = run(kernel("index_plus_offset.py::scatter_blocks"), x, offsets=np.array([3, 40], np.int32))["return0"]
    want = np.full((64, 16), -1, np.float32)
    want[3:11], want[40:48] = x[0], x[1]
    np.testing.assert_array_equal(got, want)
