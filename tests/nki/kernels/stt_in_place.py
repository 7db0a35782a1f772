"""scalar_tensor_tensor accumulating into its own operand (``acc = (data * 3) <op1> acc``), as
nki-library's attention_bwd accumulates dQ (tests/nki/test_stt_in_place.py)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def accumulate(acc_in, data_in, op1, reverse1):
    out = nl.ndarray(acc_in.shape, dtype=acc_in.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray(acc_in.shape, dtype=acc_in.dtype, buffer=nl.sbuf)
    data = nl.ndarray(data_in.shape, dtype=data_in.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=acc, src=acc_in)
    nisa.dma_copy(dst=data, src=data_in)
    nisa.scalar_tensor_tensor(dst=acc, data=data, op0=nl.multiply, operand0=3.0, op1=op1, operand1=acc,
                              reverse1=reverse1)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def into_another(other_in, data_in):
    out = nl.ndarray(other_in.shape, dtype=other_in.dtype, buffer=nl.shared_hbm)
    other = nl.ndarray(other_in.shape, dtype=other_in.dtype, buffer=nl.sbuf)
    data = nl.ndarray(data_in.shape, dtype=data_in.dtype, buffer=nl.sbuf)
    result = nl.ndarray(data_in.shape, dtype=data_in.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=other, src=other_in)
    nisa.dma_copy(dst=data, src=data_in)
    nisa.scalar_tensor_tensor(dst=result, data=data, op0=nl.multiply, operand0=3.0, op1=nl.add, operand1=other)
    nisa.dma_copy(dst=out, src=result)
    return out
