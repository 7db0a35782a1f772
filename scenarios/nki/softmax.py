"""Fused softmax over rows, legacy NKI (the ``softmax`` scenario written as an NKI kernel).

Per 128-row tile: load, negated row max (DVE), ``exp(x - max)`` with the max as a
per-partition bias (ACT), row sum (DVE), divide by the sum (DVE), store.  The tiles are
created inside the ``affine_range`` body, so the compiler may multi-buffer them.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def softmax(x, y):
    rows, cols = x.shape
    tile = nl.tile_size.pmax
    for i in nl.affine_range(rows // tile):
        xt = nl.load(x[i * tile:(i + 1) * tile, :])
        neg_max = nisa.tensor_reduce(nl.max, xt, axis=(1,), negate=True, keepdims=True)
        e = nisa.activation(op=nl.exp, data=xt, bias=neg_max)
        total = nisa.tensor_reduce(nl.add, e, axis=(1,), keepdims=True)
        yt = nisa.tensor_scalar(e, nl.divide, total, engine=nisa.vector_engine)
        nl.store(y[i * tile:(i + 1) * tile, :], value=yt)


def reference(x):
    """numpy: row softmax of ``x`` (float64 inside, float32 out)."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}
