"""RMSNorm, legacy NKI (the ``rmsnorm`` scenario; the NKI RMSNorm tutorial's structure).

``g`` is loaded once as a [1, cols] row and broadcast to 128 partitions on PE inside the
loop (``ones^T @ g``, a K = 1 matmul), as the tutorial does; the rows are scaled by
``rsqrt(mean(x^2) + eps)`` and multiplied in place by the PSUM broadcast.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm(x, g, y):
    rows, cols = x.shape
    tile = nl.tile_size.pmax
    g_sb = nl.load(g.reshape((1, cols)))
    ones = nisa.memset((1, tile), 1.0, nl.float32, engine=nisa.vector_engine)
    for i in nl.affine_range(rows // tile):
        xt = nl.load(x[i * tile:(i + 1) * tile, :])
        sq = nisa.activation(op=nl.square, data=xt)
        ssum = nisa.tensor_reduce(nl.add, sq, axis=(1,), keepdims=True)
        inv_rms = nisa.activation(op=nl.rsqrt, data=ssum, scale=1.0 / cols, bias=EPS)
        out = nisa.tensor_scalar(xt, nl.multiply, inv_rms, engine=nisa.vector_engine)
        g_bcast = nisa.nc_matmul(ones, g_sb)
        out[...] = nisa.tensor_tensor(out, g_bcast, op=nl.multiply)
        nl.store(y[i * tile:(i + 1) * tile, :], value=out)


def reference(x, g):
    """numpy: ``x / sqrt(mean(x^2, -1) + eps) * g``."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    rms = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return {"y": (x / rms * g).astype(np.float32)}
