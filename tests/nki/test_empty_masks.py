"""A mask that keeps nothing (``i < n`` with ``n <= 0``: the last tile of a CS149 student's
fused conv2d + maxpool, whose pooled rows run out) emits no instruction.  It used to emit one
whose access counted zero elements along the masked axis, which the program check read as a
footprint from element -1 and refused at the store."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def masked_rows(x, limit=0):
    out = nl.ndarray((128, 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=0.0)
    rows = nl.arange(4)[None, :, None] < limit
    nl.store(out, value=t, mask=rows)
    return out


@nki.jit
def masked_compute(x, limit=0):
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    d = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    d[...] = nl.multiply(t, 0.0)
    d[...] = nl.multiply(t, 2.0, mask=nl.arange(8)[None, :] < limit)
    nl.store(out, value=d)
    return out
'''


@pytest.mark.parametrize("limit", [0, -3, 2, 4])
def test_a_mask_keeping_no_row_stores_nothing(tmp_path, limit):
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.random.default_rng(1).uniform(-1, 1, (128, 4, 8)).astype(np.float32)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::masked_rows", x, seeds=(None,), limit=limit)
    assert not report.run.problems()
    expected = np.zeros_like(x)
    expected[:, :max(limit, 0)] = x[:, :max(limit, 0)]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("limit", [0, -1, 5])
def test_a_masked_compute_keeping_no_column_writes_nothing(tmp_path, limit):
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.random.default_rng(2).uniform(-1, 1, (128, 8)).astype(np.float32)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::masked_compute", x, seeds=(None,), limit=limit)
    assert not report.run.problems()
    expected = np.zeros_like(x)
    expected[:, :max(limit, 0)] = 2 * x[:, :max(limit, 0)]
    np.testing.assert_array_equal(out, expected)
