"""PE transpose of 128 x 128 blocks through one PSUM bank, current NKI (the ``pe_transpose``
scenario).

Per 128-row tile: load, four ``nc_transpose`` on PE into the four 128-column quarters of
one [128, 512] fp32 PSUM tile, one ACT eviction to bf16, and one store whose DRAM side is
a three-dimensional access pattern (``.ap``): element ``(f, u*128 + p)`` of the tile goes
to ``out[u*128 + f, r*128 + p]``.
"""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def pe_transpose(x):
    rows, cols = x.shape
    block = nl.tile_size.pmax
    blocks = cols // block
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm, name="out")
    for r in range(rows // block):
        xs = nl.ndarray((block, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xs, src=x[r * block:(r + 1) * block, :])
        tp = nl.ndarray((block, cols), dtype=nl.float32, buffer=nl.psum)
        for u in range(blocks):
            nisa.nc_transpose(dst=tp[:, u * block:(u + 1) * block], data=xs[:, u * block:(u + 1) * block],
                              engine=nisa.engine.tensor)
        ys = nl.ndarray((block, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=ys, src=tp, engine=nisa.engine.scalar)
        # ys[f, u*block + p] -> out[u*block + f, r*block + p]: walk f, then u, then p.
        store_to = out.ap(pattern=[[rows, block], [block * rows, blocks], [1, block]], offset=r * block)
        nisa.dma_copy(dst=store_to, src=ys, engine=nisa.engine.scalar)
    return out


def reference(x):
    """numpy: ``x.T``."""
    return {"out": np.ascontiguousarray(x.T)}
