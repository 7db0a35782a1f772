"""``nl.subtract(p1, p2)`` of two matmul results in PSUM lowers as the compiler lowers it: the
second operand copied to SBUF, since ``tensor_tensor`` reads at most one PSUM operand (it was
refused at the line).  ``nisa.tensor_tensor`` itself, the ISA call, still refuses two."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_an_nl_operation_on_two_psum_tiles_stages_one() -> None:
    a, b = f32(128, 128), f32(128, 128, seed=1)
    got = run(kernel("psum_operands.py::difference_of_products"), a, b)["return0"]
    want = a.astype(np.float64) @ b - b.astype(np.float64) @ a
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_isa_call_on_two_psum_tiles_is_still_refused() -> None:
    with pytest.raises(NkiError, match=r"psum_operands.py:\d+: .*tensor_tensor reads at most one PSUM operand"):
        run(kernel("psum_operands.py::isa_difference_of_products"), f32(128, 128), f32(128, 128, seed=1))
