"""Masks and index expressions group, legacy NKI: ``nl.arange`` index vectors and
``nl.mgrid`` grids indexing DRAM and tiles, affine index expressions of the loop variable,
``mask=`` on loads, compute and stores for a last row tile that is only partly inside the
tensor (300 rows in tiles of 128), and a combined mask (``&``) that also cuts columns (a
store of zeros, then the masked store over it)."""

import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def masked_rows(x, y, z):
    rows, cols = x.shape
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range(math.ceil(rows / P)):
        inside = t * P + i_p < rows
        tile = nl.load(x[t * P + i_p, i_f], mask=inside)
        doubled = nl.multiply(tile, 2.0, mask=inside)
        nl.store(y[t * P + i_p, i_f], value=doubled, mask=inside)
    g_p, g_f = nl.mgrid[0:P, 0:cols]
    head = nl.load(x[g_p, g_f])
    nl.store(z[g_p, g_f], value=nl.zeros((P, cols), nl.float32))
    nl.store(z[g_p, g_f], value=nl.add(head, 1.0), mask=(g_f < cols // 2) & (g_p < 100))


def inputs(seed=0):
    x = np.random.default_rng(seed).normal(size=(300, 64)).astype(np.float32)
    return {"x": x, "y": np.zeros_like(x), "z": np.zeros((P, 64), np.float32)}


def reference(x):
    z = np.zeros((P, 64), np.float32)
    z[:100, :32] = x[:100, :32] + 1.0
    return {"y": x * 2.0, "z": z}
