"""``nisa.scalar_tensor_tensor`` rounds once: its page says the Vector Engine casts the inputs
to float32, computes both operations in float32 and casts the result to ``dst``'s dtype.  The
intermediate ``data <op0> operand0`` was written into ``dst`` itself, so a bf16 ``dst`` rounded
it to bf16 and an int32 one to an integer before the second operation (a helper found bf16
outputs of a public Mamba2 decode kernel one unit off in a fifth of their elements)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_then_add(x, s, y, out_dtype=nl.bfloat16):
    tiles = []
    for src in (x, y):
        t = nl.ndarray(src.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src)
        tiles.append(t)
    scale = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=scale, src=s)
    res = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.sbuf)
    nisa.scalar_tensor_tensor(dst=res, data=tiles[0], op0=nl.multiply, operand0=scale, op1=nl.add,
                              operand1=tiles[1])
    out = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


@pytest.fixture
def spec(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    return f"{tmp_path / 'k.py'}::scale_then_add"


def test_a_bf16_destination_rounds_the_fp32_result_once(spec):
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, (128, 64)).astype(np.float32)
    y = rng.uniform(-4, 4, (128, 64)).astype(np.float32)
    s = rng.uniform(0.5, 2, (128, 1)).astype(np.float32)
    out, report = run_kernel(spec, x, s, y, seeds=(None,))
    assert not report.run.problems()
    once = (x * s + y).astype(ml_dtypes.bfloat16)
    twice = ((x * s).astype(ml_dtypes.bfloat16).astype(np.float32) + y).astype(ml_dtypes.bfloat16)
    assert (once != twice).sum() > 0  # the inputs tell the two apart
    np.testing.assert_array_equal(np.asarray(out).astype(np.float32), once.astype(np.float32))


def test_an_integer_destination_rounds_the_sum_not_the_product(spec):
    x = np.full((128, 8), 1.7, np.float32)
    y = np.full((128, 8), 1.7, np.float32)
    s = np.ones((128, 1), np.float32)
    out, report = run_kernel(spec, x, s, y, seeds=(None,), out_dtype="int32")
    assert not report.run.problems()
    np.testing.assert_array_equal(np.asarray(out), np.full((128, 8), 3, np.int32))  # 3.4, not 2 + 1.7 = 3.7
