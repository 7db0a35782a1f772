"""Fused Mamba selective scan, v3 loop order (the NKI fused-Mamba tutorial, docs/kernel-patterns.md section 7.5).

Covers
    The DVE ``tensor_tensor_scan`` recurrence ``h_t = dA_t * h_{t-1} + dBu_t`` with a
    per-partition ``initial`` tile carried across sequence tiles (a ``tensor_copy`` of the
    scan's last column, loop-carried), ACT ``exp(delta * A)`` with ``A`` as a per-partition
    *scale tile*, PE partition broadcasts of the ``B`` and ``C`` rows (K = 1 ones matmuls)
    read by DVE straight from PSUM, ``delta`` / ``u`` loaded once per batch and reused by
    every state (v2's hoist), and an in-place accumulator ``acc[:, t] += ...`` carried across
    the state loop.

Scenario
    ``out[b, c, l] = sum_s h[b, c, s, l] * C[b, s, l]`` with
    ``h[b, c, s, l] = exp(delta[b, c, l] * A[c, s]) * h[b, c, s, l-1] + delta[b, c, l] * B[b, s, l] * u[b, c, l]``
    for 2 batches, 128 channels (one partition tile), 2 states and a sequence of 1024 in
    tiles of 512, all fp32.  Loops are batch -> state -> sequence tile (v3).  Per batch SP
    loads ``delta`` and ``u`` and DVE zeroes ``acc``; per state SP loads the column
    ``A[:, s]`` and DVE zeroes the scan state; per sequence tile ACT computes ``dA``, SP loads
    the ``B`` row, DVE multiplies ``delta * u``, PE broadcasts ``B``, DVE forms ``dBu``, DVE
    scans, POOL carries the last column, SP loads the ``C`` row, PE broadcasts it, DVE
    multiplies and accumulates.  ACT stores ``acc`` after the state loop.

Buffers
    SDK-MAMBA v3 declares every per-tile buffer inside the loop that uses it and overlaps
    the DMAs of the next tile with DVE work through the compiler's multi-buffering.  Here
    they are virtual and ``alloc`` multi-buffers them the same way: the sequence-tile tiles
    (``B`` / ``C`` rows, their PSUM broadcasts, ``dA``, ``dU``, ``dBu``, ``scan``, ``sC``)
    get two rotating slots over ``t``, ``A``'s column two over ``s``, and ``delta`` / ``u``
    two over the batch loop.  A tile that carries a value across a loop's iterations rotates
    only over an outer loop: the scan state ``init``, carried across ``t`` and reset per
    state, over ``s``; the accumulator ``acc``, carried across states, over ``b``.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.builder import KernelBuilder

BATCH, CHANNELS, STATES, SEQ = 2, 128, 2, 1024
SEQ_TILE = 512
rtol, atol = 1e-4, 1e-5
"""fp32 throughout; the scan's fp32 running state drifts from float64 by rounding only."""


def build() -> Program:
    kb = KernelBuilder("mamba")
    delta = kb.dram_input("delta", (BATCH, CHANNELS, SEQ), "float32")
    u = kb.dram_input("u", (BATCH, CHANNELS, SEQ), "float32")
    a = kb.dram_input("A", (CHANNELS, STATES), "float32")
    b_in = kb.dram_input("B", (BATCH, STATES, SEQ), "float32")
    c_in = kb.dram_input("C", (BATCH, STATES, SEQ), "float32")
    out = kb.dram_output("out", (BATCH, CHANNELS, SEQ), "float32")
    P, T = CHANNELS, SEQ_TILE
    d_i, u_i = kb.sbuf("d_i", (P, SEQ), "float32"), kb.sbuf("u_i", (P, SEQ), "float32")
    acc = kb.sbuf("acc", (P, SEQ), "float32")
    a_i, init = kb.sbuf("a_i", (P, 1), "float32"), kb.sbuf("init", (P, 1), "float32")
    ones = kb.sbuf("ones", (1, P), "float32")
    b_row, c_row = kb.sbuf("b_row", (1, T), "float32"), kb.sbuf("c_row", (1, T), "float32")
    b_bc, c_bc = kb.psum("b_bc", (P, T), "float32"), kb.psum("c_bc", (P, T), "float32")
    d_a, d_u = kb.sbuf("dA", (P, T), "float32"), kb.sbuf("dU", (P, T), "float32")
    d_bu, scan = kb.sbuf("dBu", (P, T), "float32"), kb.sbuf("scan", (P, T), "float32")
    s_c = kb.sbuf("sC", (P, T), "float32")

    kb.memset(ones, 1.0, engine="dve", name="ones_row")
    with kb.loop("b", BATCH) as b:
        kb.dma_copy(d_i, delta[b, :, :], engine="sp", queue="dma0", name="load_delta")
        kb.dma_copy(u_i, u[b, :, :], engine="sp", queue="dma1", name="load_u")
        kb.memset(acc, 0.0, engine="pool", name="zero_acc")
        with kb.loop("s", STATES) as s:
            kb.dma_copy(a_i, a[:, s], engine="sp", queue="dma0", name="load_A")
            kb.memset(init, 0.0, engine="dve", name="zero_state")
            with kb.loop("t", SEQ // T) as t:
                cols = slice(t * T, (t + 1) * T)
                kb.activation(d_a, d_i[:, cols], func="exp", scale=a_i, name="dA")
                kb.dma_copy(b_row, b_in[b, s, cols], engine="sp", queue="dma0", name="load_B")
                kb.tensor_tensor(d_u, d_i[:, cols], u_i[:, cols], op="multiply", name="dU")
                kb.matmul(b_bc, ones, b_row, name="bcast_B")
                kb.tensor_tensor(d_bu, d_u, b_bc, op="multiply", name="dBu")
                kb.tensor_tensor_scan(scan, d_a, d_bu, initial=init, op0="multiply", op1="add", name="scan")
                kb.tensor_copy(init, scan[:, T - 1:T], engine="pool", name="carry_state")
                kb.dma_copy(c_row, c_in[b, s, cols], engine="sp", queue="dma1", name="load_C")
                kb.matmul(c_bc, ones, c_row, name="bcast_C")
                kb.tensor_tensor(s_c, scan, c_bc, op="multiply", name="sC")
                kb.tensor_tensor(acc[:, cols], acc[:, cols], s_c, op="add", name="accumulate")
        kb.dma_copy(out[b, :, :], acc, engine="act", queue="dma2", name="store")
    return kb.program()


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return {
        "delta": rng.uniform(0.01, 0.1, (BATCH, CHANNELS, SEQ)).astype(f32),
        "u": rng.normal(0.0, 1.0, (BATCH, CHANNELS, SEQ)).astype(f32),
        "A": -rng.uniform(0.5, 4.0, (CHANNELS, STATES)).astype(f32),
        "B": rng.normal(0.0, 1.0, (BATCH, STATES, SEQ)).astype(f32),
        "C": rng.normal(0.0, 1.0, (BATCH, STATES, SEQ)).astype(f32),
    }


def reference(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    delta, u, a, b, c = (values[k].astype(np.float64) for k in ("delta", "u", "A", "B", "C"))
    d_a = np.exp(delta[:, :, None, :] * a[None, :, :, None])  # [batch, channel, state, seq]
    d_bu = delta[:, :, None, :] * b[:, None, :, :] * u[:, :, None, :]
    h = np.zeros(d_a.shape[:3])
    out = np.zeros_like(delta)
    for step in range(delta.shape[2]):
        h = d_a[..., step] * h + d_bu[..., step]
        out[:, :, step] = (h * c[:, None, :, step]).sum(axis=2)
    return {"out": out.astype(np.float32)}
