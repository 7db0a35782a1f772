"""PE transposes as public kernels write them: ``nc_matmul(..., is_transpose=True)`` with a
moving tile that is no identity (Autocomp's attention kernels, measured on trn1), and a legacy
``nc_transpose`` whose result is assigned to an SBUF tile."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scores_labelled_transpose(q, k):  # q (128, M), k (128, N): out = q.T @ k (v2)
    out = nl.ndarray((q.shape[1], k.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    scores = nl.ndarray((q.shape[1], k.shape[1]), dtype=nl.float32, buffer=nl.psum)
    scores[...] = nisa.nc_matmul(stationary=nl.load(q), moving=nl.load(k), is_transpose=True)
    nl.store(out, nl.copy(scores))
    return out


@nki.jit
def transposed_into_sbuf(x, engine="none"):  # x (P, F): out = x.T
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = nl.ndarray((nl.par_dim(x.shape[1]), x.shape[0]), dtype=x.dtype, buffer=nl.sbuf)
    if engine == "pe":
        y[...] = nisa.nc_transpose(t, engine=nisa.tensor_engine)
    elif engine == "dve":
        y[...] = nisa.nc_transpose(t, engine=nisa.vector_engine)
    else:
        y[...] = nisa.nc_transpose(t)
    nl.store(out, y)
    return out


@nki.jit
def int_transposed(a):  # a int32 (P, F): out = a.T, by nl.transpose (PE, through PSUM)
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.transpose(nl.load(a)))
    return out
