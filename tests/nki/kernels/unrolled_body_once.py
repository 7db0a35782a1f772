"""A legacy ``affine_range`` / ``sequential_range`` body whose Python state changes (``cols =
cols // 2``) in a loop the trace unrolls (a block tile picked by the loop variable): NKI traces
the body once, so the statement runs once; each unrolled iteration starts from the values the
loop began with.  ``kept`` is the same kernel without the block tile (a kept loop)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def unrolled(x):
    out = nl.ndarray((384, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    blocks = nl.ndarray((3, nl.par_dim(128), 16), dtype=x.dtype, buffer=nl.sbuf)
    cols = 16
    for b in nl.affine_range(3):
        blocks[b] = nl.load(x[b * 128:(b + 1) * 128, :])
        cols = cols // 2  # once in NKI: 8 in every iteration
        i_p, i_f = nl.mgrid[0:128, 0:cols]
        nl.store(out[b * 128 + i_p, i_f], value=nl.multiply(blocks[b, i_p, i_f], 2.0))
    for _b in nl.sequential_range(3):
        cols = cols + 0  # a statement that changes nothing restores nothing
    nl.store(out[0:1, 0:1], value=nl.full((1, 1), float(cols), dtype=x.dtype))  # after the loops: 8
    return out


@nki.jit
def kept(x):
    out = nl.ndarray((384, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    cols = 16
    for b in nl.affine_range(3):
        tile = nl.load(x[b * 128:(b + 1) * 128, :])
        cols = cols // 2
        i_p, i_f = nl.mgrid[0:128, 0:cols]
        nl.store(out[b * 128 + i_p, i_f], value=nl.multiply(tile[i_p, i_f], 2.0))
    nl.store(out[0:1, 0:1], value=nl.full((1, 1), float(cols), dtype=x.dtype))
    return out


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).normal(size=(384, 16)).astype(np.float32)}


def reference(x):
    out = 2 * x[:, :8]
    out[0, 0] = 8.0
    return {"return0": out}
