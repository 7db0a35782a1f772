"""``t[h]`` of a tensor with two block dimensions (tests/nki/kernels/block_prefix.py): its
dtype, buffer and item size are the tensor's; any other attribute is refused at the kernel
line, asking for every block index first (it was Python's AttributeError)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_prefix_has_its_tensors_dtype():
    a = f32(2, 3, 128, 64)
    out = run(kernel("block_prefix.py::row_sums_through_a_prefix"), a)["return0"]
    np.testing.assert_allclose(out, a.sum(axis=3, keepdims=True), rtol=1e-5, atol=1e-5)


def test_another_attribute_of_a_prefix_is_refused_at_its_line():
    with pytest.raises(NkiError, match=r"block_prefix.py:\d+: .reshape of a tensor with 2 block dimensions indexed "
                                       r"along 1 of them: index every block dimension first"):
        trace(kernel("block_prefix.py::reshape_of_a_prefix"), f32(2, 3, 128, 64))
