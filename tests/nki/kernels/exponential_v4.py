"""``nisa.exponential`` (NeuronCore-v4's Vector Engine, NKI 0.7): ``exp(src - max_value)`` and
the row sums its accumulator keeps, as its page and the Trainium3 guide's softmax say."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn3")
def softmax_rows(x):  # the guide's pattern: a row max, then exp(x - max) and its sum in one call
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    e = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=e, src=t, max_value=m, reduce_res=s, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=r, data=s)
    o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=e, op0=nl.multiply, operand0=r)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit(platform_target="trn3")
def chained_sums(x):  # reset_reduce on one half, reduce on the other, load_reduce from 2.0 after
    sums = nl.ndarray((x.shape[0], 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    h = x.shape[1] // 2
    e = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((x.shape[0], 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=e[:, 0:h], src=t[:, 0:h], max_value=1.0, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.exponential(dst=e[:, h:], src=t[:, h:], max_value=1.0, reduce_res=s[:, 0:1],
                     reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.exponential(dst=e[:, 0:h], src=t[:, 0:h], reduce_res=s[:, 1:2], reduce_cmd=nisa.reduce_cmd.load_reduce,
                     reduce_init=2.0)
    nisa.dma_copy(dst=sums, src=s)
    return sums


@nki.jit(platform_target="trn3")
def init_without_load(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.exponential(dst=t, src=t, reduce_init=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def on_trn1(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.exponential(dst=t, src=t)
    nisa.dma_copy(dst=out, src=t)
    return out
