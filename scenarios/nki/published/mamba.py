"""The three kernels of the NKI fused-Mamba tutorial (legacy API), written again: the selective
scan ``h_t = exp(delta_t * A) * h_{t-1} + delta_t * B_t * u_t``, ``out = sum over states of
h * C``, fp32, channels on partitions in tiles of 128.

* :func:`mamba_v1`: loops batch -> state -> channel tile; ``delta`` and ``u`` loaded for every
  (state, channel tile), the whole sequence per instruction;
* :func:`mamba_v2`: loops batch -> channel tile -> state, ``delta`` / ``u`` loaded once per
  channel tile and the per-state results summed in one accumulator per channel tile;
* :func:`mamba_v3`: v2 with the sequence in tiles of 512 as the innermost loop, the scan's
  initial value carried from one tile to the next (last column of the previous tile), and
  ``scan * C`` written to PSUM before it is added to the accumulator.

Per step: ``activation(exp, delta, scale=A)`` on ACT; ``delta * u``, ``* B``, ``* C`` and the
accumulation as ``tensor_tensor`` and the scan as ``tensor_tensor_scan`` on DVE; ``B`` and
``C`` rows broadcast to the 128 channel partitions on PE (a ones matmul per 512 columns, read
by DVE from PSUM), the lowering of a partition broadcast.  The loops are the tutorial's: the
state loops ``affine_range`` (their ``+=`` into the accumulator is an associative reduction,
which the ``affine_range`` page allows), v3's sequence tiles ``static_range`` (the tutorial's
note: ``sequential_range`` there "gives ... much worse perf"), and the per-bank broadcast loops
``static_range``: they write out by hand what the compiler emits for the tutorial's
``broadcast_to``, one instruction per bank, not a loop.  The tutorial times them on trn1
at batch 1, 16 states (``bench/bench_published.py``).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128  # nl.tile_size.pmax
BANK = 512  # fp32 columns of one PSUM bank
SEQ_TILE = 512


def _scan_step(d_i, u_i, a_i, b_row, c_row, ones, width, initial, out_buffer=nl.sbuf):
    """One (state, channel tile, sequence span) of the recurrence: ``scan * C`` (in
    ``out_buffer``), and the scan."""
    d_a = nisa.activation(op=nl.exp, data=d_i, scale=a_i)
    d_u = nisa.tensor_tensor(d_i, u_i, op=nl.multiply)
    d_bu = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    for c in nl.static_range(0, width, BANK):
        b_bc = nisa.nc_matmul(ones, b_row[:, c:c + BANK])
        d_bu[:, c:c + BANK] = nisa.tensor_tensor(d_u[:, c:c + BANK], b_bc, op=nl.multiply)
    scan = nisa.tensor_tensor_scan(d_a, d_bu, initial, op0=nl.multiply, op1=nl.add)
    s_c = nl.ndarray((P, width), dtype=nl.float32, buffer=out_buffer)
    for c in nl.static_range(0, width, BANK):
        c_bc = nisa.nc_matmul(ones, c_row[:, c:c + BANK])
        s_c[:, c:c + BANK] = nisa.tensor_tensor(scan[:, c:c + BANK], c_bc, op=nl.multiply)
    return s_c, scan


@nki.jit
def mamba_v1(delta, u, A, B, C):
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    tiles = channels // P
    ones = nl.ones((1, P), dtype=nl.float32)
    for b in nl.affine_range(batch):
        acc = nl.zeros((tiles, nl.par_dim(P), seq), dtype=nl.float32, buffer=nl.sbuf)
        for s in nl.affine_range(states):
            for t in nl.affine_range(tiles):
                d_i = nl.load(delta[b, t * P:(t + 1) * P, :])
                u_i = nl.load(u[b, t * P:(t + 1) * P, :])
                a_i = nl.load(A[t * P:(t + 1) * P, nl.ds(s, 1)])
                b_row = nl.load(B[b, nl.ds(s, 1), :])
                c_row = nl.load(C[b, nl.ds(s, 1), :])
                s_c, _ = _scan_step(d_i, u_i, a_i, b_row, c_row, ones, seq, 0.0)
                acc[t] += s_c
        for t in nl.affine_range(tiles):
            nl.store(out[b, t * P:(t + 1) * P, :], value=acc[t])
    return out


@nki.jit
def mamba_v2(delta, u, A, B, C):
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = nl.ones((1, P), dtype=nl.float32)
    for b in nl.affine_range(batch):
        for t in nl.affine_range(channels // P):
            acc = nl.zeros((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            d_i = nl.load(delta[b, t * P:(t + 1) * P, :])
            u_i = nl.load(u[b, t * P:(t + 1) * P, :])
            for s in nl.affine_range(states):
                a_i = nl.load(A[t * P:(t + 1) * P, nl.ds(s, 1)])
                b_row = nl.load(B[b, nl.ds(s, 1), :])
                c_row = nl.load(C[b, nl.ds(s, 1), :])
                s_c, _ = _scan_step(d_i, u_i, a_i, b_row, c_row, ones, seq, 0.0)
                acc += s_c
            nl.store(out[b, t * P:(t + 1) * P, :], value=acc)
    return out


@nki.jit
def mamba_v3(delta, u, A, B, C):
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = nl.ones((1, P), dtype=nl.float32)
    T = SEQ_TILE
    for b in nl.affine_range(batch):
        for t in nl.affine_range(channels // P):
            acc = nl.zeros((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            d_i = nl.load(delta[b, t * P:(t + 1) * P, :])
            u_i = nl.load(u[b, t * P:(t + 1) * P, :])
            for s in nl.affine_range(states):
                a_i = nl.load(A[t * P:(t + 1) * P, nl.ds(s, 1)])
                init = nl.zeros((P, 1), dtype=nl.float32, buffer=nl.sbuf)
                for j in nl.static_range(seq // T):
                    b_row = nl.load(B[b, nl.ds(s, 1), j * T:(j + 1) * T])
                    c_row = nl.load(C[b, nl.ds(s, 1), j * T:(j + 1) * T])
                    # scan * C into PSUM, as the tutorial writes it ("to reduce accumulation
                    # latency"): the accumulation then reads one operand from PSUM.
                    s_c, scan = _scan_step(d_i[:, j * T:(j + 1) * T], u_i[:, j * T:(j + 1) * T], a_i, b_row,
                                           c_row, ones, T, init, out_buffer=nl.psum)
                    init[...] = nl.copy(scan[:, T - 1:T])
                    acc[:, j * T:(j + 1) * T] += s_c
            nl.store(out[b, t * P:(t + 1) * P, :], value=acc)
    return out


def reference(delta, u, A, B, C):
    """numpy: the recurrence step by step in float64."""
    delta, u, a, b, c = (t.astype(np.float64) for t in (delta, u, A, B, C))
    d_a = np.exp(delta[:, :, None, :] * a[None, :, :, None])
    d_bu = delta[:, :, None, :] * b[:, None, :, :] * u[:, :, None, :]
    h = np.zeros(d_a.shape[:3])
    out = np.zeros_like(delta)
    for step in range(delta.shape[2]):
        h = d_a[..., step] * h + d_bu[..., step]
        out[:, :, step] = (h * c[:, None, :, step]).sum(axis=2)
    return {"return0": out.astype(np.float32)}
