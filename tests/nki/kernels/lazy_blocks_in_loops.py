"""PSUM arrays declared as neuronx-cc prints them, ``nl.zeros(..., lazy_initialization=True)``,
first used inside kept loops: each block is zeroed once, when first indexed, not in every
iteration of the loops around that first use."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def sums_over_an_inner_loop(a, b):  # a (3, 128, 128), b (3, 128, 512): out[n] = sum_k a[k].T @ b[k]
    out = nl.ndarray((2, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum, lazy_initialization=True)
    ip, jf = nl.arange(128)[:, None], nl.arange(512)[None, :]
    for n in nl.affine_range(2):
        for k in nl.affine_range(3):  # the accumulation group: one zeroing for its three matmuls
            acc[n, ip, jf] += nisa.nc_matmul(nl.load(a[k]), nl.load(b[k]))
        nl.store(out[n], value=nl.copy(acc[n, ip, jf], dtype=np.float32))
    return out


@nki.jit
def one_block_across_a_loop(a, b, lazy=True):  # a (128, 128), b (2, 128, 512)
    """A planted bug: the block is not indexed by ``n``, so iteration 1 adds onto iteration 0's
    sums (an affine loop carrying a PSUM accumulation)."""
    out = nl.ndarray((2, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((1, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum, lazy_initialization=lazy)
    ip, jf = nl.arange(128)[:, None], nl.arange(512)[None, :]
    at = nl.load(a)
    for n in nl.affine_range(2):
        acc[0, ip, jf] += nisa.nc_matmul(at, nl.load(b[n]))
        nl.store(out[n], value=nl.copy(acc[0, ip, jf], dtype=np.float32))
    return out
