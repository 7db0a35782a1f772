"""Access-pattern group, current NKI: ``.ap(pattern=[[stride, count], ...], offset=)`` on DRAM
to read every other row (a strided gather) and to write a transposed layout, on SBUF to
read a tile's columns in reverse blocks, and ``.broadcast_to`` of a per-partition column."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

P, F = 128, 64


@nki.jit
def strided(x):
    rows, cols = x.shape  # (256, 64)
    evens = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.shared_hbm, name="evens")
    flipped = nl.ndarray((cols, P), dtype=nl.float32, buffer=nl.shared_hbm, name="flipped")
    t = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
    # rows 0, 2, 4, ...: partition stride 2 * cols elements, then the row's columns
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[2 * cols, P], [1, cols]], offset=0))
    nisa.dma_copy(dst=evens, src=t)
    # the two column halves swapped, read through an SBUF access pattern
    swapped = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
    half = cols // 2
    nisa.tensor_copy(dst=swapped[:, 0:half], src=t.ap(pattern=[[cols, P], [1, half]], offset=half))
    nisa.tensor_copy(dst=swapped[:, half:cols], src=t.ap(pattern=[[cols, P], [1, half]], offset=0))
    col0 = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=col0, src=swapped[:, 0:1].broadcast_to((P, cols)))
    nisa.tensor_tensor(dst=swapped, data1=swapped, data2=col0, op=nl.subtract)
    # store transposed: element (p, f) of the tile to flipped[f, p]
    nisa.dma_copy(dst=flipped.ap(pattern=[[1, P], [P, cols]], offset=0), src=swapped)
    return evens, flipped


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).normal(size=(2 * P, F)).astype(np.float32)}


def reference(x):
    evens = x[0::2]
    swapped = np.concatenate([evens[:, F // 2:], evens[:, :F // 2]], axis=1)
    return {"evens": evens.copy(), "flipped": (swapped - swapped[:, 0:1]).T.copy()}
