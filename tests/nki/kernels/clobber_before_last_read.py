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
