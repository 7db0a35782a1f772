"""Fused softmax over rows, current NKI (``import nki``): the ``softmax`` scenario again.

Same instructions as ``softmax.py``, in the current API: every ISA call names its
destination, the output is returned as a ``shared_hbm`` tensor named ``y``, and the row
loop is unrolled at trace time (each iteration's tiles are new buffers).
"""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    tile = nl.tile_size.pmax
    for i in nl.affine_range(rows // tile):
        xt = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * tile:(i + 1) * tile, :])
        neg_max = nl.ndarray((tile, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.max, data=xt, axis=1, negate=True, keepdims=True)
        e = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=xt, bias=neg_max)
        total = nl.ndarray((tile, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=total, op=nl.add, data=e, axis=1, keepdims=True)
        yt = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=yt, data=e, op0=nl.divide, operand0=total, engine=nisa.engine.vector)
        nisa.dma_copy(dst=y[i * tile:(i + 1) * tile, :], src=yt, engine=nisa.engine.scalar)
    return y


def reference(x):
    """numpy: row softmax of ``x``."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}
