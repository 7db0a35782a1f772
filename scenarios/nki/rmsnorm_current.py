"""RMSNorm, current NKI (``import nki``): the ``rmsnorm`` scenario again, destination-first
ISA calls, the output returned, the row loop unrolled at trace time."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm(x, g):
    rows, cols = x.shape
    tile = nl.tile_size.pmax
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    g_sb = nl.ndarray((1, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_sb, src=g.reshape((1, cols)))
    ones = nl.ndarray((1, tile), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0, engine=nisa.engine.vector)
    for i in range(rows // tile):
        xt = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * tile:(i + 1) * tile, :])
        sq = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=xt)
        ssum = nl.ndarray((tile, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=ssum, op=nl.add, data=sq, axis=1, keepdims=True)
        inv_rms = nl.ndarray((tile, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv_rms, op=nl.rsqrt, data=ssum, scale=1.0 / cols, bias=EPS)
        out = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out, data=xt, op0=nl.multiply, operand0=inv_rms, engine=nisa.engine.vector)
        g_bcast = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=g_bcast, stationary=ones, moving=g_sb)
        nisa.tensor_tensor(dst=out, data1=out, data2=g_bcast, op=nl.multiply)
        nisa.dma_copy(dst=y[i * tile:(i + 1) * tile, :], src=out, engine=nisa.engine.scalar)
    return y


def reference(x, g):
    """numpy: ``x / sqrt(mean(x^2, -1) + eps) * g``."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    rms = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return {"y": (x / rms * g).astype(np.float32)}
