"""Masks joined with a condition of loop variables alone, which an unrolled loop decides
(tests/nki/test_mask_booleans.py)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
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


@nki.jit
def reshaped_comparison(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.zeros((128, 64), dtype=a.dtype))
    i_p, i_f = nl.arange(128), nl.arange(64)
    keep = i_p < 100
    tile = nl.load(a[i_p[:, None], i_f[None, :]], mask=keep[:, None])
    nl.store(out[i_p[:, None], i_f[None, :]], value=nl.exp(tile), mask=keep[:, None])
    return out


@nki.jit
def transpose_top_half(x):
    """``nl.transpose(..., mask=)``: the mask limits the result's rows as any call's mask does."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    y[i_p, i_f] = nl.transpose(t, mask=(i_p < 64))
    nl.store(out, value=y)
    return out


@nki.jit
def diagonal_store(x):
    """``mask=(i_p == i_f)``: the diagonal alone (a box per element)."""
    out = nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.zeros((64, 64), dtype=x.dtype))
    i_p, i_f = nl.arange(64)[:, None], nl.arange(64)[None, :]
    t = nl.load(x)
    nl.store(out[i_p, i_f], value=t[i_p, i_f], mask=(i_p == i_f))
    return out


@nki.jit
def diagonal_select(w):
    """``nisa.affine_select(i_p == i_f, ...)``: a diagonal matrix of a column."""
    out = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(128)[None, :]
    column = nl.load(w)
    nl.store(out, value=nisa.affine_select(i_p == i_f, column.broadcast_to((128, 128)), 0.0))
    return out


@nki.jit
def mask_reshaped_again(a):
    """A 2-D mask given ``[:, None]`` as if it were 1-D (Goomelo/nki-moe's grouped GEMM): wrong."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(64)[None, :]
    f_ok = i_f < 50
    tile = nl.load(a[i_p, i_f], mask=f_ok[:, None])
    nl.store(out[i_p, i_f], value=tile)
    return out
