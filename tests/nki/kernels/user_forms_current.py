"""The current API's nc_matmul reading a PSUM tile the kernel placed there itself: refused,
as the nc_matmul page's "SBUF" operands say (the kernel places every tile)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_of_psum(x, w):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    w_sb = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    nisa.dma_copy(dst=w_sb, src=w)
    xt = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=xt, data=x_sb)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=xt, moving=w_sb)
    res = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def add_in_place(x):
    """Writes ``x + 1`` into ``x`` and returns it, and ``2x`` as a new tensor after it (an
    in-place kernel returns what it wrote, as a KV-cache update does)."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    twice = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=twice, data=t, op0=nl.multiply, operand0=2.0)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=x, src=t)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=twice)
    return x, out
