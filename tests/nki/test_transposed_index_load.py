"""``nl.load(x[jf, ip])`` with ``ip = nl.arange(P)[:, None]`` and ``jf = nl.arange(F)[None, :]``:
NKI's index vectors broadcast as numpy's do, so the tile is ``[P, F]`` and its element
``[p, f]`` is ``x[f, p]``, a load read transposed (the store ``nl.store(y[jf, ip], t)`` was
already taken so).  It was refused as "partition dimension 300 of an on-chip tile exceeds
128": the tile took the source's axes in their own order (a helper's edge-tile sweep)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kern(x):
    ip = nl.arange(100)[:, None]
    jf = nl.arange(300)[None, :]
    out = nl.ndarray((100, 300), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.full((100, 300), 3.0, dtype=x.dtype)
    t[ip, jf] = nl.load(x[jf, ip]MASK)
    nl.store(out, value=t)
    return out
'''


@pytest.mark.parametrize(("mask", "rows", "cols"), [("", 100, 300), (", mask=(ip < 60) & (jf < 250)", 60, 250),
                                                     (", mask=(ip < 1)", 1, 300)])  # (one partition left)
def test_a_load_indexed_free_iterator_first_reads_the_transpose(tmp_path, mask, rows, cols):
    (tmp_path / "k.py").write_text(KERNEL.replace("MASK", mask))
    x = np.random.default_rng(2).standard_normal((300, 100)).astype(np.float32)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::kern", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    want = np.full((100, 300), 3.0, np.float32)
    want[:rows, :cols] = x.T[:rows, :cols]
    np.testing.assert_array_equal(out, want)
