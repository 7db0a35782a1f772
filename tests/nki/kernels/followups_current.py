"""Kernels of tests/nki/test_followups.py in the current API: named instructions ordered by
``with_schedule`` and ``depends_on``, a reshaped HBM view returned, ``nl.dynamic_range`` by
keyword."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def named(t):
    x = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=t)
    a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    c = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.activation(dst=a, data=x, op=nl.exp, name="first")
    nisa.tensor_scalar(dst=b, data=x, op0=nl.add, operand0=1.0, name="second")
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=c)
    return out


forward = named.with_schedule([("second", "first")])
backward = named.with_schedule([("first", ["second"])], kind=nisa.dependency.runtime)
misspelled = named.with_schedule([("second", "frist")])


@nki.jit
def against_data(t):
    x = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=t, name="load")
    y = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.activation(dst=y, data=x, op=nl.exp, name="use")
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=y)
    return out


contradicting = against_data.with_schedule([("load", "use")])


@nki.jit
def handles(t):
    x = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=t)
    a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    late = nisa.activation(dst=a, data=x, op=nl.exp)
    early = nisa.tensor_scalar(dst=b, data=x, op0=nl.multiply, operand0=2.0)
    late.depends_on(early, kind=nisa.dependency.runtime)
    c = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add).depends_on(late).depends_on(early)
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=c)
    return out


@nki.jit
def reshaped_return(x):
    flat = nl.ndarray((x.shape[0] * x.shape[1],), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(flat.reshape(x.shape), nl.exp(nl.load(x)))
    return flat.reshape((x.shape[0] // 2, 2 * x.shape[1]))


@nki.jit
def reshaped_declared(x):
    out = nl.ndarray((x.shape[0] * x.shape[1],), dtype=x.dtype, buffer=nl.shared_hbm).reshape(x.shape)
    nl.store(out, nl.multiply(nl.load(x), 3.0))
    return out


@nki.jit
def keyword_dynamic_range(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for k in nl.dynamic_range(start=0, stop=x.shape[1] // 32, step=1):
        t = nl.load(x[:, nl.ds(k * 32, 32)])
        nl.store(out[:, nl.ds(k * 32, 32)], nl.add(t, 1.0))
    return out
