"""One kernel per NKI-specific finding and per documented case that must stay clean (current
API, plus the legacy ranges); ``docs/nki-checks.md`` quotes the documentation behind each.

* ``scan_affine``: a scan tiled over ``affine_range`` whose tile ``k`` starts from tile
  ``k - 1``'s last column (kept in ``carry``): the loop-carried dependence the ``sequential_range`` page shows,
  written with ``affine_range`` ("unsafe"): a ``carried`` finding.  ``scan_sequential``: the
  page's own form, clean.
* ``sum_sbuf``: ``+=`` into one SBUF tile across ``affine_range`` iterations, as the fused
  Mamba tutorial accumulates: the docs and an SDK maintainer disagree, a warning.
* ``matmul_psum``: ``+=`` of ``nl.matmul`` into PSUM across ``affine_range`` (the
  ``affine_range`` page's associative reduction): clean.  ``matmul_psum_read_per_tile``: the
  accumulator zeroed outside the output tiles' loop and read in its body: a ``carried`` finding.
* ``clobber``: two directly allocated tiles on the same bytes, the second loaded while the
  first is still to be read: an ``allocation`` (clobber) finding.  ``placed_apart``: the same
  kernel with the tiles apart, clean.
"""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
import neuronxcc.nki.language as legacy

TILES, WIDTH = 4, 64


def _scan(x, y, loop):
    rows, cols = x.shape
    result = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    ones = nl.ndarray((rows, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    carry = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=carry, value=0.0)
    for k in loop(cols // WIDTH):
        tile = nl.ndarray((rows, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, k * WIDTH:(k + 1) * WIDTH])
        nisa.tensor_tensor_scan(dst=result[:, k * WIDTH:(k + 1) * WIDTH], data0=ones, data1=tile, initial=carry,
                                op0=nl.multiply, op1=nl.add)
        nisa.tensor_copy(dst=carry, src=result[:, (k + 1) * WIDTH - 1:(k + 1) * WIDTH])
    nisa.dma_copy(dst=y, src=result)
    return y


@nki.jit
def scan_affine(x):
    # each kernel makes its output at its top level (the legacy errors page's
    # err_shared_hbm_must_in_kernel_level), the helpers write it
    y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    return _scan(x, y, legacy.affine_range)


@nki.jit
def scan_sequential(x):
    y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    return _scan(x, y, legacy.sequential_range)


@nki.jit
def sum_sbuf(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, WIDTH), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    acc = nl.ndarray((rows, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for k in legacy.affine_range(cols // WIDTH):
        tile = nl.ndarray((rows, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, k * WIDTH:(k + 1) * WIDTH])
        acc += tile
    nisa.dma_copy(dst=y, src=acc)
    return y


@nki.jit
def sum_into_psum(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    acc = nl.zeros((rows, 1), dtype=nl.float32, buffer=nl.psum)
    for k in legacy.affine_range(cols // WIDTH):
        tile = nl.ndarray((rows, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, k * WIDTH:(k + 1) * WIDTH])
        acc += nl.sum(tile, axis=1, keepdims=True)  # a DVE add, not PE accumulation
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=y, src=out)
    return y


@nki.jit
def matmul_psum(x):
    rows, cols = x.shape
    y = nl.ndarray((WIDTH, WIDTH), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    acc = nl.zeros((WIDTH, WIDTH), dtype=nl.float32, buffer=nl.psum)
    for k in legacy.affine_range(rows // 32):
        tile = nl.ndarray((32, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[k * 32:(k + 1) * 32, 0:WIDTH])
        acc += nl.matmul(tile, tile, transpose_x=True)
    out = nl.ndarray((WIDTH, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=y, src=out)
    return y


@nki.jit
def matmul_psum_read_per_tile(x):
    """The PSUM accumulator zeroed once, outside the output tiles' loop, and read in each of its
    iterations: tile n gets the sums of tiles 0 .. n - 1 too (a ``carried`` finding)."""
    rows, cols = x.shape
    y = nl.ndarray((WIDTH, cols), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    acc = nl.zeros((WIDTH, WIDTH), dtype=nl.float32, buffer=nl.psum)
    for n in legacy.affine_range(cols // WIDTH):
        for k in legacy.affine_range(rows // 32):
            tile = nl.ndarray((32, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=x[k * 32:(k + 1) * 32, n * WIDTH:(n + 1) * WIDTH])
            acc += nl.matmul(tile, tile, transpose_x=True)
        tile_out = nl.ndarray((WIDTH, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=tile_out, src=acc)
        nisa.dma_copy(dst=y[:, n * WIDTH:(n + 1) * WIDTH], src=tile_out)
    return y


def _two_tiles(x, y, second_offset):
    rows, cols = x.shape
    half = cols // 2
    a = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    b = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf, address=(0, second_offset))
    nisa.dma_copy(dst=a, src=x[:, 0:half])
    nisa.dma_copy(dst=b, src=x[:, half:cols])
    out = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out[:, 0:half], src=a)
    nisa.tensor_copy(dst=out[:, half:cols], src=b)
    nisa.dma_copy(dst=y, src=out)
    return y


@nki.jit
def clobber(x):
    y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    return _two_tiles(x, y, 0)


@nki.jit
def placed_apart(x):
    y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    return _two_tiles(x, y, 4096)


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).uniform(-1, 1, (128, TILES * WIDTH)).astype(np.float32)}


def reference(func, x):
    x = x.astype(np.float64)
    if func.startswith("scan"):
        return np.cumsum(x, axis=1).astype(np.float32)
    if func == "sum_sbuf":
        return x.reshape(x.shape[0], -1, WIDTH).sum(axis=1).astype(np.float32)
    if func == "matmul_psum":
        part = x[:, :WIDTH]
        return (part.T @ part).astype(np.float32)
    return x.astype(np.float32)
