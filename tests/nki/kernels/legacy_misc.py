"""Ranked names beyond the groups, legacy NKI: ``nisa.get_nc_version()``, a private-HBM
scratch tensor, ``nisa.reciprocal``, ``nisa.tensor_scalar_reduce``, ``nl.gelu_apprx_sigmoid``,
``nisa.dma_transpose`` and a matmul against ``nl.shared_identity_matrix``; results returned."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def misc(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    stats = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    x_t = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.private_hbm)

    t = nl.load(x)
    nl.store(scratch, value=t)
    r = nisa.reciprocal(nl.load(scratch))
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    y = nisa.tensor_scalar_reduce(data=r, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=s)
    factor = 1.0 if nisa.get_nc_version() == nisa.nc_version.gen2 else 0.5
    g = nl.gelu_apprx_sigmoid(nl.multiply(y, factor))
    nl.store(out, value=g)
    nl.store(stats, value=s)

    by_dma = nisa.dma_transpose(x)
    ident = nl.load(nl.shared_identity_matrix(P, dtype=nl.float32))
    ps = nisa.nc_matmul(t, ident)  # t^T @ I
    nl.store(x_t, value=nl.add(ps, by_dma))
    return out, stats, x_t


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).uniform(0.5, 2.0, (128, 64)).astype(np.float32)}


def reference(x):
    z = 2.0 / x.astype(np.float64)
    gelu = z / (1 + np.exp(-1.702 * z))
    return {"return0": gelu.astype(np.float32), "return1": z.sum(axis=1, keepdims=True).astype(np.float32),
            "return2": (2.0 * x.T).astype(np.float32)}
