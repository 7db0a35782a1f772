"""A write over bytes an earlier iteration of an affine loop read (an in-place stencil): run in
another order, that iteration reads the new value (probe_at)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def stencil(x, sequential=False):  # x (3, 128, 512): out[j] = x[j] + x[j + 1] for j < 2, out[2] = x[2]
    out = nl.ndarray((3, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((3, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    for j in nl.affine_range(3):
        t[j] = nl.load(x[j])
    for j in (nl.sequential_range(2) if sequential else nl.affine_range(2)):
        t[j] = nl.add(t[j], t[j + 1])  # reads block j + 1, which iteration j + 1 writes
    for j in nl.affine_range(3):
        nl.store(out[j], value=t[j])
    return out


@nki.jit
def stencil_through_hbm(x):  # the same through an HBM scratch
    s = nl.ndarray((3, 128, 512), dtype=np.float32, buffer=nl.hbm)
    out = nl.ndarray((3, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    for j in nl.affine_range(3):
        nl.store(s[j], value=nl.load(x[j]))
    for j in nl.affine_range(2):
        nl.store(s[j], value=nl.add(nl.load(s[j]), nl.load(s[j + 1])))
    for j in nl.affine_range(3):
        nl.store(out[j], value=nl.load(s[j]))
    return out


@nki.jit
def shifted_copy(x):  # out[j] = x[j + 1]: reads of one tensor, writes of another (clean)
    out = nl.ndarray((2, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((3, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    for j in nl.affine_range(3):
        t[j] = nl.load(x[j])
    for j in nl.affine_range(2):
        nl.store(out[j], value=nl.add(t[j + 1], 0.0))
    return out


@nki.jit
def scratch_rewritten(x):  # one scratch tile written and read in every iteration: the WAW, said once
    out = nl.ndarray((3, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    for j in nl.affine_range(3):
        scratch[...] = nl.load(x[j])
        nl.store(out[j], value=nl.add(scratch, 1.0))
    return out


@nki.jit
def stencil_plus_equals(x):  # the stencil written t[j] += t[j + 1]
    out = nl.ndarray((3, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((3, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    for j in nl.affine_range(3):
        t[j] = nl.load(x[j])
    for j in nl.affine_range(2):
        t[j] += t[j + 1]
    for j in nl.affine_range(3):
        nl.store(out[j], value=t[j])
    return out
