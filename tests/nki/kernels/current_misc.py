"""Ranked names beyond the groups, current NKI: ``nisa.get_nc_version()`` against
``nisa.nc_version``, an ``nl.hbm`` scratch tensor (a round trip through device memory),
``nisa.reciprocal``, ``nisa.tensor_scalar_reduce``, ``nl.gelu_apprx_sigmoid``,
``nisa.dma_transpose`` of a DRAM tensor, and a PE transpose as a matmul against
``nl.shared_identity_matrix``."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def misc(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    stats = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm, name="stats")
    x_t = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.shared_hbm, name="x_t")
    scratch = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.hbm)

    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=scratch, src=t)
    u = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=scratch)
    r = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=r, data=u)
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=y, data=r, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=s)
    factor = 1.0 if nisa.get_nc_version() == nisa.nc_version.gen2 else 0.5
    nisa.activation(dst=y, op=nl.gelu_apprx_sigmoid, data=y, scale=factor)
    nisa.dma_copy(dst=out, src=y)
    nisa.dma_copy(dst=stats, src=s)

    by_dma = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(dst=by_dma, src=x)
    ident = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ident, src=nl.shared_identity_matrix(P, dtype=nl.float32))
    ps = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=t, moving=ident)  # t^T @ I
    both = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=both, data1=ps, data2=by_dma, op=nl.add)
    nisa.dma_copy(dst=x_t, src=both)
    return out, stats, x_t


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).uniform(0.5, 2.0, (128, 64)).astype(np.float32)}


def reference(x):
    z = 2.0 / x.astype(np.float64)  # trn1: NeuronCore-v2, factor 1
    gelu = z / (1 + np.exp(-1.702 * z))
    return {"out": gelu.astype(np.float32), "stats": z.sum(axis=1, keepdims=True).astype(np.float32),
            "x_t": (2.0 * x.T).astype(np.float32)}
