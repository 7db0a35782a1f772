"""Random numbers, current NKI: ``nl.rand``, ``nisa.rng``, ``nisa.rand2``, ``nisa.dropout``
and ``nl.dropout``, after ``nl.random_seed``."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def draws(x, seed):
    P, F = x.shape
    uniform_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="uniform_out")
    bits_out = nl.ndarray((P, F), dtype=nl.uint16, buffer=nl.shared_hbm, name="bits_out")
    ranged_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="ranged_out")
    dropped_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="dropped_out")
    halved_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="halved_out")
    nl.random_seed(nl.load(seed))
    uniform = nl.rand((P, F), dtype=nl.float32)
    nl.store(uniform_out, uniform)
    bits = nl.ndarray((P, F), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.rng(dst=bits)
    nl.store(bits_out, bits)
    ranged = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.rand2(dst=ranged, min=-2.0, max=3.0)
    nl.store(ranged_out, ranged)
    data = nl.load(x)
    dropped = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dropout(dst=dropped, data=data, prob=0.3)
    nl.store(dropped_out, dropped)
    nl.store(halved_out, nl.dropout(data, rate=0.5))
    return uniform_out, bits_out, ranged_out, dropped_out, halved_out
