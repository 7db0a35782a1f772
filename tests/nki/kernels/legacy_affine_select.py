"""affine_select, legacy NKI: a causal mask on attention scores, ``nisa.affine_select`` with an
``nl.arange`` predicate (row index >= column index) and a large negative fill value."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def causal_mask(scores, masked):
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(P)[None, :]
    t = nl.load(scores)
    m = nisa.affine_select(pred=(i_p - i_f >= 0), on_true_tile=t, on_false_value=-9984.0)
    nl.store(masked, value=m)


def inputs(seed=0):
    return {"scores": np.random.default_rng(seed).normal(size=(P, P)).astype(np.float32),
            "masked": np.zeros((P, P), np.float32)}


def reference(scores):
    rows, cols = np.indices((P, P))
    return {"masked": np.where(rows >= cols, scores, np.float32(-9984.0)).astype(np.float32)}
