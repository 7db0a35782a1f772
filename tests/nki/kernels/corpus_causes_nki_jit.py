"""A kernel decorated with torch_neuronx.nki_jit, as the SDK's older layout examples are."""

import nki.language as nl
from torch_neuronx import nki_jit


@nki_jit
def exp_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.exp(nl.load(x)))
    return out
