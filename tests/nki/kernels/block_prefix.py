"""``t[h]`` of a tensor with two block dimensions before its partition dimension: the block
indices still to come.  nki-samples' flash-attention backward reads its dtype
(``compute_rowsum(dy_o_sum=dy_o_sum[i_q_head])`` then ``dy_o_sum.dtype``)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_sums_through_a_prefix(a):  # a (2, 3, 128, 64): out[h, i] = a[h, i].sum(axis=1)
    out = nl.ndarray((2, 3, 128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((2, 3, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    for h in nl.affine_range(2):
        heads = buf[h]
        assert heads.shape == (3, 128, 1) and heads.ndim == 3 and heads.itemsize == 4
        for i in nl.affine_range(3):
            heads[i, :, 0] = nisa.tensor_reduce(np.add, data=nl.load(a[h, i]), axis=(1,), dtype=heads.dtype)
            nl.store(out[h, i], value=buf[h, i])
    return out


@nki.jit
def reshape_of_a_prefix(a):
    buf = nl.ndarray((2, 3, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    return buf[0].reshape((384, 1))
