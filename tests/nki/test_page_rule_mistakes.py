"""Kernel mistakes a probe of generated kernels found running without a word, each refused by
its page at the line marked ``# mistake``: one line, the call's ``file:line`` first."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
from neuronsim.machine.nki import NkiError, load_kernel, trace

KERNELS = '''
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl
from neuronxcc import nki as legacy_nki
import neuronxcc.nki.isa as lisa
import neuronxcc.nki.language as lnl


def _out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


@legacy_nki.jit
def bitwise_and_of_floats(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lnl.bitwise_and(t, t))  # mistake
    return o


@legacy_nki.jit
def invert_of_floats(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lnl.invert(t))  # mistake
    return o


@legacy_nki.jit
def shift_of_floats(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lnl.left_shift(t, 2))  # mistake
    return o


@legacy_nki.jit
def legacy_tensor_scalar_and_of_floats(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lisa.tensor_scalar(t, lnl.bitwise_and, 3))  # mistake
    return o


@nki.jit
def tensor_tensor_xor_of_floats(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=r, data1=t, data2=t, op=nl.bitwise_xor)  # mistake
    return _out(r)


@nki.jit
def tensor_reduce_or_of_floats(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.bitwise_or, data=t, axis=1)  # mistake
    return _out(r)


@nki.jit
def bitwise_or_of_floats(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return _out(nl.bitwise_or(t, t))  # mistake


@nki.jit
def bits_of_a_float_viewed_as_integers(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    o = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.tensor_scalar(dst=r, data=t.view(nl.int32), op0=nl.bitwise_and, operand0=0x7FFFFFFF)
    nisa.dma_copy(dst=o, src=r)
    return o

@legacy_nki.jit
def legacy_sum_over_partitions(x):
    o = lnl.ndarray((1, x.shape[1]), dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lnl.sum(t, axis=0))  # mistake
    return o


@legacy_nki.jit
def legacy_max_over_partitions_kept(x):
    o = lnl.ndarray((1, x.shape[1]), dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lnl.max(t, axis=[0], keepdims=True))  # mistake
    return o


@nki.jit
def while_loop_on_a_number(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)

    def body(r):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        return r

    nl.while_loop(1, body)  # mistake
    return _out(t)


@nki.jit
def while_loop_body_returns_a_number(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    flag = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=flag, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, flag)

    def body(r):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        return 0

    nl.while_loop(reg, body)  # mistake
    return _out(t)


@legacy_nki.jit
def legacy_flat_sbuf_tile(x):
    o = lnl.ndarray((128,), dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.zeros((128,), dtype=lnl.float32, buffer=lnl.sbuf)  # mistake
    lnl.store(o, value=t)
    return o


@legacy_nki.jit
def tensor_tensor_on_the_scalar_engine(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    lnl.store(o, value=lisa.tensor_tensor(t, t, op=lnl.add, engine=lisa.scalar_engine))  # mistake
    return o


@nki.jit
def tensor_copy_on_the_tensor_engine(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=t, engine=nisa.tensor_engine)  # mistake
    return _out(r)


@nki.jit
def memset_on_the_scalar_engine(x):
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=r, value=0.0, engine=nisa.scalar_engine)  # mistake
    return _out(r)


@nki.jit
def transpose_on_gpsimd(x):
    t = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:32, 0:32])
    r = nl.ndarray((32, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_transpose(dst=r, data=t, engine=nisa.gpsimd_engine)  # mistake
    return _out(r)


def _helper_without_end(t, n):
    t = nl.add(t, 1.0)
    return _helper_without_end(t, n + 1)  # mistake


@legacy_nki.jit
def recursion_without_end(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=_helper_without_end(lnl.load(x), 0))
    return o

@legacy_nki.jit
def legacy_float64_zeros(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.add(lnl.load(x), lnl.zeros(x.shape, dtype=np.float64, buffer=lnl.sbuf))  # mistake
    lnl.store(o, value=t)
    return o


@nki.jit
def float64_tile(x):
    t = nl.ndarray(x.shape, dtype=np.float64, buffer=nl.sbuf)  # mistake
    nisa.dma_copy(dst=t, src=x)
    return _out(t)


def _tile(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


@nki.jit
def iota_flat_pattern(x):
    i = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=i, pattern=[1, 64], offset=0, channel_multiplier=0)  # mistake
    return _out(i)


@nki.jit
def iota_short_pattern(x):
    i = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=i, pattern=[[1, 32]], offset=0, channel_multiplier=0)  # mistake
    return _out(i)


@nki.jit
def affine_select_short_pattern(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.affine_select(dst=b, pattern=[[-1, 32]], offset=0, channel_multiplier=1, on_true_tile=t,  # mistake
                       on_false_value=0.0)
    return _out(b)


@nki.jit
def affine_select_narrow_operand(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.affine_select(dst=b, pattern=[[-1, 64]], offset=0, channel_multiplier=1, on_true_tile=t[:, 0:32],  # mistake
                       on_false_value=0.0)
    return _out(b)


@nki.jit
def identity_of_a_float_size(x):
    eye = nl.shared_identity_matrix(n=64.0)  # mistake
    return _out(eye)


@nki.jit
def max8_of_too_many_elements(x):
    t = nl.ndarray((128, 16392), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    r = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.max8(dst=r, src=t)  # mistake
    return _out(r)


@nki.jit
def gpsimd_copy_from_psum(x):
    p = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.psum)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=p, value=1.0)
    nisa.tensor_copy(dst=b, src=p, engine=nisa.gpsimd_engine)  # mistake
    return _out(b)


@nki.jit
def gpsimd_memset_of_psum(x):
    p = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.psum)
    nisa.memset(dst=p, value=1.0, engine=nisa.gpsimd_engine)  # mistake
    return _out(_tile(x))


@nki.jit
def transpose_of_64_into_sbuf(x):
    t = _tile(x)
    r = nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_transpose(dst=r, data=t[0:64, 0:64])  # mistake
    return _out(r)


@nki.jit
def tensor_scalar_op1_alone(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=b, data=t, op0=nl.multiply, operand0=2.0, op1=nl.add)  # mistake
    return _out(b)


@nki.jit
def register_move_into_a_tile(x):
    r = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.register_move(dst=r, imm=3)  # mistake
    return _out(_tile(x))


@nki.jit(platform_target="trn2")
def select_reduce_narrow_on_true(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    pr = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.sbuf)
    nisa.memset(dst=pr, value=1)
    nisa.select_reduce(dst=b, predicate=pr, on_true=t[:, 0:32], on_false=0.0)  # mistake
    return _out(b)


@nki.jit
def copy_predicated_narrow_src(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    pr = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.sbuf)
    nisa.memset(dst=pr, value=1)
    nisa.memset(dst=b, value=0.0)
    nisa.tensor_copy_predicated(dst=b, src=t[:, 0:32], predicate=pr)  # mistake
    return _out(b)


@nki.jit
def scalar_reduce_into_three_columns(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    r = nl.ndarray((128, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=b, data=t, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=r)  # mistake
    return _out(b)


@nki.jit
def find_index8_of_four_values(x):
    t = _tile(x)
    v = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=v, value=0.5)
    ix = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=ix, data=t, vals=v)  # mistake
    return _out(ix)


@nki.jit
def scalar_tensor_tensor_of_a_number(x):
    t, b = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.scalar_tensor_tensor(dst=b, data=t, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=3.0)  # mistake
    return _out(b)


@nki.jit
def ds_of_a_negative_size(x):
    t = nl.ndarray((128, 60), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, nl.ds(0, -4)])  # mistake
    return _out(t)


@nki.jit
def dma_copy_of_an_unlisted_dge_mode(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, dge_mode=7)  # mistake
    return _out(t)


@nki.jit
def shuffle_into_a_narrower_dst(x):
    t = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:32, :])
    r = nl.ndarray((32, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=list(range(32)))  # mistake
    return _out(r)


@nki.jit
def shuffle_of_a_float_mask(x):
    t = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:32, :])
    r = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=[float(k) for k in range(32)])  # mistake
    return _out(r)


@nki.jit
def gather_by_float_indices(x):
    t = _tile(x)
    d = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=d, data=t, indices=t[:, 0:8])  # mistake
    return _out(d)


# the fourth probe (twenty-seventh session): a compute call given an HBM tensor was refused with a
# shape message that contradicted itself ("destination (64, 128) is not the transpose of (128, 64)")
@nki.jit
def transpose_of_hbm(x):
    return _out(nl.transpose(x))  # mistake


@nki.jit
def sum_of_hbm(x):
    return _out(nl.sum(x, axis=1, keepdims=True))  # mistake


@nki.jit
def sum_without_axis(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return _out(nl.sum(t, keepdims=True))  # mistake


@legacy_nki.jit
def legacy_sum_of_a_row_without_axis(x):
    o = lnl.ndarray((128, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x[:, 0])
    lnl.store(o, value=lnl.sum(t * t))  # mistake
    return o


@nki.jit
def var_without_axis(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return _out(nl.var(t))  # mistake


@legacy_nki.jit
def legacy_nc_transpose_of_hbm(x):
    o = lnl.ndarray((64, 128), dtype=lnl.float32, buffer=lnl.shared_hbm)
    lnl.store(o, value=lisa.nc_transpose(x))  # mistake
    return o


@nki.jit
def tensor_tensor_with_hbm(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=r, data1=t, data2=x, op=nl.add)  # mistake
    return _out(r)


@nki.jit
def max8_of_hbm(x):
    r = nl.ndarray((x.shape[0], 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.max8(dst=r, src=x)  # mistake
    return _out(r)


@nki.jit
def iota_into_hbm(x):
    o = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.iota(dst=o, pattern=[[1, 64]], offset=0)  # mistake
    return o


@nki.jit
def stt_with_a_bitvec_operator(x):
    t = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=t, pattern=[[1, 64]], offset=0)
    r = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.scalar_tensor_tensor(dst=r, data=t, op0=nl.bitwise_and, operand0=3, op1=nl.add, operand1=t)  # mistake
    return _out(r)


@nki.jit
def matmul_of_float32_by_bfloat16(x):
    a = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a, value=1.0)
    b = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=b, value=1.0)
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=a, moving=b)  # mistake
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=p)
    return _out(r)


@nki.jit
def matmul_into_bfloat16_on_v2(x):
    a = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=a, value=1.0)
    p = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=a, moving=a)  # mistake
    r = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=p)
    return _out(r)


@nki.jit
def rand2_on_v2(x):
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.rand2(dst=r, min=0.0, max=1.0)
    o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=r)
    return o
'''

MISTAKES = {
    "bitwise_and_of_floats": "nl.bitwise_and: x is a float32 tile, and the bitvec operator bitwise_and takes "
                             "integer tiles only",
    "invert_of_floats": "nl.invert: x is a float32 tile, and the bitvec operator invert",
    "shift_of_floats": "nl.left_shift: x is a float32 tile",
    "legacy_tensor_scalar_and_of_floats": "nisa.tensor_scalar: data is a float32 tile",
    "tensor_tensor_xor_of_floats": "nisa.tensor_tensor: data1 is a float32 tile, and the bitvec operator bitwise_xor",
    "tensor_reduce_or_of_floats": "nisa.tensor_reduce: data is a float32 tile",
    "bitwise_or_of_floats": "nl.bitwise_or: x is a float32 tile",
    "legacy_sum_over_partitions": 'nl.sum(axis=0): the legacy nl.sum page\'s axis "must be free dimensions, not '
                                  'partition dimension (0)"; reduce across partitions with nisa.tensor_partition',
    "legacy_max_over_partitions_kept": "nl.max(axis=0): the legacy nl.max page",
    "while_loop_on_a_number": "nl.while_loop: init is 1, and its page takes a condition register",
    "while_loop_body_returns_a_number": "nl.while_loop: the value its body returns is 0, and its page takes a "
                                        "condition register",
    "legacy_flat_sbuf_tile": "an nl.sbuf tile of shape (128,): NKI's known-issues page says a tile on SBUF/PSUM must "
                             "have at least 2 dimensions",
    "tensor_tensor_on_the_scalar_engine": "nisa.tensor_tensor(engine=nisa.scalar_engine): its page's engine= is "
                                          "nisa.vector_engine or nisa.gpsimd_engine",
    "tensor_copy_on_the_tensor_engine": "nisa.tensor_copy(engine=nisa.tensor_engine): its page's engine= is "
                                        "nisa.vector_engine or nisa.scalar_engine or nisa.gpsimd_engine",
    "memset_on_the_scalar_engine": "nisa.memset(engine=nisa.scalar_engine)",
    "transpose_on_gpsimd": "nisa.nc_transpose(engine=nisa.gpsimd_engine): its page's engine= is nisa.tensor_engine or "
                           "nisa.vector_engine",
    "recursion_without_end": "the kernel recurses without end",
    "legacy_float64_zeros": "dtype float64 is not supported: NKI's Supported Data Types table has no 64-bit float",
    "float64_tile": "dtype float64 is not supported",
    # the second probe (round 4, twenty-sixth session)
    "iota_flat_pattern": "nisa.iota: pattern is a list of [step, count] pairs (such as [[1, 512]]), not [1, 64]",
    "iota_short_pattern": "nisa.iota: pattern [[1, 32]] covers 32 elements a partition, and dst",
    "affine_select_short_pattern": "nisa.affine_select: pattern [[-1, 32]] covers 32 elements a partition",
    "affine_select_narrow_operand": "nisa.affine_select: on_true_tile is (128, 32), and dst",
    "identity_of_a_float_size": "nl.shared_identity_matrix's n (its size) is a positive int, not 64.0",
    "max8_of_too_many_elements": "nisa.max8 of 16392 elements a partition: its page reads 16,384 at most",
    "gpsimd_copy_from_psum": "nisa.tensor_copy(engine=nisa.gpsimd_engine) of p",
    "gpsimd_memset_of_psum": "nisa.memset(engine=nisa.gpsimd_engine) of p",
    "transpose_of_64_into_sbuf": "nisa.nc_transpose of a (64, 64) tile into r",
    "tensor_scalar_op1_alone": "nisa.tensor_scalar: op1 and operand1 go together",
    # the third probe
    "register_move_into_a_tile": "nisa.register_move: the destination is a register (nisa.register_alloc)",
    "select_reduce_narrow_on_true": "nisa.select_reduce: on_true is (128, 32), and dst",
    "copy_predicated_narrow_src": "nisa.tensor_copy_predicated: src is (128, 32), and dst",
    "scalar_reduce_into_three_columns": "nisa.tensor_scalar_reduce: reduce_res is (128, 3): its page takes one element",
    "find_index8_of_four_values": "nisa.nc_find_index8: vals holds 8 elements per partition",
    "scalar_tensor_tensor_of_a_number": "nisa.scalar_tensor_tensor: operand1 is 3.0, and its page takes a tile",
    "ds_of_a_negative_size": "nl.ds(0, -4): the size is the number of elements from start, not negative",
    "dma_copy_of_an_unlisted_dge_mode": "nisa.dma_copy: dge_mode=7 is none of its page's nisa.dge_mode values",
    "shuffle_into_a_narrower_dst": "nisa.nc_stream_shuffle: src is (32, 64), and dst",
    "shuffle_of_a_float_mask": "nisa.nc_stream_shuffle: shuffle_mask holds ints",
    "gather_by_float_indices": "the gather indices are float32: nc_n_gather's and gather_flattened's pages take uint32",
    # the fourth probe
    "transpose_of_hbm": "nl.transpose: x is x (128, 64) in HBM; compute engines read and write tiles in SBUF or PSUM "
                        "(load it first",
    "sum_of_hbm": "nl.sum: x is x (128, 64) in HBM",
    # the fifth probe (round 4, forty-third session: an agent-written kernel's nl.sum(q * q))
    "sum_without_axis": "nl.sum: axis is required (nki.language.sum(x, axis, ...) has no default, unlike numpy's); "
                        "e.g. axis=1 for the free axes of a [128, 64] tile",
    "legacy_sum_of_a_row_without_axis": "nl.sum: axis is required (nki.language.sum(x, axis, ...) has no default, "
                                        "unlike numpy's); a 1-D tile has only its partition axis",
    "var_without_axis": "nl.var: axis is required",
    "legacy_nc_transpose_of_hbm": "nisa.nc_transpose: data is x (128, 64) in HBM",
    "tensor_tensor_with_hbm": "nisa.tensor_tensor: data2 is x (128, 64) in HBM",
    "max8_of_hbm": "nisa.max8: src is x (128, 64) in HBM",
    "iota_into_hbm": "(compute into a tile, then store it",
    "stt_with_a_bitvec_operator": "nisa.scalar_tensor_tensor: op0 is the bitvec operator bitwise_and, and its page "
                                  "says \"Bitvec operators are not supported in this API\"",
    "matmul_of_float32_by_bfloat16": "nc_matmul of float32 x bfloat16 tiles: nc_matmul's page says \"if one of the "
                                     "input tiles is tfloat32/float32, the other tile must also be tfloat32/float32\"",
    "matmul_into_bfloat16_on_v2": "nisa.nc_matmul: dst p_",
}


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    return lambda name: f"{tmp_path / 'k.py'}::{name}"


def _line(func: str) -> int:
    """The line marked ``# mistake`` in ``func`` (a recursion's: in the helper that calls itself)."""
    lines = KERNELS.splitlines()
    func = {"recursion_without_end": "_helper_without_end"}.get(func, func)
    start = next(k for k, text in enumerate(lines) if text.startswith(f"def {func}("))
    return next(k + 1 for k in range(start, len(lines)) if "# mistake" in lines[k])


@pytest.mark.parametrize("func", sorted(MISTAKES))
def test_each_mistake_is_one_line_at_its_kernel_line(kernels, func):
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(kernels(func)), np.ones((128, 64), np.float32))
    assert str(caught.value).startswith(f"k.py:{_line(func)}: "), caught.value
    assert MISTAKES[func] in str(caught.value), caught.value
    assert "\n" not in str(caught.value)


def test_a_floats_bits_viewed_as_integers_take_a_bitvec_operator(kernels):
    trace(load_kernel(kernels("bits_of_a_float_viewed_as_integers")), np.ones((128, 64), np.float32))


def test_an_instruction_of_a_newer_neuroncore_is_a_warning_at_its_line(kernels):
    """rand2's page: "Available only on NeuronCore-v4 and newer"; traced for trn1 (a kernel that
    names no target) it warns at the call and runs as modelled (a probe: it ran without a word)."""
    traced = trace(load_kernel(kernels("rand2_on_v2")), np.ones((128, 64), np.float32))
    ((where, kind, message),) = traced.call_warnings
    line = next(k for k, text in enumerate(KERNELS.splitlines(), 1) if "nisa.rand2(dst=r" in text)
    assert (where.endswith(f"k.py:{line}"), kind) == (True, "generation")
    assert message.startswith("nisa.rand2 is available only on NeuronCore-v4 and newer (its page)")


def test_the_generation_warning_names_a_way_to_the_target_that_works(kernels, monkeypatch):
    """Its advice named a ``--machine`` option no command has (a sweep followed it); the
    environment variable it names now traces the kernel for the target, and the warning goes."""
    traced = trace(load_kernel(kernels("rand2_on_v2")), np.ones((128, 64), np.float32))
    ((_where, _kind, message),) = traced.call_warnings
    assert "--machine" not in message and "$NEURON_PLATFORM_TARGET_OVERRIDE=" in message
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")
    assert trace(load_kernel(kernels("rand2_on_v2")), np.ones((128, 64), np.float32)).call_warnings == ()
