"""Legacy loops whose body carries Python state from one iteration to the next.  NKI traces an
affine / sequential body (and a legacy ``for`` over ``range``, the compiler's sequential_range)
once, so the state changes once: each kernel's ``# carried`` line is what the finding names;
the kernels after ``# --- not carried`` change nothing an iteration reads."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def doubling_scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    scale = 1.0
    for i in nl.affine_range(a.shape[1] // 4):
        t = nl.load(a[:, i * 4:(i + 1) * 4])
        nl.store(out[:, i * 4:(i + 1) * 4], value=nl.multiply(t, scale))
        scale = scale * 2.0  # carried
    return out


@nki.jit
def column_counter(a):
    out = nl.ndarray((a.shape[0], 4), dtype=a.dtype, buffer=nl.shared_hbm)
    done = 0
    for i in range(4):
        t = nl.load(a[:, i * 4:(i + 1) * 4])
        nl.store(out[:, done:done + 1], value=t[:, 0:1])
        done += 1  # carried
    return out


@nki.jit
def tiles_in_a_list(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    seen = []
    for i in nl.sequential_range(a.shape[1] // 4):
        t = nl.load(a[:, i * 4:(i + 1) * 4])
        nl.store(out[:, i * 4:(i + 1) * 4], value=t)
        seen.append(i)  # carried
    return out


@nki.jit
def unrolled_offset(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    bias = 0.0
    for i in nl.affine_range(a.shape[1] // 4):
        t = nl.load(a[:, i * 4:(i + 1) * 4], mask=(i < 3))  # the index's value: unrolled
        nl.store(out[:, i * 4:(i + 1) * 4], value=nl.add(t, bias), mask=(i < 3))
        bias += 1.0  # carried
    return out


# --- not carried


@nki.jit
def temporaries(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    width = 4
    for i in nl.affine_range(a.shape[1] // width):
        start = i * width
        stop = start + width
        t = nl.load(a[:, start:stop])
        t = nl.multiply(t, 2.0)
        nl.store(out[:, start:stop], value=t)
    return out


@nki.jit
def static_scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    scale = 1.0
    for i in nl.static_range(a.shape[1] // 4):  # unrolled in Python: the state is carried
        t = nl.load(a[:, i * 4:(i + 1) * 4])
        nl.store(out[:, i * 4:(i + 1) * 4], value=nl.multiply(t, scale))
        scale = scale * 2.0
    return out


def doubling_reference(a):
    return np.concatenate([a[:, 4 * i:4 * i + 4] * 2.0 ** i for i in range(a.shape[1] // 4)], axis=1)


# --- a tile rebound in a body: every iteration reads the tile the loop began with


@nki.jit
def rebound_tile(a):
    """``v = nl.add(v, 1.0)`` in an affine loop (blockwise_mm.py:708 writes ``v = nl.copy(v)``):
    NKI traces the body once, so every iteration adds 1 to the tile ``v`` held before the loop
    (columns of ``a + 1``), also when the masks unroll the loop here, and no iteration reads
    another's tile (no carried dependence)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    v = nl.load(a[:, 0:4])
    for i in nl.affine_range(a.shape[1] // 4):
        v = nl.add(v, 1.0)  # rebound
        nl.store(out[:, i * 4:(i + 1) * 4], value=v, mask=(i < UNROLL_BELOW))
    return out


UNROLL_BELOW = 4  # a mask depending on the index's value unrolls the loop (4 iterations of 16 columns)
