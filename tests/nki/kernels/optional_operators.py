"""``nisa.tensor_scalar`` with no operator in a stage, as nki-library's MX gate / up projection
writes its optional clamps: ``op0=nl.minimum if upper is not None else None`` (and ``op1`` so):
a stage given None passes the data through, as ``nl.bypass`` does."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def clamped(x, upper=None, lower=None):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.minimum if upper is not None else None, operand0=upper,
                       op1=nl.maximum if lower is not None else None, operand1=lower)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
