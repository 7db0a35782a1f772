"""Masks joined with a condition of loop variables alone, which an unrolled loop decides
(tests/nki/test_mask_booleans.py)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def first_tiles_scaled(a, valid):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    for t in nl.affine_range(a.shape[0] // 128):
        tile = nl.load(a[t * 128 + i_p, i_f])
        nl.store(out[t * 128 + i_p, i_f], value=tile)
        # the first half of the columns of the first `valid` tiles, doubled
        nl.store(out[t * 128 + i_p, i_f], value=nl.multiply(tile, 2.0), mask=(i_f < 32) & (t < valid))
    return out


@nki.jit
def or_a_loop_condition(a, valid):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    for t in nl.affine_range(a.shape[0] // 128):
        tile = nl.load(a[t * 128 + i_p, i_f])
        nl.store(out[t * 128 + i_p, i_f], value=tile)
        # every column of the tiles from `valid` on, the first half of the others: doubled
        nl.store(out[t * 128 + i_p, i_f], value=nl.multiply(tile, 2.0), mask=(i_f < 32) | (t >= valid))
    return out
