"""A block past a tensor's last is refused where an instruction accesses it, not where it is
indexed (tests/nki/kernels/masked_blocks.py): an update its mask keeps from running accesses
nothing (it was refused at the subscript, "block (4,) ... outside its blocks (4,)")."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_updates_of_blocks_past_the_last_masked_off_run_nothing():
    a, b = f32(128, 128), f32(128, 4096, seed=1)
    out = run(kernel("masked_blocks.py::four_of_eight_blocks"), a, b)["return0"]
    np.testing.assert_allclose(out, a.T.astype(np.float64) @ b[:, :2048], rtol=1e-4, atol=1e-4)


def test_an_update_of_a_block_past_the_last_that_runs_is_refused():
    with pytest.raises(NkiError, match=r"masked_blocks.py:\d+: block \(4,\) of ps_\d+ is outside its blocks \(4,\)"):
        trace(kernel("masked_blocks.py::four_of_eight_blocks"), f32(128, 128), f32(128, 4096), limit=5)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_masked_off_load_into_the_block_past_the_last_loads_nothing(lazy):
    a = f32(384, 64)
    np.testing.assert_array_equal(run(kernel("masked_blocks.py::prefetch_next_block"), a, lazy=lazy)["return0"], a)


def test_a_load_into_the_block_past_the_last_that_runs_is_refused():
    with pytest.raises(NkiError, match=r"masked_blocks.py:\d+: block \(3,\) of buf_\d+ is outside its blocks \(3,\)"):
        trace(kernel("masked_blocks.py::prefetch_next_block"), f32(384, 64), masked=False)


@pytest.mark.parametrize("attached", [False, True])
def test_a_masked_off_load_of_the_row_past_the_last_reads_nothing(attached):
    """``nl.load(a[i + 1], mask=(i < 2))``: the integer index past the end was refused at the
    subscript ("index 3 of a is outside its 3 elements"), the mask not yet known there."""
    a = f32(3, 128, 64)
    out = run(kernel("masked_blocks.py::prefetch_next_row"), a, attached=attached)["return0"]
    np.testing.assert_array_equal(out, a)
    with pytest.raises(NkiError, match=r"masked_blocks.py:\d+: index 3 of a is outside its 3 elements"):
        trace(kernel("masked_blocks.py::prefetch_next_row"), a, attached=attached, masked=False)


def test_a_block_past_the_last_has_no_shape_and_its_index_is_said():
    with pytest.raises(NkiError, match=r"masked_blocks.py:\d+: block \(3,\) of buf_\d+ is outside its blocks \(3,\)"):
        trace(kernel("masked_blocks.py::shape_of_block_past_the_last"), f32(128, 64))
