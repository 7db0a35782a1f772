"""A load / compute / store loop over explicitly placed rotating SBUF buffers (docs/kernel-patterns.md 7.1-7.3).

Covers
    ALLOC's canonical double buffer written the way a directly allocated kernel writes it:
    each buffer is one tile placed by hand with ``ncc.sbuf.mod_alloc(base_addr,
    num_free_tiles=(2,))``, tile ``t`` in slot ``t mod 2`` (the tensor's ``x-rotate``), the
    loops kept.  A slot is reused two iterations later, across the boundary of the outer
    loop too (tile ``(m, 0)`` reuses the slot of ``(m - 1, 2)``), so the WAR that protects it
    is loop-carried at distance 2.  As in NS-ALLOC-LIN (7.3) the intermediate has one slot:
    it serializes the two compute engines while the loads of the next tile run ahead.
    ``double_buffer`` is the same pattern with the slots unrolled by hand.

Scenario
    ``out = exp(a) * b`` over [256, 2048] fp32 tensors in [128, 512] tiles, loops ``m`` (row
    tiles) -> ``n`` (column tiles) as SDK-ADD (7.2) tiles its add.  Per tile: SP loads ``a``
    on ``dma0`` and ACT loads ``b`` on ``dma1``, each into a two-slot buffer; ACT computes
    ``exp(a)`` into the one-slot ``e``; DVE multiplies by ``b`` into the two-slot ``c`` and
    triggers the store on ``dma2``.  The placements are laid out tile after tile from byte 0
    (:class:`~neuronsim.machine.build.arena.SbufArena`); nothing is left to the allocator.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.arena import SbufArena
from neuronsim.machine.build.builder import KernelBuilder

ROWS, COLS = 256, 2048
TILE_P, TILE_F = 128, 512
SLOTS = 2
placement = "explicit"
"""Every on-chip tile is placed by the kernel (``alloc`` has nothing to do)."""
rtol, atol = 1e-6, 1e-6
"""fp32; the simulator and numpy evaluate the same expression."""


def build() -> Program:
    kb = KernelBuilder("explicit_double_buffer")
    a = kb.dram_input("a", (ROWS, COLS), "float32")
    b = kb.dram_input("b", (ROWS, COLS), "float32")
    out = kb.dram_output("out", (ROWS, COLS), "float32")
    arena = SbufArena(kb)
    shape = (TILE_P, TILE_F)
    a_buf = arena.sbuf("a_buf", shape, "float32", slots=SLOTS, loop="n")
    b_buf = arena.sbuf("b_buf", shape, "float32", slots=SLOTS, loop="n")
    e = arena.sbuf("e", shape, "float32")
    c_buf = arena.sbuf("c_buf", shape, "float32", slots=SLOTS, loop="n")
    zero = arena.sbuf("zero", (TILE_P, 1), "float32")  # the activation's bias, as the NKI twin places it
    kb.memset(zero, 0.0, name="zero_bias")
    with kb.loop("m", ROWS // TILE_P) as m, kb.loop("n", COLS // TILE_F) as n:
        rows, cols = slice(m * TILE_P, (m + 1) * TILE_P), slice(n * TILE_F, (n + 1) * TILE_F)
        kb.dma_copy(a_buf, a[rows, cols], engine="sp", queue="dma0", name="load_a")
        kb.dma_copy(b_buf, b[rows, cols], engine="act", queue="dma1", name="load_b")
        kb.activation(e, a_buf, func="exp", bias=zero, name="exp")
        kb.tensor_tensor(c_buf, e, b_buf, op="multiply", name="mul")
        kb.dma_copy(out[rows, cols], c_buf, engine="dve", queue="dma2", name="store")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (ROWS, COLS)
    return {"a": rng.uniform(-3, 3, shape).astype(np.float32), "b": rng.uniform(-1, 1, shape).astype(np.float32)}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    a, b = values["a"].astype(np.float64), values["b"].astype(np.float64)
    return {"out": (np.exp(a) * b).astype(np.float32)}
