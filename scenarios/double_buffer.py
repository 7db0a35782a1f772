"""A double-buffered DMA pipeline: load tile t+1 while tile t computes (docs/kernel-patterns.md 7.1-7.3).

Covers
    Two-slot buffers (``mod_alloc``-style: one tensor with a slot dimension, tile ``t`` in
    slot ``t mod 2``), explicitly placed tensors next to virtual ones the allocator must
    place around them, three DMA queues triggered from three sequencers (SP, POOL with
    software DGE, DVE), a single-slot intermediate that serializes the compute stages, and
    DRAM offsets that move by two tiles per iteration of a loop over tile pairs.

Scenario
    ``out = silu(a) + b`` over four [128, 512] fp32 row tiles.  The inputs are double
    buffered: ``a_buf`` and ``b_buf`` hold two slots each, placed by hand at partition 0
    (bytes 0 and 4096) the way an explicitly allocated kernel would.  The loop runs over
    tile pairs; inside, tile ``2p + s`` uses slot ``s``: SP loads ``a`` on ``dma0``, POOL
    loads ``b`` on ``dma1``, ACT computes ``silu(a)`` into the single-slot ``h``, DVE adds
    ``b`` into slot ``s`` of ``c_buf`` and triggers its store on ``dma2`` (the producer
    triggers it, so the trigger needs no semaphore and SP never blocks behind a store).
    With two slots the load of tile t+1 only has to wait for the reads of tile t-1 (WAR on
    its slot), so it overlaps the compute of tile t; ``h`` has one slot, so ``silu`` of tile
    t+1 waits for the add of tile t.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.builder import KernelBuilder

TILES, TILE, COLS = 4, 128, 512
SLOTS = 2
rtol, atol = 1e-6, 1e-6
"""fp32; the simulator and numpy evaluate the same expression."""


def build() -> Program:
    kb = KernelBuilder("double_buffer")
    a = kb.dram_input("a", (TILES * TILE, COLS), "float32")
    b = kb.dram_input("b", (TILES * TILE, COLS), "float32")
    out = kb.dram_output("out", (TILES * TILE, COLS), "float32")
    slot_bytes = COLS * 4
    a_buf = kb.sbuf("a_buf", (TILE, SLOTS, COLS), "float32", partition=0, offset=0)
    b_buf = kb.sbuf("b_buf", (TILE, SLOTS, COLS), "float32", partition=0, offset=SLOTS * slot_bytes)
    zero = kb.sbuf("zero", (TILE, 1), "float32", partition=0, offset=2 * SLOTS * slot_bytes)  # the bias (NKI twin)
    kb.memset(zero, 0.0, name="zero_bias")
    h = kb.sbuf("h", (TILE, COLS), "float32")
    c_buf = kb.sbuf("c_buf", (TILE, SLOTS, COLS), "float32")
    with kb.loop("pair", TILES // SLOTS) as pair:
        for slot in range(SLOTS):
            t = SLOTS * pair + slot
            kb.dma_copy(a_buf[:, slot, :], a.tile(t, TILE), engine="sp", queue="dma0", name=f"load_a{slot}")
            kb.dma_copy(b_buf[:, slot, :], b.tile(t, TILE), engine="pool", queue="dma1", dge="swdge",
                        name=f"load_b{slot}")
            kb.activation(h, a_buf[:, slot, :], func="silu", bias=zero, name=f"silu{slot}")
            kb.tensor_tensor(c_buf[:, slot, :], h, b_buf[:, slot, :], op="add", name=f"add{slot}")
            kb.dma_copy(out.tile(t, TILE), c_buf[:, slot, :], engine="dve", queue="dma2", name=f"store{slot}")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (TILES * TILE, COLS)
    return {"a": rng.uniform(-4, 4, shape).astype(np.float32), "b": rng.uniform(-1, 1, shape).astype(np.float32)}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    a, b = values["a"].astype(np.float64), values["b"].astype(np.float64)
    return {"out": (a / (1.0 + np.exp(-a)) + b).astype(np.float32)}
