"""RMSNorm fused with a QKV projection, legacy NKI with direct allocation (the
``allocated_fused_linear`` scenario; nki-samples' ``allocated_fused_rms_norm_qkv``).

Every SBUF tile sits at the byte offset the kernel computes by hand (from byte 260 on;
the sample keeps an identity and a bias tile below), PSUM at banks 0 and 7.  The input
rows are double buffered over the interleave group ``g`` (``num_free_tiles=(2,)``), every
intermediate has one slot, so only the next row tile's load overlaps this one's compute.
The PE transposes are written with ``nc_transpose`` (the sample issues the identity
matmul itself, so it needs no identity tile here) and the activations' zero bias is the
default.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

PMAX, FMAX = 128, 512
EPS = 1e-6
BASE = 260


@nki.jit
def allocated_fused_linear(hidden, weights, out):
    seq, dim = hidden.shape
    _, head = weights.shape
    m_blocks, slices = dim // PMAX, dim // FMAX
    bf16, f32 = nl.bfloat16, nl.float32
    in_bufs = nl.ndarray((2, nl.par_dim(PMAX), dim), dtype=bf16,
                         buffer=ncc.sbuf.mod_alloc(base_addr=BASE, num_free_tiles=(2,)))
    act = nl.ndarray((nl.par_dim(PMAX), dim), dtype=f32, buffer=ncc.sbuf.mod_alloc(base_addr=BASE + 2 * dim * 2))
    square_sum = nl.ndarray((nl.par_dim(PMAX), 1), dtype=f32,
                            buffer=ncc.sbuf.mod_alloc(base_addr=BASE + 2 * dim * 2 + dim * 4))
    out_tile = nl.ndarray((nl.par_dim(PMAX), dim), dtype=bf16,
                          buffer=ncc.sbuf.mod_alloc(base_addr=BASE + 2 * dim * 2 + (dim + 1) * 4))
    output_sbuf = nl.ndarray((nl.par_dim(PMAX), head), dtype=bf16,
                             buffer=ncc.sbuf.mod_alloc(base_addr=BASE + 3 * dim * 2 + (dim + 1) * 4))
    w_buf = nl.ndarray((m_blocks, nl.par_dim(PMAX), head), dtype=bf16,
                       buffer=ncc.sbuf.mod_alloc(base_addr=BASE + (3 * dim + FMAX) * 2 + (dim + 1) * 4,
                                                 num_free_tiles=(m_blocks,)))
    transpose_ps = nl.ndarray((nl.par_dim(PMAX), 4 * PMAX), dtype=f32, buffer=ncc.psum.mod_alloc(base_bank=0))
    res_ps = nl.ndarray((nl.par_dim(PMAX), head), dtype=f32, buffer=ncc.psum.mod_alloc(base_bank=7))
    # the activations' bias (err_bias_tensor_must_be_specified_in_allocation), after the identity's 256 bytes
    zero = nl.ndarray((nl.par_dim(PMAX), 1), dtype=f32, buffer=ncc.sbuf.mod_alloc(base_addr=256))
    zero[...] = nisa.memset(shape=(PMAX, 1), value=0.0, dtype=f32)

    for wm in nl.affine_range(m_blocks):
        w_buf[wm] = nl.load(weights[wm * PMAX:(wm + 1) * PMAX, :])
    for i in nl.affine_range(seq // (2 * PMAX)):
        for g in nl.affine_range(2):
            row = 2 * i + g
            in_bufs[g] = nl.load(hidden[row * PMAX:(row + 1) * PMAX, :])
            act[...] = nisa.activation_reduce(op=nl.square, data=in_bufs[g], reduce_op=nl.add,
                                              reduce_res=square_sum[...], bias=zero)
            square_sum[...] = nisa.tensor_scalar(square_sum, nl.multiply, 1.0 / dim, op1=nl.add, operand1=EPS,
                                                 engine=nisa.vector_engine)
            square_sum[...] = nisa.activation(op=nl.rsqrt, data=square_sum, bias=zero)
            for m in nl.affine_range(slices):
                out_tile[:, m * FMAX:(m + 1) * FMAX] = nisa.tensor_scalar(
                    in_bufs[g, :, m * FMAX:(m + 1) * FMAX], nl.multiply, square_sum, engine=nisa.vector_engine)
                for j in nl.affine_range(4):
                    block = 4 * m + j
                    transpose_ps[:, j * PMAX:(j + 1) * PMAX] = nisa.nc_transpose(
                        out_tile[:, block * PMAX:(block + 1) * PMAX], engine=nisa.tensor_engine)
                out_tile[:, m * FMAX:(m + 1) * FMAX] = nisa.tensor_copy(transpose_ps, engine=nisa.scalar_engine)
            res_ps[...] = nisa.nc_matmul(out_tile[:, 0:PMAX], w_buf[0])
            for k in nl.affine_range(m_blocks - 1):
                res_ps += nisa.nc_matmul(out_tile[:, (k + 1) * PMAX:(k + 2) * PMAX], w_buf[k + 1])
            output_sbuf[...] = nisa.tensor_copy(res_ps, engine=nisa.scalar_engine)
            nl.store(out[row * PMAX:(row + 1) * PMAX, :], value=output_sbuf)


def reference(hidden, weights):
    """numpy: RMS-normalized rows (rounded to bf16, the matmul operand) times ``weights``."""
    bf16 = hidden.dtype
    x, w = hidden.astype(np.float64), weights.astype(np.float64)
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    normalized = (x * rstd).astype(bf16).astype(np.float64)
    return {"out": (normalized @ w).astype(np.float32).astype(bf16)}
