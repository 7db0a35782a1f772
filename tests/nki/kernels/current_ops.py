"""Current-API (``nki``) kernels for the frontend tests, written as the NKI guides write them."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[nl.ds(i * 128, 128), :])
        y = nl.load(b[i * 128:(i + 1) * 128, :])
        nl.store(out[nl.ds(i * 128, 128), :], nl.add(x, y))
    return out


@nki.jit
def matmul(lhsT, rhs):
    k, m = lhsT.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for kt in nl.affine_range(k // 128):
        a = nl.ndarray((128, m), dtype=lhsT.dtype, buffer=nl.sbuf)
        b = nl.ndarray((128, n), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[kt * 128:(kt + 1) * 128, :])
        nisa.dma_copy(dst=b, src=rhs[kt * 128:(kt + 1) * 128, :])
        nisa.nc_matmul(acc, a, b)
    res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc, engine=nisa.scalar_engine)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def rmsnorm(x, w):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    weight = nl.load(w.broadcast_to((128, cols)))
    for i in range(rows // 128):
        tile = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[i * 128:(i + 1) * 128, :])
        sq = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        ssum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(sq, nl.square, tile, reduce_op=nl.add, reduce_res=ssum)
        scale = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(scale, ssum, nl.multiply, 1.0 / cols, op1=nl.add, operand1=1e-6)
        rstd = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(rstd, nl.rsqrt, scale)
        normed = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(normed, tile, nl.multiply, rstd)
        res = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(res, normed, weight, nl.multiply, engine=nisa.gpsimd_engine)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=res)
    return out


@nki.jit
def spmd_scale(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    rows = x.shape[0] // nl.num_programs(0)
    tile = nl.load(x[pid * rows:(pid + 1) * rows, :])
    nl.store(out[pid * rows:(pid + 1) * rows, :], nl.multiply(tile, float(pid + 1)))
    return out


@nki.jit
def placed_copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, 1024))
    acc = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum, address=(0, 2 * 2048))
    nisa.dma_copy(dst=buf, src=x)
    ident = nl.shared_identity_matrix(x.shape[0], dtype=x.dtype)
    eye = nl.load(ident)
    nisa.nc_matmul(acc, eye, buf, accumulate=False)
    res = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def access_pattern(x):
    """Transposing load with .ap: out[f, p] = x[p, f] for a (4, 8) input, via a DRAM pattern."""
    p, f = x.shape
    out = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x.ap(pattern=[[1, f], [f, p]], offset=0))
    doubled = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(doubled, tile, nl.add, 1.0)
    nisa.dma_copy(dst=out, src=doubled)
    return out


@nki.jit
def softmax_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    mx = nl.max(tile, axis=1, keepdims=True)
    shifted = nl.subtract(tile, mx)
    e = nl.exp(shifted)
    s = nl.sum(e, axis=1, keepdims=True)
    nl.store(out, nl.divide(e, s))
    return out


@nki.jit
def bf16_gelu(x):
    out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    tile = nl.load(x)
    y = nl.gelu_apprx_tanh(tile, dtype=nl.float32)
    nl.store(out, nl.copy(y, dtype=nl.bfloat16))
    return out


def nc_version_branch(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    factor = 3.0 if nisa.get_nc_version() == nisa.nc_version.gen3 else 2.0
    nl.store(out, tile * factor)
    return out


@nki.jit
def causal_mask(scores):
    out = nl.ndarray(scores.shape, dtype=scores.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 128), dtype=scores.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=scores)
    masked = nl.ndarray((128, 128), dtype=scores.dtype, buffer=nl.sbuf)
    nisa.affine_select(masked, pattern=[[-1, 128]], offset=0, channel_multiplier=1, on_true_tile=s,
                       on_false_value=-9984.0, cmp_op=nl.greater_equal)
    ramp = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(ramp, [[1, 128]], offset=0, channel_multiplier=0)
    res = nl.ndarray((128, 128), dtype=scores.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(res, masked, ramp, nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def psum_reused(lhsT, rhs):
    """One PSUM tile reused for two output blocks: its accumulation group restarts after the
    copy out (accumulate=None)."""
    k, m = lhsT.shape
    n = rhs.shape[1]
    out = nl.ndarray((2, m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for j in range(2):
        for kt in range(k // 128):
            a = nl.load(lhsT[kt * 128:(kt + 1) * 128, :])
            b = nl.load(rhs[kt * 128:(kt + 1) * 128, :])
            nisa.nc_matmul(acc, a, nl.multiply(b, float(j + 1)))
        res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(res, acc)
        nisa.dma_copy(dst=out[j], src=res)
    return out


@nki.jit
def blocked_matmul(lhsT, rhs, tiles_m=2, tiles_k=2):
    """Python lists of tiles, SBUF accumulators zeroed by memset and summed with
    tensor_tensor over a sequential K-block loop, packed stores."""
    k_total, m_total = lhsT.shape
    n_total = rhs.shape[1]
    block_m, block_k = 128 * tiles_m, 128 * tiles_k
    out = nl.ndarray((m_total, n_total), dtype=nl.float32, buffer=nl.shared_hbm)
    sums = []
    for _bm in range(m_total // 128):
        acc = nl.ndarray((128, n_total), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0)
        sums.append(acc)
    for kb in nl.sequential_range(k_total // block_k):
        rhs_tiles = []
        for bk in range(tiles_k):
            tile = nl.ndarray((128, n_total), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=rhs[(kb * tiles_k + bk) * 128:(kb * tiles_k + bk + 1) * 128, :])
            rhs_tiles.append(tile)
        for mb in nl.affine_range(m_total // block_m):
            lhs_tiles = []
            for bk in range(tiles_k):
                tile = nl.ndarray((128, block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=tile, src=lhsT[(kb * tiles_k + bk) * 128:(kb * tiles_k + bk + 1) * 128,
                                                 mb * block_m:(mb + 1) * block_m])
                lhs_tiles.append(tile)
            for bm in range(tiles_m):
                part = nl.ndarray((128, n_total), dtype=nl.float32, buffer=nl.psum)
                for bk in range(tiles_k):
                    nisa.nc_matmul(dst=part, stationary=lhs_tiles[bk][:, bm * 128:(bm + 1) * 128],
                                   moving=rhs_tiles[bk])
                target = sums[mb * tiles_m + bm]
                nisa.tensor_tensor(dst=target, data1=target, data2=part, op=nl.add)
    for bm in range(m_total // 128):
        nisa.dma_copy(dst=out[bm * 128:(bm + 1) * 128, :], src=sums[bm])
    return out


@nki.jit
def running_total(x: nl.NkiTensor) -> nl.NkiTensor:
    """Prefix sums along the free axis in two free tiles, the carry moved by tensor_copy
    (annotations name nl.NkiTensor, as nki-library kernels do)."""
    rows, cols = x.shape
    half = cols // 2
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    carry = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=carry, value=0.0)
    ones = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    for f in nl.sequential_range(2):
        data = nl.ndarray((rows, half), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=data, src=x[:, f * half:(f + 1) * half])
        res = nl.ndarray((rows, half), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=res, data0=ones, data1=data, initial=carry, op0=nl.multiply, op1=nl.add)
        nisa.dma_copy(dst=out[:, f * half:(f + 1) * half], src=res)
        nisa.tensor_copy(dst=carry, src=res[:, half - 1:half])
    return out


@nki.jit
def pool_by_access_pattern(x, size):
    """2-D average pooling through a 5-axis .ap() view of a [C, H*W] tile, reduced over its
    two window axes (the access-pattern guide's idiom); nki.typing imported as kernels do."""
    from nki.typing import tensor  # noqa: F401  (annotations only)

    c, h, w = x.shape
    out = nl.ndarray((c, h // size, w // size), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    windows = tile.ap([[h * w, c], [size * w, h // size], [size, w // size], [w, size], [1, size]])
    total = nl.sum(windows, axis=[3, 4])
    res = nl.ndarray(total.shape, dtype=total.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=res, data=total, op0=nl.multiply, operand0=1.0 / (size * size))
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def table_row_broadcast(tab, row):
    """Row ``row`` of a small table in SBUF broadcast to 128 partitions (a rotation kernel reads
    row k of a constant table so, for k = 1..24)."""
    K = tab.shape[1]
    t = nl.ndarray(tab.shape, dtype=tab.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=tab)
    b = nl.broadcast_to(t[row:row + 1, 0:K], shape=(128, K))
    o = nl.ndarray((128, K), dtype=tab.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=b)
    out = nl.ndarray((128, K), dtype=tab.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out
