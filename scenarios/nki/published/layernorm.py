"""The two LayerNorm kernels of the NKI LayerNorm tutorial (legacy API), written again:
``y = (x - mean) / sqrt(var + eps) * gamma + beta`` over the rows of a 2-D fp32 tensor, rows
in tiles of 128 partitions, the last tile masked when the row count is not a multiple of 128.

* :func:`layernorm_v1`: language ops only: ``nl.mean`` of ``x`` and of ``nl.square(x)``,
  ``var = E[x^2] - mean^2``, ``(x - mean) * rsqrt(var + eps)``, then ``* gamma + beta``;
* :func:`layernorm_v2`: ``bn_stats`` per 512-column chunk (the last one masked) and
  ``bn_aggr`` for mean and variance, shift and scale as one two-operator ``tensor_scalar``.

``gamma`` and ``beta`` are loaded once as [1, cols] rows and broadcast to 128 partitions on
PE (a ones matmul per 512-column chunk, evicted to SBUF): the lowering the architecture guide
gives for a partition broadcast (``broadcast_to`` of an SBUF tile).  The tutorial times both
at (300, 1000) on trn1 (``bench/bench_published.py``).
"""

import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-5
P = 128  # nl.tile_size.pmax
CHUNK = 512  # nl.tile_size.bn_stats_fmax, and one PSUM bank of fp32


def _broadcast_rows(row, cols):
    """``row`` [1, cols] (SBUF) on all 128 partitions: a K = 1 ones matmul per chunk."""
    ones = nl.ones((1, P), dtype=nl.float32)
    wide = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
    for c in nl.static_range(0, cols, CHUNK):
        width = min(CHUNK, cols - c)
        part = nisa.nc_matmul(ones, row[:, c:c + width])
        wide[:, c:c + width] = nl.copy(part)
    return wide


def _params(gamma, beta, cols):
    g = nl.load(gamma.reshape((1, cols)))
    b = nl.load(beta.reshape((1, cols)))
    return _broadcast_rows(g, cols), _broadcast_rows(b, cols)


@nki.jit
def layernorm_v1(x, gamma, beta, y):
    rows, cols = x.shape
    g_all, b_all = _params(gamma, beta, cols)
    ip = nl.arange(P)[:, None]
    jf = nl.arange(cols)[None, :]
    for i in nl.affine_range(math.ceil(rows / P)):
        live = i * P + ip < rows
        xt = nl.load(x[i * P + ip, jf], mask=live)
        mean = nl.mean(xt, axis=1, keepdims=True)
        var = nl.mean(nl.square(xt), axis=1, keepdims=True) - mean * mean
        normed = (xt - mean) * nl.rsqrt(var + EPS)
        out = normed * g_all + b_all
        nl.store(y[i * P + ip, jf], value=out, mask=live)


@nki.jit
def layernorm_v2(x, gamma, beta, y):
    rows, cols = x.shape
    g_all, b_all = _params(gamma, beta, cols)
    ip = nl.arange(P)[:, None]
    jf = nl.arange(cols)[None, :]
    jc = nl.arange(CHUNK)[None, :]
    j6 = nl.arange(6)[None, :]
    chunks = math.ceil(cols / CHUNK)
    for i in nl.affine_range(math.ceil(rows / P)):
        live = i * P + ip < rows
        xt = nl.load(x[i * P + ip, jf], mask=live)
        stats = nl.ndarray((P, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(chunks):
            stats[ip, j * 6 + j6] = nisa.bn_stats(xt[ip, j * CHUNK + jc], mask=(j * CHUNK + jc < cols),
                                                  dtype=nl.float32)
        mean_var = nisa.bn_aggr(stats)
        rstd = nl.rsqrt(mean_var[:, 1:2] + EPS)
        normed = nisa.tensor_scalar(xt, op0=np.subtract, operand0=mean_var[:, 0:1], op1=np.multiply,
                                    operand1=rstd)
        out = normed * g_all + b_all
        nl.store(y[i * P + ip, jf], value=out, mask=live)


def reference(x, gamma, beta):
    """numpy: ``(x - mean) / sqrt(var + eps) * gamma + beta`` (biased variance)."""
    xf = x.astype(np.float64)
    mean, var = xf.mean(axis=1, keepdims=True), xf.var(axis=1, keepdims=True)
    out = (xf - mean) / np.sqrt(var + EPS) * gamma.astype(np.float64) + beta.astype(np.float64)
    return {"y": out.astype(np.float32)}
