"""Compiled control flow and device scalars, current NKI (0.6 / 0.7): ``nl.fori_loop`` with
static and device bounds, ``nl.while_loop`` on a register, ``nl.if_else`` on
``nisa.scalar_load``, ``nl.dynamic_range`` over a register with a ``scalar_offset`` tile; and
planted mistakes (a loop body carrying Python state, PSUM accumulated before anything wrote it,
onto an overlapping region)."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def rows_plus_one(x):
    """Static bounds: one kept loop over the row tiles."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    def body(i):
        tile = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[nl.ds(i * P, P), :])
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out[nl.ds(i * P, P), :], src=tile)

    nl.fori_loop(0, x.shape[0] // P, body)
    return out


@nki.jit
def first_n_rows_doubled(x, n):
    """The trip count is an input: read on the device with scalar_load."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    zeros = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    for t in range(x.shape[0] // P):
        nisa.dma_copy(dst=out[t * P:(t + 1) * P, :], src=zeros)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    trips = nisa.scalar_load(n_sb)

    def body(i):
        tile = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[nl.ds(i * P, P), :])
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[nl.ds(i * P, P), :], src=tile)

    nl.fori_loop(0, trips, body)
    return out


@nki.jit
def count_down(val, count):
    """while_loop: adds val once per unit of count (the doc's flag-driven loop)."""
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    v = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=v, src=val)
    acc = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    left = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=left, src=count)
    reg = nisa.register_alloc()
    nisa.register_load(reg, left)

    def body(r):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=v, op=nl.add)
        nisa.tensor_scalar(dst=left, data=left, op0=nl.subtract, operand0=1)
        nisa.register_load(r, left)
        return r

    nl.while_loop(reg, body)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def shift_if_flagged(flag, data):
    """if_else on a loaded scalar: +10 when flag > 0, else -10."""
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    flag_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=flag_sb, src=flag)
    result = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=result, src=data)

    def then_branch():
        nisa.tensor_scalar(dst=result, data=result, op0=nl.add, operand0=10.0)

    def else_branch():
        nisa.tensor_scalar(dst=result, data=result, op0=nl.subtract, operand0=10.0)

    nl.if_else(nisa.scalar_load(flag_sb) > 0, then_branch, else_branch)
    nisa.dma_copy(dst=out, src=result)
    return out


@nki.jit
def tiles_from_offset(x, num_tiles):
    """NKI 0.6 style: dynamic_range over a register, rows addressed by a scalar_offset tile the
    loop advances in SBUF (as nki-library's dynamic-shape kernels do)."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=num_tiles)
    trips = nisa.register_alloc()
    nisa.register_load(trips, n_sb)
    start = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=start, value=0)
    for _ in nl.dynamic_range(0, trips, 1):
        tile = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x.ap(pattern=[[cols, P], [1, cols]], offset=0, scalar_offset=start,
                                         indirect_dim=0))
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=3.0)
        nisa.dma_copy(dst=out.ap(pattern=[[cols, P], [1, cols]], offset=0, scalar_offset=start, indirect_dim=0),
                      src=tile)
        nisa.tensor_scalar(dst=start, data=start, op0=nl.add, operand0=P)
    return out


@nki.jit
def python_running_sum(x):
    """Planted: the body rebinds ``total`` (a Python variable) each iteration; the compiler
    traces the body once, so on the device every iteration adds to the first tile."""
    out = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    total = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=total, value=0.0)

    def body(i):
        nonlocal total
        tile = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[nl.ds(i * P, P), :])
        summed = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=summed, data1=total, data2=tile, op=nl.add)
        total = summed

    nl.fori_loop(0, x.shape[0] // P, body)
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def sbuf_running_sum(x):
    """The fix: the running sum stays in one SBUF tile the body updates in place."""
    out = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    total = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=total, value=0.0)

    def body(i):
        tile = nl.ndarray((P, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[nl.ds(i * P, P), :])
        nisa.tensor_tensor(dst=total, data1=total, data2=tile, op=nl.add)

    nl.fori_loop(0, x.shape[0] // P, body)
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def psum_never_zeroed(lhsT, rhs):
    """Planted: accumulate=True onto a PSUM tile nothing wrote."""
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray(lhsT.shape, dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray(rhs.shape, dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    nisa.dma_copy(dst=b, src=rhs)
    ps = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=a, moving=b, accumulate=True)
    res = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def psum_overlapping_groups(lhsT, rhs):
    """Planted: the second matmul accumulates onto columns 64..192 of a tile whose columns
    0..128 hold the first matmul's group."""
    out = nl.ndarray((lhsT.shape[1], 256), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray(lhsT.shape, dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray(rhs.shape, dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    nisa.dma_copy(dst=b, src=rhs)
    ps = nl.ndarray((lhsT.shape[1], 256), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=ps, value=0.0)
    nisa.nc_matmul(dst=ps[:, 0:128], stationary=a, moving=b, accumulate=False)
    nisa.nc_matmul(dst=ps[:, 64:192], stationary=a, moving=b, accumulate=True)
    res = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps)
    nisa.dma_copy(dst=out, src=res)
    return out


def _operands(lhsT, rhs, k):
    """Step ``k``'s 128 rows of both operands, loaded into SBUF tiles."""
    a = nl.ndarray((P, lhsT.shape[1]), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((P, rhs.shape[1]), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT[nl.ds(k * P, P), :])
    nisa.dma_copy(dst=b, src=rhs[nl.ds(k * P, P), :])
    return a, b


def _k_steps(lhsT, rhs, per_step):
    """A [M, N] product over K steps of 128 rows, each step run by ``per_step(acc, a, b)``."""
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nl.fori_loop(0, lhsT.shape[0] // P, lambda k: per_step(acc, *_operands(lhsT, rhs, k)))
    res = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def psum_restarted_each_iteration(lhsT, rhs):
    """Planted: the K steps in a compiled loop, ``accumulate=None``: each iteration's matmul is
    the body's first write, so it overwrites the sum of the steps before (the last step's
    product comes out)."""
    return _k_steps(lhsT, rhs, lambda acc, a, b: nisa.nc_matmul(dst=acc, stationary=a, moving=b))


@nki.jit
def psum_used_each_iteration(lhsT, rhs):
    """Each iteration's product copied out in the body: overwriting it is meant (no finding)."""
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.psum)
    total = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=total, value=0.0)

    def step(k):
        a, b = _operands(lhsT, rhs, k)
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
        nisa.tensor_tensor(dst=total, data1=total, data2=acc, op=nl.add)

    nl.fori_loop(0, lhsT.shape[0] // P, step)
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def scalar_results(vals):
    """Device scalars combined as the scalar_alu page lists: vals = [[a, b]], int32."""
    t = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=vals)
    a = nisa.scalar_load(t[0:1, 0:1])
    b = nisa.scalar_load(t[0:1, 1:2])
    results = [a // b, a % b, nisa.scalar_alu(a, b, op=nl.divide), nisa.scalar_alu(a, b, op=nl.fmod),
               nisa.scalar_alu(a, b, op=nl.maximum), nisa.scalar_alu(a, 3, op=nl.minimum),
               nisa.scalar_alu(a, b, op=nl.less) * 10 + (a > b), 100 // b, a * a]
    res = nl.ndarray((1, len(results)), dtype=nl.int32, buffer=nl.sbuf)
    for k, r in enumerate(results):
        nisa.scalar_store(res[0:1, k:k + 1], r)
    out = nl.ndarray((1, len(results)), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def unrolled_device_bound(x, n):
    """A mistake: fori_loop(unroll=True) unrolls when the kernel compiles, so its bound cannot
    be a value read on the device."""
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nl.fori_loop(0, nisa.scalar_load(n_sb), lambda i: nisa.tensor_scalar(tile, tile, op0=nl.add, operand0=1.0),
                 unroll=True)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out


@nki.jit
def scalar_alu_mistake(vals, which):
    """``which`` 0: scalar_alu of two ints, computed as the kernel traces; 1-3: a mistake."""
    t = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=vals)
    a = nisa.scalar_load(t[0:1, 0:1])
    if which == 0:
        assert nisa.scalar_alu(-17, 4, op=nl.divide) == -4 and nisa.scalar_alu(-17, 4, op=nl.fmod) == -1
        assert nisa.scalar_alu(3, 4, op=nl.less) is True
    if which == 1:
        nisa.scalar_alu(a, 1.5, op=nl.add)
    if which == 2:
        nisa.scalar_alu(a, 4, op=nl.bitwise_xor)
    if which == 3:
        nisa.scalar_alu(a, nisa.scalar_load(t[0:1, 1:2]), op=nl.divide)
    out = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def running_reads(vals, reads):
    """``reads`` device values, each read after more instructions were traced (a kernel that
    takes an offset or a count from a tile in every step of a Python loop)."""
    out = nl.ndarray((1, reads), dtype=nl.int32, buffer=nl.shared_hbm)
    res = nl.ndarray((1, reads), dtype=nl.int32, buffer=nl.sbuf)
    for k in range(reads):
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=vals[0:1, k:k + 1])
        nisa.scalar_store(res[0:1, k:k + 1], nisa.scalar_load(t) * 2)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def tile_per_step(x, which):
    """Step ``i`` copies ``x[which[i]]`` (an index read on the device) into a tile declared in
    the step and adds its exponential into one sum: a kernel holds a few tiles at once, its
    trace declares three a step (machine/nki/liveness.py)."""
    out = nl.ndarray(x.shape[1:], dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray(x.shape[1:], dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    rows, cols = x.shape[1:]
    for i in range(which.shape[0]):
        e = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=e, src=which[i:i + 1, 0:1])
        t = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[cols, rows], [1, cols]], offset=0, scalar_offset=e, indirect_dim=0))
        nisa.tensor_tensor(dst=acc, data1=acc, op=nl.add, data2=nl.exp(t))
    nisa.dma_copy(dst=out, src=acc)
    return out
