"""Masks as neuronx-cc prints a kernel, legacy NKI: every operand and every mask builds its
index vectors with ``nl.arange`` calls of its own (no shared ``i_p``), the mask of a last,
partial row tile normalised to ``-128 * i0 + -1 * p + (rows - 1) >= 0``, and the tiles are
blocks of one on-chip tensor per value (``v[i0, p, f]``).  A mask's ``nl.arange(128)[:, None]``
is the operand's own partition axis: the same place in the iteration space.  Also many PSUM
blocks zeroed by one ``nl.zeros`` far ahead of the matmuls that open their groups, and
``nl.zeros(..., lazy_initialization=True)`` (:func:`lazy_blocks`): a block is zeroed when
first used, and not at all when that use overwrites it.  And block arrays declared at the
top, each as wide as the kernel's whole iteration space (:func:`wide_blocks`): three of
128 KiB a partition, more than SBUF together, of which one block each is live at a time."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

ROWS, COLS, TILES = 300, 64, 3
BLOCKS = 80  # PSUM blocks zeroed together: their zeroings sit more than 64 nodes ahead of their use


@nki.jit
def printed_masks(v1, v2):
    v3 = nl.ndarray((ROWS, COLS), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((TILES, nl.par_dim(128), COLS), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v5 = nl.ndarray((TILES, nl.par_dim(128), COLS), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(TILES):
        v4[i0, nl.arange(128)[:, None], nl.arange(COLS)[None, :]] = nl.load(
            v1[128 * i0 + nl.arange(128)[:, None], nl.arange(COLS)[None, :]], dtype=np.float32,
            mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (ROWS - 1) >= 0)
        v5[i0, nl.arange(128)[:, None], nl.arange(COLS)[None, :]] = nisa.tensor_scalar(
            data=v4[i0, nl.arange(128)[:, None], nl.arange(COLS)[None, :]], op0=nl.multiply,
            operand0=np.dtype(np.float32).type(3.0), dtype=np.float32,
            mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (ROWS - 1) >= 0)
        nl.store(v3[128 * i0 + nl.arange(128)[:, None], nl.arange(COLS)[None, :]],
                 value=v5[i0, nl.arange(128)[:, None], nl.arange(COLS)[None, :]],
                 mask=128 * i0 + nl.arange(128)[:, None] < ROWS)
    v6 = nl.ndarray((BLOCKS, 128), dtype=np.float32, buffer=nl.shared_hbm)
    v7 = nl.zeros((BLOCKS, nl.par_dim(1), 128), dtype=np.float32, buffer=nl.psum)
    v8 = nl.ndarray((BLOCKS, nl.par_dim(1), 128), dtype=np.float32, buffer=nl.sbuf)
    v9 = nl.load(v2[nl.arange(128)[:, None], nl.arange(128)[None, :]])
    v10 = nl.load(v2[nl.arange(128)[:, None], nl.arange(1)[None, :]])
    for i1 in nl.static_range(BLOCKS):
        v7[i1, nl.arange(1)[:, None], nl.arange(128)[None, :]] += nisa.nc_matmul(
            v10[nl.arange(128)[:, None], nl.arange(1)[None, :]], v9[nl.arange(128)[:, None], nl.arange(128)[None, :]])
        v8[i1, nl.arange(1)[:, None], nl.arange(128)[None, :]] = nl.copy(
            v7[i1, nl.arange(1)[:, None], nl.arange(128)[None, :]], dtype=np.float32)
        nl.store(v6[i1 + nl.arange(1)[:, None], nl.arange(128)[None, :]],
                 value=v8[i1, nl.arange(1)[:, None], nl.arange(128)[None, :]])
    return v3, v6


@nki.jit
def lazy_blocks(v1, v2):
    # three PSUM blocks of a bank each: more than a bank together, so a tile per block
    out = nl.ndarray((3, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.zeros((3, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum, lazy_initialization=True)
    v4 = nl.ndarray((3, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    v5 = nl.load(v2[nl.arange(128)[:, None], nl.arange(512)[None, :]])
    # block 0: overwritten by its first use (no zeroing); block 1: accumulated onto its zeros
    # (the matmul opens the group); block 2: half written, then read whole (its zeros stay)
    v3[0, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.nc_matmul(
        v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], v5[nl.arange(128)[:, None], nl.arange(512)[None, :]])
    v3[1, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(
        v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], v5[nl.arange(128)[:, None], nl.arange(512)[None, :]])
    v3[2, nl.arange(128)[:, None], nl.arange(256)[None, :]] = nisa.nc_matmul(
        v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], v5[nl.arange(128)[:, None], nl.arange(256)[None, :]])
    for i0 in nl.static_range(3):
        v4[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.copy(
            v3[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32)
        nl.store(out[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]],
                 value=v4[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]])
    return out


def lazy_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"v1": rng.normal(size=(1, 1)).astype(np.float32), "v2": rng.normal(size=(128, 512)).astype(np.float32)}


def lazy_reference(v2):
    product = v2[:, :128].T @ v2
    half = np.zeros_like(product)
    half[:, :256] = product[:, :256]
    return {"return0": np.stack([product, product, half])}


WIDE = 4096  # float32: 16 KiB a partition a block, 128 KiB an array of 8 blocks


@nki.jit
def wide_blocks(v1):
    out = nl.ndarray((8, 128, WIDE), dtype=np.float32, buffer=nl.shared_hbm)
    v2 = nl.ndarray((8, nl.par_dim(128), WIDE), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v3 = nl.ndarray((8, nl.par_dim(128), WIDE), dtype=np.float32, name='', buffer=nl.sbuf)
    v4 = nl.ndarray((8, nl.par_dim(128), WIDE), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(8):
        v2[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]] = nl.load(
            v1[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]], dtype=np.float32, mask=None)
        v3[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]] = nisa.tensor_scalar(
            data=v2[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]], op0=nl.multiply,
            operand0=np.dtype(np.float32).type(2.0), dtype=np.float32, mask=None)
        v4[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]] = nisa.tensor_scalar(
            data=v3[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]], op0=nl.add,
            operand0=np.dtype(np.float32).type(1.0), dtype=np.float32, mask=None)
        nl.store(out[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]],
                 value=v4[i0, nl.arange(128)[:, None], nl.arange(WIDE)[None, :]], mask=None)
    return out


def wide_inputs(seed=0):
    return {"v1": np.random.default_rng(seed).normal(size=(8, 128, WIDE)).astype(np.float32)}


def wide_reference(v1):
    return {"return0": v1 * np.float32(2.0) + np.float32(1.0)}


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"v1": rng.normal(size=(ROWS, COLS)).astype(np.float32),
            "v2": rng.normal(size=(128, 128)).astype(np.float32)}


def reference(v1, v2):
    row = v2[:, 0] @ v2
    return {"return0": v1 * 3.0, "return1": np.tile(row, (BLOCKS, 1))}

