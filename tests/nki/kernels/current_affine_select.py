"""affine_select, current NKI: a causal mask, ``nisa.affine_select(dst, pattern, offset,
channel_multiplier, on_true_tile, on_false_value, cmp_op)`` with the affine value
``p - f`` compared ``>= 0``."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def causal_mask(scores):
    masked = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.shared_hbm, name="masked")
    t = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=scores)
    m = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(dst=m, pattern=[[-1, P]], offset=0, channel_multiplier=1, on_true_tile=t,
                       on_false_value=-9984.0, cmp_op=nl.greater_equal)
    nisa.dma_copy(dst=masked, src=m)
    return masked


def inputs(seed=0):
    return {"scores": np.random.default_rng(seed).normal(size=(P, P)).astype(np.float32)}


def reference(scores):
    rows, cols = np.indices((P, P))
    return {"masked": np.where(rows >= cols, scores, np.float32(-9984.0)).astype(np.float32)}
