"""Indexing a view read as another dtype (tests/nki/kernels/read_as_indexed.py): a slice of
whole elements of both dtypes picks those bytes; half a tensor element is refused at the line
(both were refused, "indexing a view ... is not supported")."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_the_bytes_of_whole_elements_are_picked():
    x = f32(128, 2)
    out = run(kernel("read_as_indexed.py::second_float_bytes"), x)["return0"]
    np.testing.assert_array_equal(out, x[:, 1:2].copy().view(np.uint8))


def test_half_an_element_is_refused_at_the_line():
    with pytest.raises(NkiError, match=r"read_as_indexed.py:\d+: indexing .* read as uint8 with slice\(0, 2, None\) "
                                       r"innermost is not supported"):
        trace(kernel("read_as_indexed.py::second_float_bytes"), f32(128, 2), first=0, last=2)


def test_reinterpret_cast_is_view():
    x = f32(128, 2)
    out = run(kernel("read_as_indexed.py::bytes_by_reinterpret_cast"), x)["return0"]
    np.testing.assert_array_equal(out, x.view(np.uint8))
