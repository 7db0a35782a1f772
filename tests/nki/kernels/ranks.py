"""Kernels launched on ranks that meet at nki.collectives calls (tests/nki/test_ranks.py)."""

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


@nki.jit
def summed(x, replica_group):
    """all_reduce of each rank's x plus its rank: every rank gets sum_r (x + r)."""
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=float(ncc.rank_id()))
    nisa.dma_copy(dst=src, src=t)
    ncc.all_reduce(dsts=[dst], srcs=[src], op=nl.add, replica_group=replica_group)
    return dst


@nki.jit
def summed_positionally(x, replica_group):
    """``summed`` with the collectives' arguments in their pages' order, positionally:
    all_reduce(srcs, dsts, replica_group, op), then all_gather(srcs, dsts, replica_group, dim)."""
    H, W = x.shape
    src = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.shared_hbm)
    total = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray((2 * H, W), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0 * ncc.rank_id())
    nisa.dma_copy(dst=src, src=t)
    ncc.all_reduce([src], [total], replica_group, nl.add)
    ncc.all_gather([total], [dst], replica_group, 0)
    return dst


@nki.jit
def gathered(x, replica_group, num_ranks):
    """all_gather along dim 0 of each rank's x times (rank + 1)."""
    H, W = x.shape
    src = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray((H * num_ranks, W), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(ncc.rank_id() + 1))
    nisa.dma_copy(dst=src, src=t)
    ncc.all_gather(dsts=[dst], srcs=[src], replica_group=replica_group, collective_dim=0)
    return dst


@nki.jit
def scattered_and_exchanged(x, replica_group, num_ranks):
    """reduce_scatter and all_to_all of x times (rank + 1) along dim 0."""
    H, W = x.shape
    src = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.shared_hbm)
    reduced = nl.ndarray((H // num_ranks, W), dtype=x.dtype, buffer=nl.shared_hbm)
    exchanged = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(ncc.rank_id() + 1))
    nisa.dma_copy(dst=src, src=t)
    ncc.reduce_scatter(dsts=[reduced], srcs=[src], op=nl.add, replica_group=replica_group, collective_dim=0)
    ncc.all_to_all(dsts=[exchanged], srcs=[src], replica_group=replica_group, collective_dim=0)
    return reduced, exchanged


@nki.jit
def max_min_reduced(x, replica_group):
    """all_reduce with nl.maximum and nl.minimum of x * (rank - 1)."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(ncc.rank_id() - 1))
    nisa.dma_copy(dst=src, src=t)
    largest = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    smallest = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(dsts=[largest], srcs=[src], op=nl.maximum, replica_group=replica_group)
    ncc.all_reduce(dsts=[smallest], srcs=[src], op=nl.minimum, replica_group=replica_group)
    return largest, smallest


@nki.jit
def product_reduced(x, replica_group):
    """all_reduce with nl.multiply: refused at its line (not one of the reference's three)."""
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(dsts=[dst], srcs=[x], op=nl.multiply, replica_group=replica_group)
    return dst


@nki.jit
def ring_passed(x, replica_group):
    """One ring step of collective_permute_implicit: each rank sends x * (rank + 1) to its
    successor; out[0] is what it received, out[1] the rank current_processing_rank_id names at
    iteration 1, out[2] the reduce form (predecessor's x * (rank + 1) + x)."""
    P, F = x.shape
    src = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    got = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    summed = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray((3, P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(ncc.rank_id() + 1))
    nisa.dma_copy(dst=src, src=t)
    ncc.collective_permute_implicit(srcs_by_channel=[[src]], dsts_by_channel=[[got]], replica_group=replica_group)
    ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[src]], srcs1_by_channel=[[x]],
                                           dsts_by_channel=[[summed]], replica_group=replica_group, op=nl.add)
    nisa.dma_copy(dst=out[0], src=got)
    sender = ncc.collective_permute_implicit_current_processing_rank_id(iteration_id=1, replica_group=replica_group)
    marker = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=marker, value=float(sender))
    nisa.dma_copy(dst=out[1], src=marker)
    nisa.dma_copy(dst=out[2], src=summed)
    return out


@nki.jit
def placed_against_the_page(x, replica_group, call, buffer, collective_dim, coalesced):
    """One collective on tensors in ``buffer`` ("hbm", "sbuf" or "mixed"), ``coalesced``: two
    pairs at once; the collectives pages' rules on where tensors are (tests/nki/test_ranks.py)."""
    def tile(shape, kind):
        return nl.ndarray(shape, dtype=x.dtype, buffer=nl.sbuf if kind == "sbuf" else nl.shared_hbm)

    H, W = x.shape
    src_kind, dst_kind = ("sbuf", "hbm") if buffer == "mixed" else (buffer, buffer)
    shape = [H, W]  # the destination: two ranks' chunks gathered, or one rank's chunk of two
    if call in ("all_gather", "reduce_scatter") and collective_dim in (0, 1):
        shape[collective_dim] = shape[collective_dim] * 2 if call == "all_gather" else shape[collective_dim] // 2
    srcs = [tile((H, W), src_kind) for _ in range(1 + coalesced)]
    dsts = [tile(tuple(shape), dst_kind) for _ in range(1 + coalesced)]
    for s in srcs:
        nisa.dma_copy(dst=s, src=x)
    if call == "all_reduce":
        ncc.all_reduce(dsts=dsts, srcs=srcs, op=nl.add, replica_group=replica_group)
    elif call == "reduce_scatter":
        ncc.reduce_scatter(dsts=dsts, srcs=srcs, op=nl.add, replica_group=replica_group, collective_dim=collective_dim)
    else:
        getattr(ncc, call)(dsts=dsts, srcs=srcs, replica_group=replica_group, collective_dim=collective_dim)
    out = nl.ndarray(tuple(shape), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=dsts[0])
    return out
