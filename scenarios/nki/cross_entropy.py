"""Cross-entropy forward with an online log-sum-exp, current NKI with direct allocation
(the ``cross_entropy`` scenario; nki-library's loss kernel allocates every buffer once).

Every SBUF tile is placed with ``address=(partition, byte offset)``, one after the other
from byte 0 (4-byte aligned), one slot each, above both loops: every vocabulary chunk
overwrites the previous chunk's buffers.  Per batch of 32 rows: the running max ``m``
starts at ``-inf`` and the running sum ``d`` at 0; per 512-word chunk the sum is rescaled
by ``exp(m - m_new)`` and the chunk's ``exp(x - m_new)`` added.  The target logit is
selected on chip: an ``iota`` of column numbers compared with the target index (which
drops by the chunk width every chunk), times the chunk, summed.
"""

import math

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

POSITIONS, CHUNK = 32, 512


@nki.jit
def cross_entropy(logits, targets):
    rows, vocab = logits.shape
    P = POSITIONS
    lse_out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="lse")
    loss_out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="loss")
    cursor = 0

    def place(shape, dtype, itemsize):
        nonlocal cursor
        tile = nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf, address=(0, cursor))
        cursor += -(-shape[1] * itemsize // 4) * 4
        return tile

    chunk = place((P, CHUNK), nl.bfloat16, 2)
    ex, columns, hit = (place((P, CHUNK), nl.float32, 4) for _ in range(3))
    m, d, m_new, d_new, cmax, diff, corr, d_corr, csum, target, picked, tl, lse, loss = (
        place((P, 1), nl.float32, 4) for _ in range(14))

    nisa.iota(dst=columns, pattern=[[1, CHUNK]], offset=0)
    for b in range(rows // P):
        nisa.memset(dst=m, value=-math.inf, engine=nisa.engine.vector)
        nisa.memset(dst=d, value=0.0, engine=nisa.engine.vector)
        nisa.memset(dst=tl, value=0.0, engine=nisa.engine.gpsimd)
        nisa.dma_copy(dst=target, src=targets[b * P:(b + 1) * P, :])
        for c in range(vocab // CHUNK):
            nisa.dma_copy(dst=chunk, src=logits[b * P:(b + 1) * P, c * CHUNK:(c + 1) * CHUNK])
            nisa.tensor_reduce(dst=cmax, op=nl.max, data=chunk, axis=1, keepdims=True)
            nisa.tensor_tensor(dst=m_new, data1=m, data2=cmax, op=nl.maximum)
            nisa.tensor_tensor(dst=diff, data1=m, data2=m_new, op=nl.subtract)
            nisa.activation(dst=corr, op=nl.exp, data=diff)
            nisa.tensor_tensor(dst=d_corr, data1=d, data2=corr, op=nl.multiply)
            nisa.tensor_scalar(dst=ex, data=chunk, op0=nl.subtract, operand0=m_new, engine=nisa.engine.vector)
            nisa.activation(dst=ex, op=nl.exp, data=ex)
            nisa.tensor_reduce(dst=csum, op=nl.add, data=ex, axis=1, keepdims=True)
            nisa.tensor_tensor(dst=d_new, data1=d_corr, data2=csum, op=nl.add)
            nisa.tensor_copy(dst=m, src=m_new, engine=nisa.engine.vector)
            nisa.tensor_copy(dst=d, src=d_new, engine=nisa.engine.scalar)
            # the target logit, if it falls in this chunk (iota == target - c * CHUNK)
            nisa.tensor_scalar(dst=hit, data=columns, op0=nl.equal, operand0=target, engine=nisa.engine.vector)
            nisa.tensor_tensor(dst=hit, data1=hit, data2=chunk, op=nl.multiply)
            nisa.tensor_reduce(dst=picked, op=nl.add, data=hit, axis=1, keepdims=True)
            nisa.tensor_tensor(dst=tl, data1=tl, data2=picked, op=nl.add)
            nisa.tensor_scalar(dst=target, data=target, op0=nl.subtract, operand0=float(CHUNK),
                               engine=nisa.engine.vector)
        nisa.activation(dst=lse, op=nl.log, data=d)
        nisa.tensor_tensor(dst=lse, data1=lse, data2=m, op=nl.add)
        nisa.tensor_tensor(dst=loss, data1=lse, data2=tl, op=nl.subtract)
        nisa.dma_copy(dst=lse_out[b * P:(b + 1) * P, :], src=lse, engine=nisa.engine.scalar)
        nisa.dma_copy(dst=loss_out[b * P:(b + 1) * P, :], src=loss, engine=nisa.engine.scalar)
    return lse_out, loss_out


def reference(logits, targets):
    """numpy: ``logsumexp`` per row and ``lse - logits[row, target]``."""
    x = logits.astype(np.float64)
    peak = x.max(axis=1, keepdims=True)
    lse = peak + np.log(np.exp(x - peak).sum(axis=1, keepdims=True))
    picked = np.take_along_axis(x, targets.astype(np.int64), axis=1)
    return {"lse": lse.astype(np.float32), "loss": (lse - picked).astype(np.float32)}
