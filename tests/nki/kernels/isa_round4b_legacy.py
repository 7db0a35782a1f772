"""Legacy-API kernels of tests/nki/test_isa_ops_round4b.py: read-modify-write DMA,
nisa.local_gather, dma_transpose of rows gathered by a tile of indices (from HBM and from an
SBUF tile)."""

import numpy as np

import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def scatter_add_rows(src, rows, base):
    """base, then src added onto the rows the index tile names (dst_rmw_op=np.add)."""
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(base))
    idx = nl.load(rows)
    i_f = nl.arange(src.shape[1])[None, :]
    nisa.dma_copy(dst=out[idx, i_f], src=nl.load(src), dst_rmw_op=np.add)
    return out


def add_in_place(src, base):
    """A whole-tensor read-modify-write (POOL's queue) right after the store (SP's) it adds to."""
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(base))
    nisa.dma_copy(dst=out, src=nl.load(src), dst_rmw_op=nl.add, dge_mode=nisa.dge_mode.swdge)
    return out


def local_gather_legacy(data, index):
    """Eight cores, 4 indices a partition, 2 elements an index, the first 48 indices a core."""
    out = nl.ndarray((data.shape[0], 96), dtype=data.dtype, buffer=nl.shared_hbm)
    picked = nisa.local_gather(nl.load(data), nl.load(index), 2, 48)
    nl.store(out, picked)
    return out


def gather_transpose_hbm(src, rows):
    """Rows of an HBM tensor picked by an index tile, transposed (2, 1, 0) into SBUF."""
    idx = nl.load(rows)
    n, b, c = rows.shape[0], src.shape[1], src.shape[2]
    i_p = nl.arange(n)[:, None]
    iy = nl.arange(b)[None, :, None]
    iz = nl.arange(c)[None, None, :]
    picked = nisa.dma_transpose(src[idx[i_p, 0], iy, iz], axes=(2, 1, 0))
    out = nl.ndarray((c, b, n), dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, picked)
    return out


def gather_transpose_sbuf(src, rows):
    """Partitions of an SBUF tile picked by an index tile, transposed (2, 1, 0)."""
    tile = nl.load(src)
    idx = nl.load(rows)
    b, c = src.shape[1], src.shape[2]
    iy = nl.arange(b)[None, :, None]
    iz = nl.arange(c)[None, None, :]
    picked = nisa.dma_transpose(tile[idx, iy, iz], axes=(2, 1, 0))
    out = nl.ndarray((c, b, rows.shape[0]), dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, picked)
    return out


def shifting_gathers(data, rows):
    """Four gathers, the index tile moved one row down before each: four device-value reads,
    each of what the instructions before it wrote."""
    out = nl.ndarray((4, rows.shape[0], data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.load(rows)
    i_f = nl.arange(data.shape[1])[None, :]
    for k in nl.static_range(4):
        idx = nl.add(idx, 1, dtype=idx.dtype)
        nl.store(out[k], nl.load(data[idx, i_f]))
    return out


def set_single_partitions(x):
    """Numbers written into single partitions off a 32-partition boundary (5 and 37)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    t[5, 3] = 7.0
    t[37, 0:4] = -1.0
    nl.store(out, t)
    return out


def scatter_add_skip(src, rows, base):
    """dst_rmw_op with oob_mode=skip: the dma_copy page allows only oob_mode.error with it."""
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(src.shape[1])[None, :]
    nisa.dma_copy(dst=out[nl.load(rows), i_f], src=nl.load(src), dst_rmw_op=np.add, oob_mode=nisa.oob_mode.skip)
    return out
