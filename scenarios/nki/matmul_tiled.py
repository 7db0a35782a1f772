"""Tiled matmul with PSUM accumulation over K, legacy NKI (the ``matmul_tiled`` scenario).

``result[M, N] = lhsT[K, M]^T @ rhs[K, N]``.  For each 128-row output tile the K tiles
stream in pairs through two operand buffers per input (K tile ``k`` in buffer ``k mod 2``),
so the load of K tile k+2 waits for matmul k only.  The first pair is peeled so that the
accumulation group opens with an overwriting ``nc_matmul`` (``ps[...] = ...``) and the
others add to it (``ps += ...``), as the tutorials' ISA kernels do.  DVE evicts the bank
to SBUF as bf16 and the tile is stored.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs, result):
    K, M = lhsT.shape
    _, N = rhs.shape
    tile = nl.tile_size.pmax
    for m in nl.affine_range(M // tile):
        sb_l = [nl.ndarray((tile, tile), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(2)]
        sb_r = [nl.ndarray((tile, N), dtype=rhs.dtype, buffer=nl.sbuf) for _ in range(2)]
        ps = nl.ndarray((tile, N), dtype=nl.float32, buffer=nl.psum)
        for b in range(2):
            sb_l[b][...] = nl.load(lhsT[b * tile:(b + 1) * tile, m * tile:(m + 1) * tile])
            sb_r[b][...] = nl.load(rhs[b * tile:(b + 1) * tile, :])
        ps[...] = nisa.nc_matmul(sb_l[0], sb_r[0])
        ps += nisa.nc_matmul(sb_l[1], sb_r[1])
        for kp in nl.sequential_range(K // (2 * tile) - 1):
            for b in range(2):
                k = 2 * kp + 2 + b
                sb_l[b][...] = nl.load(lhsT[k * tile:(k + 1) * tile, m * tile:(m + 1) * tile])
                sb_r[b][...] = nl.load(rhs[k * tile:(k + 1) * tile, :])
            ps += nisa.nc_matmul(sb_l[0], sb_r[0])
            ps += nisa.nc_matmul(sb_l[1], sb_r[1])
        sb_o = nisa.tensor_copy(ps, dtype=result.dtype, engine=nisa.vector_engine)
        nl.store(result[m * tile:(m + 1) * tile, :], value=sb_o)


def reference(lhsT, rhs):
    """numpy: ``lhsT.T @ rhs`` rounded to the output's bf16."""
    product = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    return {"result": product.astype(np.float32).astype(lhsT.dtype)}
