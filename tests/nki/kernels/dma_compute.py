"""``nisa.dma_compute`` (tests/nki/test_dma_compute.py): sums of sources by the DMA engines."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gathered_rows_summed(data, rows):
    """Each partition adds the rows of ``data`` its column of ``rows`` [R, K] names, one
    gather read-modify-write a column (nki-library's top-k reduction)."""
    R, K = rows.shape
    H = data.shape[1]
    index = nl.ndarray((R, K), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=index, src=rows)
    total = nl.ndarray((R, H), dtype=nl.float32, buffer=nl.sbuf)
    for k in range(K):
        picked = data.ap(pattern=[[H, R], [1, H]], offset=0,
                         vector_offset=index.ap(pattern=[[K, R], [1, 1]], offset=k), indirect_dim=0)
        if k == 0:
            nisa.dma_copy(dst=total, src=picked)
        else:
            nisa.dma_compute(dst=total, srcs=[picked, total], reduce_op=nl.add)
    out = nl.ndarray((R, H), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def two_sources_summed(a, b):
    """``dst = a + b`` with neither source the destination."""
    P, F = a.shape
    total = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_compute(dst=total, srcs=[a, b], reduce_op=nl.add, scales=[1.0, 1.0])
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def maximum_of_sources(a, b):
    """``reduce_op=nl.maximum``: the ISA adds only (refused)."""
    P, F = a.shape
    total = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_compute(dst=total, srcs=[a, b], reduce_op=nl.maximum)  # max refused here
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def scattered_add(x, idx, unique=True):
    """``out[idx[p]] += x[p]`` by a scatter read-modify-write (nki-library's scatter-add); with
    ``unique`` (the default) the page promises no row repeats within the call."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    zeros = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    rows = nl.ndarray((x.shape[0], 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=idx)
    values = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=values, src=x)
    dst = out.ap(pattern=[[x.shape[1], x.shape[0]], [1, x.shape[1]]], offset=0,
                 vector_offset=rows.ap(pattern=[[1, x.shape[0]], [1, 1]], offset=0), indirect_dim=0)
    nisa.dma_compute(dst=dst, srcs=[dst, values], reduce_op=nl.add, unique_indices=unique)
    return out
