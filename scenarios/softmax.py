"""Fused softmax over rows (the NKI softmax tutorial, docs/kernel-patterns.md section 3.1).

Covers
    Per-partition reductions on DVE (``tensor_reduce`` max with ``negate``, then add), an ACT
    activation with a per-partition bias tile (``exp(x - max)`` in one instruction), a DVE
    ``tensor_scalar`` with a per-partition divisor, and tiles reused by every iteration of a
    row loop (WAR / WAW on single-slot intermediates).

Scenario
    ``y = exp(x - max_j x) / sum_j exp(x - max_j x)`` per row of a [256, 512] fp32 matrix.
    Rows lie on partitions, 128 per tile, and the whole row fits one tile.  For each row
    tile SP loads it on ``dma0``; DVE takes the negated row max; ACT computes
    ``exp(x + (-max))``; DVE sums the row and divides by the sum; ACT stores the result on
    ``dma1``.  The second tile reuses every buffer of the first.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.builder import KernelBuilder

ROWS, COLS = 256, 512
TILE = 128
rtol, atol = 1e-5, 1e-7
"""fp32 throughout; the simulator and numpy differ only in summation order."""


def build() -> Program:
    kb = KernelBuilder("softmax")
    x = kb.dram_input("x", (ROWS, COLS), "float32")
    y = kb.dram_output("y", (ROWS, COLS), "float32")
    xt = kb.sbuf("xt", (TILE, COLS), "float32")
    neg_max = kb.sbuf("neg_max", (TILE, 1), "float32")
    e = kb.sbuf("e", (TILE, COLS), "float32")
    total = kb.sbuf("total", (TILE, 1), "float32")
    yt = kb.sbuf("yt", (TILE, COLS), "float32")
    with kb.loop("i", ROWS // TILE) as i:
        kb.dma_copy(xt, x.tile(i, TILE), engine="sp", queue="dma0", name="load")
        kb.tensor_reduce(neg_max, xt, op="max", negate=True, name="row_max")
        kb.activation(e, xt, func="exp", bias=neg_max, name="exp")
        kb.tensor_reduce(total, e, op="add", name="row_sum")
        kb.tensor_scalar(yt, e, op0="divide", operand0=total, name="normalize")
        kb.dma_copy(y.tile(i, TILE), yt, engine="act", queue="dma1", name="store")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(0.0, 2.0, (ROWS, COLS)).astype(np.float32)}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = values["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}
