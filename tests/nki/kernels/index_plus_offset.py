"""An index vector plus a row offset the kernel loaded (``nl.arange(E)[:, None] + start``):
the rows an indirect DMA reads, or writes, as a tile of row numbers (the vector's values by
``iota``, the offset added on chip)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

ROWS, COLS = 8, 16


@nki.jit
def rows_from_offset(x, start):
    i_r = nl.arange(ROWS)[:, None] + nl.load(start)[0, 0]  # the rows start.. start + ROWS
    i_c = nl.arange(COLS)[None, :]
    t = nl.ndarray((ROWS, COLS), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(src=x[i_r, i_c], dst=t)
    out = nl.ndarray((ROWS, COLS), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


@nki.jit
def scatter_blocks(x, offsets):
    """Block ``e`` of ``x`` stored at the rows ``offsets[e]`` on (the destination's rows)."""
    out = nl.ndarray((64, COLS), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.full((64, COLS), -1, dtype=x.dtype, buffer=nl.sbuf))
    loaded = nl.load(offsets.reshape((1, 2)))
    for e in nl.affine_range(2):
        i_r = nl.arange(ROWS)[:, None]
        i_c = nl.arange(COLS)[None, :]
        nisa.dma_copy(dst=out[i_r + loaded[:, nl.ds(e, 1)], i_c], src=x[e, i_r, i_c])
    return out
