"""PE transpose: 128 x 128 blocks through PSUM, four to a bank (docs/kernel-patterns.md section 8.1).

Covers
    The PE form of ``transpose`` (SBUF in, PSUM out), four single-instruction groups that fill
    disjoint column ranges of one PSUM bank before a single ACT eviction, a PSUM bank and
    SBUF tiles reused by the next row tile, and a DMA store whose DRAM pattern has three
    dimensions (it writes the [128, 4 x 128] SBUF tile into four row blocks of the output).

Scenario
    ``out = x.T`` for a [256, 512] bf16 ``x``.  For each 128-row tile ``r``: SP loads the
    [128, 512] tile; PE transposes its four 128-column blocks ``u`` into columns
    ``u*128 .. u*128+127`` of a [128, 512] fp32 PSUM tile (exactly one bank); ACT evicts the
    bank to SBUF as bf16; ACT stores it, element ``(f, u*128 + p)`` going to
    ``out[u*128 + f, r*128 + p]``.  The next row tile overwrites the bank (WAR against the
    eviction) and the SBUF tiles (WAR against the transposes and the store).
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.builder import KernelBuilder

ROWS, COLS = 256, 512
BLOCK = 128
rtol, atol = 0.0, 0.0
"""A transpose moves values: bf16 -> fp32 PSUM -> bf16 is exact."""


def build() -> Program:
    kb = KernelBuilder("pe_transpose")
    x = kb.dram_input("x", (ROWS, COLS), "bfloat16")
    out = kb.dram_output("out", (COLS, ROWS), "bfloat16")
    xs = kb.sbuf("xs", (BLOCK, COLS), "bfloat16")
    tp = kb.psum("tp", (BLOCK, COLS), "float32")
    ys = kb.sbuf("ys", (BLOCK, COLS), "bfloat16")
    blocks = COLS // BLOCK
    with kb.loop("r", ROWS // BLOCK) as r:
        kb.dma_copy(xs, x.tile(r, BLOCK), engine="sp", queue="dma0", name="load")
        with kb.loop("u", blocks) as u:
            kb.transpose(tp[:, u * BLOCK:(u + 1) * BLOCK], xs[:, u * BLOCK:(u + 1) * BLOCK], name="tp_block")
        kb.tensor_copy(ys, tp, engine="act", name="evict")
        # ys[f, u*BLOCK + p] -> out[u*BLOCK + f, r*BLOCK + p]: walk f, then u, then p.
        store_to = out.strided([(ROWS, BLOCK), (BLOCK * ROWS, blocks), (1, BLOCK)], offset=r * BLOCK)
        kb.dma_copy(store_to, ys, engine="act", queue="dma1", name="store")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-1, 1, (ROWS, COLS)).astype(numpy_dtype("bfloat16"))}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"out": np.ascontiguousarray(values["x"].T)}
