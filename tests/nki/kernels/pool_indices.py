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
