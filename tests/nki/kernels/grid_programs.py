"""SPMD grid kernels whose programs share HBM bytes (tests/nki/test_grid_programs.py)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def same_rows(x):
    """Every program stores its own values into the same rows: which lands last decides."""
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    nl.store(o, value=nl.multiply(nl.load(x), pid + 1))
    return o


@nki.jit
def own_slices(x):
    """Each program its own rows (the pages' example): nothing shared."""
    o = nl.ndarray((2 * 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    nl.store(o[pid * 128:(pid + 1) * 128, :], value=nl.multiply(nl.load(x), pid + 1))
    return o


@nki.jit
def same_zeros(x):
    """Every program writes the same zeros over the whole output (nki-library's MoE kernels zero
    a shared output so on both cores)."""
    o = nl.ndarray((2 * 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o[0:128, :], value=nl.zeros((128, 64), dtype=nl.float32))
    nl.store(o[128:256, :], value=nl.zeros((128, 64), dtype=nl.float32))
    return o


def inputs(seed: int = 0):
    return {"x": np.random.default_rng(seed).normal(size=(128, 64)).astype(np.float32)}
