"""A ``loop_reduce``'s starting identity, set at its tile's declaration while an unrolled affine
iteration is being traced, belongs to no iteration: it drew false carried and output findings
across the iterations (nki-samples' lora_bwd; tests/nki/kernels/loop_reduce_unrolled.py)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_the_identity_set_at_the_declaration_is_no_iterations_write():
    x = f32(256, 256)
    assert nki_findings(trace(kernel("loop_reduce_unrolled.py::column_sums"), x).program) == []
    np.testing.assert_allclose(run(kernel("loop_reduce_unrolled.py::column_sums"), x)["return0"], x[:128] + x[128:],
                               rtol=1e-6)
