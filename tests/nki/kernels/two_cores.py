"""Two-core (LNC=2) kernels: ``nisa.sendrecv`` and ``nisa.core_barrier`` (tests/nki/test_two_cores.py)."""

import nki
import nki.isa as nisa
import nki.language as nl


def _my_half(x):
    """``(rows, half, rank, tile)``: this core's half of ``x``'s columns, loaded into SBUF."""
    P, F = x.shape
    half = F // 2
    rank = nl.program_id(0)
    tile = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x[:, rank * half:(rank + 1) * half])
    return P, half, rank, tile


@nki.jit
def swapped_sum(x):
    """Each core loads its half of the columns; the cores swap halves; each writes the sum."""
    P, half, rank, mine = _my_half(x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    theirs = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=mine, dst=theirs, send_to_rank=1 - rank, recv_from_rank=1 - rank, pipe_id=0)
    total = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=mine, data2=theirs, op=nl.add)
    nisa.dma_copy(dst=out[:, rank * half:(rank + 1) * half], src=total)
    return out


@nki.jit
def halves_crossed(x):
    """Each core doubles its half into a shared scratch tensor; after the barrier each copies the
    other core's half: out is the scratch with its halves swapped (only right if the barrier
    orders core 1's write before core 0's read)."""
    P, half, rank, tile = _my_half(x)
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    doubled = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=tile, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=scratch[:, rank * half:(rank + 1) * half], src=doubled)
    nisa.core_barrier(scratch, (0, 1))
    other = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=other, src=scratch[:, (1 - rank) * half:(2 - rank) * half])
    nisa.dma_copy(dst=out[:, rank * half:(rank + 1) * half], src=other)
    return out


@nki.jit
def swapped_per_block(x):
    """A sendrecv in every step of an affine loop: the cores swap each block of rows."""
    B, P, F = x.shape
    rank = nl.program_id(0)
    out = nl.ndarray((B, P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        mine = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        theirs = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine, src=x[b])
        nisa.tensor_scalar(dst=mine, data=mine, op0=nl.add, operand0=float(rank))
        nisa.sendrecv(dst=theirs, src=mine, send_to_rank=1 - rank, recv_from_rank=1 - rank, pipe_id=0)
        if rank == 0:
            nisa.dma_copy(dst=out[b], src=theirs)
    return out


@nki.jit
def calls_disagree(x):
    """Core 0 waits at a barrier, core 1 at a sendrecv."""
    P, F = x.shape
    rank = nl.program_id(0)
    tile = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    if rank == 0:
        nisa.core_barrier(x, (0, 1))
    else:
        nisa.sendrecv(src=tile, dst=tile, send_to_rank=0, recv_from_rank=0, pipe_id=0)
    return x


@nki.jit
def one_core_waits(x):
    """Only core 0 reaches the barrier."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    if nl.program_id(0) == 0:
        nisa.core_barrier(out, (0, 1))
    return out


@nki.jit
def core_one_fails(x):
    """Core 0 waits at the barrier while core 1 breaks an NKI rule (a misspelled name)."""
    if nl.program_id(0) == 1:
        nl.expp(x)
    nisa.core_barrier(x, (0, 1))
    return x


@nki.jit
def direct_on_two_cores(x):
    """Each core doubles x in a tile it places itself at the same address, meets, and core 0
    writes its tile: each core's SBUF is its own, so core 1's write does not clobber core 0's."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0 if nl.program_id(0) == 0 else 5.0)
    nisa.core_barrier(data=x, cores=(0, 1))
    if nl.program_id(0) == 0:
        nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def halves_crossed_early(x):
    """halves_crossed with its read of the other core's half before the barrier: a race."""
    P, half, rank, tile = _my_half(x)
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=scratch[:, rank * half:(rank + 1) * half], src=tile)
    other = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=other, src=scratch[:, (1 - rank) * half:(2 - rank) * half])  # before the barrier
    nisa.core_barrier(data=scratch, cores=(0, 1))
    nisa.dma_copy(dst=out[:, rank * half:(rank + 1) * half], src=other)
    return out


@nki.jit
def private_scratch(x):
    """Each core writes its own private HBM scratch, meets, and reads it back: no race (private
    HBM is each instance's own)."""
    P, F = x.shape
    rank = nl.program_id(0)
    scratch = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.private_hbm)
    out = nl.ndarray((2, P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.tensor_scalar(dst=tile, data=tile, op0=nl.add, operand0=float(rank))
    nisa.dma_copy(dst=scratch, src=tile)
    nisa.core_barrier(data=out, cores=(0, 1))
    back = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=back, src=scratch)
    nisa.dma_copy(dst=out[rank], src=back)
    return out


@nki.jit
def both_zero_the_output(x):
    """Both cores zero the whole output (the same zeros written twice, as nki-library's MoE
    kernels do), then after the barrier each writes its half."""
    P, F = x.shape
    half = F // 2
    rank = nl.program_id(0)
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    zeros = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    nisa.core_barrier(data=out, cores=(0, 1))
    tile = nl.ndarray((P, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x[:, rank * half:(rank + 1) * half])
    nisa.dma_copy(dst=out[:, rank * half:(rank + 1) * half], src=tile)
    return out


@nki.jit
def scratch_zeroed_under_the_other(x):
    """Each core zeroes the whole shared scratch, writes its half and reads the scratch back,
    then they meet (probe_ai: NxD indexed_flatten with its per-core buffer made shared): core 1's
    zeroing between core 0's write and read wipes core 0's half, an order neither core-first
    order nor the interleaving runs."""
    return _zero_write_read(x)


@nki.jit
def scratch_zeroed_after_harmless_blocks(x):
    """The same after twelve harmless blocks (both cores write the same values into one shared
    scratch and read them back), whose pairs are found first: a fixed count of pair orders spent
    on them left the race untried (a probe)."""
    for _ in range(12):
        same = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=same, src=x)
        again = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=again, src=same)
    return _zero_write_read(x)


def _zero_write_read(x):
    P, half, rank, tile = _my_half(x)
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    zeros = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=scratch, src=zeros)  # zeroes all of it
    nisa.dma_copy(src=tile, dst=scratch[:, rank * half:(rank + 1) * half])  # its half
    back = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=back, src=scratch)  # reads it back
    nisa.core_barrier(data=scratch, cores=(0, 1))
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, rank * half:(rank + 1) * half], src=back[:, rank * half:(rank + 1) * half])
    return out


@nki.jit
def interrupted_on_core_one(x):
    """Core 0 waits at the barrier while core 1 is interrupted (a SIGINT's KeyboardInterrupt)."""
    if nl.program_id(0) == 1:
        raise KeyboardInterrupt
    nisa.core_barrier(data=x, cores=(0, 1))
    return x


@nki.jit
def both_load_the_same(x):
    """Both cores load all of ``x``, each into its own SBUF, and write its own exp of it."""
    out = nl.ndarray((2, *x.shape), dtype=x.dtype, buffer=nl.shared_hbm)
    rank = nl.program_id(0)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    result = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=result, op=nl.exp, data=tile)
    nisa.core_barrier(data=out, cores=(0, 1))
    nisa.dma_copy(dst=out[rank], src=result)
    return out
