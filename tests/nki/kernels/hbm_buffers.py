"""Kernels bouncing rows through HBM scratch declared in each buffer, on a grid or on the two
cores of an LNC=2 launch (tests/nki/test_hbm_buffers.py)."""

import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


def _bounce(x, buffer, meet):
    """Each instance stores its own rows of ``3 x`` into a scratch declared in ``buffer`` and
    reads them back; ``meet``: the two cores pass a barrier between the store and the read."""
    out = nl.ndarray((256, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * 128:(pid + 1) * 128, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    scratch = nl.ndarray((128, 64), dtype=x.dtype, buffer=buffer)
    nisa.dma_copy(dst=scratch, src=t)
    if meet:
        nisa.core_barrier(out, (0, 1))
    back = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=back, src=scratch)
    nisa.dma_copy(dst=out[pid * 128:(pid + 1) * 128, :], src=back)
    return out


@nki.jit
def private_scratch(x):
    return _bounce(x, nl.private_hbm, False)


@nki.jit
def hbm_scratch(x):
    return _bounce(x, nl.hbm, False)


@nki.jit
def shared_scratch(x):
    return _bounce(x, nl.shared_hbm, False)


@nki.jit
def hbm_scratch_on_cores(x):
    return _bounce(x, nl.hbm, True)


@nki.jit
def shared_scratch_on_cores(x):
    return _bounce(x, nl.shared_hbm, True)


@nki.jit
def hbm_output(x):
    """An output declared nl.hbm, each program its own rows (Stanford CS149's kernels declare
    their outputs so)."""
    out = nl.ndarray((256, 64), dtype=x.dtype, buffer=nl.hbm)
    pid = nl.program_id(0)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * 128:(pid + 1) * 128, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out[pid * 128:(pid + 1) * 128, :], src=t)
    return out


def inputs(seed: int = 0):
    return {"x": np.random.default_rng(seed).normal(size=(256, 64)).astype(np.float32)}


def reference(x):
    return 3.0 * x
