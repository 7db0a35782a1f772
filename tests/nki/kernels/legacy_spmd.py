"""SPMD group, legacy NKI: a kernel launched on a grid (``kernel[4](...)``) whose instances
pick their row tile with ``nl.program_id(0)`` and learn the grid size with
``nl.num_programs(0)``; each instance scales its tile by ``1 + pid / num_programs``."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def spmd_scale(x, y):
    pid = nl.program_id(0)
    count = nl.num_programs(0)
    t = nl.load(x[pid * P:(pid + 1) * P, :])
    nl.store(y[pid * P:(pid + 1) * P, :], value=nl.multiply(t, 1.0 + pid / count))


GRID = (4,)


def inputs(seed=0):
    x = np.random.default_rng(seed).normal(size=(4 * P, 64)).astype(np.float32)
    return {"x": x, "y": np.zeros_like(x)}


def reference(x):
    factors = np.repeat(1.0 + np.arange(4) / 4, P)[:, None]
    return {"y": (x * factors).astype(np.float32)}
