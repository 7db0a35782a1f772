"""Cross-entropy forward with an online log-sum-exp (nki-library's loss kernel, docs/kernel-patterns.md section 3.4).

Covers
    Softmax statistics over rows too long for one tile: the vocabulary streams through one
    chunk buffer, a running max ``m`` and a running sum ``d`` are rescaled chunk by chunk
    (``d = d * exp(m - m_new) + sum(exp(chunk - m_new))``) and copied back at the end of
    every chunk (loop-carried state), ``exp`` in place on ACT, DVE reductions, and a
    ``memset`` to ``-inf`` (written ``"-inf"`` in the program's JSON).

Buffers
    LIB-XENT allocates every buffer once, above both loops, with a single slot, so every
    chunk overwrites the previous chunk's buffers (WAR / WAW on every tile).  A virtual tile
    would be multi-buffered by ``alloc`` wherever no value crosses iterations (the chunk
    tiles, the per-chunk statistics), which the kernel does not do, so the tiles are placed
    here explicitly, one after the other, one slot each.

Scenario
    ``lse = logsumexp(logits, axis=1)`` and ``loss = lse - logits[row, target[row]]`` for
    bf16 ``logits`` of 2 batches x 32 positions (rows on partitions, ``positions_per_batch``
    = 32) over a 2048-word vocabulary in chunks of 512.  Per batch: DVE sets ``m`` to
    ``-inf`` (as LIB-XENT: the first chunk's rescale factor is ``exp(-inf) = 0``) and ``d``
    to 0; SP loads the int32 targets as fp32.  Per chunk: SP loads it; DVE takes its max,
    the new max and the rescale exponent; ACT exponentiates; DVE rescales ``d``; DVE
    subtracts ``m_new`` from the chunk; ACT exponentiates in place; DVE sums and updates
    ``d``; DVE / ACT copy the state back.  After the chunks ACT takes ``log(d)``, DVE adds
    ``m``, subtracts the target logit and the stores go out on ``dma1``.

Target logit
    LIB-XENT gathers ``logits[row, target[row]]`` with one DMA per row at a dynamic offset;
    this format has no dynamic offsets, so the kernel selects it on chip instead: a POOL
    ``iota`` of column numbers, compared per chunk (``tensor_scalar`` ``equal``) with a
    per-partition target index that drops by the chunk width every chunk, times the chunk,
    summed.  The loss is the same; the DVE work per chunk grows by three instructions.
"""

from __future__ import annotations

import math

import numpy as np

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.arena import SbufArena
from neuronsim.machine.build.builder import KernelBuilder

BATCHES, POSITIONS = 2, 32
VOCAB, CHUNK = 2048, 512
placement = "explicit"
"""Every on-chip tile is placed by the kernel (``alloc`` has nothing to do)."""
rtol, atol = 1e-5, 1e-5
"""bf16 logits are exact in fp32; the statistics are fp32 sums of 2048 terms."""


def build() -> Program:
    kb = KernelBuilder("cross_entropy")
    rows = BATCHES * POSITIONS
    logits = kb.dram_input("logits", (rows, VOCAB), "bfloat16")
    targets = kb.dram_input("targets", (rows, 1), "int32")
    lse_out = kb.dram_output("lse", (rows, 1), "float32")
    loss_out = kb.dram_output("loss", (rows, 1), "float32")
    P = POSITIONS
    arena = SbufArena(kb, align=4)  # allocated once, one slot each (LIB-XENT)
    chunk = arena.sbuf("chunk", (P, CHUNK), "bfloat16")
    ex, columns, hit = (arena.sbuf(n, (P, CHUNK), "float32") for n in ("ex", "columns", "hit"))
    m, d, m_new, d_new, cmax, diff, corr, d_corr, csum, target, picked, tl, lse, loss = (
        arena.sbuf(n, (P, 1), "float32") for n in ("m", "d", "m_new", "d_new", "cmax", "diff", "corr", "d_corr",
                                                     "csum", "target", "picked", "tl", "lse_sb", "loss_sb"))

    kb.iota(columns, step=1.0, name="column_numbers")
    with kb.loop("b", BATCHES) as b:
        kb.memset(m, -math.inf, engine="dve", name="init_m")
        kb.memset(d, 0.0, engine="dve", name="init_d")
        kb.memset(tl, 0.0, engine="pool", name="init_tl")
        kb.dma_copy(target, targets.tile(b, P), engine="sp", queue="dma0", name="load_targets")
        with kb.loop("c", VOCAB // CHUNK) as c:
            kb.dma_copy(chunk, logits[b * P:(b + 1) * P, c * CHUNK:(c + 1) * CHUNK], engine="sp", queue="dma0",
                        name="load_chunk")
            kb.tensor_reduce(cmax, chunk, op="max", name="chunk_max")
            kb.tensor_tensor(m_new, m, cmax, op="max", name="new_max")
            kb.tensor_tensor(diff, m, m_new, op="subtract", name="max_shift")
            kb.activation(corr, diff, func="exp", name="rescale")
            kb.tensor_tensor(d_corr, d, corr, op="multiply", name="rescale_sum")
            kb.tensor_scalar(ex, chunk, op0="subtract", operand0=m_new, name="shift")
            kb.activation(ex, ex, func="exp", name="exp")
            kb.tensor_reduce(csum, ex, op="add", name="chunk_sum")
            kb.tensor_tensor(d_new, d_corr, csum, op="add", name="new_sum")
            kb.tensor_copy(m, m_new, engine="dve", name="carry_max")
            kb.tensor_copy(d, d_new, engine="act", name="carry_sum")
            # The target logit, if it falls in this chunk (iota == target - c * CHUNK).
            kb.tensor_scalar(hit, columns, op0="equal", operand0=target, name="one_hot")
            kb.tensor_tensor(hit, hit, chunk, op="multiply", name="select")
            kb.tensor_reduce(picked, hit, op="add", name="pick")
            kb.tensor_tensor(tl, tl, picked, op="add", name="gather")
            kb.tensor_scalar(target, target, op0="subtract", operand0=float(CHUNK), name="next_chunk")
        kb.activation(lse, d, func="log", name="log_sum")
        kb.tensor_tensor(lse, lse, m, op="add", name="lse")
        kb.tensor_tensor(loss, lse, tl, op="subtract", name="loss")
        kb.dma_copy(lse_out.tile(b, P), lse, engine="act", queue="dma1", name="store_lse")
        kb.dma_copy(loss_out.tile(b, P), loss, engine="act", queue="dma1", name="store_loss")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = BATCHES * POSITIONS
    logits = rng.normal(0.0, 3.0, (rows, VOCAB)).astype(numpy_dtype("bfloat16"))
    return {"logits": logits, "targets": rng.integers(0, VOCAB, (rows, 1)).astype(np.int32)}


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = values["logits"].astype(np.float64)
    peak = x.max(axis=1, keepdims=True)
    lse = peak + np.log(np.exp(x - peak).sum(axis=1, keepdims=True))
    target_logit = np.take_along_axis(x, values["targets"].astype(np.int64), axis=1)
    return {"lse": lse.astype(np.float32), "loss": (lse - target_logit).astype(np.float32)}
