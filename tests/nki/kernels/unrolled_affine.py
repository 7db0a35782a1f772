"""Legacy ``affine_range`` loops the trace unrolls (a loop index used other than affinely,
``k // 2``), with and without a value carried between their iterations
(tests/nki/test_unrolled_affine.py)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((2, 128, 64)).astype(np.float32)}


@nki.jit
def running_sum_in_hbm(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.zeros((128, 64), dtype=nl.float32))
    for k in nl.affine_range(4):
        total = nl.load(out)
        part = nl.load(x[k // 2])
        nl.store(out, value=nl.add(total, part))
    return out


@nki.jit
def independent_halves(x):
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for k in nl.affine_range(4):
        part = nl.load(x[k // 2])
        nl.store(out[k], value=nl.multiply(part, 2.0))
    return out


@nki.jit
def carried_by_the_python_loop_only(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.zeros((128, 64), dtype=nl.float32))
    for r in range(2):
        for k in nl.affine_range(2):
            if k == 0:
                total = nl.load(out)
                part = nl.load(x[(r + k) // 2])
                nl.store(out, value=nl.add(total, part))
    return out


@nki.jit
def nested_inner_carries(x):
    out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for j in nl.affine_range(2):
        nl.store(out[j], value=nl.zeros((128, 64), dtype=nl.float32))
        for k in nl.affine_range(2):
            total = nl.load(out[j])
            nl.store(out[j], value=nl.add(total, nl.load(x[(j + k) // 2])))
    return out


@nki.jit
def outer_carries_past_an_inner_loop(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    doubled = nl.ndarray((2, 2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.zeros((128, 64), dtype=nl.float32))
    for j in nl.affine_range(2):
        for k in nl.affine_range(2):  # its own iterations independent
            part = nl.load(x[(j + k) // 2])
            nl.store(doubled[j, k], value=nl.multiply(part, 2.0))
        total = nl.load(out)
        nl.store(out, value=nl.add(total, nl.load(x[j // 2])))
    return out, doubled


@nki.jit
def psum_sums_read_per_tile(x):
    # the PSUM accumulator zeroed once, outside both output-tile loops, read in each tile: both
    # loops unrolled (their indices in the store's mask), the matmuls' carry went unflagged (probe_v)
    out = nl.ndarray((2, 64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((64, 64), dtype=nl.float32, buffer=nl.psum)
    for m in nl.affine_range(2):
        for n in nl.affine_range(2):
            part = nl.load(x[(m + n) // 2, :, 0:64])
            acc += nl.matmul(part, part, transpose_x=True)
        i_p = nl.arange(64)[:, None] + m * 64
        nl.store(out[m], value=nl.copy(acc), mask=(i_p < 128))
    return out


@nki.jit
def sbuf_sums_read_per_tile(x):
    # an SBUF += accumulator zeroed outside the tiles' loop c and stored in each of its
    # iterations: tile c gets the sums of the tiles before it (only the inner loop's
    # sbuf-accumulate warning was said, probe_v)
    out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32)
    for c in nl.affine_range(2):
        for s in nl.affine_range(2):
            acc[...] += nl.load(x[(c + s) // 2])
        nl.store(out[c], value=acc)
    return out
