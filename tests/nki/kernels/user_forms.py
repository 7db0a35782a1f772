"""Forms public users' kernels write (a flash attention's causal mask, a DFT by matmul): the
boolean operators between mask tiles, and ``nisa.nc_matmul`` fed an ``nc_transpose``'s PSUM
result as it is, in the legacy API; and the same matmul in the current API, which refuses it."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def masks(a):
    """Keeps ``a`` where (row >= col and col < 64), or where (row < 8 or col >= 120), or where
    exactly one of (row < 32, col < 32) holds, as three outputs."""
    both = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    either = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    one = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    zero = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    grid = nl.mgrid[0:128, 0:128]
    row = nisa.iota(expr=grid.p, dtype=nl.float32)
    col = nisa.iota(expr=grid.x, dtype=nl.float32)
    nl.store(both, nl.where(nl.greater_equal(row, col) & (col < 64), t, zero))
    nl.store(either, nl.where((row < 8) | (col >= 120), t, zero))
    nl.store(one, nl.where((row < 32) ^ (col < 32), t, zero))
    return both, either, one


@nki.jit
def integer_bits(a, b):
    """``a & b``, ``a | b``, ``a ^ 6`` of int32 tiles: the bitwise calls."""
    out_and = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    out_or = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    out_xor = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    nl.store(out_and, x & y)
    nl.store(out_or, x | y)
    nl.store(out_xor, x ^ 6)
    return out_and, out_or, out_xor


@nki.jit
def matmul_of_transposes(x, w):
    """``x @ w.T`` as ``nc_matmul(nc_transpose(x), nc_transpose(w))``: both operands PE
    transposes, in PSUM."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nisa.nc_transpose(nl.load(x))
    wt = nisa.nc_transpose(nl.load(w))
    nl.store(out, nl.copy(nisa.nc_matmul(xt, wt)))
    return out


@nki.jit
def matmul_of_a_bf16_transpose(x, v):
    """``x @ v`` as ``nc_matmul(nc_transpose(x), v)`` on bf16 tiles: the transpose is bf16 ("the
    same as the data type of the input tile", its page), so the matmul is bf16 x bf16 (its staging
    copy out of PSUM was float32, and the matmul refused as float32 x bfloat16: probe_w)."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nisa.nc_transpose(nl.load(x))
    nl.store(out, nl.copy(nisa.nc_matmul(stationary=xt, moving=nl.load(v)), dtype=nl.float32))
    return out
