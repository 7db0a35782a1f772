"""iota / memset group, current NKI: ``nisa.iota(dst, pattern, offset, channel_multiplier)``
and ``nisa.memset(dst, value)`` on DVE and POOL (``affine_select``: ``current_affine_select.py``)."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def ramp_fill():
    ramp = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.shared_hbm, name="ramp")
    ids = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(dst=ids, pattern=[[1, P]], offset=0, channel_multiplier=P)
    half = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=half, value=0.5, engine=nisa.engine.gpsimd)
    zero = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0, engine=nisa.engine.vector)
    nisa.tensor_tensor(dst=zero, data1=zero, data2=ids, op=nl.add)
    nisa.tensor_tensor(dst=zero, data1=zero, data2=half, op=nl.add)
    nisa.dma_copy(dst=ramp, src=zero)
    return ramp


def inputs(seed=0):
    return {}


def reference():
    rows, cols = np.indices((P, P))
    return {"ramp": (rows * P + cols + 0.5).astype(np.float32)}
