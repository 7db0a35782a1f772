"""tensor_scalar / tensor_tensor group, legacy NKI: ``nisa.tensor_scalar`` with two operators
(a per-partition tile and an immediate, one reversed), on DVE, ACT and POOL (``engine=``),
``nisa.tensor_tensor`` (subtract, maximum), ``nisa.tensor_copy`` and ``nl.copy``."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def affine_mix(x, w, scale, y):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    for i in nl.affine_range(rows // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        u = nl.load(w[i * P:(i + 1) * P, :])
        s = nl.load(scale[i * P:(i + 1) * P, :])
        a = nisa.tensor_scalar(t, nl.multiply, s, op1=nl.add, operand1=1.0, engine=nisa.vector_engine)
        b = nisa.tensor_scalar(u, nl.subtract, 3.0, reverse0=True, engine=nisa.scalar_engine)
        c = nisa.tensor_scalar(t, nl.maximum, 0.0, engine=nisa.gpsimd_engine)
        d = nisa.tensor_tensor(a, b, op=nl.subtract)
        e = nisa.tensor_tensor(d, c, op=nl.maximum, engine=nisa.gpsimd_engine)
        f = nisa.tensor_copy(e, engine=nisa.scalar_engine)
        nl.store(y[i * P:(i + 1) * P, :], value=nl.copy(f))


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(256, 96)).astype(np.float32), "w": rng.normal(size=(256, 96)).astype(np.float32),
            "scale": rng.uniform(0.5, 2, (256, 1)).astype(np.float32), "y": np.zeros((256, 96), np.float32)}


def reference(x, w, scale):
    a = x.astype(np.float64) * scale + 1.0
    b = 3.0 - w.astype(np.float64)
    return {"y": np.maximum(a - b, np.maximum(x, 0.0)).astype(np.float32)}
