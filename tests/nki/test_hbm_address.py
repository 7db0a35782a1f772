"""``nl.ndarray(..., buffer=nl.hbm, address=(free_offset,))`` (tests/nki/kernels/hbm_address.py):
the page's 1-tuple runs (it was refused, "two ints"); an address that is no offset is refused."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_an_hbm_address_of_one_offset_runs():
    x = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("hbm_address.py::through_scratch"), x)["return0"], x)


def test_an_hbm_address_of_a_negative_offset_is_refused():
    with pytest.raises(NkiError, match=r"hbm_address.py:\d+: address tuple: an HBM tensor's address is "
                                       r"\(free offset,\), an int from 0"):
        trace(kernel("hbm_address.py::through_scratch"), f32(128, 64), address=(-4,))
