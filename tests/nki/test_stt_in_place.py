"""``nisa.scalar_tensor_tensor`` whose operand1 is its destination (an in-place accumulation):
the hardware reads both operands in one instruction, so the result is ``(data op0 s) op1`` the
destination's old value, never the first op's result twice (kernels:
tests/nki/kernels/stt_in_place.py)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import kernel, run

RNG = np.random.default_rng(2812)
ACC = RNG.normal(size=(32, 16)).astype(np.float32)
DATA = RNG.normal(size=(32, 16)).astype(np.float32)


@pytest.mark.parametrize(("op1", "reverse1", "expected"), [
    (np.add, False, DATA * 3 + ACC),
    (np.subtract, False, DATA * 3 - ACC),
    (np.subtract, True, ACC - DATA * 3),
])
def test_accumulating_into_operand1_reads_its_old_value(op1, reverse1, expected):
    out = run(kernel("stt_in_place.py::accumulate"), ACC, DATA, op1=op1, reverse1=reverse1)
    np.testing.assert_allclose(next(iter(out.values())), expected, rtol=1e-6, atol=1e-6)


def test_another_operand1_needs_no_staged_tile():
    traced = trace(kernel("stt_in_place.py::into_another"), ACC, DATA)
    computes = [inst.op for inst, _ in traced.program.instructions() if not inst.op.startswith("dma")]
    assert len(computes) == 2, computes  # the two DVE ops, writing the destination directly
    out = run(kernel("stt_in_place.py::into_another"), ACC, DATA)
    np.testing.assert_allclose(next(iter(out.values())), DATA * 3 + ACC, rtol=1e-6, atol=1e-6)
