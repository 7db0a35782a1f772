"""A kernel of ours (legacy NKI, direct allocation) whose tile ``s`` sits on the second column
of a two-column tile ``sums``: ``s`` is written while that column still waits to be read, and
``sums``' last read is of its first column.  The clobber lies before the live tile's last read,
on bytes that read does not touch (probe_an's planted ``num_buffers=1`` in the attention
tutorial's ``attn_fwd_v10`` reduced).  ``apart`` places ``s`` after ``sums``: no clobber."""

import numpy as np

from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

sbuf = nki.compiler.sbuf.mod_alloc


@nki.jit
def two_columns(a, apart=False):
    out = nl.ndarray((128, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((2, nl.par_dim(128), 8), dtype=nl.float32, buffer=sbuf(base_addr=0, num_free_tiles=(2,)))
    sums = nl.ndarray((nl.par_dim(128), 2), dtype=nl.float32, buffer=sbuf(base_addr=256))  # bytes 256..264
    s = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=sbuf(base_addr=512 if apart else 260))
    for t in nl.affine_range(2):
        x[t] = nl.load(a[t])
    sums[:, 0] = nisa.tensor_reduce(op=nl.add, data=x[0], axis=1)
    sums[:, 1] = nisa.tensor_reduce(op=nl.add, data=x[1], axis=1)
    s[...] = nisa.tensor_copy(sums[:, 0])  # onto sums[:, 1] unless apart
    nl.store(out[:, 0], value=s)
    s[...] = nisa.tensor_copy(sums[:, 1])  # reads the second column
    nl.store(out[:, 1], value=s)
    s[...] = nisa.tensor_copy(sums[:, 0])  # sums' last read: the first column
    nl.store(out[:, 2], value=s)
    return out


def reference(a):
    total = a.sum(axis=2)
    return np.stack([total[0], total[1], total[0]], axis=1)


@nki.jit
def rewritten(a, both_columns=False):
    """``w`` sits on both columns of the live ``sums``; column 0 (with ``both_columns`` column 1
    too) is written again before ``sums`` is read whole: column 1 still holds ``w``'s values
    unless rewritten (probe_ap)."""
    out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((nl.par_dim(128), 2), dtype=nl.float32, buffer=sbuf(base_addr=0))
    sums = nl.ndarray((nl.par_dim(128), 2), dtype=nl.float32, buffer=sbuf(base_addr=256))
    w = nl.ndarray((nl.par_dim(128), 2), dtype=nl.float32, buffer=sbuf(base_addr=256))
    x[...] = nl.load(a)
    sums[...] = nisa.tensor_copy(x)
    w[...] = nisa.tensor_scalar(data=x, op0=nl.multiply, operand0=2.0)  # over both columns of sums
    nl.store(out, value=w)
    sums[:, 0] = nisa.tensor_copy(x[:, 0])
    if both_columns:
        sums[:, 1] = nisa.tensor_copy(x[:, 1])
    nl.store(out, value=sums)  # the whole tile
    return out
