"""Legacy-API (``neuronxcc.nki``) kernels for the frontend tests, as the NKI tutorials write them."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def add_masked(a, b):
    """Rows in tiles of 128 with an affine_range loop; the tail tile is masked."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:cols]
    for t in nl.affine_range((rows + 127) // 128):
        x = nl.load(a[t * 128 + i_p, i_f], mask=(t * 128 + i_p < rows))
        y = nl.load(b[t * 128 + i_p, i_f], mask=(t * 128 + i_p < rows))
        z = nl.add(x, y, mask=(t * 128 + i_p < rows))
        nl.store(out[t * 128 + i_p, i_f], value=z, mask=(t * 128 + i_p < rows))
    return out


@nki.jit
def scale_rows(a):
    """An affine loop kept as a loop: body affine in t."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(a.shape[1])[None, :]
    for t in nl.affine_range(a.shape[0] // 128):
        tile = nl.load(a[t * 128 + i_p, i_f])
        nl.store(out[t * 128 + i_p, i_f], value=nl.multiply(tile, 3.0))
    return out


@nki.jit
def matmul_psum(lhsT, rhs):
    """``res_psum += nisa.nc_matmul(...)`` over an affine K loop (PSUM accumulation)."""
    k, m = lhsT.shape
    n = rhs.shape[1]
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    res_psum = nl.zeros((m, n), nl.float32, buffer=nl.psum)
    for kt in nl.affine_range(k // 128):
        a = nl.load(lhsT[kt * 128:(kt + 1) * 128, :])
        b = nl.load(rhs[kt * 128:(kt + 1) * 128, :])
        res_psum += nisa.nc_matmul(a, b)
    res = nl.copy(res_psum, dtype=nl.float32)
    nl.store(out, value=res)
    return out


@nki.jit
def running_sum(a):
    """A sequential_range loop carrying a value in SBUF: prefix sums of row blocks."""
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    for t in nl.sequential_range(a.shape[0] // 128):
        tile = nl.load(a[t * 128:(t + 1) * 128, :])
        acc += tile
    nl.store(out, value=acc)
    return out


@nki.jit
def first_block_special(a):
    """``if t == 0`` is not affine in t: the loop is unrolled."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(a.shape[0] // 128):
        tile = nl.load(a[t * 128:(t + 1) * 128, :])
        factor = 10.0 if t == 0 else 1.0
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(tile, factor))
    return out


@nki.jit
def mod_alloc_copy(a):
    """Direct allocation: two rotating SBUF slots over a kept affine loop."""
    nt = a.shape[0] // 128
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((nt, nl.par_dim(128), a.shape[1]), dtype=a.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    for t in nl.affine_range(nt):
        buf[t] = nl.load(a[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=buf[t])
    return out


@nki.jit
def psum_banks(lhsT, rhs):
    """PSUM mod_alloc over blocks chosen by constants (unrolled static_range)."""
    out = nl.ndarray((4, 128, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((4, nl.par_dim(128), rhs.shape[1]), dtype=nl.float32,
                    buffer=ncc.psum.mod_alloc(base_bank=2, num_bank_tiles=(2,)))
    a = nl.load(lhsT)
    b = nl.load(rhs)
    for j in nl.static_range(4):
        ps[j] = nisa.nc_matmul(a, b)
        res = nl.multiply(ps[j], float(j + 1))
        nl.store(out[j], value=res)
    return out


@nki.jit
def isa_mix(x, out):
    """Output as a parameter (older kernels); activation with a bias tile, tensor_reduce,
    tensor_scalar, iota, reciprocal, nl.matmul(transpose_x=False)."""
    p, f = x.shape
    tile = nl.load(x)
    bias = nisa.memset((p, 1), 0.5, nl.float32)
    act = nisa.activation(op=nl.exp, data=tile, bias=bias, scale=0.5)
    rowsum = nisa.tensor_reduce(np.add, act, axis=(1,), keepdims=True)
    inv = nisa.reciprocal(rowsum)
    normed = nisa.tensor_scalar(act, np.multiply, inv)
    ramp = nisa.iota(nl.arange(f)[None, :] + 0 * nl.arange(p)[:, None], dtype=nl.float32)
    shifted = nl.add(normed, ramp)
    nl.store(out, value=shifted)


@nki.jit
def matmul_plain(x, y):
    out = nl.ndarray((x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(x)
    b = nl.load(y)
    nl.store(out, value=nl.copy(nl.matmul(a, b)))
    return out


@nki.jit
def causal_mask(scores):
    out = nl.ndarray(scores.shape, dtype=scores.dtype, buffer=nl.shared_hbm)
    i_q, i_k = nl.mgrid[0:128, 0:128]
    s = nl.load(scores)
    masked = nisa.affine_select(pred=(i_q - i_k >= 0), on_true_tile=s, on_false_value=-9984.0)
    nl.store(out, value=masked)
    return out


@nki.jit
def matmul_tiled(lhsT, rhs):
    """The tutorial's tiled matmul: three nested affine loops, PSUM zeroed per output tile."""
    k, m = lhsT.shape
    n = rhs.shape[1]
    result = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    for mt in nl.affine_range(m // 128):
        for nt in nl.affine_range(n // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for kt in nl.affine_range(k // 128):
                lhsT_tile = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[kt * 128:(kt + 1) * 128, mt * 128:(mt + 1) * 128])
                rhs_tile = nl.load(rhs[kt * 128:(kt + 1) * 128, nt * 512:(nt + 1) * 512])
                res_psum += nisa.nc_matmul(lhsT_tile[...], rhs_tile[...])
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[mt * 128:(mt + 1) * 128, nt * 512:(nt + 1) * 512], value=res_sb)
    return result


@nki.jit
def fn_alloc_fp8(x):
    """ncc.sbuf.alloc places each block by a function; the output is fp8 (e4m3)."""
    def place(idx, pdim_size, fdim_size):
        return 0, 4096 + idx[0] * fdim_size * 4

    out = nl.ndarray(x.shape, dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
    buf = nl.ndarray((2, nl.par_dim(128), x.shape[1]), dtype=nl.float32, buffer=ncc.sbuf.alloc(place))
    for b in nl.static_range(2):
        buf[b] = nl.load(x[b * 128:(b + 1) * 128, :])
        nl.store(out[b * 128:(b + 1) * 128, :], value=buf[b])
    return out


@nki.jit
def scale_by_row_norm(x, w):
    """A three-axis mgrid (unused axes add no dimension), a one-partition weight row broadcast
    to every partition, reductions to [P] broadcast back along the free axis, a masked tail."""
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    i_r, i_one, i_c = nl.mgrid[0:128, 0:1, 0:cols]
    w_row = nl.load(w.reshape((1, cols))[i_one, i_c])
    w_all = w_row.broadcast_to((128, cols))
    for t in nl.affine_range((rows + 127) // 128):
        tile = nl.load(x[t * 128 + i_r, i_c], mask=(t * 128 + i_r < rows))
        norm = nl.sum(nl.abs(tile), axis=[1])
        scaled = tile / norm * w_all
        nl.store(out[t * 128 + i_r, i_c], value=scaled, mask=(t * 128 + i_r < rows))
    return out


@nki.jit
def stats_in_chunks(x):
    """bn_stats over free chunks selected by free index vectors, then bn_aggr: mean and variance."""
    out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:x.shape[1]]
    tile = nl.load(x[i_p, i_f])
    i_chunk, i_stat = nl.arange(512)[None, :], nl.arange(6)[None, :]
    chunks = (x.shape[1] + 511) // 512
    stats = nl.ndarray((128, 6 * chunks), dtype=nl.float32)
    for j in nl.affine_range(chunks):
        stats[i_p, j * 6 + i_stat] = nisa.bn_stats(tile[i_p, j * 512 + i_chunk],
                                                   mask=(j * 512 + i_chunk < x.shape[1]))
    mean_var = nisa.bn_aggr(stats[i_p, nl.arange(6 * chunks)[None, :]])
    nl.store(out, value=mean_var)
    return out


@nki.jit
def transpose_by_indices(x):
    """A tile loaded as [i_p, i_f] and stored to out[i_f, i_p]: the store follows the
    iterators, a transposing DMA; a [P] row sum broadcast to [P, F]."""
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:rows, 0:cols]
    tile = nl.load(x[i_p, i_f])
    total = nl.sum(tile, axis=1)
    spread = total.broadcast_to((rows, cols))
    nl.store(out[i_f, i_p], value=nl.add(tile, spread))
    return out


@nki.jit
def load_swapped(x):
    """A load through swapped index vectors reads a transpose (numpy's broadcasting: element
    [p, f] of the tile is x[f, p]), a square tile too."""
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(cols)[:, None], nl.arange(rows)[None, :]
    nl.store(out, value=nl.load(x[i_f, i_p]))
    return out


@nki.jit
def store_swapped(x):
    """A store through swapped index vectors writes a transpose, of an untagged tile too."""
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(rows)[:, None], nl.arange(cols)[None, :]
    nl.store(out[i_f, i_p], value=nl.load(x))
    return out


@nki.jit
def fresh_psum_accumulate(lhsT, rhs):
    """``+=`` into a PSUM tile never zeroed: the first matmul starts the group (unrolled), or,
    in a kept loop, the tile is zeroed before the loop; a PSUM slot reused for a second
    product starts afresh."""
    k = lhsT.shape[0]
    out = nl.ndarray((2, lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    for rep in nl.static_range(2):
        acc = nl.ndarray((1, nl.par_dim(lhsT.shape[1]), rhs.shape[1]), dtype=nl.float32,
                         buffer=ncc.psum.mod_alloc(base_bank=3, num_bank_tiles=(1,)))
        for kt in nl.affine_range(k // 128):
            a = nl.load(lhsT[kt * 128:(kt + 1) * 128, :])
            b = nl.load(rhs[kt * 128:(kt + 1) * 128, :])
            acc[0] += nisa.nc_matmul(a, nl.multiply(b, float(rep + 1)))
        nl.store(out[rep], value=nl.copy(acc[0]))
    return out


@nki.jit
def grid_blocks(x):
    """A 2-D SPMD grid: instance (r, c) handles one block; loads a block transposed."""
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    rows = x.shape[0] // nl.num_programs(0)
    cols = x.shape[1] // nl.num_programs(1)
    r, c = nl.program_id(0), nl.program_id(1)
    block = nl.load_transpose2d(x[r * rows:(r + 1) * rows, c * cols:(c + 1) * cols])
    nl.store(out[c * cols:(c + 1) * cols, r * rows:(r + 1) * rows], value=nl.softmax(block, axis=1))
    return out


@nki.jit
def tiles_in_a_list(x):
    """Tiles collected in a Python list by an affine loop and used by a later one: traced
    once, the first loop would leave one tile in the list, so the kernel is unrolled."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = []
    for t in nl.affine_range(x.shape[0] // 128):
        tiles.append(nl.load(x[t * 128:(t + 1) * 128, :]))
    for t in nl.affine_range(x.shape[0] // 128):
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(tiles[t], 2.0))
    return out


@nki.jit
def boolean_masks(x):
    """mask= given as a Python condition: True keeps the instruction, False drops it; nl.fp32.min
    as minus infinity."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    res = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    res[...] = nl.multiply(tile, 2.0, mask=x.shape[0] > 1)
    res[...] = nl.multiply(tile, 100.0, mask=x.shape[0] > 1000)
    floor = nl.maximum(res, nl.fp32.min)
    nl.store(out, value=floor)
    return out
