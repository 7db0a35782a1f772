"""An instruction assigned into an existing tile writes that tile: its result is rounded once,
to the destination's dtype.  ``dtype=`` names the type of the tile the call would otherwise
return, so ``r[...] = nisa.tensor_tensor(..., dtype=nl.bfloat16)`` into a float32 ``r`` keeps
the float32 sum (docs/nki.md, "Data types"), and into a bf16 ``r`` rounds it once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def add_into(a, b, dst_dtype=nl.float32):
    out = nl.ndarray(a.shape, dtype=dst_dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    r = nl.ndarray(a.shape, dtype=dst_dtype, buffer=nl.sbuf)
    r[...] = nisa.tensor_tensor(x, y, op=nl.add, dtype=nl.bfloat16)
    nl.store(out, r)
    return out
'''


@pytest.fixture
def spec(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    return f"{tmp_path / 'k.py'}::add_into"


@pytest.fixture
def operands():
    rng = np.random.default_rng(5)
    return [rng.standard_normal((128, 64)).astype(np.float32) for _ in range(2)]


def test_a_float32_destination_keeps_the_float32_result(spec, operands):
    a, b = operands
    out, report = run_kernel(spec, a, b, seeds=(None,))
    assert not report.run.problems()
    exact = a + b
    assert (exact.astype(ml_dtypes.bfloat16).astype(np.float32) != exact).any()  # bf16 would show
    np.testing.assert_array_equal(np.asarray(out), exact)


def test_a_bf16_destination_rounds_once(spec, operands):
    a, b = operands
    out, report = run_kernel(spec, a, b, seeds=(None,), dst_dtype="bfloat16")
    assert not report.run.problems()
    np.testing.assert_array_equal(np.asarray(out).astype(np.float32),
                                  (a + b).astype(ml_dtypes.bfloat16).astype(np.float32))
