"""Slices with negative ends, which count from the end as in Python (tests/nki/test_negative_slices.py)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def last_rows(a):
    out = nl.ndarray((64, 48), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.load(a[-64:, :-16])  # rows 64..127, columns 0..47
    nl.store(out, value=tile)
    return out


@nki.jit
def tail_of_a_tile(a):
    out = nl.ndarray((32, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.load(a[0:128, :])
    nl.store(out, value=nl.exp(tile[-32:, -64:]))
    return out


@nki.jit
def before_the_start(a):
    out = nl.ndarray((64, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a[-200:-136, :]))
    return out


@nki.jit
def wholly_past_the_end(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.load(a)
    nl.store(out, value=nl.exp(tile[:, 64:128]))
    return out


@nki.jit
def empty_slice(a):  # a length computed as 0 (a tail of a 1-row input): the access is empty, not outside
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.load(a)
    rows = (a.shape[0] // 256) * 8
    nl.store(out[0:rows, :], value=tile[0:rows, :])
    return out
