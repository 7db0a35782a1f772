"""A mask joined by ``&`` / ``|`` with a condition of loop variables alone (``(i_f < 32) & (t <
valid)``, as an nki-samples kernel writes it): the trace unrolls the loop, the condition is a
Python boolean there, and the mask is itself (true), none (false with ``&``) or no mask
(true with ``|``).  It used to be refused: "a mask combines with & only with another mask"."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace

from neuronsim_tests.nki_kernels import f32, kernel, run


def test_and_with_a_loop_condition() -> None:
    a = f32(384, 64)
    got = run(kernel("mask_booleans.py::first_tiles_scaled"), a, valid=2)["return0"]
    want = a.copy()
    want[:256, :32] *= 2
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_or_with_a_loop_condition() -> None:
    a = f32(384, 64)
    got = run(kernel("mask_booleans.py::or_a_loop_condition"), a, valid=1)["return0"]
    want = a.copy()
    want[:128, :32] *= 2
    want[128:] *= 2
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_comparison_of_index_vectors_reshaped_as_the_vectors_are() -> None:
    a = f32(128, 64)
    want = np.zeros_like(a)
    want[:100] = np.exp(a[:100])
    np.testing.assert_allclose(run(kernel("mask_booleans.py::reshaped_comparison"), a)["return0"], want, rtol=1e-5)


def test_transpose_keeps_its_mask() -> None:
    # nl.transpose dropped its mask: every row of the result was written
    x = f32(128, 128)
    got = run(kernel("mask_booleans.py::transpose_top_half"), x)["return0"]
    want = np.zeros((128, 128), np.float32)
    want[:64] = x.T[:64]
    np.testing.assert_array_equal(got, want)


def test_an_equality_mask_keeps_the_diagonal() -> None:
    # `i_p == i_f` was Python's identity, False: the masked store silently never happened
    x = f32(64, 64)
    got = run(kernel("mask_booleans.py::diagonal_store"), x)["return0"]
    np.testing.assert_array_equal(got, np.diag(np.diag(x)))


def test_affine_select_takes_an_equality() -> None:
    w = f32(128, 1)
    got = run(kernel("mask_booleans.py::diagonal_select"), w)["return0"]
    np.testing.assert_array_equal(got, np.diag(w[:, 0]))


def test_an_index_vector_reshaped_with_too_few_axes_says_how_many_it_has() -> None:
    with pytest.raises(NkiError) as err:
        trace(kernel("mask_booleans.py::mask_reshaped_again"), f32(128, 64))
    assert "of 2 axes (1, 64) indexed [:, None], which names 1" in str(err.value)
