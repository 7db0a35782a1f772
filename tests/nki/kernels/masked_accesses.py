"""``t[...][cond]``: operands that carry their own mask, as neuronx-cc prints NKI (and the
neuron-team kernels of nki-samples are written): the call's mask= takes them."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def elementwise(a, b):  # (128, 64) each: out[:90, :40] = 2 * (a + b), else 0
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(64)[None, :]
    t = nl.zeros((128, 64), dtype=nl.float32)
    t[i_p, i_f] = nl.load(a[i_p, i_f][i_f < 40])
    s = nl.zeros((128, 64), dtype=nl.float32)
    s[i_p, i_f] = nl.add(t[i_p, i_f][i_p < 100], nl.load(b)[i_p, i_f][i_f < 40])
    for k in nl.affine_range(2):
        s[...][k < 1] = nl.multiply(s, 2.0)  # a condition of the loop alone: the first iteration runs
    o = nl.zeros((128, 64), dtype=nl.float32)
    o[i_p, i_f] = nl.copy(s[i_p, i_f][nl.arange(128)[:, None] < 90])  # the printer's fresh arange
    nl.store(out, value=o)
    return out


@nki.jit
def ragged_contraction(a, b):  # a (192, 128) [K, M], b (192, 512) [K, N]: out = a.T @ b
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((2, nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    b_sb = nl.ndarray((2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    for k in nl.affine_range(2):
        ip, i_m, i_n = nl.arange(128)[:, None], nl.arange(128)[None, :], nl.arange(512)[None, :]
        a_sb[k, ip, i_m] = nl.load(a[128 * k + ip, i_m], mask=(128 * k + ip < 192))
        b_sb[k, ip, i_n] = nl.load(b[128 * k + ip, i_n], mask=(128 * k + ip < 192))
    ps = nl.zeros((128, 512), dtype=np.float32, buffer=nl.psum)
    for k in nl.affine_range(2):  # the moving operand's rows bound: the contraction, both operands'
        ps[0:128, 0:512] += nisa.nc_matmul(
            a_sb[k, 0:128, 0:128],
            b_sb[k, nl.arange(128)[:, None], nl.arange(512)[None, :]][-nl.arange(128)[:, None] - 128 * k + 191 >= 0])
    nl.store(out, nl.copy(ps))
    return out


@nki.jit
def result_rows(a, b):  # a (128, 128) [K, M], b (128, 128) [K, N]: out[:m] = (a.T @ b)[:m], else 0
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    ps = nl.zeros((128, 128), dtype=np.float32, buffer=nl.psum)
    # mask= with an arange of its own, at the first place: the result's partitions, M
    ps[0:128, 0:128] += nisa.nc_matmul(nl.load(a), nl.load(b), mask=(nl.arange(128)[:, None] < 72))
    nl.store(out, nl.copy(ps))
    return out


@nki.jit
def transpose_rows(a):  # a (128, 128): out[:, :72] = a[:72].T, else 0
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    a_sb = nl.load(a)
    t = nl.zeros((128, 128), dtype=np.float32)
    p_dim, f_dim = nl.mgrid[0:128, 0:128]
    # the destination indexed by the source's own iterators: the mask bounds the source's rows,
    # which are the result's columns
    t[p_dim, f_dim] = nisa.nc_transpose(a_sb[p_dim, f_dim], mask=(p_dim < 72))
    nl.store(out, nl.copy(t))
    return out


@nki.jit
def masked_attribute(a):
    view = nl.load(a)[nl.arange(128)[:, None], nl.arange(64)[None, :]][nl.arange(128)[:, None] < 9]
    return view.shape


@nki.jit
def masked_arithmetic(a):
    t = nl.load(a)
    return t[nl.arange(128)[:, None], nl.arange(64)[None, :]][nl.arange(128)[:, None] < 9] + 1.0


@nki.jit
def masked_without_mask_keyword(a):
    out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, nl.zeros_like(t[nl.arange(128)[:, None], nl.arange(64)[None, :]][nl.arange(128)[:, None] < 9]))
    return out


@nki.jit
def mask_before_index(a):
    out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, nl.copy(t[nl.arange(128)[:, None] < 9][nl.arange(128)[:, None], nl.arange(64)[None, :]]))
    return out


@nki.jit
def moving_second_free_axis(w, x, sliced=False):  # w (9, 5) [K, M], x (9, 4, 4) [K, a, b]: out = w.T x, b < 3
    out = nl.ndarray((5, 4, 4), dtype=np.float32, buffer=nl.shared_hbm)
    ps = nl.zeros((nl.par_dim(5), 4, 4), dtype=np.float32, buffer=nl.psum)
    i_k, i_a, i_b = nl.arange(9)[:, None, None], nl.arange(4)[None, :, None], nl.arange(4)[None, None, :]
    moving = nl.load(x)[i_k, i_a, i_b][i_b < 3]  # the moving operand's second free axis: the result's third
    if sliced:
        ps[0:5, 0:4, 0:4] += nisa.nc_matmul(nl.load(w), moving)
    else:
        ps[nl.arange(5)[:, None, None], i_a, i_b] += nisa.nc_matmul(nl.load(w), moving)
    nl.store(out, nl.copy(ps))
    return out


@nki.jit
def whole_tile_transpose(a):  # a (100, 12) -> a.T: a 128-partition tile cut to 100 rows by the mask
    out = nl.ndarray((12, 100), dtype=np.float32, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(12)[None, :]
    x = nl.load(a[ip, jf], mask=(ip < 100))
    xt = nisa.nc_transpose(x, mask=(ip < 100) & (jf < 12))  # fresh indices of the source's shape
    it, jt = nl.arange(12)[:, None], nl.arange(128)[None, :]
    nl.store(out[it, jt], xt[it, jt], mask=(jt < 100))
    return out


@nki.jit
def reduce_kept_axis(a):  # a (16, 5, 10): out[:, :7] = a[:, :, :7].sum(axis=1), out[:, 7:] = 0
    out = nl.ndarray((16, 10), dtype=np.float32, buffer=nl.shared_hbm)
    i_p, i_w, i_f = nl.arange(16)[:, None, None], nl.arange(5)[None, :, None], nl.arange(10)[None, None, :]
    x = nl.load(a[i_p, i_w, i_f])
    r = nisa.tensor_reduce(np.add, x[i_p, i_w, i_f], axis=(1,), mask=(i_f < 7))  # its result: its own tile
    o = nl.zeros((16, 10), dtype=np.float32)
    o[...] = nl.copy(r[nl.arange(16)[:, None], nl.arange(10)[None, :]], mask=(nl.arange(10)[None, :] < 7))
    nl.store(out, o)
    return out


@nki.jit
def square_tile_transpose(a):  # a (128, 5) -> a.T: a (128, 128) tile cut to 5 columns by the mask
    out = nl.ndarray((5, 128), dtype=np.float32, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(128)[None, :]
    x = nl.load(a[ip, jf], mask=(jf < 5))
    xt = nisa.nc_transpose(x, mask=(ip < 128) & (jf < 5))  # the neuron-team convolution's output tiles
    it, jt = nl.arange(128)[:, None], nl.arange(128)[None, :]
    nl.store(out[it, jt], xt[it, jt], mask=(it < 5))
    return out
