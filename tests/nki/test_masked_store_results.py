"""A store's mask belongs to the store (the nl.store page): under a held-back reduction of an
index-grid view, or a matmul, it used to bound the call's result as well, by the result's
positions, and the call's operands did not follow (a CS149 conv2d with pooling was refused
whenever its last row tile was partial; tests/nki/kernels/masked_store_results.py)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim_tests.nki_kernels import f32, kernel, run


@pytest.mark.parametrize("name, reference, shapes", [
    ("pooled_rows", "pooled_reference", [(128, 8, 6)]),
    ("product_rows", "product_reference", [(128, 128), (128, 64)]),
])
def test_a_masked_store_of_a_call_that_reshapes_stores_the_masked_rows(name, reference, shapes):
    arrays = [f32(*shape, seed=k) for k, shape in enumerate(shapes)]
    outputs = run(kernel(f"masked_store_results.py::{name}"), *arrays)
    expected = kernel(f"masked_store_results.py::{reference}")(*arrays)
    np.testing.assert_allclose(outputs["return0"], expected, rtol=1e-5, atol=1e-5)
