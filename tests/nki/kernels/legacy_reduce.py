"""Reduction group, legacy NKI: ``nl.max`` / ``nl.sum`` along the free axis with
``keepdims``, ``nisa.tensor_reduce`` (min, negated add), and ``nisa.activation_reduce`` (an
ACT exponent with a fused row sum)."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_stats(x, stats):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    for i in nl.affine_range(rows // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        row_max = nl.max(t, axis=1, keepdims=True)
        row_sum = nl.sum(t, axis=1, keepdims=True)
        row_min = nisa.tensor_reduce(nl.min, t, axis=(1,), keepdims=True)
        neg_sum = nisa.tensor_reduce(nl.add, t, axis=(1,), negate=True, keepdims=True)
        exp_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        _ = nisa.activation_reduce(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=exp_sum)
        nl.store(stats[i * P:(i + 1) * P, 0:1], value=row_max)
        nl.store(stats[i * P:(i + 1) * P, 1:2], value=row_sum)
        nl.store(stats[i * P:(i + 1) * P, 2:3], value=row_min)
        nl.store(stats[i * P:(i + 1) * P, 3:4], value=neg_sum)
        nl.store(stats[i * P:(i + 1) * P, 4:5], value=exp_sum)


def inputs(seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, (256, 200)).astype(np.float32)
    return {"x": x, "stats": np.zeros((256, 5), np.float32)}


def reference(x):
    z = x.astype(np.float64)
    cols = [z.max(1), z.sum(1), z.min(1), -z.sum(1), np.exp(z).sum(1)]
    return {"stats": np.stack(cols, axis=1).astype(np.float32)}
