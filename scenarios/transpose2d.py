"""Batched 2-D transpose through PE and PSUM, with a masked edge tile (docs/kernel-patterns.md section 8.1, NS-TP).

Covers
    The standalone PE-transpose kernel of nki-samples' ``transpose.py`` (NS-TP): HBM
    ``[D0, B, N] -> [D0, N, B]`` one 128 x 128 tile at a time, each a DMA load, a PE
    ``transpose`` (SBUF in, PSUM out), an ACT eviction to SBUF and a DMA store with a
    strided DRAM pattern.  ``B`` is not a multiple of 128, so the last row tile is masked
    (64 partitions; docs/kernel-patterns.md section 9.8).  Unlike ``pe_transpose`` (four
    transposes into one bank, one eviction), every transpose here is its own PSUM group,
    evicted before the next tile overwrites the bank.

Scenario
    ``out[d, n, b] = x[d, b, n]`` for a bf16 ``x`` of shape [2, 192, 256].  Loops in NS-TP's
    order: batch ``d`` -> row tile ``b`` (the full one, ``b`` 0..127, then the masked one,
    128..191; unrolled, as NKI unrolls every loop, because their footprints differ) ->
    column tile ``n`` (two of 128).  SP loads on ``dma0``, ACT stores on ``dma1``.  (SDK-T2D,
    the free-axis ``transpose2d`` tutorial of docs/kernel-patterns.md section 8.4, is a different kernel:
    one DVE copy per element, no PE.)

Buffers
    NS-TP declares its tiles inside the innermost loop and leaves them to the compiler's
    allocator, which multi-buffers them; here they are virtual tiles, one set per row-tile
    block (the masked block uses the first 64 partitions of its own full-size tiles), and
    ``alloc`` gives each two rotating slots over the column loop (no value crosses its
    iterations), so the load of one tile overlaps the transpose and store of the previous.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.builder import KernelBuilder

D0, ROWS, COLS = 2, 192, 256
TILE = 128
EDGE = ROWS - TILE
rtol, atol = 0.0, 0.0
"""A transpose moves values: bf16 -> fp32 PSUM -> bf16 is exact."""


def build() -> Program:
    kb = KernelBuilder("transpose2d")
    x = kb.dram_input("x", (D0, ROWS, COLS), "bfloat16")
    out = kb.dram_output("out", (D0, COLS, ROWS), "bfloat16")
    with kb.loop("d", D0) as d:
        for label, start, count in (("", 0, TILE), ("_edge", TILE, EDGE)):
            xs = kb.sbuf(f"xs{label}", (TILE, TILE), "bfloat16")
            tp = kb.psum(f"tp{label}", (TILE, TILE), "float32")
            ys = kb.sbuf(f"ys{label}", (TILE, TILE), "bfloat16")
            with kb.loop(f"n{label}", COLS // TILE) as n:
                cols = slice(n * TILE, (n + 1) * TILE)
                kb.dma_copy(xs[0:count, :], x[d, start:start + count, cols], engine="sp", queue="dma0",
                            name=f"load{label}")
                kb.transpose(tp[:, 0:count], xs[0:count, :], name=f"transpose{label}")
                kb.tensor_copy(ys[:, 0:count], tp[:, 0:count], engine="act", name=f"evict{label}")
                kb.dma_copy(out[d, cols, start:start + count], ys[:, 0:count], engine="act", queue="dma1",
                            name=f"store{label}")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-1, 1, (D0, ROWS, COLS)).astype(numpy_dtype("bfloat16"))}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"out": np.ascontiguousarray(values["x"].transpose(0, 2, 1))}
