"""``nl.loop_reduce`` into an uninitialised tile inside an affine loop the trace unrolls (an
index used as a value: the mask), each iteration its own column block (nki-samples' lora_bwd):
the identity the tile starts from is set where it was declared, outside the iterations."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def column_sums(x):  # x (256, 256): the two row blocks summed, a column block at a time
    out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(2):
        for n in nl.affine_range(4):
            t = nl.load(x[k * 128:(k + 1) * 128, n * 64:(n + 1) * 64], mask=(n < 4))
            acc[:, n * 64:(n + 1) * 64] = nl.loop_reduce(t, op=np.add, loop_indices=[k])
    nl.store(out, value=acc)
    return out
