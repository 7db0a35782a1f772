"""NKI 0.7's tile and block grids (nl.tiles, nl.blocks, nl.alloc_tiles, nl.empty_like of a grid),
written as the tile-grid pages and tutorial write kernels, and the mistakes refused at their line."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scaled_by_tiles(src):
    """Each (128, 128) tile scaled by 2; src (300, 200): the last row and column of tiles clamped."""
    dst = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    src_tiles = nl.tiles(src, tile_shape=(128, 128))
    dst_tiles = nl.tiles(dst, tile_shape=(128, 128))
    for i in range(src_tiles.shape[0]):
        for j in range(src_tiles.shape[1]):
            t = nl.empty_like(src_tiles[i, j], buffer=nl.sbuf)
            nisa.dma_copy(t.data, src_tiles[i, j].data)
            nisa.tensor_scalar(t.data, t.data, nl.multiply, 2.0)
            nisa.dma_copy(dst_tiles[i, j].data, t.data)
    return dst


@nki.jit
def copied_through_plain_tiles(src):
    """As the NkiTileGrid page's example: each tile copied through a plain nl.ndarray SBUF tile,
    whose ``.data`` is passed like a grid's."""
    dst = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    src_tiles, dst_tiles = nl.tiles(src, tile_shape=(128, 64)), nl.tiles(dst, tile_shape=(128, 64))
    for i in range(src_tiles.shape[0]):
        for j in range(src_tiles.shape[1]):
            tile = nl.ndarray(src_tiles[i, j].element_shape, dtype=src.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile.data, src=src_tiles[i, j].data)
            nisa.dma_copy(dst=dst_tiles[i, j].data, src=tile.data)
    return dst


@nki.jit
def rows_of_tiles_plus_batch(src):
    """src (2, 256, 512): a batch prefix indexed a slab at a time, a whole row of tiles a DMA;
    each row's tiles summed into one (128, 128) tile by slicing the row grid."""
    B = src.shape[0]
    out = nl.ndarray((B, 256, 128), dtype=src.dtype, buffer=nl.shared_hbm)
    grid = nl.tiles(src, tile_shape=(128, 128))
    out_grid = nl.tiles(out, tile_shape=(128, 128))
    for b in range(B):
        for i in range(grid.shape[1]):
            row = grid[b, i, :]
            buf = nl.alloc_tiles(tile_shape=row.tile_shape, element_shape=row.element_shape, buffer=nl.sbuf,
                                 dtype=src.dtype)
            nisa.dma_copy(buf.data, row.data)
            acc = nl.zeros_like(buf[0, 0], buffer=nl.sbuf)
            for j in range(buf.shape[1]):
                nisa.tensor_tensor(acc.data, acc.data, buf[0, j].data, nl.add)
            nisa.dma_copy(out_grid[b, i, 0].data, acc.data)
    return out


@nki.jit
def copied_by_blocks(src):
    """src (512, 1024): blocks of 2 x 2 tiles of (128, 256) moved a block per DMA pair."""
    dst = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    src_blocks = nl.blocks(src, tile_shape=(128, 256), block_shape=(2, 2))
    dst_blocks = nl.blocks(dst, tile_shape=(128, 256), block_shape=(2, 2))
    for i in range(src_blocks.shape[0]):
        for j in range(src_blocks.shape[1]):
            inner = nl.tiles(src_blocks[i, j])
            for r in range(inner.shape[0]):
                row = inner[r, :]
                t = nl.ndarray(row.element_shape, dtype=src.dtype, buffer=nl.sbuf)
                nisa.dma_copy(t, row.data)
                nisa.dma_copy(nl.tiles(dst_blocks[i, j])[r, :].data, t)
    return dst


@nki.jit
def tall_grid_on_chip(src):
    tall = nl.alloc_tiles(tile_shape=(128, 128), element_shape=(256, 128), buffer=nl.sbuf, dtype=src.dtype)
    return tall[0:2, 0].data  # two tile rows: side by side in the free dimension, no one tensor


@nki.jit
def through_a_tall_grid(src):  # src (300, 256): tile rows of 128, 128 and 44 partitions in one SBUF grid
    out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    src_t, out_t = nl.tiles(src, tile_shape=(128, 128)), nl.tiles(out, tile_shape=(128, 128))
    buf = nl.alloc_tiles(tile_shape=(128, 128), element_shape=src.shape, buffer=nl.sbuf, dtype=src.dtype)
    assert buf.shape == (3, 2) and buf[0:1, :].is_data_representable and not buf[0:2, 0].is_data_representable
    for i in range(buf.shape[0]):
        nisa.dma_copy(dst=buf[i, :].data, src=src_t[i, :].data)  # a tile row at a time
        for j in range(buf.shape[1]):
            nisa.tensor_scalar(dst=buf[i, j].data, data=buf[i, j].data, op0=nl.multiply, operand0=2.0)
            nisa.dma_copy(dst=out_t[i, j].data, src=buf[i, j].data)
    return out


@nki.jit
def past_the_grid(src):
    grid = nl.tiles(src, tile_shape=(128, 128))
    return grid[grid.shape[0], 0].data


@nki.jit
def slices_the_batch(src):
    grid = nl.tiles(src, tile_shape=(128, 128))
    return grid[0:1, 0, 0].data


@nki.jit
def batch_grid_on_chip(src):
    nl.alloc_tiles(tile_shape=(128, 64), element_shape=(2, 128, 64), buffer=nl.sbuf, dtype=src.dtype)
    return src


@nki.jit
def steps_over_tiles(src):
    grid = nl.tiles(src, tile_shape=(128, 128))
    return grid[::2, 0].data


@nki.jit
def transposed_destination(x):
    """empty_like(transpose_axes=(1, 0)): the page's SBUF destination of a later dma_transpose."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.empty_like(t, transpose_axes=(1, 0))
    assert tuple(u.shape) == (x.shape[1], x.shape[0]), u.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def placed_grids(src):
    """empty_like / zeros_like of a grid at an address the kernel gives (x: (128, 256))."""
    g = nl.tiles(src, tile_shape=(128, 128))
    e = nl.empty_like(g, buffer=nl.sbuf, address=(0, 4096))
    z = nl.zeros_like(g, buffer=nl.sbuf, address=(0, 8192))
    nisa.dma_copy(e.data, g.data)
    nisa.tensor_tensor(e.data, e.data, z.data, nl.add)
    out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(out, e.data)
    return out


@nki.jit
def through_a_tall_block(src):  # src (256, 512): one SBUF block of 2 x 2 tiles, copied tile by tile
    out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    block = nl.alloc_blocks(tile_shape=(128, 256), block_shape=(2, 2), element_shape=src.shape, buffer=nl.sbuf,
                            dtype=src.dtype)
    tiles, src_t, out_t = nl.tiles(block), nl.tiles(src, tile_shape=(128, 256)), nl.tiles(out, tile_shape=(128, 256))
    for a in range(tiles.shape[0]):
        for b in range(tiles.shape[1]):
            nisa.dma_copy(dst=tiles[a, b].data, src=src_t[a, b].data)
            nisa.dma_copy(dst=out_t[a, b].data, src=tiles[a, b].data)
    return out
