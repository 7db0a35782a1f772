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
