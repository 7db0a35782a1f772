"""Row sums of a [128, 2048] matrix, tile by tile: a legacy NKI kernel with the bug NKI's own
simulator cannot see.  The partial sums accumulate with ``+=`` into an SBUF tile across the
iterations of an ``affine_range`` loop, whose iterations the compiler treats as independent
(only matmul accumulation into PSUM is ordered).  ``neuronsim run`` reports it at the kernel's
lines; ``row_sums_fixed`` uses ``sequential_range`` and runs clean.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def _row_sums(x, out, loop):
    acc = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    for k in loop(x.shape[1] // 512):
        tile = nl.load(x[:, k * 512:(k + 1) * 512])
        acc += nl.sum(tile, axis=1, keepdims=True)
    nl.store(out, acc)


@nki.jit
def row_sums(x, out):
    _row_sums(x, out, nl.affine_range)


@nki.jit
def row_sums_fixed(x, out):
    _row_sums(x, out, nl.sequential_range)


def reference(x):
    return {"out": x.sum(axis=1, keepdims=True, dtype=np.float32)}
