"""Row sums of a [128, 2048] matrix, tile by tile, as legacy NKI kernels write them.

``row_sums`` accumulates the partial sums with ``+=`` into one SBUF tile across the iterations
of an ``affine_range`` loop, as the official fused-Mamba tutorial does.  The ``affine_range``
docs say an associative reduction is not a loop-carried dependence; an SDK maintainer says
``+=`` works well only for a matmul into PSUM (aws-neuron-sdk#1051).  The sources disagree, so
``neuronsim run`` prints a warning citing both and the run does not fail (exit 0).
``row_sums_fixed`` uses ``sequential_range``, safe under either reading: no warning.

``running_sums`` is the real bug: it stores the running total after every tile, so each
iteration reads the value the previous one computed, through a tile the ``affine_range``
iterations share, written with ``nl.add`` (no reduction).  The docs call a loop-carried
dependence in an ``affine_range`` unsafe: ``neuronsim run`` reports it at the kernel's lines
and exits 1, although the outputs of its sequential simulation are right.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE = 512


def _row_sums(x, out, loop):
    acc = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    for k in loop(x.shape[1] // TILE):
        tile = nl.load(x[:, k * TILE:(k + 1) * TILE])
        acc += nl.sum(tile, axis=1, keepdims=True)
    nl.store(out, acc)


@nki.jit
def row_sums(x, out):
    _row_sums(x, out, nl.affine_range)


@nki.jit
def row_sums_fixed(x, out):
    _row_sums(x, out, nl.sequential_range)


@nki.jit
def running_sums(x, out):
    total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(x.shape[1] // TILE):
        tile = nl.load(x[:, k * TILE:(k + 1) * TILE])
        total[...] = nl.add(total, nl.sum(tile, axis=1, keepdims=True))
        nl.store(out[:, k:k + 1], total)


def reference(x):
    """``row_sums``: the sum of every row."""
    return {"out": x.sum(axis=1, keepdims=True, dtype=np.float32)}


def running_reference(x):
    """``running_sums``: the sum of every row up to the end of each tile."""
    tiles = x.reshape(x.shape[0], -1, TILE).sum(axis=2, dtype=np.float64)
    return {"out": np.cumsum(tiles, axis=1).astype(np.float32)}
