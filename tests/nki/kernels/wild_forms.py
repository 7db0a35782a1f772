"""Constructs found in public kernels nobody here wrote (students' course kernels, LLM-written
kernels, NKI 0.6 / 0.7 users' kernels), each in the smallest kernel that shows it
(tests/nki/test_wild_forms.py)."""

import logging

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import neuronxcc.nki.isa as nisa

# CS149's NKI assignment does this after importing neuronxcc (a level the Neuron packages add)
logging.disable(logging.OFF)


@nki.jit
def where_number(c, x):
    """nl.where with a number on either side and a 0 / 1 uint8 condition."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ct = nl.load(c)
    xt = nl.load(x)
    low = nl.where(ct, xt, -5.0)
    nl.store(out, value=nl.add(low, nl.where(ct, 2.0, xt)))
    return out


@nki.jit
def sbuf_plus_matmul(a, b, c):
    """A matmul added into an SBUF tile (PE writes PSUM: DVE adds its result)."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.load(c)
    acc += nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
    nl.store(out, value=acc)
    return out


@nki.jit
def loop_reduce_in_affine(a):
    """nl.loop_reduce inside affine_range, as its API page writes it."""
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        t = nl.load(a[i])
        acc = nl.loop_reduce(t, op=np.add, loop_indices=[i], dtype=nl.float32)
    nl.store(out, value=acc)
    return out


@nki.jit
def loop_reduce_uninitialised(a):
    """nl.loop_reduce into nl.ndarray accumulators nothing wrote, as neuronx-cc prints it: a sum
    (the assigned-view form) and a max (the rebinding form), each over the loop's iterations."""
    out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    total = nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    top = nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        t = nl.load(a[i])
        total[...] = nl.loop_reduce(t, op=np.add, loop_indices=[i], dtype=nl.float32)
        top = nl.loop_reduce(t, op=np.maximum, loop_indices=[i], dtype=nl.float32)
    nl.store(out[0], value=total)
    nl.store(out[1], value=top)
    return out


@nki.jit
def returns_inside_loop(a):
    """A kept loop the kernel returns from inside: its body, traced once, is every iteration's."""
    out = nl.ndarray((3, 128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(3):
        t = nl.load(a[i])
        nl.store(out[i], value=nl.multiply(t, 2.0))
        return out


@nki.jit
def where_index_mask(x):
    """nl.where of comparisons of indices (rows past a bound, the first columns), a benchmark
    suite's cross-entropy and flash-decode kernels write it so."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    t = nl.load(x[ip, jf])
    kept = nl.where((ip < 100) & (jf >= 8), t, -1.0)
    nl.store(out[ip, jf], value=nl.add(kept, nl.where(ip >= 120, 5.0, t)))
    return out


@nki.jit
def tile_equality(a, b):
    """``a == b`` / ``a != b`` of tiles are nl.equal / nl.not_equal (a benchmark's target mask)."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ta, tb = nl.load(a), nl.load(b)
    nl.store(out, value=nl.add(nl.multiply(ta, ta == tb), nl.multiply(tb, ta != 2.0)))
    return out


@nki.jit
def legacy_tensor_methods(x):
    """The legacy nki.tensor page's astype, assert_shape, itemsize and expand_dims."""
    out = nl.ndarray((128, 1, 64), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.load(x).assert_shape((128, 64))
    scaled = nl.multiply(t, float(t.itemsize))
    nl.store(out, value=scaled.astype(nl.bfloat16).expand_dims(1))
    return out


@nki.jit
def rms_norm(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.rms_norm(nl.load(x), nl.load(w), axis=1, n=x.shape[1], epsilon=1e-6))
    return out


@nki.jit
def bits(x):
    """x: uint32.  The bitvec operators, by nl.* and in an nki.isa op slot (np.bitwise_and)."""
    out = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.shared_hbm)
    low = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    mixed = nl.bitwise_or(nl.left_shift(nl.bitwise_and(t, 0xFF), 8), nl.right_shift(t, 24))
    nl.store(out, value=nl.bitwise_xor(mixed, nl.invert(t)))
    nl.store(low, value=nisa.tensor_scalar(t, np.bitwise_and, 0xFFFF, op1=np.right_shift, operand1=4))
    return out, low


@nki.jit
def erf_family(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.add(nl.erf(t), nisa.activation(op=nl.gelu_dx, data=t)))
    return out


@nki.jit
def checks_its_argument_type(x: nt.tensor[[128, 64], nl.float32]):
    """``isinstance(x, nt.tensor)``: a kernel that type-checks its argument (neuronx-distributed's topk)."""
    if not isinstance(x, nt.tensor) or isinstance(x, nt.scalar):
        raise TypeError(f"expected a tensor, got {type(x)}")
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


@nki.jit
def matmul_of_a_psum_result(b, c):
    """``nl.matmul`` of a transpose left in PSUM (AWS's Mamba2 example): the operand is staged to SBUF."""
    c_t = nisa.nc_transpose(nl.load(c))  # PE transpose: the result is in PSUM
    product = nl.copy(nl.matmul(nl.load(b), c_t), dtype=nl.float32)
    twice = nl.copy(nl.transpose(nl.matmul(nl.load(b), c_t)), dtype=nl.float32)  # transpose of PSUM too
    out = nl.ndarray((2, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out[0], product)
    nl.store(out[1], twice)
    return out


@nki.jit
def chained_block_index(x):
    """``t[0][j][:, :]``: the blocks of a two-block-dimension tensor picked one index at a time."""
    t = nl.ndarray((1, 2, nl.par_dim(128), 64), dtype=x.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(2):
        t[0][j][:, :] = nl.load(x[j])
    out = nl.ndarray((2, 128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(2):
        nl.store(out[j], nl.multiply(t[0][j][:, :], 2.0))
    return out


@nki.jit
def returns_inside_masked_loop(x):
    """A workshop kernel's ``return`` indented into its loop, whose masked tail makes neuronsim
    unroll the loop: NKI traces the body once and runs it for every tile, then returns."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(x.shape[1])[None, :]
    for p in nl.affine_range((x.shape[0] + 127) // 128):
        i_p = p * 128 + nl.arange(128)[:, None]
        t = nl.load(x[i_p, i_f], mask=(i_p < x.shape[0]))
        nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < x.shape[0]))
        return out


@nki.jit
def breaks_at_the_end_of_a_masked_loop(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(x.shape[1])[None, :]
    for p in nl.affine_range((x.shape[0] + 127) // 128):
        i_p = p * 128 + nl.arange(128)[:, None]
        t = nl.load(x[i_p, i_f], mask=(i_p < x.shape[0]))
        nl.store(out[i_p, i_f], value=nl.multiply(t, 2.0), mask=(i_p < x.shape[0]))
        break
    t = nl.load(x[0:128, :])
    nl.store(out[0:128, :], value=t)
    return out


@nki.jit
def returns_early_inside_a_masked_loop(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(x.shape[1])[None, :]
    for p in nl.affine_range((x.shape[0] + 127) // 128):
        i_p = p * 128 + nl.arange(128)[:, None]
        nl.store(out[i_p, i_f], value=nl.load(x[i_p, i_f], mask=(i_p < x.shape[0])), mask=(i_p < x.shape[0]))
        if x.shape[0] > 0:
            return out
        nl.store(out[0:1, i_f], value=nl.load(x[0:1, i_f]))
    return out
