"""A private call of the compiler's (``nisa._tiled_offloaded_memcpy``, nki-samples' ring
attention) and ``nl.program_id`` in a launch on ranks with a grid of one program."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def private_copy(x):
    out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    nisa._tiled_offloaded_memcpy(dst=out, src=x)
    return out


@nki.jit
def row_of_the_program(x):  # x (2, 128, 64): out[b] = x[b] + 1 for the one program b = 0
    out = nl.ndarray((2, 128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    b = nl.program_id(axis=0)
    nl.store(out[b], nl.add(nl.load(x[b]), 1.0))
    return out
