"""A kernel file that runs its kernel at import (as the SDK's gather_flattened test does with a
module-level test call), where the run fails in neuronsim's allocation (an activation on one partition off a
32-partition boundary: no base keeps it; a number written there is lowered to a select): the load is refused at
the import-time call's line, naming the kernel's line too."""

import nki
import nki.language as nl


@nki.jit
def per_row_writes():
    rows = nl.zeros((32, 10), dtype=nl.float32)
    for i in nl.static_range(32):
        rows[i, 0:1] = nl.exp(rows[i, 0:1])  # compute on a tile starting at partition i
    out = nl.ndarray((32, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=rows)
    return out


RESULT = per_row_writes()  # the import-time call
