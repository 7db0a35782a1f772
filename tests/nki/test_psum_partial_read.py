"""``psum += matmul`` after the partial sum was read adds to it.  The read closed the tile's
accumulation group and the next matmul started a new one, overwriting the partial sum: every
element of the full sum was wrong, with no finding (found by a helper's sweep).  A group onto
zeros (``nl.zeros`` read before the first ``+=``) may still start afresh: the sum is the same."""

from __future__ import annotations

import numpy as np

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def partial_then_full(a, b):
    partial = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.shared_hbm)
    full = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.zeros((64, 96), nl.float32, buffer=nl.psum)
    ps += nisa.nc_matmul(nl.load(a[0:128, :]), nl.load(b[0:128, :]))
    nl.store(partial, value=nl.copy(ps))
    ps += nisa.nc_matmul(nl.load(a[128:256, :]), nl.load(b[128:256, :]))
    nl.store(full, value=nl.copy(ps))
    return partial, full
'''


def test_a_partial_sum_read_in_between_is_added_to(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((256, 96)).astype(np.float32)
    (partial, full), report = run_kernel(f"{tmp_path / 'k.py'}::partial_then_full", a, b, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    first = a[:128].T @ b[:128]
    np.testing.assert_allclose(partial, first, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(full, first + a[128:].T @ b[128:], rtol=1e-5, atol=1e-4)
