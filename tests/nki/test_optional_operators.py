"""``nisa.tensor_scalar(op0=None, ...)`` (tests/nki/kernels/optional_operators.py): a stage
with no operator passes its data through.  It failed inside neuronsim (exit 3) at nki-library's
MX gate / up projection without clamp limits."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim_tests.nki_kernels import f32, kernel, run


@pytest.mark.parametrize(("upper", "lower"), [(None, None), (None, -0.25), (0.5, None), (0.5, -0.25)])
def test_each_clamp_left_out_passes_the_data_through(upper, lower):
    x = f32(128, 64)
    out = run(kernel("optional_operators.py::clamped"), x, upper=upper, lower=lower)["return0"]
    expected = np.minimum(x, upper) if upper is not None else x
    np.testing.assert_array_equal(out, np.maximum(expected, lower) if lower is not None else expected)
