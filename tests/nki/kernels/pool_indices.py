"""A 2-D max-pool written with index vectors, two of them in one subscript (the contributed
MaxPool2D sample): ``t[i0, 2*i1 + i3, 2*i2 + i4]`` is a ``(C, Ho, Wo, kh, kw)`` tile in numpy's
broadcast order, reduced over its last two axes."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def pool2x2(x):  # x (C, H, W)
    C, H, W = x.shape
    out = nl.ndarray((C, H // 2, W // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2, i3, i4 = nl.mgrid[0:C, 0:H // 2, 0:W // 2, 0:2, 0:2]
    t = nl.load(x)
    nl.store(out, value=nl.max(t[i0, 2 * i1 + i3, 2 * i2 + i4], axis=[3, 4]))
    return out


@nki.jit
def padded_pool(x):  # stride 2, padding 1: the mask keeps other window rows for the edge outputs
    C, H, W = x.shape
    out = nl.ndarray((C, H // 2, W // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2, i3, i4 = nl.mgrid[0:C, 0:H // 2, 0:W // 2, 0:3, 0:3]
    t = nl.load(x)
    r = nl.max(t[i0, 2 * i1 - 1 + i3, 2 * i2 - 1 + i4], axis=[3, 4],
               mask=(2 * i1 - 1 + i3 >= 0) & (2 * i2 - 1 + i4 >= 0))
    nl.store(out, value=r)
    return out


@nki.jit
def holed_sum(x):  # the mask keeps window columns 0 and 2 of three: two ranges for every output
    P, F = x.shape
    out = nl.ndarray((P, F // 3), dtype=x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2 = nl.mgrid[0:P, 0:F // 3, 0:3]
    t = nl.load(x)
    nl.store(out, value=nl.sum(t[i0, 3 * i1 + i2], axis=[2], mask=(i2 < 1) | (i2 > 1)))
    return out


@nki.jit
def triangle_sum(x):  # out[p, a] sums x[p, a, :F - a]: one range per output, a box per output column
    P, A, F = x.shape
    out = nl.ndarray((P, A, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2 = nl.mgrid[0:P, 0:A, 0:F]
    t = nl.load(x)
    nl.store(out, value=nl.sum(t[i0, i1, i2], axis=[2], keepdims=True, mask=(i1 + i2 < F)))
    return out
