"""The legacy ``nisa.activation`` passes its ``reduce_cmd`` on: a row sum accumulated over two
calls (``reset_reduce`` then ``reduce``) is the sum of both halves.  The legacy wrapper used to
drop it, every call resetting the registers: the sum was the last half's (an external GQA
kernel's row sums, off by half, with no warning)."""

from __future__ import annotations

import numpy as np

from neuronsim_tests.nki_kernels import kernel, run


def test_reduce_cmd_accumulates_across_legacy_activation_calls() -> None:
    x = np.random.default_rng(0).uniform(-1, 1, (128, 1024)).astype(np.float32)
    got = run(kernel("legacy_reduce_cmd.py::exp_row_sums_in_halves"), x)["return0"]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)).sum(1, keepdims=True), rtol=1e-5)
