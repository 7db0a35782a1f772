"""Indirect DMA, current NKI (tests/nki/test_indirect_dma.py): ``.ap(vector_offset=idx,
indirect_dim=0)`` on the source (a gather) and on the destination (a scatter), as the
``nisa.dma_copy`` reference describes them."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather_then_scatter(data, rows, back):
    """picked[k] = data[rows[k]]; out = data with out[back[k]] = picked[k] * 2."""
    count, width = rows.shape[0], data.shape[1]
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=data)
    row_tile = nl.ndarray((count, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=row_tile, src=rows)
    back_tile = nl.ndarray((count, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=back_tile, src=back)
    picked = nl.ndarray((count, width), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=picked, src=data.ap(pattern=[[width, count], [1, width]], vector_offset=row_tile,
                                          indirect_dim=0))
    doubled = nl.ndarray((count, width), dtype=data.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=picked, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out.ap(pattern=[[width, count], [1, width]], vector_offset=back_tile, indirect_dim=0),
                  src=doubled)
    return out


def reference_gather_then_scatter(data, rows, back):
    out = data.copy()
    out[back[:, 0]] = data[rows[:, 0]] * 2
    return {"return0": out}


@nki.jit
def gather_pixel_pairs_skip(img, rows):
    """Each row index gathers that row and the next (a pixel and its right neighbour, pave's
    bilinear gather) into a tile of zeros; the last row's neighbour lies past the tensor's end,
    and oob_mode=skip skips what of it does."""
    count, width = rows.shape[0], img.shape[1]
    out = nl.ndarray((count, 2 * width), dtype=img.dtype, buffer=nl.shared_hbm)
    row_tile = nl.ndarray((count, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=row_tile, src=rows)
    pair = nl.ndarray((count, 2 * width), dtype=img.dtype, buffer=nl.sbuf)
    nisa.memset(pair, 0.0)
    nisa.dma_copy(dst=pair, src=img.ap(pattern=[[width, count], [1, 2 * width]], offset=0, vector_offset=row_tile,
                                       indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=pair)
    return out


@nki.jit
def gather_row_and_below_skip(img, rows):
    """Each row index gathers a [2, W] block: that row and the one two rows down (two runs, a
    pixel row and the row below in a two-row-high image); near the bottom the lower run lies
    past the tensor's end and oob_mode=skip skips it alone, keeping the upper one."""
    count, width = rows.shape[0], img.shape[1]
    out = nl.ndarray((count, 2, width), dtype=img.dtype, buffer=nl.shared_hbm)
    row_tile = nl.ndarray((count, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=row_tile, src=rows)
    block = nl.ndarray((count, 2, width), dtype=img.dtype, buffer=nl.sbuf)
    nisa.memset(block, 0.0)
    nisa.dma_copy(dst=block, src=img.ap(pattern=[[width, count], [2 * width, 2], [1, width]], offset=0,
                                        vector_offset=row_tile, indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=block)
    return out


@nki.jit
def gather_tile_by_tile(table, rows):
    """out[k] = table[rows[k]], 32 rows a tile: a read of each tile's indices, then its transfers."""
    count, width = rows.shape[0], table.shape[1]
    out = nl.ndarray((count, width), dtype=table.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(count // 32):
        index = nl.ndarray((32, 1), dtype=rows.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=index, src=rows[nl.ds(t * 32, 32), :])
        picked = nl.ndarray((32, width), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=picked, src=table.ap(pattern=[[width, 32], [1, width]], offset=0, vector_offset=index,
                                               indirect_dim=0))
        nisa.dma_copy(dst=out[nl.ds(t * 32, 32), :], src=picked)
    return out


@nki.jit
def gather_rows_backwards_skip(img, rows):
    """Each row index reads its row's first element and the elements before it, backwards (a
    last stride of -1): row 0's run walks off the tensor's start after one element, and
    oob_mode=skip keeps that one."""
    count, width = rows.shape[0], img.shape[1]
    out = nl.ndarray((count, width), dtype=img.dtype, buffer=nl.shared_hbm)
    row_tile = nl.ndarray((count, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=row_tile, src=rows)
    got = nl.ndarray((count, width), dtype=img.dtype, buffer=nl.sbuf)
    nisa.memset(got, 0.0)
    nisa.dma_copy(dst=got, src=img.ap(pattern=[[width, count], [-1, width]], offset=0, vector_offset=row_tile,
                                      indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=got)
    return out

