"""DMA group, legacy NKI: ``nl.load`` / ``nl.store`` of tiles in two ``affine_range`` loops
(the tensor-add tutorial's tiling) and a whole-tensor DRAM-to-DRAM ``nisa.dma_copy``; the
outputs are returned (``return0``, ``return1``)."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def tensor_add(a_input, b_input):
    rows, cols = a_input.shape
    c_output = nl.ndarray((rows, cols), dtype=a_input.dtype, buffer=nl.shared_hbm)
    a_copy = nl.ndarray((rows, cols), dtype=a_input.dtype, buffer=nl.shared_hbm)
    tile_p, tile_f = nl.tile_size.pmax, 256
    for m in nl.affine_range(rows // tile_p):
        for n in nl.affine_range(cols // tile_f):
            a_tile = nl.load(a_input[m * tile_p:(m + 1) * tile_p, n * tile_f:(n + 1) * tile_f])
            b_tile = nl.load(b_input[m * tile_p:(m + 1) * tile_p, n * tile_f:(n + 1) * tile_f])
            c_tile = nl.add(a_tile, b_tile)
            nl.store(c_output[m * tile_p:(m + 1) * tile_p, n * tile_f:(n + 1) * tile_f], value=c_tile)
    nisa.dma_copy(dst=a_copy, src=a_input)
    return c_output, a_copy


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"a_input": rng.normal(size=(256, 512)).astype(np.float32),
            "b_input": rng.normal(size=(256, 512)).astype(np.float32)}


def reference(a_input, b_input):
    return {"return0": a_input + b_input, "return1": a_input.copy()}
