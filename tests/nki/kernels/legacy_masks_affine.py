"""Legacy masks in other affine forms: a negative coefficient, ``|`` of two ranges of one
axis, a ``&`` of both; the SPMD grid named with ``nl.spmd_dim`` / ``nl.nc``."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

trace = nki.trace  # compiler-emitted kernels decorate with the legacy trace


@trace
def masked(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f], mask=(127 - i_p >= 32))  # rows 0..95
    nl.store(out[i_p, i_f], t, mask=((i_f < 8) | (i_f >= 4) & (i_f < 16)) & (-i_p + 127 >= 32))


@trace
def holes(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f])
    nl.store(out[i_p, i_f], t, mask=(i_f < 8) | (i_f >= 16))


@trace
def two_axes(x, out):
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.load(x[i_p, i_f])
    nl.store(out[i_p, i_f], t, mask=(i_p + i_f < 100))


@trace
def grid(x, out):
    i = nl.program_id(0)
    t = nl.load(x[i * 32:(i + 1) * 32, :])
    nl.store(out[i * 32:(i + 1) * 32, :], t)


def launch(x, out):
    return grid[nl.spmd_dim(2, nl.nc(2))](x, out)
