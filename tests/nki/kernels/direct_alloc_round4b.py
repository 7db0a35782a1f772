"""Two kernels of ours about PSUM the kernel or the compiler runs short of (legacy NKI).

``bank_handoff``: two PSUM tensors the kernel places on common banks, as the attention
tutorial's ``attn_fwd_v9`` gives its V transposes eight banks and then its scores the first
seven.  The transposes ``tp`` take banks 0 and 1; the product ``mm`` takes bank 0 again.
Written in the kernel's order (each transpose evicted, then the product), the bank passes from
one tensor to the other with nothing of ``tp`` live any more: the compiler builds its deps after
allocation, on addresses, so the product waits for the eviction it would overwrite.  With
``evict_late`` the product is written while the first transpose still waits to be evicted: a
clobber in program order, wrong whatever the schedule.

``many_banks``: ``n`` matmul results of one bank each, all computed before any is evicted.
More than eight are live together: the compiler's allocator spills PSUM tiles to SBUF and back,
as it must for the attention tutorial's ``attn_fwd_v3`` (its ``qk`` scores, one bank per block).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128
F = 512


@nki.jit
def bank_handoff(x, out_t, out_m, evict_late=False):
    xt = nl.ndarray((2, nl.par_dim(P), P), dtype=nl.float32, buffer=nl.sbuf)
    tp = nl.ndarray((2, nl.par_dim(P), P), dtype=nl.float32,
                    buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    mm = nl.ndarray((1, nl.par_dim(P), P), dtype=nl.float32,
                    buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(1,)))  # bank 0: tp[0]'s
    for g in nl.static_range(2):
        xt[g] = nl.load(x[g * P:(g + 1) * P, :])
        tp[g] = nisa.nc_transpose(xt[g], engine=nisa.tensor_engine)
    if evict_late:
        mm[0] = nisa.nc_matmul(xt[0], xt[1])  # over tp[0] before its eviction
    for g in nl.static_range(2):
        t_sb = nisa.tensor_copy(tp[g], engine=nisa.vector_engine)
        nl.store(out_t[g * P:(g + 1) * P, :], value=t_sb)
    if not evict_late:
        mm[0] = nisa.nc_matmul(xt[0], xt[1])  # bank 0 again, tp[0] evicted
    m_sb = nisa.tensor_copy(mm[0], engine=nisa.scalar_engine)
    nl.store(out_m, value=m_sb)


@nki.jit
def many_banks(a, b, out):
    n = b.shape[1] // F
    a_sb = nl.load(a)
    b_sb = nl.load(b)
    ps = nl.ndarray((n, nl.par_dim(P), F), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(n):
        ps[j] = nisa.nc_matmul(a_sb, b_sb[:, j * F:(j + 1) * F])
    for j in nl.affine_range(n):
        o_sb = nisa.tensor_copy(ps[j], engine=nisa.vector_engine)
        nl.store(out[:, j * F:(j + 1) * F], value=o_sb)


def handoff_inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (2 * P, P)).astype(np.float32)
    return {"x": x, "out_t": np.zeros_like(x), "out_m": np.zeros((P, P), np.float32)}


def handoff_reference(x):
    """numpy: each row tile transposed; ``x_0^T x_1``."""
    x0, x1 = x[:P].astype(np.float64), x[P:].astype(np.float64)
    return {"out_t": np.concatenate([x0.T, x1.T]).astype(np.float32), "out_m": (x0.T @ x1).astype(np.float32)}


def banks_inputs(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return {"a": rng.uniform(-1, 1, (P, P)).astype(np.float32),
            "b": rng.uniform(-1, 1, (P, n * F)).astype(np.float32), "out": np.zeros((P, n * F), np.float32)}


def banks_reference(a, b):
    return {"out": (a.astype(np.float64).T @ b.astype(np.float64)).astype(np.float32)}
