"""A loop over more blocks than a PSUM tensor has, the ones past its last masked off
(nki-samples' blockwise matmul on two cores: ``ps[h_j] += nc_matmul(..., mask=(h_j < n))``)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def four_of_eight_blocks(a, b, limit=4):  # a (128, 128), b (128, 4096): out = a.T @ b[:, :2048]
    out = nl.ndarray((128, 2048), dtype=np.float32, buffer=nl.shared_hbm)
    a_sb, b_sb = nl.load(a), nl.load(b)
    ps = nl.zeros((4, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
    for h in nl.affine_range(8):
        ps[h, 0:128, 0:512] += nisa.nc_matmul(a_sb, b_sb[0:128, nl.ds(512 * h, 512)], mask=(h < limit))
    for h in nl.affine_range(4):
        nl.store(out[0:128, nl.ds(512 * h, 512)], nl.copy(ps[h]))
    return out
