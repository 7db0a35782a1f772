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


def test_a_loop_reduce_carries_no_finding_across_its_own_loops_only():
    # a value two loop_reduce calls carry across a loop their loop_indices do not name is a
    # finding as any other (every loop was exempt: probe_an), kept loops and unrolled alike
    a = f32(2, 2, 128, 64)
    for masked in (False, True):
        declared = trace(kernel("loop_reduce_loops.py::rows"), a, masked=masked).program
        assert nki_findings(declared) == [], masked
        planted = nki_findings(trace(kernel("loop_reduce_loops.py::rows"), a, one_slice=True, masked=masked).program)
        assert planted and {f.loop for f in planted} == {"i"}, [f.describe() for f in planted]
        assert all("loop_reduce_loops.py:21" in f.describe() for f in planted)
    np.testing.assert_allclose(run(kernel("loop_reduce_loops.py::rows"), a)["return0"], a[:, 0] + a[:, 1], rtol=1e-6)
