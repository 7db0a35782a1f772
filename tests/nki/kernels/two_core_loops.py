"""A legacy two-core kernel (private_api.sendrecv on a grid of 2) whose meeting lies inside an
affine loop, with its output made at the top level: each core's loops are its own while the
other runs (they were shared: the other core's output was "made inside a loop", and its
iterations mixed with these into false carried findings)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki._private.private_api import sendrecv


@nki.jit(platform_target="trn2")
def summed_per_tile(x):  # x (2, 4, 128, 64): out[c, i] = x[0, i] + x[1, i] on both cores
    out = nl.ndarray((2, 4, 128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    c = nl.program_id(axis=0)
    for i in nl.affine_range(4):
        t = nl.ndarray((nl.par_dim(128), 64), dtype=np.float32, buffer=nl.sbuf)
        t[...] = nl.load(x[c, i])
        r = nl.ndarray((nl.par_dim(128), 64), dtype=np.float32, buffer=nl.sbuf)
        sendrecv(send_to_rank=(1 - c), recv_from_rank=(1 - c), src=t, dst=r, pipe_id=0)
        nl.store(out[c, i], nl.add(t, r))
    return out
