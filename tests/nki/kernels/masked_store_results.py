"""A store's ``mask=`` under a call whose result does not line up with its operands: a
reduction of an ``nl.mgrid`` view (a CS149 pooling idiom, the last row tile partial) and a
matmul whose partitions are the stationary operand's free axis.  The mask is the store's: the
call computes its whole result and the store keeps the masked rows."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def pooled_rows(x):  # x: (128, 8, 6): the max over the last axis, rows 0..6 of 8 stored
    out = nl.ndarray((128, 7), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(2):
        tile = nl.load(x[:, t * 4:(t + 1) * 4, :])
        i0, i1, i2 = nl.mgrid[0:128, 0:4, 0:6]
        r = nl.max(tile[i0, i1, i2], axis=[2])
        j_p, j_h = nl.mgrid[0:128, 0:4]
        nl.store(out[j_p, t * 4 + j_h], value=r, mask=(t * 4 + j_h < 7))
    return out


@nki.jit
def product_rows(a, b):  # a: (128, 128) = lhsT, b: (128, 64): the first 100 rows of a.T @ b
    out = nl.ndarray((100, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    nl.store(out[i_p, i_f], value=nl.matmul(nl.load(a), nl.load(b), transpose_x=True), mask=(i_p < 100))
    return out


def pooled_reference(x):
    return x.max(axis=2)[:, :7]


def product_reference(a, b):
    return (a.T @ b)[:100]
