"""``nl.mean`` keeps float32 intermediates (its page) and ``nl.var`` computes in float32 too,
casting once to the result's dtype.  The sum was rounded to a bf16 result's dtype before
the division: a fifth to a third of a bf16 mean's rows one unit off, along the free axis and
along the partitions alike; ``nl.var(..., dtype=float32)`` of a bf16 tile was 1.3e-3 off
(found by a helper's sweep)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn2")
def reduced(x):
    t = nl.ndarray((100, 300), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = CALL
    out = nl.ndarray(m.shape, dtype=m.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=m)
    return out
'''

BF16 = ml_dtypes.bfloat16
CASES = {
    "mean along the free axis": ("nl.mean(t, axis=1, keepdims=True)",
                                 lambda x: x.mean(axis=1, keepdims=True).astype(BF16), 0.0),
    "mean along the partitions": ("nl.mean(t, axis=0)", lambda x: x.mean(axis=0, keepdims=True).astype(BF16), 0.0),
    "var in float32": ("nl.var(t, axis=1, dtype=nl.float32)",
                       lambda x: x.var(axis=1, keepdims=True).astype(np.float32), 1e-5),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_reduction_of_bf16_rounds_once(tmp_path, case):
    call, expected, rtol = CASES[case]
    (tmp_path / "k.py").write_text(KERNEL.replace("CALL", call))
    x = np.random.default_rng(11).standard_normal((100, 300)).astype(BF16)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::reduced", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    want = expected(x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(out).astype(np.float64), want.astype(np.float64), rtol=rtol, atol=0)
