"""The fifth probe's kernel mistakes: operand rules the ISA pages state (tensor_scalar's operators,
operand dtypes and shapes, GpSimd tiles in PSUM, nl.copy of HBM, scalar_store of a Python int),
each run without a word, now refused by its page at the line marked ``# mistake``: one line, the
call's ``file:line`` first (the layout of ``test_page_rule_mistakes.py``, whose file is full)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
from neuronsim.machine.nki import NkiError, load_kernel, trace

KERNELS = '''
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


def _tile(x, dtype=None):
    t = nl.ndarray(x.shape, dtype=dtype or x.dtype, buffer=nl.sbuf)
    if dtype is None:
        nisa.dma_copy(dst=t, src=x)
    else:
        nisa.memset(dst=t, value=1)
    return t


def _filled(shape, dtype, value):
    t = nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=value)
    return t


# tensor_scalar's operators
@nki.jit
def tensor_scalar_bitvec_on_the_scalar_engine(x):
    t, r = _tile(x, nl.int32), nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.bitwise_and, operand0=3, engine=nisa.scalar_engine)  # mistake
    return _out(r)


@legacy_nki.jit
def legacy_tensor_scalar_bitvec_on_gpsimd(x):
    o = lnl.ndarray(x.shape, dtype=lnl.int32, buffer=lnl.shared_hbm)
    t = lnl.copy(lnl.load(x), dtype=lnl.int32)
    lnl.store(o, value=lisa.tensor_scalar(t, lnl.bitwise_and, 3, engine=lisa.gpsimd_engine))  # mistake
    return o


@nki.jit
def tensor_scalar_of_mixed_operators(x):
    t, r = _tile(x, nl.int32), nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.add, operand0=1, op1=nl.bitwise_and, operand1=3)  # mistake
    return _out(r)


@nki.jit
def tensor_scalar_of_a_bfloat16_operand(x):
    t, r, v = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf), _filled((128, 1), nl.bfloat16, 2.0)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=v)  # mistake
    return _out(r)


@nki.jit
def tensor_scalar_of_no_operand(x):
    t, r = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=None)  # mistake
    return _out(r)


# dtypes
@nki.jit
def rng_into_floats(x):
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.rng(dst=r)  # mistake
    return _out(r)


@nki.jit(platform_target="trn2")
def select_reduce_of_int32(x):
    t, r, pr = _tile(x, nl.int32), nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf), _tile(x, nl.uint8)
    nisa.select_reduce(dst=r, predicate=pr, on_true=t, on_false=0.0)  # mistake
    return _out(r)


@nki.jit(platform_target="trn2")
def select_reduce_by_a_float_predicate(x):
    t, r, pr = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf), _tile(x)
    nisa.select_reduce(dst=r, predicate=pr, on_true=t, on_false=0.0)  # mistake
    return _out(r)


@nki.jit(platform_target="trn2")
def select_reduce_into_an_int32_reduction(x):
    t, r, pr = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf), _tile(x, nl.uint8)
    rr = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.select_reduce(dst=r, predicate=pr, on_true=t, on_false=0.0, reduce_res=rr, reduce_op=nl.maximum)  # mistake
    return _out(rr)


@nki.jit
def copy_predicated_by_int32(x):
    t, r, pr = _tile(x), _filled(x.shape, x.dtype, 0.0), _tile(x, nl.int32)
    nisa.tensor_copy_predicated(dst=r, src=t, predicate=pr)  # mistake
    return _out(r)


@nki.jit
def copy_predicated_with_a_cast(x):
    t, r, pr = _tile(x), _filled(x.shape, nl.bfloat16, 0.0), _tile(x, nl.uint8)
    nisa.tensor_copy_predicated(dst=r, src=t, predicate=pr)  # mistake
    return _out(r)


@nki.jit
def shuffle_with_a_cast(x):
    t = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:32, :])
    r = nl.ndarray((32, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=list(range(32)))  # mistake
    return _out(r)


@nki.jit
def n_gather_with_a_cast(x):
    t, ix, r = _tile(x), _filled((128, 8), nl.uint32, 1), nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=r, data=t, indices=ix)  # mistake
    return _out(r)


@nki.jit
def local_gather_by_int32(x):
    t, ix, r = _tile(x), _filled((128, 4), nl.int32, 1), nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.local_gather(dst=r, src_buffer=t, index=ix)  # mistake
    return _out(r)


@nki.jit
def local_gather_with_a_cast(x):
    t, ix, r = _tile(x), _filled((128, 4), nl.uint16, 1), nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.local_gather(dst=r, src_buffer=t, index=ix)  # mistake
    return _out(r)


@legacy_nki.jit
def legacy_local_gather_by_int32(x):
    o = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
    ix = lnl.zeros((128, 4), dtype=lnl.int32, buffer=lnl.sbuf)
    lnl.store(o, value=lisa.local_gather(lnl.load(x), ix))  # mistake
    return o


@nki.jit
def dropout_with_a_cast(x):
    t, r = _tile(x), nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dropout(dst=r, data=t, prob=0.5)  # mistake
    return _out(r)


@nki.jit
def dropout_of_integers_by_a_bfloat16_probability(x):
    t, r = _tile(x, nl.int32), nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.dropout(dst=r, data=t, prob=_filled((128, 1), nl.bfloat16, 0.5))  # mistake
    return _out(r)


@legacy_nki.jit
def legacy_dropout_of_integers_with_a_cast(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.copy(lnl.load(x), dtype=lnl.int32)
    lnl.store(o, value=lisa.dropout(t, prob=0.5, dtype=lnl.float32))  # mistake
    return o


@nki.jit
def cumulative_of_int32(x):
    t, r = _tile(x, nl.int32), nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.multiply, op1=nl.add, imm0=1.0)  # mistake
    return _out(r)


@nki.jit
def sequence_bounds_into_bfloat16(x):
    ids, r = _filled((1, 64), nl.int32, 1), nl.ndarray((1, 2, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=r, segment_ids=ids)  # mistake
    return _out(r)


@nki.jit(platform_target="trn2")
def nonzero_with_count_into_floats(x):
    t, r = _tile(x), _filled((128, 65), nl.float32, 0.0)
    nisa.nonzero_with_count(dst=r, src=t)  # mistake
    return _out(r)


@nki.jit(platform_target="trn2")
def range_select_of_a_bfloat16_bound(x):
    t, r = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    b0, b1 = _filled((128, 1), nl.bfloat16, -1.0), _filled((128, 1), nl.float32, 1.0)
    nisa.range_select(dst=r, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0,  # mistake
                      bound1=b1)
    return _out(r)


@nki.jit(platform_target="trn2")
def sendrecv_with_a_cast(x):
    t, r = _tile(x), nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=r, send_to_rank=1, recv_from_rank=1)  # mistake
    return _out(r)


@nki.jit(platform_target="trn3")
def memset_of_packed_ones(x):
    r = nl.ndarray((128, 16), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    nisa.memset(dst=r, value=1.0)  # mistake
    return _out(_tile(x))


@nki.jit
def scalar_store_into_floats(x):
    s = nisa.scalar_load(_filled((1, 1), nl.int32, 3))
    r = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.scalar_store(r, s)  # mistake
    return _out(r)


# shapes
@nki.jit
def sequence_bounds_of_four_partitions(x):
    ids, r = _filled((4, 64), nl.int32, 1), nl.ndarray((4, 2, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=r, segment_ids=ids)  # mistake
    return _out(r)


@legacy_nki.jit
def legacy_sequence_bounds_of_four_partitions(x):
    o = lnl.ndarray((4, 2, 64), dtype=lnl.int32, buffer=lnl.shared_hbm)
    ids = lnl.zeros((4, 64), dtype=lnl.int32, buffer=lnl.sbuf)
    lnl.store(o, value=lisa.sequence_bounds(segment_ids=ids))  # mistake
    return o


@nki.jit(platform_target="trn2")
def range_select_of_a_wide_bound(x):
    t, r = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    b0, b1 = _filled((128, 2), nl.float32, -1.0), _filled((128, 1), nl.float32, 1.0)
    nisa.range_select(dst=r, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0,  # mistake
                      bound1=b1)
    return _out(r)


@nki.jit
def match_replace8_of_four_values(x):
    t, r, v = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf), _filled((128, 4), nl.float32, 0.5)
    nisa.nc_match_replace8(dst=r, data=t, vals=v, imm=0.0)  # mistake
    return _out(r)


@nki.jit
def broadcast_to_another_rank(x):
    c = _tile(x)[:, 0:1]
    return _out(nl.broadcast_to(c, (128, 4, 64)))  # mistake


@nki.jit(platform_target="trn2")
def sendrecv_over_gpsimd_dma_of_2048_bytes(x):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=r, send_to_rank=1, recv_from_rank=1, dma_engine=nisa.dma_engine.gpsimd_dma)  # mistake
    return _out(r)


# memories
@nki.jit
def power_of_a_psum_tile(x):
    t, r = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    p = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=t)
    nisa.tensor_tensor(dst=r, data1=p, data2=t, op=nl.power)  # mistake
    return _out(r)


@legacy_nki.jit
def legacy_power_of_a_psum_tile(x):
    o = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    p = lnl.zeros(x.shape, dtype=lnl.float32, buffer=lnl.psum)
    lnl.store(o, value=lisa.tensor_tensor(p, t, op=lnl.power))  # mistake
    return o


@nki.jit
def n_gather_from_psum(x):
    t, ix, r = _tile(x), _filled((128, 8), nl.uint32, 1), nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    p = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=t)
    nisa.nc_n_gather(dst=r, data=p, indices=ix)  # mistake
    return _out(r)


@nki.jit
def copy_of_hbm(x):
    return _out(nl.copy(x[:, 0:32]))  # mistake


@nki.jit
def scalar_by_an_hbm_column(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=_tile(x), op0=nl.subtract, operand0=x[:, 0:1])  # mistake
    return _out(y)


@nki.jit
def activation_by_an_hbm_bias(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=_tile(x), bias=x[:, 0:1])  # mistake
    return _out(y)


@nki.jit
def exponential_below_an_hbm_column(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.exponential(dst=y, src=_tile(x), max_value=x[:, 0:1])  # mistake
    return _out(y)


@nki.jit
def subtract_of_an_hbm_element(x):
    return _out(nl.subtract(_tile(x), x[0:1, 0:1]))  # mistake


# scalar_store
@nki.jit
def scalar_store_of_a_python_int(x):
    r = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.scalar_store(r, 5)  # mistake
    return _out(r)


# what the pages allow, run as before
@legacy_nki.jit
def legacy_dropout_into_bfloat16(x):
    o = lnl.ndarray(x.shape, dtype=lnl.bfloat16, buffer=lnl.shared_hbm)
    lnl.store(o, value=lisa.dropout(lnl.load(x), prob=0.5, dtype=lnl.bfloat16))
    return o


@nki.jit
def dropout_of_floats_by_a_bfloat16_probability(x):
    o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t, r, p = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf), _filled((128, 1), nl.bfloat16, 0.5)
    nisa.dropout(dst=r, data=t, prob=p)
    nisa.dma_copy(dst=o, src=r)
    return o


@nki.jit
def address_arithmetic_of_an_int32_operand(x):
    o = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    t, r, v = _tile(x, nl.int32), nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf), _filled((128, 1), nl.int32, 4)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=v, op1=nl.add, operand1=1)
    nisa.dma_copy(dst=o, src=r)
    return o


@nki.jit
def tensor_scalar_of_an_operandless_operator(x):
    o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t, r = _tile(x), nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.abs, operand0=None)
    nisa.dma_copy(dst=o, src=r)
    return o
'''

MISTAKES = {
    "tensor_scalar_bitvec_on_the_scalar_engine": "nisa.tensor_scalar(engine=nisa.scalar_engine) of the bitvec operator "
                                                 "bitwise_and; its page: \"If bitvec operators are used, the "
                                                 "tensor_scalar instruction must run on Vector Engine\"",
    "legacy_tensor_scalar_bitvec_on_gpsimd": "nisa.tensor_scalar(engine=nisa.gpsimd_engine) of the bitvec operator",
    "tensor_scalar_of_mixed_operators": "nisa.tensor_scalar: op0 is add and op1 bitwise_and; its page: \"The two "
                                        "operators, op0 and op1, in a tensor_scalar instruction must be of the same "
                                        "type (both bitvec or both arithmetic)\"",
    "tensor_scalar_of_a_bfloat16_operand": "nisa.tensor_scalar: operand0 is a bfloat16 tile; its page: \"arithmetic "
                                           "operators impose no restriction",
    "tensor_scalar_of_no_operand": "nisa.tensor_scalar: operand0 is None, and op0 multiply takes an operand",
    "rng_into_floats": "nisa.rng: dst is a float32 tile; its page: \"The output dst tile must be an integer type: "
                       "int8, int16, int32, uint8, uint16, or uint32.\"",
    "select_reduce_of_int32": "nisa.select_reduce: on_true is an int32 tile; its page: \"on_true can be any supported "
                              "dtype except tfloat32, int32, uint32\"",
    "select_reduce_by_a_float_predicate": "nisa.select_reduce: predicate is a float32 tile",
    "select_reduce_into_an_int32_reduction": "nisa.select_reduce: reduce_res is an int32 tile; its page: \"reduce_res "
                                             "dtype must of float type\"",
    "copy_predicated_by_int32": "nisa.tensor_copy_predicated: predicate is an int32 tile; its page: \"predicate must "
                                "be of type uint8, uint16, or uint32.\"",
    "copy_predicated_with_a_cast": "nisa.tensor_copy_predicated: src is float32 and dst bfloat16; its page: \"src and "
                                   "dst must share the same data type.\"",
    "shuffle_with_a_cast": "nisa.nc_stream_shuffle: src is float32 and dst bfloat16; its page: \"dst must have same "
                           "data type as src.\"",
    "n_gather_with_a_cast": "nisa.nc_n_gather: data is float32 and dst bfloat16; its page: \"The output dst tile must "
                            "have the same data type as data.\"",
    "local_gather_by_int32": "nisa.local_gather: index is an int32 tile; its page: \"no data type casting is allowed "
                             "in this API. The indices in index tile must be uint16 types.\"",
    "local_gather_with_a_cast": "nisa.local_gather: src_buffer is float32 and dst bfloat16",
    "legacy_local_gather_by_int32": "nisa.local_gather: index is an int32 tile",
    "dropout_with_a_cast": "nisa.dropout: data is float32 and dst bfloat16; its page: \"The output data type dst.dtype "
                           "must match the input data type data.dtype.\"",
    "dropout_of_integers_by_a_bfloat16_probability": "nisa.dropout: prob is a bfloat16 tile; its page: \"If data type "
                                                     "of data is any of the integer types (e.g., int32, int16), prob "
                                                     "data type must be float32",
    "legacy_dropout_of_integers_with_a_cast": "nisa.dropout: data is int32 and dst float32; its page: \"The output "
                                              "data type must match the input data type of data if input data type "
                                              "is any of the integer types.\"",
    "cumulative_of_int32": "nisa.tensor_scalar_cumulative: src is an int32 tile; its page: \"Input / output dtypes are "
                           "restricted to BF16, FP16, FP32, FP8, UINT8, UINT16, INT8, INT16\"",
    "sequence_bounds_into_bfloat16": "nisa.sequence_bounds: dst is a bfloat16 tile; its page: \"Both the input "
                                     "tile (segment_ids) and output tile (dst) must have data type nl.float32 or "
                                     "nl.int32.\"",
    "nonzero_with_count_into_floats": "nisa.nonzero_with_count: dst is a float32 tile; its page: \"dst must be in SBUF "
                                      "with dtype int32.\"",
    "range_select_of_a_bfloat16_bound": "nisa.range_select: bound0 is a bfloat16 tile; its page: \"bound0/bound1 must "
                                        "be FP32 types.\"",
    "sendrecv_with_a_cast": "nisa.sendrecv: src is float32 and dst bfloat16; its page: \"src and dst must have the "
                            "same data type\"",
    "memset_of_packed_ones": "a float4_e2m1fn_x4 tile, to 1.0; its page: \"For x4 packed types (float8_e4m3fn_x4, "
                             "float8_e5m2_x4, float4_e2m1fn_x4), only value=0 is supported.\"",
    "scalar_store_into_floats": "nisa.scalar_store: dst is a float32 tile; its page: \"dst - A 1x1 tensor in SBUF or "
                                "HBM with dtype nl.int32 or nl.int64\"",
    "sequence_bounds_of_four_partitions": "nisa.sequence_bounds: segment_ids is (4, 64); its page: \"The partition "
                                          "dimension must always be 1.\"",
    "legacy_sequence_bounds_of_four_partitions": "nisa.sequence_bounds: segment_ids is (4, 64)",
    "range_select_of_a_wide_bound": "nisa.range_select: bound0 is (128, 2): its page takes one element on each of the "
                                    "128 partitions",
    "match_replace8_of_four_values": "nisa.nc_match_replace8: vals holds 8 elements per partition",
    "broadcast_to_another_rank": "nl.broadcast_to of (128, 1) to (128, 4, 64); its page: the shape \"Must have the "
                                 "same rank as x\"",
    "sendrecv_over_gpsimd_dma_of_2048_bytes": "nisa.sendrecv(dma_engine=nisa.dma_engine.gpsimd_dma) of 2048 bytes a "
                                              "partition ((128, 512) float32); its page: that mode \"restricts the "
                                              "data size per partition to not exceed\" 1024 bytes for 32-bit types",
    "power_of_a_psum_tile": "nisa.tensor_tensor(op=nl.power): data1 is p",
    "legacy_power_of_a_psum_tile": "nisa.tensor_tensor(op=nl.power): data1 is",
    "n_gather_from_psum": "nisa.nc_n_gather: data is p",
    "copy_of_hbm": "nl.copy: x is x (128, 32) in HBM; compute engines read and write tiles in SBUF or PSUM",
    # probe_ab: a per-partition operand in HBM was said not to be [P, 1] ("mx (4, 1) is not a [4, 1]")
    "scalar_by_an_hbm_column": "nisa.tensor_scalar: operand0 is x (128, 1) in HBM; compute engines read",
    "activation_by_an_hbm_bias": "nisa.activation: bias is x (128, 1) in HBM; compute engines read",
    "exponential_below_an_hbm_column": "nisa.exponential: max_value is x (128, 1) in HBM; compute engines read",
    # a public sparse kernel's threshold: the DRAM operand named by its own shape, not the broadcast one
    "subtract_of_an_hbm_element": "nl.subtract: y is x (1, 1) in HBM; compute engines read and write tiles in SBUF",
    "scalar_store_of_a_python_int": "nisa.scalar_store of 5; its page: \"value must be an NkiScalar. A Python int is "
                                    "not accepted\"",
}

ALLOWED = ("legacy_dropout_into_bfloat16", "dropout_of_floats_by_a_bfloat16_probability",
           "address_arithmetic_of_an_int32_operand", "tensor_scalar_of_an_operandless_operator")


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    return lambda name: f"{tmp_path / 'k.py'}::{name}"


def _line(func: str) -> int:
    """The line marked ``# mistake`` in ``func``."""
    lines = KERNELS.splitlines()
    start = next(k for k, text in enumerate(lines) if text.startswith(f"def {func}("))
    return next(k + 1 for k in range(start, len(lines)) if "# mistake" in lines[k])


@pytest.mark.parametrize("func", sorted(MISTAKES))
def test_each_mistake_is_one_line_at_its_kernel_line(kernels, func):
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(kernels(func)), np.ones((128, 64), np.float32))
    assert str(caught.value).startswith(f"k.py:{_line(func)}: "), caught.value
    assert MISTAKES[func] in str(caught.value), caught.value
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("func", ALLOWED)
def test_what_the_pages_allow_runs(kernels, func):
    """The legacy dropout page casts a float tile to its dtype= (the current page: "must match");
    a float tile's prob may be any float; int32 data and dst are the page's "address-arithmetic
    pattern", whose operands' dtypes it leaves unsaid; nl.abs takes no operand."""
    trace(load_kernel(kernels(func)), np.ones((128, 64), np.float32))
