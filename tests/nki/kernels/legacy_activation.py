"""Activation and elementwise group, legacy NKI: ``nl.*`` math on tiles (``nl.exp``,
``nl.silu``, ``nl.gelu_apprx_tanh``, ``nl.tanh``, ``nl.sigmoid``, ``nl.square``, ``nl.rsqrt``,
``nl.add`` / ``nl.multiply`` with tiles and scalars) and ``nisa.activation`` with a scale and
a per-partition bias tile."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def activations(x, bias, y):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    for i in nl.affine_range(rows // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        b = nl.load(bias[i * P:(i + 1) * P, :])
        gated = nl.multiply(nl.silu(t), nl.sigmoid(t))
        smooth = nl.add(nl.gelu_apprx_tanh(t), nl.tanh(t))
        norm = nl.rsqrt(nl.add(nl.square(t), 1.0))
        shifted = nisa.activation(op=nl.exp, data=t, scale=0.5, bias=b)
        total = nl.add(nl.add(gated, smooth), nl.multiply(norm, shifted))
        nl.store(y[i * P:(i + 1) * P, :], value=total)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-2, 2, (256, 128)).astype(np.float32),
            "bias": rng.uniform(-1, 1, (256, 1)).astype(np.float32), "y": np.zeros((256, 128), np.float32)}


def _gelu_tanh(z):
    return 0.5 * z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3)))


def reference(x, bias):
    z = x.astype(np.float64)
    sig = 1 / (1 + np.exp(-z))
    total = z * sig * sig + _gelu_tanh(z) + np.tanh(z) + np.exp(0.5 * z + bias) / np.sqrt(z * z + 1)
    return {"y": total.astype(np.float32)}
