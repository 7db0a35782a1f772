"""Matmul / transpose group, current NKI: ``nisa.nc_matmul(dst, stationary, moving,
accumulate=...)`` over K into one PSUM tile, ``nisa.tensor_copy`` out of PSUM,
``nisa.nc_transpose(dst, data)`` on PE and on DVE (``engine=``), ``nl.tile_size`` names."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_then_transpose(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    out_t = nl.ndarray((N, M), dtype=nl.float32, buffer=nl.shared_hbm, name="out_t")
    ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in range(K // P):
        a = nl.ndarray((P, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        b = nl.ndarray((P, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * P:(k + 1) * P, :])
        nisa.dma_copy(dst=b, src=rhs[k * P:(k + 1) * P, :])
        nisa.nc_matmul(dst=ps, stationary=a, moving=b, accumulate=k > 0)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps, engine=nisa.engine.vector)
    nisa.dma_copy(dst=out, src=res)
    tp = nl.ndarray((N, M), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=tp, data=res, engine=nisa.engine.tensor)
    res_t = nl.ndarray((N, M), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res_t, src=tp, engine=nisa.engine.scalar)
    small = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_transpose(dst=small, data=res_t[0:32, 0:32], engine=nisa.engine.vector)
    nisa.tensor_copy(dst=res_t[0:32, 0:32], src=small, engine=nisa.engine.vector)
    nisa.dma_copy(dst=out_t, src=res_t)
    return out, out_t


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"lhsT": rng.uniform(-1, 1, (384, 64)).astype(np.float32),
            "rhs": rng.uniform(-1, 1, (384, 128)).astype(np.float32)}


def reference(lhsT, rhs):
    out = (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)
    out_t = out.T.copy()
    out_t[0:32, 0:32] = out_t[0:32, 0:32].T.copy()
    return {"out": out, "out_t": out_t}
