"""Each core's loops while the other core runs (tests/nki/kernels/two_core_loops.py): a meeting
inside a legacy affine loop leaves the other core's output at the top level and its iterations
its own: the values are the sum on both cores, and no finding is made."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_meeting_in_an_affine_loop_on_two_cores():
    x = f32(2, 4, 128, 64)
    launched = kernel("two_core_loops.py::summed_per_tile")[2]
    out = run(launched, x)["return0"]
    np.testing.assert_allclose(out, np.broadcast_to(x[0] + x[1], (2, 4, 128, 64)), rtol=1e-6)
    assert nki_findings(trace(launched, x).program) == []
