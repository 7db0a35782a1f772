"""An ``nl.*`` operation on two PSUM tiles (tests/nki/test_psum_operands.py)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def difference_of_products(a, b):
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    ta, tb = nl.load(a), nl.load(b)
    nl.store(out, value=nl.subtract(nl.matmul(ta, tb), nl.matmul(tb, ta)))
    return out


@nki.jit
def isa_difference_of_products(a, b):
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    ta, tb = nl.load(a), nl.load(b)
    nl.store(out, value=nisa.tensor_tensor(nl.matmul(ta, tb), nl.matmul(tb, ta), op=nl.subtract))
    return out
