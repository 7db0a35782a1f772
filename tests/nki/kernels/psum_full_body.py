"""A loop body whose PSUM tiles fill the eight banks (the fused-attention tutorial's
``qk_res_buf`` at seqlen 4096): a block array of eight one-bank tiles declared in an affine
loop of two iterations.  Rings of two buffers would need sixteen banks; the iterations take
turns in one placement each."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_max_of_products(q, k):  # q (128, 256), k (128, 4096): out[r] = max over 4096 of (q.T @ k)[r]
    out = nl.ndarray((256, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.load(q)
    k_sb = nl.load(k)
    for i in nl.affine_range(2):
        qk = nl.ndarray((8, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(8):
            qk[j, :, :] = nisa.nc_matmul(stationary=q_sb[:, nl.ds(i * 128, 128)], moving=k_sb[:, nl.ds(j * 512, 512)])
        maxima = nl.ndarray((nl.par_dim(128), 8), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(8):
            maxima[:, j] = nisa.tensor_reduce(op=nl.max, data=qk[j], axis=1)
        nl.store(out[nl.ds(i * 128, 128), :], value=nisa.tensor_reduce(op=nl.max, data=maxima, axis=1, keepdims=True))
    return out
