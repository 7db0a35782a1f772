"""Kernels of tests/nki/test_followups.py in the legacy API: masks that keep more than one box
(a triangle, a range with holes), views larger than their tensor whose masked access stays
inside it, and accesses that do not."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def triangle(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f])
    nl.store(out[i_p, i_f], nl.exp(t), mask=(i_p + i_f < 100))


@nki.jit
def holes(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f], mask=(i_f < 8) | (i_f >= 40) & (i_f < 48) | (i_f >= 60))
    nl.store(out[i_p, i_f], t, mask=(i_f < 8) | (i_f >= 40) & (i_f < 48) | (i_f >= 60))


@nki.jit
def upper_rows(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f])
    nl.store(out[i_p, i_f], nl.multiply(t, 2.0), mask=(i_f >= i_p) | (i_p >= 96))


@nki.jit
def tail_rows(x, out):
    i_p = nl.arange(128)[:, None]
    for k in nl.affine_range((x.shape[0] + 127) // 128):
        t = nl.load(x[k * 128:(k + 1) * 128, :], mask=(k * 128 + i_p < x.shape[0]))
        nl.store(out[nl.ds(k * 128, 128), :], nl.exp(t), mask=(k * 128 + i_p < x.shape[0]))


@nki.jit
def tail_columns(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    for k in nl.affine_range((x.shape[1] + 63) // 64):
        t = nl.load(x[i_p, k * 64 + i_f], mask=(k * 64 + i_f < x.shape[1]))
        nl.store(out[i_p, k * 64 + i_f], t, mask=(k * 64 + i_f < x.shape[1]))


@nki.jit
def rows_past_end(x, out):
    t = nl.load(x[0:128, :])
    nl.store(out[0:128, :], t)


@nki.jit
def columns_past_end(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, 32 + i_f])
    nl.store(out[i_p, i_f], t)


@nki.jit
def masked_too_little(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f], mask=(i_p < 110))
    nl.store(out[i_p, i_f], t, mask=(i_p < 110))
