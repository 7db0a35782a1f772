"""LayerNorm with ``bn_stats`` / ``bn_aggr``, legacy NKI (the ``layernorm`` scenario; the
NKI LayerNorm tutorial's v2).

``gamma`` / ``beta`` are broadcast to 128 partitions once, above the row loop (a K = 1
ones matmul per 512-column half into one PSUM tile, evicted before the next half
overwrites it: a ``sequential_range``, the tile is shared by its iterations).  Per row
tile: ``bn_stats`` of each 512-column chunk into slices of one statistics tile,
``bn_aggr``, ``rsqrt(var + eps)`` on ACT, and ``(x - mean) * rstd`` as one two-operand
``tensor_scalar``.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-5


@nki.jit
def layernorm(x, gamma, beta, y):
    rows, cols = x.shape
    tile = nl.tile_size.pmax
    chunk = nl.tile_size.bn_stats_fmax
    halves = cols // chunk
    ones = nisa.memset((1, tile), 1.0, nl.float32, engine=nisa.vector_engine)
    param = nl.ndarray((1, cols), dtype=nl.float32, buffer=nl.sbuf)
    bcast = nl.ndarray((tile, chunk), dtype=nl.float32, buffer=nl.psum)
    g_b = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
    b_b = nl.ndarray((tile, cols), dtype=nl.float32, buffer=nl.sbuf)
    for source, target in ((gamma, g_b), (beta, b_b)):
        param[...] = nl.load(source.reshape((1, cols)))
        for h in nl.sequential_range(halves):
            bcast[...] = nisa.nc_matmul(ones, param[:, h * chunk:(h + 1) * chunk])
            target[:, h * chunk:(h + 1) * chunk] = nisa.tensor_copy(bcast, engine=nisa.scalar_engine)
    for i in nl.affine_range(rows // tile):
        xt = nl.load(x[i * tile:(i + 1) * tile, :])
        stats = nl.ndarray((tile, 6 * halves), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(halves):
            stats[:, j * 6:(j + 1) * 6] = nisa.bn_stats(xt[:, j * chunk:(j + 1) * chunk])
        mv = nisa.bn_aggr(stats)
        rstd = nisa.activation(op=nl.rsqrt, data=mv[:, 1:2], bias=EPS)
        yt = nisa.tensor_scalar(xt, nl.subtract, mv[:, 0:1], op1=nl.multiply, operand1=rstd,
                                engine=nisa.vector_engine)
        yt[...] = nisa.tensor_tensor(yt, g_b, op=nl.multiply)
        yt[...] = nisa.tensor_tensor(yt, b_b, op=nl.add)
        nl.store(y[i * tile:(i + 1) * tile, :], value=yt)


def reference(x, gamma, beta):
    """numpy: ``(x - mean) / sqrt(var + eps) * gamma + beta`` (biased variance)."""
    xf = x.astype(np.float64)
    mean, var = xf.mean(axis=1, keepdims=True), xf.var(axis=1, keepdims=True)
    out = (xf - mean) / np.sqrt(var + EPS) * gamma.astype(np.float64) + beta.astype(np.float64)
    return {"y": out.astype(np.float32)}
