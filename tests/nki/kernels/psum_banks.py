"""A current-API kernel (NKI 0.4 on) whose PSUM tensor spans banks: one matmul into each bank's
slice of it, then one copy reading across all of them (as an MoE kernel of the Trainium MoE
challenge drains eight banks with one activation)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def banks_matmul(a, b):
    K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((K, M), dtype=a.dtype, buffer=nl.sbuf)
    b_sb = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sb, src=a)
    nisa.dma_copy(dst=b_sb, src=b)
    acc = nl.ndarray((M, N // 512, 512), dtype=nl.float32, buffer=nl.psum)
    for j in range(N // 512):
        nisa.nc_matmul(dst=acc[:, j, :], stationary=a_sb, moving=b_sb[:, j * 512:(j + 1) * 512])
    res = nl.ndarray((M, N // 512, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res.reshape((M, N)))
    return out


@nki.jit
def past_psum(a):
    acc = nl.ndarray((128, 9, 512), dtype=nl.float32, buffer=nl.psum)  # noqa: F841 - nine banks: PSUM has eight
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out


@nki.jit
def across_banks(a, b):
    acc = nl.ndarray((128, 2, 512), dtype=nl.float32, buffer=nl.psum)
    a_sb = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    b_sb = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sb, src=a)
    nisa.dma_copy(dst=b_sb, src=b)
    flat = acc.reshape((128, 1024))
    nisa.nc_matmul(dst=flat[:, 256:768], stationary=a_sb, moving=b_sb)  # half in each bank
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=flat)
    nisa.dma_copy(dst=out, src=res)
    return out
