"""``nl.where`` selects: operands of other shapes broadcast, and what is not taken never reaches
the result.  A condition or value of another shape was computed as ``c * x + (1 - c) * y``:
the masking idiom ``nl.where(keep[P, 1], scores, -inf)`` gave NaN wherever it kept a score
(``0 * -inf``), and a condition of 3 gave ``3x - 2y`` (found by a helper's sweep)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def pick(c, x, y):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ct = nl.load(c)
    xt = nl.load(x)
    yt = nl.load(y)
    nl.store(out, value=WHERE)
    return out
'''

P, F = 128, 64


def _inputs(c_shape, c_dtype, y_shape):
    rng = np.random.default_rng(8)
    c = rng.integers(0, 4, c_shape).astype(c_dtype)  # 0 false; 1, 2, 3 true
    x = rng.standard_normal((P, F)).astype(np.float32)
    y = rng.standard_normal(y_shape).astype(np.float32)
    return c, x, y


CASES = {
    "a column condition against -inf": ("nl.where(ct, xt, -np.inf)", (P, 1), np.uint8, (P, F),
                                        lambda c, x, y: np.where(c != 0, x, -np.inf)),
    "a column condition between tiles": ("nl.where(ct, xt, yt)", (P, 1), np.float32, (P, F),
                                         lambda c, x, y: np.where(c != 0, x, y)),
    "a column of values": ("nl.where(ct, xt, yt)", (P, F), np.int32, (P, 1),
                           lambda c, x, y: np.where(c != 0, x, y)),
    "a number taken where true": ("nl.where(ct, np.inf, xt)", (P, F), np.uint8, (P, F),
                                  lambda c, x, y: np.where(c != 0, np.inf, x)),
    "two numbers": ("nl.where(ct, 2.5, -1.0)", (P, F), np.float32, (P, F),
                    lambda c, x, y: np.where(c != 0, 2.5, -1.0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_where_selects_with_broadcast_operands(tmp_path, case):
    call, c_shape, c_dtype, y_shape, expected = CASES[case]
    (tmp_path / "k.py").write_text(KERNEL.replace("WHERE", call))
    c, x, y = _inputs(c_shape, c_dtype, y_shape)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::pick", c, x, y, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    np.testing.assert_array_equal(out, expected(c, x, y).astype(np.float32))
