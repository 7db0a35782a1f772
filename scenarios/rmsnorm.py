"""RMSNorm (the NKI RMSNorm tutorial, docs/kernel-patterns.md section 4.1, with the library's epsilon).

Covers
    A PE partition broadcast (a K = 1 matmul of a ones row against ``g``, ARCH2), a DVE
    ``tensor_tensor`` reading one PSUM operand, an in-place update, ACT ``square`` and
    ``rsqrt`` with ``scale`` / ``bias`` attributes, a one-partition tile (the partition-start
    rule applies to where the allocator puts it), a load hoisted out of the loop.

Scenario
    ``y = x / sqrt(mean(x^2, axis=-1) + eps) * g`` for a [256, 512] fp32 ``x`` and a [512]
    ``g``.  Before the row loop SP loads ``g`` as a [1, 512] tile and DVE writes a [1, 128]
    row of ones.  For each 128-row tile: SP loads it; ACT squares it; DVE sums the squares;
    ACT computes ``rsqrt(sum / 512 + eps)``; DVE scales the rows; PE broadcasts ``g`` to a
    [128, 512] PSUM tile (``ones^T @ g``, as the tutorial does inside the loop); DVE
    multiplies in place by the PSUM tile; ACT stores on ``dma1``.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.builder import KernelBuilder

ROWS, COLS = 256, 512
TILE = 128
EPS = 1e-6
rtol, atol = 1e-5, 1e-6
"""fp32 throughout."""


def build() -> Program:
    kb = KernelBuilder("rmsnorm")
    x = kb.dram_input("x", (ROWS, COLS), "float32")
    g = kb.dram_input("g", (COLS,), "float32")
    y = kb.dram_output("y", (ROWS, COLS), "float32")
    g_sb = kb.sbuf("g_sb", (1, COLS), "float32")
    ones = kb.sbuf("ones", (1, TILE), "float32")
    xt = kb.sbuf("xt", (TILE, COLS), "float32")
    sq = kb.sbuf("sq", (TILE, COLS), "float32")
    ssum = kb.sbuf("ssum", (TILE, 1), "float32")
    inv_rms = kb.sbuf("inv_rms", (TILE, 1), "float32")
    out = kb.sbuf("out", (TILE, COLS), "float32")
    g_bcast = kb.psum("g_bcast", (TILE, COLS), "float32")
    kb.dma_copy(g_sb, g, engine="sp", queue="dma0", name="load_g")
    kb.memset(ones, 1.0, engine="dve", name="ones_row")
    with kb.loop("i", ROWS // TILE) as i:
        kb.dma_copy(xt, x.tile(i, TILE), engine="sp", queue="dma0", name="load")
        kb.activation(sq, xt, func="square", name="square")
        kb.tensor_reduce(ssum, sq, op="add", name="sum_sq")
        kb.activation(inv_rms, ssum, func="rsqrt", scale=1.0 / COLS, bias=EPS, name="rsqrt")
        kb.tensor_scalar(out, xt, op0="multiply", operand0=inv_rms, name="scale_rows")
        kb.matmul(g_bcast, ones, g_sb, accumulate=False, name="bcast_g")
        kb.tensor_tensor(out, out, g_bcast, op="multiply", name="apply_g")
        kb.dma_copy(y.tile(i, TILE), out, engine="act", queue="dma1", name="store")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-1, 1, (ROWS, COLS)).astype(np.float32),
            "g": rng.uniform(0.5, 1.5, COLS).astype(np.float32)}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, g = values["x"].astype(np.float64), values["g"].astype(np.float64)
    rms = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return {"y": (x / rms * g).astype(np.float32)}
