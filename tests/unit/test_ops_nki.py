"""The ops real NKI kernels need (issue #12, item 4): numerics, validation and cost.

Numerics are checked against numpy written out here from the NKI ISA definitions (never
printed by the code under test); validation errors name their JSON path; costs follow the
rules of thumb of ``docs/machine-model.md`` section 1.4.
"""

from __future__ import annotations

import copy

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import parse_program
from neuronsim.machine.model.optable import ALU_OPS, REDUCE_OPS
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.model.cost import instruction_cost
from neuronsim.machine.model.execute import execute

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32


def _rand(shape, seed, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(F32)


def _run(op, attrs, reads, out_shapes, engine="dve", out_dtype=F32):
    outs = [np.zeros(shape, out_dtype) for shape in out_shapes]
    return execute(op, attrs, engine, reads, outs, None)


# -- numerics --------------------------------------------------------------------------------
def test_activation_scale_and_bias_tiles():
    x, scale, bias = _rand((4, 6), 1), _rand((4, 1), 2), _rand((4, 1), 3)
    attrs = {"func": "exp", "scale": {"read": 2}, "bias": {"read": 1}}
    (got,) = _run("activation", attrs, [x, bias, scale], [(4, 6)], "act")
    np.testing.assert_allclose(got, np.exp(x * scale + bias), rtol=1e-6)
    (only_scale,) = _run("activation", {"func": "identity", "scale": {"read": 1}, "bias": 0.5}, [x, scale], [(4, 6)])
    np.testing.assert_allclose(only_scale, x * scale + 0.5, rtol=1e-6)


def test_activation_reduce_writes_the_row_sum_of_the_fp32_result():
    x = _rand((3, 8), 4)
    out, total = _run("activation", {"func": "square", "reduce_op": "add"}, [x], [(3, 8), (3, 1)], "act", BF16)
    np.testing.assert_array_equal(out, (x * x).astype(BF16))
    # The reduction sums the fp32 squares, not the bf16-rounded output.
    np.testing.assert_allclose(total.astype(F32), (x * x).sum(axis=1, keepdims=True).astype(BF16).astype(F32))
    exact = execute("activation", {"func": "square", "reduce_op": "add"}, "act", [x],
                    [np.zeros((3, 8), BF16), np.zeros((3, 1), F32)], None)[1]
    np.testing.assert_allclose(exact, (x.astype(np.float64) ** 2).sum(axis=1, keepdims=True), rtol=1e-6)


def test_tensor_scalar_with_two_per_partition_operands():
    x, mean, rstd = _rand((4, 5), 5), _rand((4, 1), 6), _rand((4, 1), 7, 0.5, 2.0)
    attrs = {"op0": "subtract", "operand0": {"read": 1}, "op1": "multiply", "operand1": {"read": 2}}
    (got,) = _run("tensor_scalar", attrs, [x, mean, rstd], [(4, 5)])
    np.testing.assert_allclose(got, (x - mean) * rstd, rtol=1e-6)
    # Operand order is the attributes', not the reads': operand1 may come first.
    swapped = {"op0": "subtract", "operand0": {"read": 2}, "op1": "multiply", "operand1": {"read": 1}}
    (other,) = _run("tensor_scalar", swapped, [x, rstd, mean], [(4, 5)])
    np.testing.assert_allclose(other, got, rtol=1e-6)


def test_tensor_scalar_reverse_each_operator():
    x, s = _rand((2, 4), 8, 0.5, 2.0), _rand((2, 1), 9, 0.5, 2.0)
    base = {"op0": "subtract", "operand0": {"read": 1}, "op1": "divide", "operand1": 3.0}
    cases = {
        (): (x - s) / 3, ("reverse0",): (s - x) / 3, ("reverse1",): 3 / (x - s), ("reverse0", "reverse1"): 3 / (s - x),
    }
    for flags, want in cases.items():
        (got,) = _run("tensor_scalar", {**base, **{flag: True for flag in flags}}, [x, s], [(2, 4)])
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(flags))
    (both,) = _run("tensor_scalar", {**base, "reverse": True}, [x, s], [(2, 4)])
    np.testing.assert_allclose(both, 3 / (s - x), rtol=1e-6)


@pytest.mark.parametrize("op", ["equal", "not_equal", "greater_equal", "less"])
def test_tensor_scalar_comparisons_give_one_or_zero(op):
    x = np.array([[0.0, 1.0, 2.0], [2.0, 2.0, 3.0]], F32)
    (got,) = _run("tensor_scalar", {"op0": op, "operand0": 2.0}, [x], [(2, 3)])
    want = {"equal": x == 2, "not_equal": x != 2, "greater_equal": x >= 2, "less": x < 2}[op]
    np.testing.assert_array_equal(got, want.astype(F32))


def _scan(data0, data1, initial, op0, op1):
    out = np.empty_like(data0)
    state = np.broadcast_to(np.asarray(initial, F32), (data0.shape[0], 1))[:, 0].copy()
    for i in range(data0.shape[1]):
        state = op1(op0(data0[:, i], state), data1[:, i])
        out[:, i] = state
    return out


def test_tensor_tensor_scan_is_the_linear_recurrence_with_a_tile_initial():
    decay, inject, h0 = _rand((4, 16), 10, 0.5, 1.0), _rand((4, 16), 11), _rand((4, 1), 12)
    attrs = {"op0": "multiply", "op1": "add", "initial": {"read": 2}}
    (got,) = _run("tensor_tensor_scan", attrs, [decay, inject, h0], [(4, 16)])
    want = np.empty((4, 16))
    h = h0[:, 0].astype(np.float64)
    for t in range(16):
        h = decay[:, t] * h + inject[:, t]
        want[:, t] = h
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_tensor_tensor_scan_immediate_initial_and_reversed_operands():
    a, b = _rand((2, 6), 13, 1.0, 2.0), _rand((2, 6), 14, 1.0, 2.0)
    attrs = {"op0": "subtract", "op1": "divide", "initial": 0.5, "reverse0": True, "reverse1": True}
    (got,) = _run("tensor_tensor_scan", attrs, [a, b], [(2, 6)])
    # reverse0: state - data0; reverse1: data1 / (...)
    want = _scan(a, b, 0.5, lambda d, s: s - d, lambda t, d: d / t)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_tensor_tensor_scan_keeps_the_state_in_fp32_and_casts_the_output():
    a, b = np.full((1, 64), 1.0, F32), np.full((1, 64), 1.0 / 3.0, F32)
    (got,) = _run("tensor_tensor_scan", {"op0": "multiply", "op1": "add"}, [a, b], [(1, 64)], out_dtype=BF16)
    running = np.cumsum(np.full(64, np.float32(1.0 / 3.0), F32), dtype=F32)
    np.testing.assert_array_equal(got[0], running.astype(BF16))


@pytest.mark.parametrize("axis,shape", [(None, (4,)), ([3], (4, 3, 2)), ([2, 3], (4, 3)), (3, (4, 3, 2))])
def test_tensor_reduce_over_chosen_axes(axis, shape):
    x = _rand((4, 3, 2, 5), 15)
    attrs = {"op": "max", "negate": True} if axis is None else {"op": "max", "axis": axis, "negate": True}
    out_shape = (4, int(np.prod(shape[1:])) if len(shape) > 1 else 1)
    (got,) = _run("tensor_reduce", attrs, [x], [out_shape])
    axes = (1, 2, 3) if axis is None else tuple(axis if isinstance(axis, list) else [axis])
    want = -x.max(axis=axes).reshape(4, -1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_tensor_reduce_logical_ops(op):
    x = np.array([[1, 2, 3, 4], [0, 1, 1, 0], [0, 0, 0, 0]], F32)
    (got,) = _run("tensor_reduce", {"op": op}, [x], [(3, 1)])
    want = {"logical_and": [1, 0, 0], "logical_or": [1, 1, 0], "logical_xor": [0, 0, 0]}[op]
    np.testing.assert_array_equal(got[:, 0], np.array(want, F32))
    assert op in REDUCE_OPS


def test_bn_stats_layout_even_then_odd():
    x = np.array([[1.0, 10.0, 3.0, 20.0, 5.0], [2.0, 2.0, 2.0, 2.0, 2.0]], F32)
    (got,) = _run("bn_stats", {}, [x], [(2, 6)])
    # row 0: even elements 1, 3, 5 (mean 3, squared deviations 4 + 0 + 4); odd 10, 20 (mean 15, 25 + 25)
    np.testing.assert_allclose(got[0], [3, 3, 8, 2, 15, 50], rtol=1e-6)
    np.testing.assert_allclose(got[1], [3, 2, 0, 2, 2, 0], rtol=1e-6)


def test_bn_stats_of_one_element_has_an_empty_odd_half():
    (got,) = _run("bn_stats", {}, [np.array([[7.0]], F32)], [(1, 6)])
    np.testing.assert_array_equal(got[0], [1, 7, 0, 0, 0, 0])


def test_bn_stats_then_bn_aggr_give_mean_and_biased_variance_over_chunks():
    x = _rand((4, 1000), 16, -3.0, 5.0)
    chunks = [x[:, 0:512], x[:, 512:1000]]
    stats = np.concatenate([_run("bn_stats", {}, [c], [(4, 6)])[0] for c in chunks], axis=1)
    (mv,) = _run("bn_aggr", {}, [stats], [(4, 2)])
    wide = x.astype(np.float64)
    np.testing.assert_allclose(mv[:, 0], wide.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv[:, 1], wide.var(axis=1), rtol=1e-5)


def test_bn_aggr_combines_triples_by_hand():
    # (count, mean, var*count): {1, 3} -> (2, 2, 2); {10} -> (1, 10, 0); union {1, 3, 10}.
    stats = np.array([[2, 2, 2, 1, 10, 0, 0, 0, 0]], F32)
    (mv,) = _run("bn_aggr", {}, [stats], [(1, 2)], out_dtype=BF16)
    data = np.array([1.0, 3.0, 10.0])
    np.testing.assert_allclose(mv[0].astype(F32), [data.mean(), data.var()], rtol=1e-2)
    (none,) = _run("bn_aggr", {}, [np.zeros((1, 3), F32)], [(1, 2)])
    np.testing.assert_array_equal(none, [[0, 0]])


def test_every_alu_op_is_total_on_awkward_values():
    a = np.array([[0.0, -1.0, np.inf, np.nan]], F32)
    for op in ALU_OPS:
        (got,) = _run("tensor_tensor", {"op": op}, [a, a[:, ::-1].copy()], [(1, 4)])
        assert got.shape == (1, 4) and got.dtype == F32


# -- validation -------------------------------------------------------------------------------
def _doc(inst: dict, **extra_tensors) -> dict:
    tensors = {
        "x": {"memory": "sbuf", "dtype": "float32", "shape": [4, 8, 2], "partition": 0, "offset": 0},
        "col": {"memory": "sbuf", "dtype": "float32", "shape": [4, 1], "partition": 0, "offset": 512},
        "col2": {"memory": "sbuf", "dtype": "float32", "shape": [4, 1], "partition": 0, "offset": 520},
        "y": {"memory": "sbuf", "dtype": "float32", "shape": [4, 16], "partition": 0, "offset": 1024},
        "ps": {"memory": "psum", "dtype": "float32", "shape": [4, 16], "partition": 0, "bank": 0},
        "ps2": {"memory": "psum", "dtype": "float32", "shape": [4, 16], "partition": 0, "bank": 1},
        **extra_tensors,
    }
    return {"format": "neuronsim.program/1", "machine": "trn1", "tensors": tensors,
            "body": [{"name": "op", **inst}]}


def _ins(engine, op, reads, writes, attrs=None):
    inst = {"engine": engine, "op": op, "reads": [{"tensor": r} if isinstance(r, str) else r for r in reads],
            "writes": [{"tensor": w} if isinstance(w, str) else w for w in writes]}
    if attrs is not None:
        inst["attrs"] = attrs
    return inst


GOOD = [
    _ins("act", "activation", ["x", "col", "col2"], ["y", "col"], {"func": "exp", "scale": {"read": 2},
                                                                    "bias": {"read": 1}, "reduce_op": "add"}),
    _ins("act", "activation", ["x", "col"], ["y"], {"scale": {"read": 1}, "bias": 0.5}),
    _ins("dve", "tensor_scalar", ["x", "col", "col2"], ["y"],
         {"op0": "subtract", "operand0": {"read": 1}, "op1": "multiply", "operand1": {"read": 2}}),
    _ins("dve", "tensor_scalar", ["x", "col"], ["y"], {"op0": "divide"}),  # shorthand: operand0
    _ins("dve", "tensor_tensor_scan", ["y", "ps", "col"], ["y"], {"op0": "multiply", "op1": "add"}),
    _ins("dve", "tensor_reduce", [{"tensor": "x", "pattern": [[2, 8], [1, 2]]}], ["col"],
         {"op": "add", "axis": [1, 2]}),
    _ins("dve", "tensor_reduce", [{"tensor": "x", "pattern": [[2, 8], [1, 2]]}], ["y"], {"op": "max", "axis": 2,
                                                                                       "keepdims": True}),
    _ins("dve", "bn_stats", ["x"], [{"tensor": "y", "pattern": [[1, 6]]}]),
    _ins("dve", "bn_aggr", [{"tensor": "y", "pattern": [[1, 12]]}], ["col"]),
]


@pytest.mark.parametrize("inst", GOOD, ids=lambda i: i["op"])
def test_valid_uses_load(inst):
    parse_program(_doc(inst))


BAD = [
    ("unknown-attr", _ins("dve", "tensor_tensor_scan", ["y", "y"], ["y"], {"op0": "add", "scan": 1}),
     "body[0].attrs.scan", "unknown attribute of op 'tensor_tensor_scan'"),
    ("operand-not-number", _ins("act", "activation", ["x"], ["y"], {"scale": "big"}),
     "body[0].attrs.scale", "a number (an immediate) or {\"read\": INDEX}"),
    ("read-out-of-range", _ins("act", "activation", ["x", "col"], ["y"], {"scale": {"read": 2}}),
     "body[0].attrs.scale.read", "read 2 does not exist or is a data read"),
    ("read-is-data", _ins("dve", "tensor_tensor_scan", ["y", "y", "col"], ["y"], {"initial": {"read": 1}}),
     "body[0].attrs.initial.read", "is a data read"),
    ("read-bound-twice", _ins("dve", "tensor_scalar", ["x", "col"], ["y"],
                              {"op0": "add", "operand0": {"read": 1}, "op1": "add", "operand1": {"read": 1}}),
     "body[0].attrs.operand1.read", "read 1 is already operand 'operand0'"),
    ("unbound-read", _ins("act", "activation", ["x", "col", "col2"], ["y"], {"scale": {"read": 2}}),
     "body[0].reads[1]", "read 1 is no operand"),
    ("shorthand-and-immediate", _ins("act", "activation", ["x", "col"], ["y"], {"bias": 1.0}),
     "body[0].reads[1]", "also given as an immediate"),
    ("reduce-without-write", _ins("act", "activation", ["x"], ["y"], {"reduce_op": "add"}),
     "body[0].attrs.reduce_op", "needs both attrs.reduce_op and a second write"),
    ("write-without-reduce", _ins("act", "activation", ["x"], ["y", "col"]),
     "body[0].writes", "needs both attrs.reduce_op and a second write"),
    ("reduce-op-multiply", _ins("act", "activation", ["x"], ["y", "col"], {"reduce_op": "multiply"}),
     "body[0].attrs.reduce_op", "one of 'add'"),
    ("reverse-twice", _ins("dve", "tensor_scalar", ["x"], ["y"], {"op0": "add", "reverse": True, "reverse0": False}),
     "body[0].attrs.reverse", "not both"),
    ("scan-two-psum", _ins("dve", "tensor_tensor_scan", ["ps", "ps2"], ["y"], {}),
     "body[0].reads", "cannot both be in PSUM"),
    ("scan-on-act", _ins("act", "tensor_tensor_scan", ["y", "y"], ["y"], {}),
     "body[0].engine", "runs on ['dve']"),
    ("bn-stats-too-wide", _ins("dve", "bn_stats", ["wide"], ["y"]),
     "body[0].reads[0]", "at most 512 elements per partition, not 600"),
    ("bn-aggr-not-triples", _ins("dve", "bn_aggr", ["y"], ["col"]),
     "body[0].reads[0]", "16 elements per partition is not a multiple of 3"),
    ("axis-not-last", _ins("dve", "tensor_reduce", [{"tensor": "x", "pattern": [[2, 8], [1, 2]]}], ["y"],
                           {"axis": [1]}), "body[0].attrs.axis", "ending at the last one"),
    ("axis-beyond-rank", _ins("dve", "tensor_reduce", ["x"], ["col"], {"axis": [2]}),
     "body[0].attrs.axis", "element shape is [4, 16]"),
    ("axis-partition", _ins("dve", "tensor_reduce", ["x"], ["col"], {"axis": 0}),
     "body[0].attrs.axis", "a free axis (an integer >= 1)"),
    ("alu-op-unknown", _ins("dve", "tensor_tensor", ["x", "y"], ["y"], {"op": "bitwise_nand"}),
     "body[0].attrs.op", "'greater_equal'"),
]


@pytest.mark.parametrize("name,inst,path,message", BAD, ids=[b[0] for b in BAD])
def test_invalid_uses_are_located_errors(name, inst, path, message):
    wide = {"memory": "sbuf", "dtype": "bfloat16", "shape": [4, 600], "partition": 0, "offset": 4096}
    with pytest.raises(ProgramError) as info:
        parse_program(_doc(copy.deepcopy(inst), wide=wide))
    assert info.value.path == path
    assert message in info.value.message


# -- cost -------------------------------------------------------------------------------------
def _cycles(inst: dict, **extra) -> float:
    program = parse_program(_doc(inst, **extra))
    (only,) = [i for i, _ in program.instructions()]
    return instruction_cost(only, program.tensors, resolve_machine("trn1")).cycles


BIG = {"big": {"memory": "sbuf", "dtype": "float32", "shape": [4, 300], "partition": 0, "offset": 8192},
       "big2": {"memory": "sbuf", "dtype": "float32", "shape": [4, 300], "partition": 0, "offset": 12288},
       "stats": {"memory": "sbuf", "dtype": "float32", "shape": [4, 300], "partition": 0, "offset": 16384}}


def test_costs_follow_section_1_4():
    min_ii = resolve_machine("trn1").min_ii_cycles
    assert min_ii == 64
    # activation: max(MIN_II, N), plus MIN_II for the ActReadAccumulator of a fused reduction
    assert _cycles(_ins("act", "activation", ["big", "col"], ["big2"], {"scale": {"read": 1}}), **BIG) == 300
    assert _cycles(_ins("act", "activation", ["big"], ["big2", "col"], {"reduce_op": "add"}), **BIG) == 300 + 64
    assert _cycles(_ins("act", "activation", ["col"], ["col2", "col"], {"reduce_op": "add"})) == 64 + 64
    # tensor_scalar: one or two operators cost the same, N
    two = _ins("dve", "tensor_scalar", ["big", "col", "col2"], ["big2"],
               {"op0": "subtract", "operand0": {"read": 1}, "op1": "multiply", "operand1": {"read": 2}})
    assert _cycles(two, **BIG) == _cycles(_ins("dve", "tensor_scalar", ["big"], ["big2"], {"op0": "add"}), **BIG) == 300
    # tensor_tensor_scan: max(MIN_II, 2N)
    assert _cycles(_ins("dve", "tensor_tensor_scan", ["big", "big2"], ["big"], {}), **BIG) == 600
    assert _cycles(_ins("dve", "tensor_tensor_scan", ["col", "col2"], ["col"], {})) == 64
    # bn_stats: N (the one-input DVE rule); bn_aggr: max(MIN_II, 13 N / 3) of its input
    assert _cycles(_ins("dve", "bn_stats", ["big"], [{"tensor": "y", "pattern": [[1, 6]]}]), **BIG) == 300
    assert _cycles(_ins("dve", "bn_aggr", ["stats"], ["col"]), **BIG) == 13 * 300 / 3
    assert _cycles(_ins("dve", "bn_aggr", [{"tensor": "y", "pattern": [[1, 12]]}], ["col"])) == 64
    # tensor_reduce over chosen axes costs its input's N like before
    assert _cycles(_ins("dve", "tensor_reduce", [{"tensor": "big", "pattern": [[30, 10], [1, 30]]}],
                        [{"tensor": "big2", "pattern": [[1, 10]]}], {"axis": 2}), **BIG) == 300


def test_listing_names_operand_tiles_by_read():
    from neuronsim.machine.formats.listing import render_listing

    inst = GOOD[2]  # tensor_scalar with two operand tiles
    text = render_listing(parse_program(_doc(inst)))
    assert "operand0=reads[1]" in text and "operand1=reads[2]" in text and "'read'" not in text
