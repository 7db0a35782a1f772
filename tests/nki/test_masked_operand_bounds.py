"""A call's mask= bounds its operand's access before the access is checked against its tile
(tests/nki/kernels/masked_operand_bounds.py): the operand rules at the call checked the
unmasked access first and refused it ("a mask= bounds it", with one given)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_masked_read_past_the_tiles_end_stays_inside():
    a = f32(128, 256)
    np.testing.assert_array_equal(run(kernel("masked_operand_bounds.py::masked_blocks"), a)["return0"], 2 * a)


def test_the_same_read_without_its_mask_is_refused_at_the_call():
    with pytest.raises(NkiError, match=r"masked_operand_bounds.py:\d+: the access of a_sb \(a_sb_\d+, made at \S+"
                                       r"masked_operand_bounds.py:\d+\) reaches past its 256 elements along "
                                       r"dimension 1"):
        trace(kernel("masked_operand_bounds.py::masked_blocks"), f32(128, 256), bounded=False)
