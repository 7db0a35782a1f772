"""A legacy ``nisa.nc_matmul`` whose mask bounds the stationary operand's free index, M
(nki-samples' blockwise matmul: ``mask=(idx < I_TP)`` on the weights' columns): the result's
partitions are bounded, the moving operand and the result's columns are not."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def columns_of_a_ragged_stationary(a, b):  # a (128, 192) [K, M], b (128, 128) [K, N]: out = a.T @ b
    out = nl.ndarray((192, 128), dtype=np.float32, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.sbuf)
    a_sb[:, 0:192] = nl.load(a)
    b_sb = nl.load(b)
    for i in nl.affine_range(2):
        ps = nl.zeros((128, 128), dtype=np.float32, buffer=nl.psum)
        idx = nl.arange(128)[None, :] + 128 * i  # the stationary's columns: the result's rows
        ps[0:128, 0:128] += nisa.nc_matmul(a_sb[nl.arange(128)[:, None], idx], b_sb[0:128, 0:128], mask=(idx < 192))
        ip = nl.arange(128)[:, None]
        nl.store(out[128 * i + ip, nl.arange(128)[None, :]], nl.copy(ps), mask=(128 * i + ip < 192))
    return out
