"""Current-API kernels for the PSUM accumulation-group tests of the MoE family
(tests/nki/test_moe_family_psum.py): one PSUM bank holding one accumulation group per column
block, as nki-library's TKG down projection fills it (a block of output columns per hidden
tile, the contraction tiles outermost)."""

import nki
import nki.isa as nisa
import nki.language as nl


def _column_blocks(lhsT, rhs, first_flag):
    """out = lhsT.T @ rhs, rhs's columns in two blocks of one PSUM tile; the first contraction
    tile's matmuls take ``accumulate=first_flag(block)`` (None lets the compiler infer it)."""
    k, m = lhsT.shape
    n = rhs.shape[1] // 2
    out = nl.ndarray((m, 2 * n), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((m, 2 * n), dtype=nl.float32, buffer=nl.psum)
    for kt in range(k // 128):
        a = nl.ndarray((128, m), dtype=lhsT.dtype, buffer=nl.sbuf)
        b = nl.ndarray((128, 2 * n), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[kt * 128:(kt + 1) * 128, :])
        nisa.dma_copy(dst=b, src=rhs[kt * 128:(kt + 1) * 128, :])
        for block in range(2):
            flag = first_flag(block) if kt == 0 else None
            nisa.nc_matmul(acc[:, nl.ds(block * n, n)], a, b[:, nl.ds(block * n, n)], accumulate=flag)
    res = nl.ndarray((m, 2 * n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def column_groups_inferred(lhsT, rhs):
    """Every matmul leaves the flag to the compiler: each column block's first write starts its
    group (overwrites), the later ones accumulate."""
    return _column_blocks(lhsT, rhs, lambda block: None)


@nki.jit
def column_groups_second_accumulates(lhsT, rhs):
    """The second block's first matmul says accumulate=True: it adds onto PSUM bytes no matmul
    of its group wrote (the bank's old contents)."""
    return _column_blocks(lhsT, rhs, lambda block: None if block == 0 else True)
