"""Current-API kernels of tests/nki/test_isa_ops_round4b.py: nisa.local_gather with its
defaults and dma_transpose of a 4-D on-chip access pattern."""

import nki.isa as nisa
import nki.language as nl


def local_gather_current(data, index):
    """The current API with its defaults: one element an index, every index of the core."""
    out = nl.ndarray((data.shape[0], 16 * index.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    src = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    idx = nl.ndarray(index.shape, dtype=index.dtype, buffer=nl.sbuf)
    dst = nl.ndarray(out.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=data)
    nisa.dma_copy(dst=idx, src=index)
    nisa.local_gather(dst=dst, src_buffer=src, index=idx)
    nisa.dma_copy(dst=out, src=dst)
    return out


def transpose_4d_on_chip(x):
    """x [a, 1, c, d] loaded, then transposed on chip with (3, 1, 2, 0) into [d, 1, c, a]."""
    a, _one, c, d = x.shape
    out = nl.ndarray((d, 1, c, a), dtype=x.dtype, buffer=nl.shared_hbm)
    src = nl.ndarray((a, c * d), dtype=x.dtype, buffer=nl.sbuf)
    dst = nl.ndarray((d, c * a), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=x.reshape((a, c * d)))
    nisa.dma_transpose(dst=dst.ap([[c * a, d], [1, 1], [a, c], [1, a]]),
                               src=src.ap([[c * d, a], [1, 1], [d, c], [1, d]]))
    nisa.dma_copy(dst=out.reshape((d, c * a)), src=dst)
    return out


def double_row_matmul(a, b):
    """FP8 double-row matmul: a [K, 2, M], b [K, 2, N] -> [M, N], both row pairs contracted."""
    k, _two, m = a.shape
    n = b.shape[2]
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t = nl.ndarray(a.shape, dtype=nl.float8_e4m3, buffer=nl.sbuf)
    b_t = nl.ndarray(b.shape, dtype=nl.float8_e4m3, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_t, src=a)
    nisa.dma_copy(dst=b_t, src=b)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a_t, moving=b_t, perf_mode=nisa.matmul_perf_mode.double_row)
    res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def gather_transpose_vector_offset(src, rows):
    """The dma_transpose page's indirect form: .ap(vector_offset=idx, indirect_dim=0), axes (1, 0)."""
    n, width = rows.shape[0], src.shape[1]
    out = nl.ndarray((width, n), dtype=src.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray(rows.shape, dtype=rows.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    dst = nl.ndarray((width, n), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=dst, src=src.ap(pattern=[[width, n], [1, width]], vector_offset=idx, indirect_dim=0),
                       axes=(1, 0))
    nisa.dma_copy(dst=out, src=dst)
    return out


def gather_transpose_columns(src, rows):
    """The page's 2-D indices: a [P, K] tile read column after column (indices.T.flatten()),
    the first P * K - 3 of them used."""
    n, width = rows.shape[0] * rows.shape[1] - 3, src.shape[1]
    out = nl.ndarray((width, n), dtype=src.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray(rows.shape, dtype=rows.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    dst = nl.ndarray((width, n), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=dst, src=src.ap(pattern=[[width, n], [1, width]], vector_offset=idx, indirect_dim=0),
                       axes=(1, 0))
    nisa.dma_copy(dst=out, src=dst)
    return out


def gather_columns_by_copy(src, rows):
    """A [P, K] tile of indices in a plain gather: only dma_transpose's page reads one so."""
    n, width = rows.shape[0] * rows.shape[1], src.shape[1]
    idx = nl.ndarray(rows.shape, dtype=rows.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    dst = nl.ndarray((n, width), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=dst, src=src.ap(pattern=[[width, n], [1, width]], vector_offset=idx, indirect_dim=0))
    out = nl.ndarray((n, width), dtype=src.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=dst)
    return out
