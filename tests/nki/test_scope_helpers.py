"""Block scope and helpers nested in the kernel (tests/nki/kernels/scope_helpers.py): a use in a
helper the loop body calls is inside the body's block; a use after the loop is not."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_tile_handed_to_a_nested_helper_inside_its_loop_is_in_scope():
    a = f32(256, 64)
    np.testing.assert_array_equal(run(kernel("scope_helpers.py::nested_helper"), a)["return0"], a)


def test_a_tile_used_after_its_loop_is_still_refused_at_the_use():
    with pytest.raises(NkiError, match=r"scope_helpers.py:\d+: tile is used outside the block that defines it"):
        trace(kernel("scope_helpers.py::used_after_its_loop"), f32(256, 64))
