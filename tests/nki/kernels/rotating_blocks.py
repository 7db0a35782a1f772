"""Blocks of a directly allocated tensor rotating over too few slots (legacy NKI): the
direct-allocation guide's "Lifetime Conflicts" example, made small.  ``t[i]`` in two kept
affine loops is block ``i`` in slot ``i % slots``; with fewer slots than blocks, the first loop
writes block 2 over block 0 before the second loop reads block 0."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl
from neuronxcc.nki.language import par_dim


@nki.jit
def blocks_in_slots(x, slots=2):
    t = nl.ndarray((4, par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0,
                                                                                          num_free_tiles=(slots,)))
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t[i] = nl.load(x[i])  # block i, written
    for i in nl.affine_range(4):
        nl.store(out[i], value=t[i])  # block i, in slot i % slots
    return out


@nki.jit
def double_buffered(x):
    t = nl.ndarray((4, par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0,
                                                                                          num_free_tiles=(2,)))
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t[i] = nl.load(x[i])  # block i
        nl.store(out[i], value=nl.multiply(t[i], 2.0))  # each block read in its own iteration: two slots do
    return out
