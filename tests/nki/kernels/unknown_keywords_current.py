"""Keywords given to calls of the ``nki`` API (NKI 0.7): one no NKI call takes is said however
far it is from the call's parameters; ``dtype=`` to ``nisa.tensor_copy`` (the SDK's own
tutorials pass it, its published signature has none) passes silently."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    return {"a": np.random.default_rng(seed).normal(size=(128, 64)).astype(np.float32)}


@nki.jit
def invented_and_known(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, colour=1)  # no NKI call takes colour=
    nisa.tensor_copy(dst=u, src=t, dtype=nl.float32)  # the tutorials' dtype=: silent
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out
