"""Negative slice ends count from the end, as in Python and numpy: ``a[-64:]`` is the last 64
rows (it was read as 192 rows starting before the tensor); a start still before the first
element after counting is refused at its line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_negative_ends_of_an_hbm_slice() -> None:
    a = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("negative_slices.py::last_rows"), a)["return0"], a[-64:, :-16])


def test_negative_ends_of_a_tile_slice() -> None:
    a = f32(128, 64)
    np.testing.assert_allclose(run(kernel("negative_slices.py::tail_of_a_tile"), a)["return0"],
                               np.exp(a[-32:, -64:]), rtol=1e-5)


def test_a_start_before_the_first_element_is_refused_at_its_line() -> None:
    with pytest.raises(NkiError, match=r"negative_slices.py:26: slice -200:-136 of a is outside its 128 elements"):
        trace(kernel("negative_slices.py::before_the_start"), f32(128, 64))


def test_a_slice_wholly_past_the_end_says_so() -> None:
    # the tile as the kernel names it, where it was made (probe_bad M-F11: only "tile_33")
    with pytest.raises(NkiError, match=r"negative_slices.py:(\d+): the access of tile \(tile_\d+, made at \S+"
                                       r"negative_slices.py:\d+\) lies wholly past its 64 elements "
                                       r"along dimension 1 \(none of its 64 positions is inside\)"):
        trace(kernel("negative_slices.py::wholly_past_the_end"), f32(128, 64))


def test_an_empty_slice_says_it_selects_nothing() -> None:
    with pytest.raises(NkiError, match=r"negative_slices.py:\d+: slice 0:0 of \S+ selects no element"):
        trace(kernel("negative_slices.py::empty_slice"), f32(128, 64))
