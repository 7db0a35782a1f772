"""Fused Mamba selective scan, legacy NKI (the ``mamba`` scenario; the NKI fused-Mamba
tutorial's v3 loop order: batch -> state -> sequence tile).

``h_t = exp(delta_t * A) * h_{t-1} + delta_t * B_t * u_t`` by ``tensor_tensor_scan`` on
DVE, its initial value carried across sequence tiles by a copy of the last column (so the
sequence loop is a ``sequential_range``), and ``out += h * C`` accumulated across states
(the state loop is a ``sequential_range`` too).  ``B`` and ``C`` rows are broadcast to the
128 channel partitions by K = 1 ones matmuls that DVE reads straight from PSUM.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

SEQ_TILE = 512


@nki.jit
def mamba(delta, u, A, B, C, out):
    batch, channels, seq = delta.shape
    _, states = A.shape
    T = SEQ_TILE
    ones = nisa.memset((1, channels), 1.0, nl.float32, engine=nisa.vector_engine)
    for b in nl.affine_range(batch):
        d_i = nl.load(delta[b, :, :])
        u_i = nl.load(u[b, :, :])
        acc = nisa.memset((channels, seq), 0.0, nl.float32, engine=nisa.gpsimd_engine)
        for s in nl.sequential_range(states):
            a_i = nl.load(A[:, nl.ds(s, 1)])
            init = nisa.memset((channels, 1), 0.0, nl.float32, engine=nisa.vector_engine)
            for t in nl.sequential_range(seq // T):
                d_a = nisa.activation(op=nl.exp, data=d_i[:, t * T:(t + 1) * T], scale=a_i)
                b_row = nl.load(B[b, nl.ds(s, 1), t * T:(t + 1) * T])
                d_u = nisa.tensor_tensor(d_i[:, t * T:(t + 1) * T], u_i[:, t * T:(t + 1) * T], op=nl.multiply)
                b_bc = nisa.nc_matmul(ones, b_row)
                d_bu = nisa.tensor_tensor(d_u, b_bc, op=nl.multiply)
                scan = nisa.tensor_tensor_scan(d_a, d_bu, init, op0=nl.multiply, op1=nl.add)
                init[...] = nisa.tensor_copy(scan[:, T - 1:T], engine=nisa.gpsimd_engine)
                c_row = nl.load(C[b, nl.ds(s, 1), t * T:(t + 1) * T])
                c_bc = nisa.nc_matmul(ones, c_row)
                s_c = nisa.tensor_tensor(scan, c_bc, op=nl.multiply)
                acc[:, t * T:(t + 1) * T] = nisa.tensor_tensor(acc[:, t * T:(t + 1) * T], s_c, op=nl.add)
        nl.store(out[b, :, :], value=acc)


def reference(delta, u, A, B, C):
    """numpy: the selective-scan recurrence step by step in float64."""
    delta, u, a, b, c = (t.astype(np.float64) for t in (delta, u, A, B, C))
    d_a = np.exp(delta[:, :, None, :] * a[None, :, :, None])
    d_bu = delta[:, :, None, :] * b[:, None, :, :] * u[:, :, None, :]
    h = np.zeros(d_a.shape[:3])
    out = np.zeros_like(delta)
    for step in range(delta.shape[2]):
        h = d_a[..., step] * h + d_bu[..., step]
        out[:, :, step] = (h * c[:, None, :, step]).sum(axis=2)
    return {"out": out.astype(np.float32)}
