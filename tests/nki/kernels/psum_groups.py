"""PSUM accumulation groups opened on ``nl.zeros``: ``out[M, N] = lhsT[K, M]^T @ rhs[K, N]``
accumulated in one PSUM tile, spelled four ways.  In the first two the zeros are only ever
accumulated into by matmuls (the first matmul opens the group); in the last two they are not
(only half the tile is accumulated into, or the zeros are read first), so they stay."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

P, M, N = 128, 128, 512


@nki.jit
def kept_loop(lhsT, rhs, out):
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(lhsT.shape[0] // P):
        a = nl.load(lhsT[k * P:(k + 1) * P, :])
        b = nl.load(rhs[k * P:(k + 1) * P, :])
        acc += nl.matmul(a, b, transpose_x=True)
    nl.store(out, value=nl.copy(acc))


@nki.jit
def unrolled_loop(lhsT, rhs, out):
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    for k in nl.static_range(lhsT.shape[0] // P):  # unrolled by the trace: traced once per k
        a = nl.load(lhsT[k * P:(k + 1) * P, :])
        b = nl.load(rhs[k * P:(k + 1) * P, :])
        acc += nl.matmul(a, b, transpose_x=True)
    nl.store(out, value=nl.copy(acc))


@nki.jit
def half_the_tile(lhsT, rhs, out):
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(lhsT.shape[0] // P):
        a = nl.load(lhsT[k * P:(k + 1) * P, :])
        b = nl.load(rhs[k * P:(k + 1) * P, 0:N // 2])
        acc[:, 0:N // 2] += nl.matmul(a, b, transpose_x=True)
    nl.store(out, value=nl.copy(acc))


@nki.jit
def zeros_read_first(lhsT, rhs, out):
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    before = nl.copy(acc)
    for k in nl.affine_range(lhsT.shape[0] // P):
        a = nl.load(lhsT[k * P:(k + 1) * P, :])
        b = nl.load(rhs[k * P:(k + 1) * P, :])
        acc += nl.matmul(a, b, transpose_x=True)
    nl.store(out, value=nl.add(nl.copy(acc), before))


def reference(lhsT, rhs, half=False):
    product = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    if half:
        product[:, N // 2:] = 0
    return {"out": product.astype(np.float32)}
