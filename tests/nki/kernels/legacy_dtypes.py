"""Dtype group, legacy NKI: bf16 inputs loaded as bf16 tiles, a bf16 matmul accumulating in
fp32 PSUM, an fp8 (``float8_e4m3``) quantized copy through ``dtype=``, and a bf16 output."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def mixed_precision(a, b, c, q):
    K, M = a.shape
    _, N = b.shape
    at = nl.load(a)
    bt = nl.load(b)
    ps = nisa.nc_matmul(at, bt)
    out = nisa.tensor_copy(ps, dtype=nl.bfloat16, engine=nisa.vector_engine)
    nl.store(c, value=out)
    small = nl.multiply(at, 0.5, dtype=nl.float8_e4m3)
    nl.store(q, value=small)


def inputs(seed=0):
    from ml_dtypes import bfloat16, float8_e4m3fn
    rng = np.random.default_rng(seed)
    return {"a": rng.uniform(-1, 1, (128, 64)).astype(bfloat16), "b": rng.uniform(-1, 1, (128, 256)).astype(bfloat16),
            "c": np.zeros((64, 256), bfloat16), "q": np.zeros((128, 64), float8_e4m3fn)}


def reference(a, b):
    from ml_dtypes import bfloat16, float8_e4m3fn
    product = a.astype(np.float64).T @ b.astype(np.float64)
    return {"c": product.astype(np.float32).astype(bfloat16),
            "q": (a.astype(np.float32) * 0.5).astype(float8_e4m3fn)}
