"""DMA group, current NKI: ``nl.load`` / ``nl.store`` (wrappers of ``dma_copy``),
``nisa.dma_copy`` with ``engine=`` (hardware DGE on the ACT queue) and with software DGE
(``dge_mode=swdge``, descriptors on GpSimd), ``nl.ds`` slices; unrolled loops."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scaled_copy(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    z = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="z")
    P = nl.tile_size.pmax
    for i in nl.affine_range(rows // P):
        t = nl.load(x[nl.ds(i * P, P), :])
        doubled = nl.multiply(t, 2.0)
        nl.store(y[nl.ds(i * P, P), :], value=doubled)
        u = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=x[nl.ds(i * P, P), :], dge_mode=nisa.dge_mode.swdge)
        nisa.dma_copy(dst=z[nl.ds(i * P, P), :], src=u, engine=nisa.engine.scalar)
    return y, z


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).normal(size=(384, 256)).astype(np.float32)}


def reference(x):
    return {"y": x * 2.0, "z": x.copy()}
