"""What the NKI 0.7 API pages state of integer arithmetic and of five nki.language names, each
kernel run end to end and its outputs compared exactly (a helper ran the pages' examples:
these were silent rounding or refusals)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kit import kernel_specs

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _in(x, dtype):
    t = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def _wide_moving(a, b):
    p = nl.ndarray((128, b.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=_in(a, nl.float32), moving=_in(b, nl.float32))
    r = nl.ndarray((128, b.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=p)
    return _out(r)


def _partition_reduce(x, op):
    d = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=d, op=op, data=_in(x, x.dtype))
    return _out(d)


@nki.jit
def partition_or(x):
    return _partition_reduce(x, nl.bitwise_or)


@nki.jit
def partition_min(x):
    return _partition_reduce(x, nl.minimum)


@nki.jit(platform_target="trn3")
def wide_moving_v4(a, b):
    return _wide_moving(a, b)


@nki.jit(platform_target="trn2")
def wide_moving_v3(a, b):
    return _wide_moving(a, b)


@nki.jit
def clear_sign(x, m):
    t, mask = _in(x, nl.int32), _in(m, nl.int32)
    imm = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=imm, data=t, op0=nl.bitwise_and, operand0=0x7FFFFFFF)
    tile = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=tile, data=t, op0=nl.bitwise_and, operand0=mask)
    return _out(imm), _out(tile)


@nki.jit
def int_add(a, b):
    ta, tb = _in(a, nl.int32), _in(b, nl.int32)
    native = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=native, data1=ta, data2=tb, op=nl.add)
    on_dve = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=on_dve, data1=ta, data2=tb, op=nl.add, engine=nisa.vector_engine)
    return _out(native), _out(on_dve)


@nki.jit
def remainders(x):
    t = _in(x, nl.float32)
    return _out(nl.mod(t, 0.75)), _out(nl.fmod(t, 0.75)), _out(nl.var(t, axis=1))


@nki.jit(platform_target="trn3")
def magnitudes(x):
    t = _in(x, nl.float32)
    return _out(nl.abs_max(t, 3.0)), _out(nl.abs_min(t, 3.0))


@nki.jit(platform_target="trn3")
def two_stage_activations(x):
    t = _in(x, nl.float32)
    scaled = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.activate2(dst=scaled, op=nl.exp, data=t, imm0=0.5, imm1=1.0, op0=nl.multiply, op1=nl.subtract)
    flipped = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    sums = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activate2(dst=flipped, op=nl.copy, data=t, imm0=2.0, imm1=0.0, op0=nl.subtract, op1=nl.bypass,
                   reverse0=True, reduce_op=nl.add, reduce_res=sums, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    return _out(scaled), _out(flipped), _out(sums)


@nki.jit
def partition_index_shapes(x):
    t = nl.ndarray((128, 64, 32), dtype=nl.float32, buffer=nl.sbuf)
    shapes = (t[0, :, :].shape, t[:, 0, 10].shape, t[0, 0, 10].shape)
    assert shapes == ((1, 64, 32), (128, 1), (1, 1)), shapes  # the NKI 0.7 language guide's
    s = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=x)
    o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=s)
    return o


@nki.jit
def dve_transpose_int(x):
    t = _in(x, nl.int32)
    flipped = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.int32, buffer=nl.sbuf)
    nisa.nc_transpose(dst=flipped, data=t, engine=nisa.vector_engine)
    return _out(flipped)


@nki.jit
def constant_from_file(x, path):
    c = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=c, src=nl.shared_constant(path, dtype=nl.float32))
    return _out(c)


@nki.jit
def zeros_in_hbm(x):
    return nl.zeros((4, 4), dtype=nl.float32, buffer=nl.shared_hbm), nl.full((2, 3), 7.0, dtype=nl.float32,
                                                                              buffer=nl.shared_hbm)


@nki.jit
def negated_and_loaded_sums(x, init):
    t, start = _in(x, nl.float32), _in(init, nl.float32)
    d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    neg = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=d, data=t, op0=nl.add, operand0=1.0, reduce_op=nl.add, reduce_res=neg,
                              reduce_res_negate=True)
    more = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)  # the accumulator kept its sign
    nisa.tensor_scalar_reduce(dst=d, data=t, op0=nl.add, operand0=0.0, reduce_op=nl.add, reduce_res=more,
                              reduce_cmd=nisa.reduce_cmd.reduce)
    loaded = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=d, data=t, op0=nl.multiply, operand0=1.0, reduce_op=nl.add, reduce_res=loaded,
                              reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=start)
    return _out(neg), _out(more), _out(loaded)


@nki.jit
def magnitudes_on_trn1(x):
    t = _in(x, nl.float32)
    return _out(nl.abs_max(t, 3.0))
'''


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    return lambda name: f"{tmp_path / 'k.py'}::{name}"


def _run(spec: str, *arrays):
    outputs, report = run_kernel(spec, *arrays, seeds=(None,))
    assert not report.run.problems(), report.run.problems()
    return outputs


def test_a_bitvec_operand_keeps_its_bits(kernels):
    x = np.array([[5, -2, -2147483648, 2147483647, 0, -1]], np.int32)
    mask = np.full((1, 1), 0x7FFFFFFF, np.int32)
    out = _run(kernels("clear_sign"), x, mask)
    for got in out:  # immediate and per-partition operand alike
        np.testing.assert_array_equal(got, x & 0x7FFFFFFF)


def test_int32_tiles_add_exactly_on_gpsimd_and_through_fp32_on_dve(kernels):
    a = np.array([[16777217, 2147483647, -1073741823, 7]], np.int32)
    b = np.array([[0, 1, -3, 9]], np.int32)
    out = _run(kernels("int_add"), a, b)
    np.testing.assert_array_equal(out[0], (a.astype(np.int64) + b).astype(np.int32))  # wraps at 32 bits
    assert out[1][0, 0] == 16777216  # engine=vector asked for: fp32, as before


def test_mod_fmod_and_var_are_numpy_s(kernels):
    x = np.random.default_rng(0).uniform(-4, 4, (8, 16)).astype(np.float32)
    out = _run(kernels("remainders"), x)
    np.testing.assert_array_equal(out[0], np.mod(x, np.float32(0.75)))
    np.testing.assert_array_equal(out[1], np.fmod(x, np.float32(0.75)))
    np.testing.assert_allclose(out[2], x.var(axis=1, keepdims=True), rtol=1e-5)


def test_abs_max_and_abs_min_on_trn3_and_refused_at_their_line_before(kernels):
    x = np.array([[-5.0, 3.0, -3.0, 1.0, 4.0]], np.float32)
    out = _run(kernels("magnitudes"), x)
    np.testing.assert_array_equal(out[0], [[-5.0, 3.0, 3.0, 3.0, 4.0]])  # a tie gives y
    np.testing.assert_array_equal(out[1], [[3.0, 3.0, 3.0, 1.0, 3.0]])
    with pytest.raises(NkiError) as err:
        trace(load_kernel(kernels("magnitudes_on_trn1")), x)
    line = max(k for k, text in enumerate(KERNELS.splitlines(), 1) if "nl.abs_max(t, 3.0))" in text)
    assert str(err.value).startswith(f"k.py:{line}: nl.abs_max runs on NeuronCore-v4")


def test_activate2_scales_shifts_then_activates_with_the_reductions_of_activation(kernels):
    x = np.random.default_rng(1).uniform(-2, 2, (16, 24)).astype(np.float32)
    scaled, flipped, sums = _run(kernels("two_stage_activations"), x)
    np.testing.assert_allclose(scaled, np.exp(x * 0.5 - 1.0), rtol=1e-6)
    np.testing.assert_allclose(flipped, 2.0 - x, rtol=1e-6)  # reverse0: imm0 - data
    np.testing.assert_allclose(sums, (2.0 - x).sum(axis=1, keepdims=True), rtol=1e-5)


GUIDE_KERNELS = '''
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl
import neuronxcc.nki as legacy_nki
import neuronxcc.nki.language as lnl
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as lisa


@nki.jit
def introspect(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    assert t.strides == (64, 1) and t.offset == 0 and t.is_contiguous() and not t.is_indirect()
    nisa.dma_copy(dst=t, src=x)
    pattern = t.get_pattern()
    pattern[0][1] = 64  # the language guide's example: the first 64 partitions
    half = t.ap(pattern=pattern)
    o = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=half)
    return o


@legacy_nki.jit
def integer_mean(x):
    out = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.mean(lnl.load(x), axis=[1], keepdims=True))
    return out


@legacy_nki.jit
def negated(a):
    t = lnl.load(a)
    o = lnl.ndarray(a.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=lnl.copy(~(t > 0), dtype=lnl.float32))
    return o


@legacy_nki.jit
def row_by_vector(x):
    j = lnl.arange(512)[None, :]
    t = lnl.load(x[0, j])  # an error page's fixed kernel: a (1, 512) tile
    o = lnl.ndarray((1, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o[0, j], value=t)
    return o


@legacy_nki.jit
def broadcast_assign(v):
    x = lnl.zeros((128, 512), dtype=lnl.float32, buffer=lnl.sbuf)
    x[...] = lnl.load(v)  # (128, 1) loaded, broadcast: the error page's "ok"
    o = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=x)
    return o


@legacy_nki.jit
def scatter_add(base, rows, values):
    out = lnl.ndarray(base.shape, dtype=base.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.load(base))
    lnl.atomic_rmw(out[lnl.load(rows), lnl.arange(base.shape[1])[None, :]], value=lnl.load(values), op=np.add)
    return out


@legacy_nki.jit
def reductions(x, bits):
    a = lnl.ndarray((x.shape[0], 1), dtype=lnl.uint8, buffer=lnl.shared_hbm)
    lnl.store(a, lnl.all(lnl.load(x), axis=[1], dtype=lnl.uint8))
    b = lnl.ndarray((bits.shape[0], 1), dtype=lnl.int32, buffer=lnl.shared_hbm)
    lnl.store(b, lisa.tensor_reduce(np.bitwise_or, lnl.load(bits), axis=[1], keepdims=True))
    return a, b


@legacy_nki.jit(platform_target="trn2")
def row_max_on_trn2(x):
    red = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    rr = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.sbuf)
    lisa.activation_reduce(op=lnl.copy, data=lnl.load(x), reduce_op=np.max, reduce_res=rr)
    lnl.store(red, rr)
    return red


@legacy_nki.jit
def row_max_on_trn1(x):
    red = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    rr = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.sbuf)
    lisa.activation_reduce(op=lnl.copy, data=lnl.load(x), reduce_op=np.max, reduce_res=rr)
    lnl.store(red, rr)
    return red


@legacy_nki.jit
def partitions_mismatch(x):
    xs = lnl.load(x)
    row = lnl.full((1, x.shape[1]), 2.0, dtype=np.float32, buffer=lnl.sbuf)
    z = lisa.tensor_tensor(xs, row, op=lnl.add)  # the error page's err_num_partition_mismatch
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=z)
    return o


@legacy_nki.jit
def column_not_broadcast(x):
    xs = lnl.load(x)
    col = lnl.full((x.shape[0], 1), 2.0, dtype=np.float32, buffer=lnl.sbuf)
    z = lisa.tensor_tensor(xs, col, op=lnl.subtract)  # the page: as many elements per partition
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=z)
    return o


@nki.jit
def column_not_broadcast_current(x):
    xs = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    col = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=col, value=2.0)
    z = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=z, data1=xs, data2=col, op=nl.subtract)  # NKI 0.7: refused
    o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=z)
    return o


@nki.jit
def reduce_by_subtract(x):
    s = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=x)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(r, nl.subtract, s, axis=[1], negate=True)
    o = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=r)
    return o


@legacy_nki.jit
def scalar_reduce_by(x, op):
    red = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.sbuf)
    lisa.tensor_scalar_reduce(data=lnl.load(x), op0=np.multiply, operand0=1.0, reduce_op=op, reduce_res=red)
    o = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, red)
    return o


@legacy_nki.jit
def column_as_scalar(x):
    xs = lnl.load(x)
    col = lnl.full((x.shape[0], 1), 2.0, dtype=np.float32, buffer=lnl.sbuf)
    z = lisa.tensor_scalar(xs, lnl.subtract, col)  # what the refusal points at
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=z)
    return o


@legacy_nki.jit
def operator_first(x):
    y = lisa.tensor_scalar(lnl.add, lnl.load(x), 1.0)  # the operator where the data goes
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=y)
    return o


@legacy_nki.jit
def result_into_a_smaller_tile(x):
    e = lnl.exp(lnl.load(x))
    y = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.sbuf)
    y[...] = e  # the errors page's err_store_dst_shape_smaller_than_other_shape
    o = lnl.ndarray((x.shape[0], 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=y)
    return o


@legacy_nki.jit
def psum_result_too_wide_last(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=t)
    p = lisa.nc_matmul(t[:, 0:128], lnl.ones((128, 1024), dtype=lnl.float32, buffer=lnl.sbuf))  # 4 KiB of PSUM
    return o


@legacy_nki.jit
def tensor_copy_of_hbm(x):
    t = lisa.tensor_copy(x)  # its page: src a tile in SBUF or PSUM
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=t)
    return o


@legacy_nki.jit
def store_into_sbuf(x):
    y = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.sbuf)
    lnl.store(y, value=lnl.load(x))  # its page: dst an HBM tensor (the errors page's err_unsupported_memory)
    return y


@legacy_nki.jit
def store_from_hbm(x):
    y = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
    lnl.store(y, value=x)  # its page: value an SBUF tile (it ran as an HBM-to-HBM copy)
    return y


@legacy_nki.jit
def moving_too_wide(x):
    p = lnl.ndarray((128, 1024), dtype=lnl.bfloat16, buffer=lnl.psum)  # 2 KiB: one bank holds it
    p[...] = lisa.nc_matmul(lnl.ones((128, 128), dtype=lnl.bfloat16, buffer=lnl.sbuf),
                            lnl.ones((128, 1024), dtype=lnl.bfloat16, buffer=lnl.sbuf))
    return p


@legacy_nki.jit
def wide_transpose_on_the_vector_engine(x):
    t = lisa.nc_transpose(lnl.zeros((64, 64), dtype=lnl.float32, buffer=lnl.sbuf), engine=lisa.vector_engine)
    o = lnl.ndarray((64, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=t)  # its page: the Vector Engine transposes (32, 32) or smaller
    return o


@legacy_nki.jit
def integer_matmul(x):
    a = lnl.zeros((128, 128), dtype=lnl.int32, buffer=lnl.sbuf)
    p = lisa.nc_matmul(a, a)  # its page: float8 .. float32 operands
    return p


@legacy_nki.jit
def load_from_sbuf(x):
    tmp = lnl.ndarray((4, 4), dtype=lnl.float32, buffer=lnl.sbuf)
    y = lnl.load(tmp)  # the error page's err_unsupported_memory
    o = lnl.ndarray((4, 4), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=y)
    return o


@legacy_nki.jit
def flat_arange(x):
    tmp = lnl.load(x)
    c = lnl.exp(tmp[lnl.arange(64), 0])  # the error page's err_1d_arange_not_supported
    o = lnl.ndarray((64, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=c)
    return o


@legacy_nki.jit
def mixed_indexing(x):
    tmp = lnl.load(x)
    c = lnl.exp(tmp[lnl.arange(64)[:, None], :])  # the error page: mixing basic and advanced indexing
    o = lnl.ndarray((64, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=c)
    return o


def my_alloc(idx, p, f):  # the guide names them pdim_size, fdim_size; Python does not mind
    return (0, idx[0] * f * 4)


@legacy_nki.jit
def callback_alloc(x):
    t = lnl.ndarray((2, lnl.par_dim(128), 64), dtype=lnl.float32, buffer=ncc.sbuf.alloc(my_alloc))
    o = lnl.ndarray((2, 128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
    for i in lnl.affine_range(2):
        t[i] = lnl.load(x[i])
        lnl.store(o[i], value=t[i])
    return o
'''


@pytest.fixture
def guide(tmp_path):
    return kernel_specs(tmp_path, GUIDE_KERNELS, "g.py")


def test_views_report_their_strides_offset_and_pattern(guide):
    x = np.random.default_rng(2).uniform(-1, 1, (128, 64)).astype(np.float32)
    np.testing.assert_array_equal(_run(guide("introspect"), x), x[:64])


def test_a_mean_of_integers_is_float32(guide):
    x = np.random.default_rng(3).integers(-50, 50, (8, 16)).astype(np.int32)
    np.testing.assert_allclose(_run(guide("integer_mean"), x), x.mean(axis=1, keepdims=True), rtol=1e-6)


def test_tilde_of_a_comparison_negates_it(guide):
    a = np.random.default_rng(4).uniform(-1, 1, (16, 8)).astype(np.float32)
    np.testing.assert_array_equal(_run(guide("negated"), a), (~(a > 0)).astype(np.float32))


def test_an_allocator_callback_with_its_own_parameter_names_is_called_in_order(guide):
    x = np.random.default_rng(5).uniform(-1, 1, (2, 128, 64)).astype(np.float32)
    np.testing.assert_array_equal(_run(guide("callback_alloc"), x), x)


def test_nki_07_keeps_an_integer_indexed_partition_axis(kernels):
    x = np.ones((128, 64), np.float32)
    np.testing.assert_array_equal(_run(kernels("partition_index_shapes"), x), x)


def test_an_integer_beside_an_index_vector_keeps_the_grid_shape(guide):
    x = np.random.default_rng(6).uniform(-1, 1, (1, 512)).astype(np.float32)
    np.testing.assert_array_equal(_run(guide("row_by_vector"), x), x)


def test_a_loaded_column_assigned_into_a_wider_tile_broadcasts(guide):
    v = np.random.default_rng(7).uniform(-1, 1, (128, 1)).astype(np.float32)
    np.testing.assert_array_equal(_run(guide("broadcast_assign"), v), np.broadcast_to(v, (128, 512)))


def test_atomic_rmw_adds_every_row_even_repeated_ones(guide):
    rng = np.random.default_rng(8)
    base, values = rng.uniform(-1, 1, (16, 8)).astype(np.float32), rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    rows = np.array([[3], [7], [3], [0]], np.int32)
    expected = base.copy()
    np.add.at(expected, rows[:, 0], values)
    np.testing.assert_allclose(_run(guide("scatter_add"), base, rows, values), expected, rtol=1e-6)


def test_nl_all_and_a_bitvec_tensor_reduce(guide):
    x = np.array([[1, 2, 0, 4], [1, 1, 1, 1]], np.float32)
    bits = np.array([[1, 2, 4, 8], [0x7FFFFFFF, 1, 0, 0]], np.int32)
    every, ored = _run(guide("reductions"), x, bits)
    np.testing.assert_array_equal(every, [[0], [1]])
    np.testing.assert_array_equal(ored, np.bitwise_or.reduce(bits, axis=1, keepdims=True))


def test_activation_reduce_takes_the_max_from_neuroncore_v3_only(guide):
    x = np.random.default_rng(9).uniform(-1, 1, (16, 32)).astype(np.float32)
    np.testing.assert_array_equal(_run(guide("row_max_on_trn2"), x), x.max(axis=1, keepdims=True))
    with pytest.raises(NkiError, match=r"g\.py:\d+: activation reduce_op=max on NeuronCore-v2"):
        trace(load_kernel(guide("row_max_on_trn1")), x)


def test_nisa_tensor_tensor_refuses_operands_on_different_partitions(guide):
    x = np.ones((128, 16), np.float32)
    with pytest.raises(NkiError, match=r"g\.py:\d+: nisa\.tensor_tensor: data1 has 128 partitions and data2 1"):
        trace(load_kernel(guide("partitions_mismatch")), x)


def test_nisa_tensor_tensor_of_a_column_warns_on_the_legacy_api_and_is_refused_on_nki_07(guide):
    """A user's kernel subtracted a (128, 1) tile from a (128, 64) one with tensor_tensor; its
    page asks for as many elements per partition, and the user's trn2 build failed.  Stanford
    CS149's asst4-trainium2 (legacy API) adds its bias so, and public submissions do: on the
    legacy API a warning at the call, both sides named, and the column's broadcast; NKI 0.7's
    tensor_tensor refuses it at the line, pointing at tensor_scalar."""
    x = np.random.default_rng(4).uniform(-1, 1, (128, 16)).astype(np.float32)
    traced = trace(load_kernel(guide("column_not_broadcast")), x)
    ((where, kind, message),) = traced.call_warnings
    line = [n for n, text in enumerate(GUIDE_KERNELS.splitlines(), 1) if "lisa.tensor_tensor(xs, col" in text][0]
    assert (where.endswith(f"g.py:{line}"), kind) == (True, "broadcast")
    assert "as many elements per partition" in message and "asst4-trainium2" in message
    np.testing.assert_array_equal(_run(guide("column_not_broadcast"), x), x - np.float32(2.0))
    with pytest.raises(NkiError, match=r"g\.py:\d+: nisa\.tensor_tensor: data1 has 16 elements per partition "
                                       r"and data2 1 .*nisa\.tensor_scalar"):
        trace(load_kernel(guide("column_not_broadcast_current")), x)
    np.testing.assert_array_equal(_run(guide("column_as_scalar"), x), x - np.float32(2.0))


def test_subtract_reduces_as_its_pages_list_it_and_a_bitvec_reduce_op_of_tensor_scalar_reduce_is_refused(guide):
    """tensor_reduce's page names subtract among its arithmetic reduction operators and
    tensor_scalar_reduce's lists "nl.add, nl.subtract, nl.multiply, nl.max or nl.min" (both were
    refused: a sweep of public kernels); subtract folds from the left, x0 - x1 - ... .  A
    bitwise reduce_op, which tensor_scalar_reduce's list leaves out, ran."""
    x = np.random.default_rng(5).uniform(-1, 1, (8, 4)).astype(np.float32)
    folded = x[:, 0] - x[:, 1] - x[:, 2] - x[:, 3]
    np.testing.assert_allclose(_run(guide("reduce_by_subtract"), x)[:, 0], -folded, rtol=1e-6)
    np.testing.assert_allclose(run_kernel(guide("scalar_reduce_by"), x, op=np.subtract, seeds=(None,))[0][:, 0],
                               folded, rtol=1e-6)
    with pytest.raises(NkiError, match=r"g\.py:\d+: nisa\.tensor_scalar_reduce: reduce_op bitwise_or is none of "
                                       r"its page's nl\.add, nl\.subtract"):
        trace(load_kernel(guide("scalar_reduce_by")), x, op=np.bitwise_or)


@pytest.mark.parametrize("name, words", [("load_from_sbuf", "nl.load expects its source in HBM"),
                                         ("flat_arange", "with a 1-D nl.arange is not supported"),
                                         ("mixed_indexing", "mixes slices with nl.arange index vectors, which NKI"),
                                         # (an internal error: 'function' object has no attribute 'shape')
                                         ("operator_first", "nisa.tensor_scalar: data is the operator nl.add, "
                                                            "where the call takes a tile"),
                                         ("tensor_copy_of_hbm", "nisa.tensor_copy copies between tiles in SBUF or "
                                                                "PSUM"),
                                         ("store_into_sbuf", "nl.store stores into HBM"),
                                         ("store_from_hbm", "nl.store stores from SBUF .*not from x"),
                                         ("moving_too_wide", "nc_matmul: a moving tile of 1024 elements a partition; "
                                                             "its page allows at most 512"),
                                         ("wide_transpose_on_the_vector_engine", "on the Vector Engine: its page "
                                                                                 "says the Vector Engine transposes "
                                                                                 r"\(32, 32\) or smaller"),
                                         ("integer_matmul", "nc_matmul of int32 x int32 tiles: nc_matmul's page "
                                                            "takes float8")])
def test_the_error_pages_wrong_kernels_are_refused_at_their_line(guide, name, words):
    with pytest.raises(NkiError, match=rf"g\.py:\d+: .*{words}"):
        trace(load_kernel(guide(name)), np.ones((128, 1), np.float32))


def test_a_moving_tile_may_span_the_whole_psum_from_neuroncore_v4(kernels):
    """The nc_matmul page: at most 512 columns on v2 and v3, from v4 up to 4096 for a float32
    dst ("matching the size of 8x PSUM banks"); trn3's 1024 and 4096 were refused (a probe)."""
    rng = np.random.default_rng(12)
    a = rng.uniform(-1, 1, (128, 128)).astype(np.float32)
    for columns in (1024, 4096):
        b = rng.uniform(-1, 1, (128, columns)).astype(np.float32)
        np.testing.assert_allclose(_run(kernels("wide_moving_v4"), a, b), a.T @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(NkiError, match=r"its page allows at most 512 on NeuronCore-v3"):
        trace(load_kernel(kernels("wide_moving_v3")), a, rng.uniform(-1, 1, (128, 1024)).astype(np.float32))


def test_partition_reduce_takes_its_pages_operators(kernels):
    """tensor_partition_reduce's page lists add, max, bitwise_or, bitwise_and (bitwise_xor from
    2.33): bitwise_or was refused as unsupported and nl.minimum, which it does not list, ran."""
    x = np.random.default_rng(13).integers(0, 1 << 20, (128, 16)).astype(np.int32)
    np.testing.assert_array_equal(_run(kernels("partition_or"), x), np.bitwise_or.reduce(x, axis=0)[None, :])
    with pytest.raises(NkiError, match=r"k\.py:\d+: nisa\.tensor_partition_reduce\(op=min\): its page's operators "
                                       r"are add, max, bitwise_or, bitwise_and"):
        trace(load_kernel(kernels("partition_min")), x.astype(np.float32))


def test_a_vector_engine_transpose_moves_integers_bit_exactly(kernels):
    x = np.random.default_rng(10).integers(-2**31, 2**31 - 1, (16, 32)).astype(np.int32)
    np.testing.assert_array_equal(_run(kernels("dve_transpose_int"), x), x.T)  # not through fp32


def test_a_shared_constant_reads_a_npy_file(kernels, tmp_path):
    values = np.random.default_rng(11).uniform(-1, 1, (8, 16)).astype(np.float32)
    np.save(tmp_path / "c.npy", values)
    outputs, report = run_kernel(kernels("constant_from_file"), np.zeros((8, 16), np.float32),
                                 path=str(tmp_path / "c.npy"), seeds=(None,))
    np.testing.assert_array_equal(outputs, values)


def test_nki_07_fills_an_hbm_tensor_from_a_constant(kernels):
    zeros, sevens = _run(kernels("zeros_in_hbm"), np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(zeros, np.zeros((4, 4)))
    np.testing.assert_array_equal(sevens, np.full((2, 3), 7.0))


def test_tensor_scalar_reduce_negates_its_result_only_and_loads_an_initial_value(kernels):
    rng = np.random.default_rng(12)
    x, init = rng.uniform(-1, 1, (16, 8)).astype(np.float32), rng.uniform(-1, 1, (16, 1)).astype(np.float32)
    neg, more, loaded = _run(kernels("negated_and_loaded_sums"), x, init)
    first = (x + 1.0).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(neg, -first, rtol=1e-5)
    np.testing.assert_allclose(more, first + x.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(loaded, init + x.sum(axis=1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("name, needle, words", [
    # blamed on the line that made the result (the exp)
    ("result_into_a_smaller_tile", "y[...] = e", "assigning a (128, 64) result to a (128, 1) tile"),
    # blamed on a line of neuronsim's own command: the kernel's last call, whose result is never used
    ("psum_result_too_wide_last", "p = lisa.nc_matmul", "p: a tile of (128, 1024) float32 holds 4096 bytes"),
])
def test_a_held_back_results_refusal_is_at_the_line_it_belongs_to(guide, name, needle, words):
    with pytest.raises(NkiError) as info:
        trace(load_kernel(guide(name)), np.ones((128, 64), np.float32))
    line = next(n for n, text in enumerate(GUIDE_KERNELS.splitlines(), 1) if needle in text)
    assert info.value.path.endswith(f"g.py:{line}") and words in info.value.message, str(info.value)
