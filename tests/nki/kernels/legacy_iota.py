"""iota / memset group, legacy NKI: ``nisa.iota`` of an index expression of ``nl.arange``
vectors, ``nisa.memset`` and ``nl.zeros`` (``affine_select``: ``legacy_affine_select.py``)."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def ramp_fill(ramp):
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(P)[None, :]
    ids = nisa.iota(i_p * P + i_f, dtype=nl.float32)
    base = nisa.memset((P, P), 0.5, nl.float32)
    acc = nl.zeros((P, P), nl.float32, buffer=nl.sbuf)
    acc[...] = nl.add(acc, nl.add(ids, base))
    nl.store(ramp, value=acc)


def inputs(seed=0):
    return {"ramp": np.zeros((P, P), np.float32)}


def reference():
    rows, cols = np.indices((P, P))
    return {"ramp": (rows * P + cols + 0.5).astype(np.float32)}
