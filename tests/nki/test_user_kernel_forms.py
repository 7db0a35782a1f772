"""Forms found in public users' kernels (tests/nki/kernels/user_forms.py says which): ``&``,
``|`` and ``^`` between tiles (logical of masks, bitwise of integers, as ``~`` already was), and
the legacy ``nisa.nc_matmul`` of ``nc_transpose`` results, whose PSUM operands are staged
through SBUF as the compiler stages ``nl.matmul``'s; the current API still refuses the last."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import trace
from neuronsim.verify.nki.run import run_kernel
from neuronsim.machine.nki.errors import NkiError
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_boolean_operators_between_mask_tiles_select_as_numpy_does():
    a = f32(128, 128)
    row, col = np.arange(128)[:, None], np.arange(128)[None, :]
    out = run(kernel("user_forms.py::masks"), a)
    np.testing.assert_array_equal(out["return0"], np.where((row >= col) & (col < 64), a, 0))
    np.testing.assert_array_equal(out["return1"], np.where((row < 8) | (col >= 120), a, 0))
    np.testing.assert_array_equal(out["return2"], np.where((row < 32) ^ (col < 32), a, 0))


def test_boolean_operators_between_integer_tiles_are_bitwise():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 1 << 12, (128, 64), dtype=np.int32), rng.integers(0, 1 << 12, (128, 64), dtype=np.int32)
    out = run(kernel("user_forms.py::integer_bits"), a, b)
    np.testing.assert_array_equal(out["return0"], a & b)
    np.testing.assert_array_equal(out["return1"], a | b)
    np.testing.assert_array_equal(out["return2"], a ^ 6)


def test_a_legacy_matmul_of_pe_transposes_reads_them_through_sbuf():
    x, w = f32(128, 128), f32(128, 128, seed=1)
    traced = trace(kernel("user_forms.py::matmul_of_transposes"), x, w)
    copies = [inst for inst, _ in traced.program.instructions()
              if inst.op == "tensor_copy" and traced.program.tensors[inst.reads[0].tensor].memory.name == "PSUM"]
    assert len(copies) >= 2  # each transpose staged (and the result's copy out)
    np.testing.assert_allclose(run(kernel("user_forms.py::matmul_of_transposes"), x, w)["return0"], x @ w.T,
                               rtol=1e-5, atol=1e-5)


def test_a_legacy_matmul_of_a_bf16_pe_transpose_stays_bf16():
    import ml_dtypes

    x = f32(128, 128).astype(ml_dtypes.bfloat16)
    v = f32(128, 128, seed=1).astype(ml_dtypes.bfloat16)
    traced = trace(kernel("user_forms.py::matmul_of_a_bf16_transpose"), x, v)
    [matmul] = [inst for inst, _ in traced.program.instructions() if inst.op == "matmul"]
    assert [traced.program.tensors[a.tensor].dtype for a in matmul.reads[:2]] == ["bfloat16", "bfloat16"]
    expected = x.astype(np.float64) @ v.astype(np.float64)
    np.testing.assert_allclose(run(kernel("user_forms.py::matmul_of_a_bf16_transpose"), x, v)["return0"], expected,
                               rtol=2e-2, atol=2e-2)


def test_the_current_api_still_refuses_a_psum_operand_at_its_line():
    with pytest.raises(NkiError, match=r"user_forms_current\.py:\d+: .*PE reads SBUF"):
        trace(kernel("user_forms_current.py::matmul_of_psum"), f32(128, 128), f32(128, 128, seed=1))


def test_a_returned_argument_is_compared_and_returned_by_its_place():
    """An in-place kernel returns what it wrote (``return x, out``): the reference may name it
    ``return0`` as any returned tensor, and the outputs come back in the return's order."""
    x = f32(128, 64)
    outputs, report = run_kernel(kernel("user_forms_current.py::add_in_place"), x,
                                 reference=lambda x: {"return0": x + 1, "return1": 2 * x})
    assert not report.problems(), report.problems()
    np.testing.assert_allclose(outputs[0], x + 1, rtol=1e-6)
    np.testing.assert_allclose(outputs[1], 2 * x, rtol=1e-6)
