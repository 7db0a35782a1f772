"""More constructs of public kernels (tests/nki/test_wild_forms_more.py): unary ALU operators in
a tensor_scalar slot, the Scalar Engine's reduce registers chained across activations, one
dynamic index into a middle dimension, PSUM tiles of a kept loop's inner loops, and loop bodies
of the wrong arity."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np
import neuronxcc.nki.language as legacy_nl
import neuronxcc.nki.isa as legacy_nisa
from neuronxcc import nki as legacy_nki


@nki.jit
def unary_alu(x):
    """rsqrt (GpSimd), reciprocal and logical_not as tensor_scalar operators."""
    out = nl.ndarray((3, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    for k, (op, engine) in enumerate(((nl.rsqrt, nisa.gpsimd_engine), (nl.reciprocal, None),
                                      (nl.logical_not, None))):
        r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        if engine is None:
            nisa.tensor_scalar(dst=r, data=t, op0=op, operand0=0.0)
        else:
            nisa.tensor_scalar(dst=r, data=t, op0=op, operand0=0.0, engine=engine)
        nisa.dma_copy(dst=out[k], src=r)
    return out


@nki.jit
def rsqrt_on_vector(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.rsqrt, operand0=0.0, engine=nisa.vector_engine)
    return t


@nki.jit
def act_register_chain(x):
    """Row sums chained in ACT's reduce registers: two halves; a sum kept in the registers only,
    then one more on top; a reset, then two."""
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=d[:, 0:32], op=nl.copy, data=t[:, 0:32], reduce_op=nl.add,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=s[:, 0:1])
    nisa.activation(dst=d[:, 32:64], op=nl.copy, data=t[:, 32:64], reduce_op=nl.add,
                    reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=s[:, 1:2])
    nisa.activation(dst=d, op=nl.copy, data=t, reduce_op=nl.add)  # kept in the registers only
    nisa.activation(dst=d, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce,
                    reduce_res=s[:, 2:3])
    nisa.activation(dst=d, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reset)
    nisa.activation(dst=d, op=nl.exp, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.activation(dst=d, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce,
                    reduce_res=s[:, 3:4])
    nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def reduce_before_any(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=t, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=s)
    return s


@legacy_nki.jit
def pick_rows(data, idx):
    """out[k] = data[:, idx[0, k], :]: one index read from SBUF selects a middle coordinate."""
    P, N, F = data.shape
    K = idx.shape[1]
    out = legacy_nl.ndarray((K, P, F), dtype=data.dtype, buffer=legacy_nl.shared_hbm)
    idx_sb = legacy_nl.load(idx, dtype=legacy_nl.int32)
    for k in legacy_nl.sequential_range(K):
        t = legacy_nl.load(data[:, idx_sb[0, k]])
        legacy_nl.store(out[k], t)
    return out


@legacy_nki.jit
def transposed_blocks(x):
    """Every 128-column block of x[a, r] transposed; the a loop kept, r unrolled, one full PSUM
    bank per inner iteration: more tiles than banks, each private to its stretch of an a."""
    A, R, P, F = x.shape
    out = legacy_nl.ndarray((A, R, P, F), dtype=x.dtype, buffer=legacy_nl.shared_hbm)
    for a in legacy_nl.affine_range(A):
        for r in legacy_nl.static_range(R):
            xt = legacy_nl.load(x[a, r])
            for i in legacy_nl.affine_range(F // 512):
                t = legacy_nl.ndarray((128, 512), dtype=np.float32, buffer=legacy_nl.psum)
                for j in legacy_nl.affine_range(4):
                    t[:, legacy_nl.ds(j * 128, 128)] = legacy_nisa.nc_transpose(
                        xt[:, legacy_nl.ds(i * 512 + j * 128, 128)])
                legacy_nl.store(out[a, r, :, legacy_nl.ds(i * 512, 512)], legacy_nl.copy(t, dtype=x.dtype))
    return out


@nki.jit
def fori_body_without_index(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)

    def body():
        nisa.dma_copy(dst=t, src=x)

    nl.fori_loop(0, 2, body)
    return t


@nki.jit
def scaled(x, factor):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def pick_rows_ds(data, idx):
    """The same with the current API's nl.ds(tile, 1): a one-element SBUF tile as a runtime start."""
    P, N, F = data.shape
    K = idx.shape[1]
    out = nl.ndarray((K, P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    for k in range(K):
        sel = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=sel, src=idx[0:1, k:k + 1])
        t = nl.ndarray((P, 1, F), dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=data[:, nl.ds(sel, 1), :])
        nisa.dma_copy(dst=out[k:k + 1].reshape((P, 1, F)), src=t)
    return out


@nki.jit
def selects(x, hbm, idx, rows):
    """A column of an SBUF tile and a slab of an HBM tensor picked by one-element tiles
    (NkiTensor.select with a tile), and HBM rows gathered per partition (vector_select)."""
    out = nl.ndarray((3, 128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    i = nl.ndarray((1, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    column = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=column, src=t.select(dim=1, index=i).expand_dim(1))
    wide = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=wide, src=column.broadcast(1, 16))
    nisa.dma_copy(dst=out[0], src=wide)
    slab = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=slab, src=hbm.select(0, i))
    nisa.dma_copy(dst=out[1], src=slab)
    r = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=r, src=rows)
    gathered = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=gathered, src=hbm.reshape((4 * 128, 16)).vector_select(0, r))
    nisa.dma_copy(dst=out[2], src=gathered)
    return out


@legacy_nki.jit
def paged_transposed(cache, table):
    """vLLM's paged-attention load: cache[tab[j, 0], :, head, :], a one-element tile as a
    block number, loaded into a 2-D tile and transposed."""
    NB, bs, H, d = cache.shape
    (n,) = table.shape
    out = legacy_nl.ndarray((n, d, bs), dtype=cache.dtype, buffer=legacy_nl.shared_hbm)
    tab = legacy_nl.ndarray((legacy_nl.par_dim(n), 1), dtype=legacy_nl.int32, buffer=legacy_nl.sbuf)
    i_p = legacy_nl.arange(n)[:, None]
    tab[i_p, 0] = legacy_nl.load(table[i_p])
    for j in legacy_nl.affine_range(n):
        legacy_nl.store(out[j], legacy_nl.transpose(legacy_nl.load(cache[tab[j, 0], :, 1, :])))
    return out


@nki.jit
def dve_register_chain(x):
    """tensor_scalar_reduce through the DVE accumulator: two halves summed (the first kept in the
    accumulator only); a maximum started from reset."""
    out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=d[:, 0:32], data=t[:, 0:32], op0=nl.multiply, operand0=2.0, reduce_op=nl.add,
                              reduce_res=None, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.tensor_scalar_reduce(dst=d[:, 32:64], data=t[:, 32:64], op0=nl.multiply, operand0=2.0, reduce_op=nl.add,
                              reduce_res=s[:, 0:1], reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.tensor_scalar_reduce(dst=d, data=t, op0=nl.add, operand0=0.0, reduce_op=nl.maximum,
                              reduce_cmd=nisa.reduce_cmd.reset)
    nisa.tensor_scalar_reduce(dst=d, data=t, op0=nl.subtract, operand0=1.0, reduce_op=nl.maximum,
                              reduce_res=s[:, 1:2], reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.dma_copy(dst=out, src=s)
    return out
