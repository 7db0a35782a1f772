"""Current-API kernel for tests/nki/test_moe_family_identity.py: ``nl.shared_identity_matrix``
used directly as an on-chip operand, as nki-library's all-expert MoE TKG transposes its
affinity column (``nc_matmul(moving=identity[:T, :T])``)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose_column_twice(col):
    """out[0] = col^T twice over: each identity request names the same shared SBUF tile."""
    t = col.shape[0]
    out = nl.ndarray((2, t), dtype=nl.float32, buffer=nl.shared_hbm)
    column = nl.ndarray((t, 1), dtype=col.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=column, src=col)
    for k in range(2):
        identity = nl.shared_identity_matrix(t, dtype=col.dtype)
        row = nl.ndarray((1, t), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=row, stationary=column, moving=identity[:t, :t])
        res = nl.ndarray((1, t), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=row)
        nisa.dma_copy(dst=out[k:k + 1, :], src=res)
    return out


@nki.jit
def heap_below_200000(x):
    """A tile the kernel places itself just below byte 200,000 of each partition, where
    nki-library's all-expert MoE TKG starts its SBUF heap: past trn1's 192 KiB, inside trn2's
    224 KiB.  ``x`` is [128, 256] float32 (1 KiB a partition)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    top = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, 200000 - 1024))
    nisa.dma_copy(dst=top, src=x)
    nisa.dma_copy(dst=out, src=top)
    return out
