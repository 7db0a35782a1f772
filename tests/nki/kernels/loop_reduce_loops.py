"""``nl.loop_reduce`` declares its reduction over the loops its ``loop_indices`` name, not over
every loop around it (legacy NKI, the loops kept; ``masked`` unrolls them, the mask reading
the index as a value).  ``rows``: each row block ``i`` sums its two ``k`` blocks into its own
slice of ``acc``.  ``one_slice`` writes every row block into slice 0, a value carried across
``i``, which the call does not name (probe_an's plant in nki-samples' contributed matmul)."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rows(a, one_slice=False, masked=False):  # a (2, 2, 128, 64): out[i] = a[i, 0] + a[i, 1]
    out = nl.ndarray((2, 128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        for k in nl.affine_range(2):
            t = nl.load(a[i, k], mask=(k < 2) if masked else None)
            if one_slice:
                acc[0] = nl.loop_reduce(t, op=np.add, loop_indices=[k])  # slice 0 across i too
            else:
                acc[i] = nl.loop_reduce(t, op=np.add, loop_indices=[k])
    for i in nl.affine_range(2):
        nl.store(out[i], value=acc[i])
    return out
