"""Direct-allocation group, current NKI: ``nl.ndarray(..., address=(partition, byte))`` for
SBUF tiles (two placed at partitions 0 and 64 of the same bytes: heights <= 64 may start at
64) and a placed PSUM tile, next to tiles the compiler places."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def placed_halves(x):
    rows, cols = x.shape
    half = rows // 2
    y = nl.ndarray((cols, rows), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    top = nl.ndarray((half, cols), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    bottom = nl.ndarray((half, cols), dtype=nl.float32, buffer=nl.sbuf, address=(64, 0))
    nisa.dma_copy(dst=top, src=x[0:half, :])
    nisa.dma_copy(dst=bottom, src=x[half:rows, :])
    ps = nl.ndarray((cols, rows), dtype=nl.float32, buffer=nl.psum, address=(0, 2 * 2048))
    nisa.nc_transpose(dst=ps[:, 0:half], data=top, engine=nisa.engine.tensor)
    nisa.nc_transpose(dst=ps[:, half:rows], data=bottom, engine=nisa.engine.tensor)
    out = nl.ndarray((cols, rows), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=out, op=nl.exp, data=ps)
    nisa.dma_copy(dst=y, src=out)
    return y


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).uniform(-1, 1, (128, 96)).astype(np.float32)}


def reference(x):
    return {"y": np.exp(x.astype(np.float64).T).astype(np.float32)}
