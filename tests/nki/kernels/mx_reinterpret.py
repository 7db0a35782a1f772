"""Constructs of nki-library's MX kernels, current NKI (tests/nki/test_mx_corpus_constructs.py):
packed words reinterpreted with ``.view(dtype)`` / ``.ap(dtype=)`` and given to
``nisa.nc_matmul_mx``; a kernel receiving a packed-typed input; indirect and scalar offsets on a
reshaped HBM view."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def viewed_words_matmul(stationary_words, stationary_scale, moving_words, moving_scale):
    """uint32 words of e5m2 codes: the stationary tile loaded as uint32 then ``.view``-ed, the
    moving one loaded through ``.ap(dtype=)``; scales [K / 8, F] for one quadrant."""
    K, M = stationary_words.shape
    N = moving_words.shape[1]
    st_words = nl.ndarray((K, M), dtype=stationary_words.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=st_words, src=stationary_words)
    st = st_words.view(nl.float8_e5m2_x4)
    mv = nl.ndarray((K, N), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=mv, src=moving_words.ap(pattern=[[N, K], [1, N]], offset=0, dtype=nl.float8_e5m2_x4))
    st_scale = nl.ndarray((K // 8, M), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=st_scale, src=stationary_scale)
    mv_scale = nl.ndarray((K // 8, N), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=mv_scale, src=moving_scale)
    product = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=product, stationary=st[:, :], moving=mv, stationary_scale=st_scale,
                      moving_scale=mv_scale)
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result, src=product)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=result)
    return out


@nki.jit
def packed_passthrough(weights):
    """A packed input (as the MX tests pass theirs) copied through SBUF in its own dtype."""
    tile = nl.ndarray(weights.shape, dtype=weights.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=weights)
    out = nl.ndarray(weights.shape, dtype=weights.dtype, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=tile)
    return out


@nki.jit
def gather_folded_rows(data, rows):
    """data [T, H] seen as [4T, H/4] (nki-library's 4H-folded hidden states): the rows named by
    ``rows`` [R, 1] gathered through ``.ap(vector_offset=, indirect_dim=0)`` on the reshape."""
    T, H = data.shape
    count = rows.shape[0]
    folded = data.reshape((T * 4, H // 4))
    index = nl.ndarray((count, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=index, src=rows)
    picked = nl.ndarray((count, H // 4), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=picked, src=folded.ap(pattern=[[H // 4, count], [1, H // 4]], offset=0,
                                            vector_offset=index, indirect_dim=0))
    out = nl.ndarray((count, H // 4), dtype=data.dtype, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=picked)
    return out


@nki.jit
def folded_row_at_offset(data, start):
    """One row of the [4T, H/4] reshape, at the row a device value ``start`` [1, 1] names."""
    T, H = data.shape
    folded = data.reshape((T * 4, H // 4))
    at = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=start)
    row = nl.ndarray((1, H // 4), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=folded.ap(pattern=[[H // 4, 1], [1, H // 4]], offset=0, scalar_offset=at,
                                         indirect_dim=0))
    out = nl.ndarray((1, H // 4), dtype=data.dtype, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=row)
    return out


@nki.jit
def doubled_by_blocks(x):
    """``nl.range`` (nki-library's Trn3 MX loaders loop with it): each 32-column block doubled."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm, name="out")
    for block in nl.range(F // 32):
        tile = nl.ndarray((P, 32), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, block * 32:(block + 1) * 32])
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[:, block * 32:(block + 1) * 32], src=tile)
    return out


@nki.jit
def scale_as_bytes(values):
    """A row's fp32 scale stored as four fp8 bytes after the row (nki-library's row
    quantization): ``.ap(dtype=)`` of a smaller element on the source of a DMA."""
    P, F = values.shape
    tile = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=values[:, 0:1])
    out = nl.ndarray((P, 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=tile.ap(pattern=[[4, P], [1, 4]], offset=0, dtype=nl.float8_e4m3))
    return out


@nki.jit
def pairs_as_words(halves):
    """bf16 pairs read as one fp32 each (nki-library's MX loader): a larger element."""
    M, K = halves.shape
    tile = nl.ndarray((M, K // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=halves.ap(pattern=[[K // 2, M], [1, K // 2]], dtype=nl.float32))
    out = nl.ndarray((M, K // 2), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=tile)
    return out
