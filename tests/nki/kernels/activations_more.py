"""The NKI language reference's other activation functions, as ``nl.*`` calls and as
``nisa.activation(op=...)`` (tests/nki/test_activations_more.py)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def each_function(x):
    """out[k] = function k of x, in the order of the test's FUNCTIONS."""
    P, F = x.shape
    out = nl.ndarray((9, P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out[0], nl.silu_dx(t))
    nl.store(out[1], nl.softplus(t))
    nl.store(out[2], nl.mish(t))
    nl.store(out[3], nl.sin(t))
    nl.store(out[4], nl.cos(t))
    nl.store(out[5], nl.arctan(t))
    nl.store(out[6], nl.floor(t))
    nl.store(out[7], nl.ceil(t))
    r = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=r, op=nl.trunc, data=t)
    nl.store(out[8], r)
    return out
