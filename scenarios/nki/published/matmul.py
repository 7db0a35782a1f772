"""The four steps of the NKI matrix multiplication tutorial (legacy API, release 2.26), written
again: ``result[M, N] = lhsT[K, M]^T @ rhs[K, N]``, bf16 in, fp32 PSUM, bf16 out.

* :func:`matmul_tiled`: one 128 x 512 output tile per (m, n); both operand tiles loaded
  before every matmul (the tutorial's "original tiled" kernel, memory bound);
* :func:`matmul_hoisted`: the lhsT column of tiles loaded once per m, the rhs column once
  per (m, n) ("optimization 1");
* :func:`matmul_blocked`: 2 x 2 output tiles per block share their loads ("optimization 2");
* :func:`matmul_blocked_k`: blocks of 16 x 2 output tiles over 8 K tiles, PSUM partial sums
  added into SBUF result tiles across the K blocks (a ``sequential_range``), results packed to
  1024-wide rows before the store ("optimization 3"); :func:`matmul_blocked_k_open` is the
  same with every PSUM group opened by an overwriting matmul (a diagnostic variant).

The tutorial times them at ``[4096, 8192] @ [8192, 8192]`` on trn1 (``bench/bench_published.py``).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

TM = 128  # nl.tile_size.gemm_stationary_fmax
TK = 128  # nl.tile_size.pmax
TN = 512  # nl.tile_size.gemm_moving_fmax


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(a, b, transpose_x=True)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=out)
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        a_col = nl.ndarray((K // TK, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            a_col[k] = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
        for n in nl.affine_range(N // TN):
            b_col = nl.ndarray((K // TK, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TK):
                b_col[k] = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                acc += nl.matmul(a_col[k], b_col[k], transpose_x=True)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=out)
    return result


@nki.jit
def matmul_blocked(lhsT, rhs, BM=2, BN=2):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (BM * TM)):
        a_blk = nl.ndarray((BM, K // TK, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(BM):
            for k in nl.affine_range(K // TK):
                a_blk[i, k] = nl.load(lhsT[k * TK:(k + 1) * TK, (m * BM + i) * TM:(m * BM + i + 1) * TM])
        for n in nl.affine_range(N // (BN * TN)):
            b_blk = nl.ndarray((BN, K // TK, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for j in nl.affine_range(BN):
                for k in nl.affine_range(K // TK):
                    b_blk[j, k] = nl.load(rhs[k * TK:(k + 1) * TK, (n * BN + j) * TN:(n * BN + j + 1) * TN])
            for i in nl.affine_range(BM):
                for j in nl.affine_range(BN):
                    acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // TK):
                        acc += nl.matmul(a_blk[i, k], b_blk[j, k], transpose_x=True)
                    out = nl.copy(acc, dtype=result.dtype)
                    nl.store(result[(m * BM + i) * TM:(m * BM + i + 1) * TM,
                                    (n * BN + j) * TN:(n * BN + j + 1) * TN], value=out)
    return result


@nki.jit
def matmul_blocked_k(lhsT, rhs, BM=16, BN=2, BK=8):
    result = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    return _blocked_k(lhsT, rhs, result, BM, BN, BK, open_with_matmul=False)


@nki.jit
def matmul_blocked_k_open(lhsT, rhs, BM=16, BN=2, BK=8):
    """:func:`matmul_blocked_k` with each PSUM group opened by an overwriting matmul instead
    of ``nl.zeros`` then ``+=``: what the compiler must make of the tutorial's spelling, since
    the ISA leaves a matmul accumulating onto a memset bank undefined (a diagnostic variant:
    neuronsim's frontend lowers the tutorial's spelling to the same program)."""
    result = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    return _blocked_k(lhsT, rhs, result, BM, BN, BK, open_with_matmul=True)


def _blocked_k(lhsT, rhs, result, BM, BN, BK, open_with_matmul):
    # `result` is made by the kernel itself: the legacy API makes shared_hbm tensors only at
    # a kernel's top level (err_shared_hbm_must_in_kernel_level)
    K, M = lhsT.shape
    _, N = rhs.shape
    blocks_m = M // (BM * TM)
    for n in nl.affine_range(N // (BN * TN)):
        sums = nl.zeros((blocks_m, BM, BN, nl.par_dim(TM), TN), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kb in nl.sequential_range(K // (BK * TK)):
            b_blk = nl.ndarray((BK, nl.par_dim(TK), BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(BK):
                b_blk[k] = nl.load(rhs[(kb * BK + k) * TK:(kb * BK + k + 1) * TK, n * BN * TN:(n + 1) * BN * TN])
            for m in nl.affine_range(blocks_m):
                a_blk = nl.ndarray((BK, nl.par_dim(TK), BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(BK):
                    a_blk[k] = nl.load(lhsT[(kb * BK + k) * TK:(kb * BK + k + 1) * TK,
                                            m * BM * TM:(m + 1) * BM * TM])
                for j in nl.affine_range(BN):
                    for i in nl.affine_range(BM):
                        if open_with_matmul:
                            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                            acc[...] = nisa.nc_matmul(a_blk[0, :, i * TM:(i + 1) * TM],
                                                      b_blk[0, :, j * TN:(j + 1) * TN])
                            first = 1
                        else:
                            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                            first = 0
                        for k in nl.affine_range(BK - first):
                            acc += nisa.nc_matmul(a_blk[k + first, :, i * TM:(i + 1) * TM],
                                                  b_blk[k + first, :, j * TN:(j + 1) * TN])
                        sums[m, i, j] += acc
        for m in nl.affine_range(blocks_m):
            for i in nl.affine_range(BM):
                row = nl.ndarray((TM, BN * TN), dtype=sums.dtype, buffer=nl.sbuf)
                for j in nl.affine_range(BN):
                    row[:, j * TN:(j + 1) * TN] = nl.copy(sums[m, i, j])
                nl.store(result[(m * BM + i) * TM:(m * BM + i + 1) * TM, n * BN * TN:(n + 1) * BN * TN], value=row)
    return result


def reference(lhsT, rhs):
    """numpy: ``lhsT.T @ rhs`` rounded to the inputs' dtype."""
    product = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    return {"return0": product.astype(np.float32).astype(lhsT.dtype)}
