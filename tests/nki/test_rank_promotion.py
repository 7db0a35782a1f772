"""A legacy one-element tile broadcast to a higher rank (tests/nki/kernels/rank_promotion.py):
numpy's rank promotion, as the legacy page says, by the method and the function; it was refused
("broadcasting an on-chip tile along partitions", and the 0.7 page's same-rank rule)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim_tests.nki_kernels import kernel, run


@pytest.mark.parametrize("function", [False, True])
def test_one_element_spreads_over_partitions(function):
    t = np.arange(8, dtype=np.int32).reshape(8, 1) * 3
    out = run(kernel("rank_promotion.py::spread_one_row"), t, function=function)["return0"]
    np.testing.assert_array_equal(out, np.full((32, 1), 6, np.int32))
