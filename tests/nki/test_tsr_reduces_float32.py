"""``nisa.tensor_scalar_reduce`` reduces the float32 result of its ``tensor_scalar``, as
``activation_reduce`` and ``range_select`` reduce theirs: a bf16 ``dst`` rounds what it
stores, not what the Vector Engine's accumulator adds.  It reduced the stored bf16 values, so
512 elements of ``1 + 2**-9`` summed to 512, not 513 (found by a helper's sweep)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scaled_sum(x):
    y = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    s = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    o = nisa.tensor_scalar_reduce(data=t, op0=nl.multiply, operand0=1.0, reduce_op=nl.add, reduce_res=r,
                                  dtype=nl.bfloat16)
    nl.store(y, value=o)
    nl.store(s, value=r)
    return y, s
'''


def test_the_reduction_adds_the_float32_values_and_dst_rounds_its_own(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.full((64, 512), 1 + 2 ** -9, np.float32)
    (y, s), report = run_kernel(f"{tmp_path / 'k.py'}::scaled_sum", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(s, np.full((64, 1), 513.0, np.float32))
