"""Kernels whose working set is larger than SBUF (24 MiB on trn1: 128 partitions x 192 KiB).

``blocks`` declares one block tensor the way neuronx-cc prints NKI, ``(B, par_dim(128), F)``
(8 x 32 KiB a partition = 256 KiB), loads every block, then scales and stores them; ``rows``
keeps the same tiles in a Python list.  Both need spilling to DRAM (the allocator's, as the
compiler's) and compute ``2 * x``.  ``too_wide`` declares one tile wider than a partition,
``psum_too_wide`` a PSUM tile wider than a bank, ``one_loop`` more live tiles than SBUF holds
inside one kept loop (nothing to spill them over): all three are refused at their lines.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

BLOCKS, FREE = 8, 8192


@nki.jit
def blocks(x, out):
    buf = nl.ndarray((BLOCKS, nl.par_dim(128), FREE), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(BLOCKS):
        buf[k, :, :] = nl.load(x[k])
    for k in nl.affine_range(BLOCKS):
        nl.store(out[k], buf[k] * 2.0)


@nki.jit
def rows(x, out):
    tiles = []
    for k in range(BLOCKS):
        tiles.append(nl.load(x[k]))
    for k in range(BLOCKS):
        nl.store(out[k], tiles[k] * 2.0)


@nki.jit
def too_wide(x, out):
    wide = nl.ndarray((128, 65536), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(out[0, :, 0:65536 // 8], wide[:, 0:65536 // 8])


@nki.jit
def psum_too_wide(x, out):
    acc = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.psum)
    nl.store(out[0, :, 0:1024], acc)


@nki.jit
def one_loop(x, out):
    for i in nl.affine_range(2):
        a = nl.load(x[0])
        b = nl.load(x[1])
        c = nl.load(x[2])
        d = nl.load(x[3])
        e = nl.load(x[4])
        f = nl.load(x[5])
        g = nl.load(x[6])
        total = nl.add(nl.add(nl.add(a, b), nl.add(c, d)), nl.add(nl.add(e, f), g))
        nl.store(out[i], total)


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.random((BLOCKS, 128, FREE), dtype=np.float32),
            "out": np.zeros((BLOCKS, 128, FREE), np.float32)}


def reference(x, out=None):
    return {"out": x * 2.0}
