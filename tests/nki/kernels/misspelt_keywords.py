"""Kernels giving NKI calls keywords they do not take (tests/nki/test_misspelt_keywords.py):
misspelt ones (a warning at their line) and ones NKI has that neuronsim ignores (none)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal((128, 64)).astype(np.float32)}


@nki.jit
def mask_misspelt(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    tile = nl.load(a[i_p, i_f], maks=(i_p < 100))
    nl.store(out[i_p, i_f], value=tile)
    return out


@nki.jit
def two_slips_in_a_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        tile = nl.load(a[i * 64:(i + 1) * 64, :])
        result = nisa.activation(op=nl.exp, data=tile, scael=2.0)
        nl.store(out[i * 64:(i + 1) * 64, :], value=nl.multiply(result, 1.0, dtpye=nl.float32))
    return out


@nki.jit
def options_nki_has(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.load(a, perf_mode=1)
    for _i in nl.affine_range(1, precise_schedule=True):
        nl.store(out, value=nl.exp(tile, colour="blue"))
    return out


@nki.jit
def legacy_call_given_dst(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.load(a)
    doubled = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=tile, op0=nl.multiply, operand0=2.0)
    nl.store(out, value=doubled)
    return out
