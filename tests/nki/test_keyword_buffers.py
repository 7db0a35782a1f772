"""``sbuf.view(dtype, shape)`` / ``hbm.view(...)`` with no import, as NKI's quickstart writes
kernels ("The ``sbuf`` keyword is available in any NKI kernel"): available while a kernel is
imported and traced, gone afterwards."""

from __future__ import annotations

import builtins

import numpy as np

from neuronsim_tests.nki_kernels import f32, kernel, run


def test_views_on_the_keywords_declare_tensors_there() -> None:
    x = f32(128, 64)
    np.testing.assert_allclose(run(kernel("keyword_buffers.py::doubled"), x)["return0"], 2 * x, rtol=1e-6)


def test_a_keyword_is_the_buffer_it_names() -> None:
    x = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("keyword_buffers.py::keyword_as_a_buffer"), x)["return0"], x)


def test_the_keywords_leave_with_the_trace() -> None:
    run(kernel("keyword_buffers.py::doubled"), f32(128, 64))
    assert not hasattr(builtins, "sbuf") and not hasattr(builtins, "hbm")
