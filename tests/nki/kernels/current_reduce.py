"""Reduction group, current NKI: ``nisa.tensor_reduce(dst, op, data, axis)`` over one and
over two free axes of a 3-D tile, ``nisa.activation_reduce`` and ``nl.max`` / ``nl.sum``."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_stats(x):
    P, a, b = x.shape
    inner = nl.ndarray((P, a), dtype=nl.float32, buffer=nl.shared_hbm, name="inner")
    total = nl.ndarray((P, 3), dtype=nl.float32, buffer=nl.shared_hbm, name="total")
    t = nl.ndarray((P, a, b), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    per_row = nl.ndarray((P, a), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=per_row, op=nl.max, data=t, axis=2)
    nisa.dma_copy(dst=inner, src=per_row)
    res = nl.ndarray((P, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=res[:, 0:1], op=nl.add, data=t, axis=(1, 2), keepdims=True)
    squares = nl.ndarray((P, a), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(dst=squares, op=nl.square, data=per_row, reduce_op=nl.add, reduce_res=res[:, 1:2])
    nisa.tensor_copy(dst=res[:, 2:3], src=nl.sum(nl.max(t, axis=2), axis=1, keepdims=True))
    nisa.dma_copy(dst=total, src=res)
    return inner, total


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).uniform(-1, 1, (128, 4, 64)).astype(np.float32)}


def reference(x):
    z = x.astype(np.float64)
    inner = z.max(axis=2)
    total = np.stack([z.sum(axis=(1, 2)), (inner ** 2).sum(1), inner.sum(1)], axis=1)
    return {"inner": inner.astype(np.float32), "total": total.astype(np.float32)}
