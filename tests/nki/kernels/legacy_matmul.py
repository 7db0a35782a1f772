"""Matmul / transpose group, legacy NKI: the tiled-matmul tutorial's form (``nl.zeros`` in
PSUM, ``res += nl.matmul(..., transpose_x=True)`` over K in an ``affine_range``, ``nl.copy``
out of PSUM) and a PE transpose (``nisa.nc_transpose``) evicted with ``nl.copy``."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs, result):
    K, M = lhsT.shape
    _, N = rhs.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                res_psum += nl.matmul(lhsT_tile[...], rhs_tile[...], transpose_x=True)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)


@nki.jit
def pe_transpose(x, y):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    for i in nl.affine_range(rows // P):
        for j in nl.affine_range(cols // P):
            t = nl.load(x[i * P:(i + 1) * P, j * P:(j + 1) * P])
            tp = nisa.nc_transpose(t, engine=nisa.tensor_engine)
            out = nl.copy(tp, dtype=y.dtype)
            nl.store(y[j * P:(j + 1) * P, i * P:(i + 1) * P], value=out)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"lhsT": rng.uniform(-1, 1, (256, 128)).astype(np.float32),
            "rhs": rng.uniform(-1, 1, (256, 1024)).astype(np.float32),
            "result": np.zeros((128, 1024), np.float32)}


def transpose_inputs(seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, (256, 384)).astype(np.float32)
    return {"x": x, "y": np.zeros((384, 256), np.float32)}


def reference(lhsT, rhs):
    return {"result": (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)}


def transpose_reference(x):
    return {"y": np.ascontiguousarray(x.T)}
