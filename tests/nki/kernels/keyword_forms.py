"""Keyword forms of the API reference signatures, and the style neuronx-cc prints NKI in
(``engine=nisa.unknown_engine``, bare string statements, ``reshape(shape=...)``), in the
current API; each kernel's result has a numpy reference in tests/nki/test_keyword_forms.py."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def keywords(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    """a bare string statement, as neuronx-cc prints them between instructions"""
    assert nl.num_programs(axes=0) == 2 and nl.num_programs(axes=(0,)) == 2
    row = nl.program_id(axis=0)
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, priority=None, engine=nisa.unknown_engine)
    u = nl.copy(x=t, dtype=nl.float32)
    z = nl.zeros_like(x=t)
    nisa.tensor_tensor(dst=z, data1=u, data2=t, op=nl.add, engine=nisa.engine.unknown)
    flat = z.reshape(shape=(P, F))
    nisa.tensor_scalar(dst=flat, data=flat, op0=nl.add, operand0=float(row))
    nisa.dma_copy(dst=out, src=flat)
    return out


@nki.jit
def loop_reduce_sum(x):
    """acc = op(acc, x) over k: the legacy nl.loop_reduce, written both ways."""
    P, F = x.shape
    out = nl.ndarray((P, F // 4), dtype=nl.float32, buffer=nl.shared_hbm)
    rebound = nl.zeros((P, F // 4), dtype=nl.float32, buffer=nl.sbuf)
    assigned = nl.zeros((P, F // 4), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(start=0, stop=4):
        t = nl.load(x[:, k * (F // 4):(k + 1) * (F // 4)])
        rebound = nl.loop_reduce(t, op=nl.add, loop_indices=[k], dtype=nl.float32)
        assigned[...] = nl.loop_reduce(t, nl.maximum, loop_indices=[k])
    nl.store(out, nl.add(rebound, assigned))
    return out


@nki.jit
def ordered(x):
    """with nl.no_reorder(): the block's instructions keep the kernel's order."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    with nl.no_reorder():
        a = nl.full((P, F), 3.0, dtype=nl.float32, buffer=nl.sbuf)
        b = nl.load(x)
        c = nl.add(a, b)
    nl.store(out, c)
    return out


@nki.jit
def middle_axes(x):
    """nl.sum and nl.max over free axes that are not the trailing ones (the average-pool
    tutorial's form; nisa.tensor_reduce's NKI 0.7 page takes the last axes only)."""
    P, A, B, C = x.shape
    out = nl.ndarray((P, B), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nl.sum(t, axis=[1, 3])
    m = nl.max(t, axis=[1, 3])
    nl.store(out, nl.add(s, m))
    return out


@nki.jit
def expanded(x):
    P, F = x.shape
    out = nl.ndarray((P, 1, F), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    assert nl.is_sbuf(t.buffer) and nl.is_on_chip(t.buffer) and not nl.is_hbm(t.buffer) and t.size == P * F
    e = nl.expand_dims(x=t, axis=1)
    nl.store(out, nl.logical_not(e))
    return out
