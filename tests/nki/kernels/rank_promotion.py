"""A legacy tile of one element broadcast to a higher rank by numpy's rule (the legacy
broadcast_to page: "numpy broadcast rules"): nki-samples' blockwise matmul loads
``block_to_expert[block_idx]`` of an ``(N, 1)`` tensor, a ``(1,)`` tile, and broadcasts it to
``[32, 1]``."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def spread_one_row(t, i=2, function=False):  # t (8, 1) int32: out (32, 1) all t[i, 0]
    out = nl.ndarray((32, 1), dtype=np.int32, buffer=nl.shared_hbm)
    one = nl.load(t[i])
    spread = nl.broadcast_to(one, (32, 1)) if function else one.broadcast_to([32, 1])
    nl.store(out, value=nl.copy(spread))
    return out
