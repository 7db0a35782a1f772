"""Indirect DMA, legacy NKI (tests/nki/test_indirect_dma.py): tiles of row numbers as the index
of ``nl.load`` / ``nl.store`` / ``nisa.dma_copy``, read from a kernel argument or made by
``nisa.iota``; ``oob_mode``; a scatter and a plain store meeting on rows of one output."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def gather_rows(data, rows):
    """out[k] = data[rows[k]] (rows: an int32 column, one row number per partition)."""
    count, width = rows.shape[0], data.shape[1]
    out = nl.ndarray((count, width), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(count)[:, None]
    i_f = nl.arange(width)[None, :]
    row_tile = nl.load(rows[i_p, 0])
    picked = nl.load(data[row_tile[i_p, 0], i_f])
    nl.store(out, value=picked)
    return out


@nki.jit
def scatter_rows(src, rows, fill):
    """out = fill everywhere, then out[rows[k]] = src[k] + 1."""
    count, width = src.shape
    out = nl.ndarray(fill.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=fill)
    row_tile = nl.load(rows)
    bumped = nl.add(nl.load(src), 1.0)
    nl.store(out[row_tile, nl.arange(width)[None, :]], value=bumped)
    return out


@nki.jit
def gather_odd_rows_skip(data):
    """Rows 1, 4, 7, ... of ``data`` (iota 3k + 1) into a tile of -1, past the end skipped."""
    n, m = data.shape
    out = nl.ndarray((n // 2, m), dtype=data.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:n // 2, 0:m]
    row_tile = nisa.iota(3 * nl.arange(n // 2)[:, None] + 1, dtype=np.int32)
    picked = nisa.memset(shape=(n // 2, m), value=-1, dtype=data.dtype)
    nisa.dma_copy(src=data[row_tile, iy], dst=picked[ix, iy], oob_mode=nisa.oob_mode.skip)
    nl.store(out, value=picked)
    return out


@nki.jit
def load_odd_rows_mode_skip(data):
    """As gather_odd_rows_skip through ``nl.load(..., mode=oob_mode.skip)`` (the legacy keyword),
    assigned into a tile of -1: the load's result is emitted at the assignment, with its mode."""
    n, m = data.shape
    out = nl.ndarray((n // 2, m), dtype=data.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:n // 2, 0:m]
    row_tile = nisa.iota(3 * nl.arange(n // 2)[:, None] + 1, dtype=np.int32)
    picked = nl.full((n // 2, m), -1, dtype=data.dtype)
    picked[ix, iy] = nl.load(data[row_tile[ix, 0], iy], mode=nisa.oob_mode.skip)
    nl.store(out, value=picked)
    return out


@nki.jit
def gather_odd_rows_error(data):
    """As gather_odd_rows_skip with the default oob_mode: an error at the dma_copy line."""
    n, m = data.shape
    out = nl.ndarray((n // 2, m), dtype=data.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:n // 2, 0:m]
    row_tile = nisa.iota(3 * nl.arange(n // 2)[:, None] + 1, dtype=np.int32)
    picked = nisa.memset(shape=(n // 2, m), value=-1, dtype=data.dtype)
    nisa.dma_copy(src=data[row_tile, iy], dst=picked[ix, iy])  # the out-of-bounds gather
    nl.store(out, value=picked)
    return out


@nki.jit
def scatter_then_store(src, rows, other):
    """A scatter of src to out[rows] and a plain store of other to out[0:32]: both write out."""
    count, width = src.shape
    out = nl.ndarray((64, width), dtype=src.dtype, buffer=nl.shared_hbm)
    row_tile = nl.load(rows)
    nl.store(out[row_tile, nl.arange(width)[None, :]], value=nl.load(src))  # the scatter
    nl.store(out[0:32, :], value=nl.load(other))  # the plain store
    return out


def reference_gather_rows(data, rows):
    return {"return0": data[rows[:, 0]]}


def reference_scatter_rows(src, rows, fill):
    out = fill.copy()
    out[rows[:, 0]] = src + 1
    return {"return0": out}


def reference_gather_odd_rows_skip(data):
    n, _m = data.shape
    out = np.full((n // 2, data.shape[1]), -1, data.dtype)
    rows = 3 * np.arange(n // 2) + 1
    inside = rows < n
    out[inside] = data[rows[inside]]
    return {"return0": out}
