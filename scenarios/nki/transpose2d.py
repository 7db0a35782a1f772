"""Batched 2-D transpose through PE and PSUM with a short edge tile, current NKI (the
``transpose2d`` scenario; nki-samples' standalone PE-transpose kernel).

``out[d, n, b] = x[d, b, n]`` one 128 x 128 tile at a time; the row count (192) is not a
multiple of 128, so the last row tile uses 64 partitions of its tiles (plain slices: the
current API has no masks).  Tiles are created in the innermost loop body, so each tile
is a new buffer the allocator places.
"""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose2d(x):
    d0, rows, cols = x.shape
    tile = nl.tile_size.pmax
    out = nl.ndarray((d0, cols, rows), dtype=x.dtype, buffer=nl.shared_hbm, name="out")
    for d in range(d0):
        for start in range(0, rows, tile):
            count = min(tile, rows - start)
            for n in range(cols // tile):
                xs = nl.ndarray((tile, tile), dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=xs[0:count, :], src=x[d, start:start + count, n * tile:(n + 1) * tile])
                tp = nl.ndarray((tile, tile), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_transpose(dst=tp[:, 0:count], data=xs[0:count, :], engine=nisa.engine.tensor)
                ys = nl.ndarray((tile, tile), dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=ys[:, 0:count], src=tp[:, 0:count], engine=nisa.engine.scalar)
                nisa.dma_copy(dst=out[d, n * tile:(n + 1) * tile, start:start + count], src=ys[:, 0:count],
                              engine=nisa.engine.scalar)
    return out


def reference(x):
    """numpy: swap the last two axes."""
    return {"out": np.ascontiguousarray(x.transpose(0, 2, 1))}
