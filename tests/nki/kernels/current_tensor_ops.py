"""tensor_scalar / tensor_tensor group, current NKI: destination-first ``nisa.tensor_scalar``
(two operators, a tile operand), ``nisa.tensor_tensor``, ``nisa.scalar_tensor_tensor``
(``(data op0 scalar) op1 tile``), ``nisa.tensor_copy`` on POOL, in-place updates."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def affine_mix(x, w, scale):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    y = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    for i in range(rows // P):
        t = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, :])
        nisa.dma_copy(dst=u, src=w[i * P:(i + 1) * P, :])
        nisa.dma_copy(dst=s, src=scale[i * P:(i + 1) * P, :])
        a = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=a, data=t, op0=nl.multiply, operand0=s, op1=nl.add, operand1=1.0,
                           engine=nisa.engine.vector)
        nisa.tensor_tensor(dst=a, data1=a, data2=u, op=nl.subtract)
        b = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=b, data=t, op0=nl.multiply, operand0=0.5, op1=nl.add, operand1=a)
        c = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=b, engine=nisa.engine.gpsimd)
        nisa.dma_copy(dst=y[i * P:(i + 1) * P, :], src=c)
    return y


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(256, 64)).astype(np.float32), "w": rng.normal(size=(256, 64)).astype(np.float32),
            "scale": rng.uniform(0.5, 2, (256, 1)).astype(np.float32)}


def reference(x, w, scale):
    a = x.astype(np.float64) * scale + 1.0 - w
    return {"y": (x * 0.5 + a).astype(np.float32)}
