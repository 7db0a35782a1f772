"""Dtype group, current NKI: ``float8_e5m2`` and ``bfloat16`` inputs, casts on DMA (load
into an fp32 tile) and on compute (``tensor_copy`` into bf16 / fp8 tiles), fp16 output,
``nl.int32`` iota converted to fp32."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

P, F = 128, 32


@nki.jit
def casts(x8, xb):
    out16 = nl.ndarray((P, F), dtype=nl.float16, buffer=nl.shared_hbm, name="out16")
    out8 = nl.ndarray((P, F), dtype=nl.float8_e5m2, buffer=nl.shared_hbm, name="out8")
    wide = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=wide, src=x8)
    other = nl.ndarray((P, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=other, src=xb)
    ids = nl.ndarray((P, F), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=ids, pattern=[[1, F]], offset=0)
    total = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=wide, data2=other, op=nl.add)
    nisa.tensor_tensor(dst=total, data1=total, data2=ids, op=nl.add)
    half = nl.ndarray((P, F), dtype=nl.float16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=half, src=total, engine=nisa.engine.vector)
    nisa.dma_copy(dst=out16, src=half)
    narrow = nl.ndarray((P, F), dtype=nl.float8_e5m2, buffer=nl.sbuf)
    nisa.tensor_copy(dst=narrow, src=wide, engine=nisa.engine.scalar)
    nisa.dma_copy(dst=out8, src=narrow)
    return out16, out8


def inputs(seed=0):
    from ml_dtypes import bfloat16, float8_e5m2
    rng = np.random.default_rng(seed)
    return {"x8": rng.uniform(-2, 2, (P, F)).astype(float8_e5m2), "xb": rng.uniform(-2, 2, (P, F)).astype(bfloat16)}


def reference(x8, xb):
    total = x8.astype(np.float32) + xb.astype(np.float32) + np.arange(F, dtype=np.float32)
    return {"out16": total.astype(np.float16), "out8": x8.copy()}
