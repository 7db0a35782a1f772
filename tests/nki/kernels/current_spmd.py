"""SPMD group, current NKI: a two-dimensional grid (``kernel[2, 3]``); ``nl.program_id(0)`` /
``(1)`` pick a [128, 64] block, ``nl.num_programs(1)`` and ``nl.program_ndim()`` are read, the
output is one ``shared_hbm`` tensor every instance writes its own block of."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

P, F = 128, 64


@nki.jit
def spmd_blocks(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    assert nl.program_ndim() == 2
    i, j = nl.program_id(0), nl.program_id(1)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, j * F:(j + 1) * F])
    u = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.add, operand0=float(i * nl.num_programs(1) + j),
                       engine=nisa.engine.vector)
    nisa.dma_copy(dst=y[i * P:(i + 1) * P, j * F:(j + 1) * F], src=u)
    return y


GRID = (2, 3)


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).normal(size=(2 * P, 3 * F)).astype(np.float32)}


def reference(x):
    block = np.repeat(np.repeat(np.arange(6, dtype=np.float32).reshape(2, 3), P, axis=0), F, axis=1)
    return {"y": x + block}
