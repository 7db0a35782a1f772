"""Flash-attention forward over KV tiles with an online softmax, legacy NKI (the
``flash_attention`` scenario; NKI's reference ``flash_fwd`` layout: ``q`` and ``k`` are
[d, seq], ``v`` is [seq, d]).

The running max (negated, ``nm``), running sum ``l_sum`` and accumulator ``o`` live
outside the KV loop and are carried from one KV tile to the next, so the loop is a
``sequential_range``: its iterations depend on each other.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KV_TILE = 128
BIG = 30000.0  # initial negated running max; exp(-BIG + x) is 0 in fp32


@nki.jit
def flash_attention(q, k, v, out):
    d, seq_q = q.shape
    _, seq_k = k.shape
    scale = 1.0 / np.sqrt(d)
    q_raw = nl.load(q)
    qt = nisa.tensor_scalar(q_raw, nl.multiply, float(scale), engine=nisa.vector_engine)
    nm = nisa.memset((seq_q, 1), BIG, nl.float32, engine=nisa.gpsimd_engine)
    l_sum = nisa.memset((seq_q, 1), 0.0, nl.float32, engine=nisa.gpsimd_engine)
    o = nisa.memset((seq_q, d), 0.0, nl.float32, engine=nisa.gpsimd_engine)
    for j in nl.sequential_range(seq_k // KV_TILE):
        kt = nl.load(k[:, j * KV_TILE:(j + 1) * KV_TILE])
        vt = nl.load(v[j * KV_TILE:(j + 1) * KV_TILE, :])
        s_ps = nisa.nc_matmul(qt, kt)
        tile_max = nisa.tensor_reduce(nl.max, s_ps, axis=(1,), negate=True, keepdims=True)
        nm_new = nisa.tensor_tensor(nm, tile_max, op=nl.minimum)
        alpha = nisa.activation(op=nl.exp, data=nm, scale=-1.0, bias=nm_new)
        p = nisa.activation(op=nl.exp, data=s_ps, bias=nm_new, dtype=nl.bfloat16)
        rowsum = nisa.tensor_reduce(nl.add, p, axis=(1,), keepdims=True, dtype=nl.float32)
        l_sum[...] = nisa.tensor_tensor(l_sum, alpha, op=nl.multiply)
        l_sum[...] = nisa.tensor_tensor(l_sum, rowsum, op=nl.add)
        nm[...] = nisa.activation(op=nl.copy, data=nm_new)  # on ACT: NeuronCore-v2 has no tensor_copy there
        pt_ps = nisa.nc_transpose(p, engine=nisa.tensor_engine)
        p_t = nisa.activation(op=nl.copy, data=pt_ps, dtype=nl.bfloat16)
        pv_ps = nisa.nc_matmul(p_t, vt)
        o[...] = nisa.tensor_scalar(o, nl.multiply, alpha, engine=nisa.vector_engine)
        o[...] = nisa.tensor_tensor(o, pv_ps, op=nl.add)
    o_out = nisa.tensor_scalar(o, nl.divide, l_sum, dtype=nl.bfloat16, engine=nisa.vector_engine)
    nl.store(out, value=o_out)


def reference(q, k, v):
    """numpy: ``softmax(q^T k / sqrt(d)) v`` in float64, rounded to the output's bf16."""
    qf, kf, vf = (a.astype(np.float64) for a in (q, k, v))
    scores = (qf.T / np.sqrt(qf.shape[0])) @ kf
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True) @ vf).astype(q.dtype)}
