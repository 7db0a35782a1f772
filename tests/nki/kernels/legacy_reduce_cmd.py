"""A legacy ``nisa.activation`` row sum accumulated across calls with ``reduce_cmd``
(tests/nki/test_legacy_reduce_cmd.py)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def exp_row_sums_in_halves(x):
    out = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.shared_hbm)
    tile = nl.load(x)
    e = nl.ndarray((nl.par_dim(128), 1024), dtype=np.float32, buffer=nl.sbuf)
    sums = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, buffer=nl.sbuf)
    for half in range(2):
        e[:, 512 * half:512 * (half + 1)] = nisa.activation(
            op=nl.exp, data=tile[:, 512 * half:512 * (half + 1)], reduce_op=nl.add, reduce_res=sums[:, 0],
            reduce_cmd=nisa.reduce_cmd.reset_reduce if half == 0 else nisa.reduce_cmd.reduce, dtype=np.float32)
    nl.store(out, value=sums)
    return out
