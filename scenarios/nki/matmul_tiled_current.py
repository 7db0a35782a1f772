"""Tiled matmul with PSUM accumulation over K, current NKI (``import nki``).

The ``matmul_tiled`` scenario in the current API: ``nisa.nc_matmul(dst, stationary,
moving, accumulate=...)`` names its PSUM destination and whether it opens the group; the
output is returned (``name="result"``); loops are unrolled at trace time, and the two
operand buffers per input are created once per output tile, outside the K loop, so that K
tile ``k`` reuses buffer ``k mod 2`` as in the scenario.
"""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    tile = nl.tile_size.pmax
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm, name="result")
    for m in range(M // tile):
        sb_l = [nl.ndarray((tile, tile), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(2)]
        sb_r = [nl.ndarray((tile, N), dtype=rhs.dtype, buffer=nl.sbuf) for _ in range(2)]
        ps = nl.ndarray((tile, N), dtype=nl.float32, buffer=nl.psum)
        for k in range(K // tile):
            b = k % 2
            nisa.dma_copy(dst=sb_l[b], src=lhsT[k * tile:(k + 1) * tile, m * tile:(m + 1) * tile])
            nisa.dma_copy(dst=sb_r[b], src=rhs[k * tile:(k + 1) * tile, :], engine=nisa.engine.scalar)
            if b == 1:
                nisa.nc_matmul(dst=ps, stationary=sb_l[0], moving=sb_r[0], accumulate=k > 1)
                nisa.nc_matmul(dst=ps, stationary=sb_l[1], moving=sb_r[1], accumulate=True)
        sb_o = nl.ndarray((tile, N), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=sb_o, src=ps, engine=nisa.engine.vector)
        nisa.dma_copy(dst=result[m * tile:(m + 1) * tile, :], src=sb_o)
    return result


def reference(lhsT, rhs):
    """numpy: ``lhsT.T @ rhs`` rounded to bf16."""
    product = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    return {"result": product.astype(np.float32).astype(lhsT.dtype)}
