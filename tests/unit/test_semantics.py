"""Numerics of every op (neuronsim.machine.model.semantics) and the functional memory (neuronsim.machine.sim.memory).

Each op is checked against an independent numpy computation; memory views against the
footprint geometry (the bytes a view touches are exactly the access's footprint); and whole
programs against numpy through the sequential reference and timed runs.
"""

from __future__ import annotations

import math
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.formats.program_json import load_program, parse_program
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.sim.memory import UNINITIALISED_BYTE_LIMIT, DramLayout, Memory, access_view, initial_memory
from neuronsim.machine.model.optable import ACTIVATION_FUNCS, ALU_OPS, BITVEC_OPS, OP_TABLE, UNARY_ALU_OPS
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.model.execute import execute
from neuronsim.machine.model.semantics import ACTIVATIONS, ALU, cast, opaque_bytes
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential, simulate
from neuronsim.verify.strategies import tensors_and_access

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32
EXAMPLES = "examples"


def _rand(shape, seed=0, lo=-1.0, hi=1.0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def _run(op, attrs, reads, out_shape, out_dtype=np.float32, engine="dve", out_init=None, state=None):
    out = np.zeros(out_shape, out_dtype) if out_init is None else out_init.copy()
    return execute(op, attrs, engine, reads, [out], state)


# -- op by op --------------------------------------------------------------------------------
def test_every_table_op_and_function_has_a_meaning():
    assert set(ACTIVATIONS) == set(ACTIVATION_FUNCS)
    assert set(ALU) == set(ALU_OPS) | set(UNARY_ALU_OPS)
    assert {"dma_copy", "matmul", "transpose", "activation", "tensor_tensor", "tensor_scalar", "tensor_reduce",
            "tensor_copy", "memset", "iota", "set_rand_state", "random"} <= set(OP_TABLE)


def test_matmul_is_stationary_transposed_times_moving_in_fp32():
    stationary, moving = _rand((64, 32), 1, dtype=BF16), _rand((64, 48), 2, dtype=BF16)
    (got,) = _run("matmul", {}, [stationary, moving], (32, 48), engine="pe")
    want = stationary.astype(F32).T @ moving.astype(F32)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32


def test_matmul_accumulates_into_the_existing_psum_contents():
    stationary, moving = _rand((16, 8), 3), _rand((16, 4), 4)
    before = _rand((8, 4), 5)
    (got,) = _run("matmul", {"accumulate": True}, [stationary, moving, before], (8, 4), engine="pe", out_init=before)
    np.testing.assert_allclose(got, before + stationary.T @ moving, rtol=1e-6)
    (fresh,) = _run("matmul", {"accumulate": False}, [stationary, moving], (8, 4), engine="pe", out_init=before)
    np.testing.assert_allclose(fresh, stationary.T @ moving, rtol=1e-6)


def test_matmul_bf16_output_rounds_to_nearest_even():
    stationary, moving = _rand((8, 4), 6), _rand((8, 4), 7)
    (got,) = _run("matmul", {}, [stationary, moving], (4, 4), out_dtype=BF16, engine="pe")
    assert got.dtype == BF16
    np.testing.assert_array_equal(got, (stationary.T @ moving).astype(BF16))


def test_transpose_swaps_partitions_and_free_elements():
    data = _rand((8, 2, 3), 8)  # an access of element shape (P, c0, c1) is [P, c0*c1]
    (got,) = _run("transpose", {}, [data], (6, 8), engine="pe")
    np.testing.assert_array_equal(got, data.reshape(8, 6).T)


@pytest.mark.parametrize("func", ACTIVATION_FUNCS)
def test_activation_functions(func):
    x = _rand((4, 16), 9, lo=0.1, hi=2.0)
    (got,) = _run("activation", {"func": func, "scale": 0.5, "bias": 0.25}, [x], (4, 16), engine="act")
    z = (x * F32(0.5) + F32(0.25)).astype(np.float64)
    reference = {
        "identity": z, "copy": z, "exp": np.exp(z), "log": np.log(z), "tanh": np.tanh(z),
        "sigmoid": 1 / (1 + np.exp(-z)), "relu": np.maximum(z, 0),
        "gelu": 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2))),
        "gelu_apprx_tanh": 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3))),
        "gelu_dx": (0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
                    + z * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)),
        "gelu_apprx_sigmoid_dx": (1 / (1 + np.exp(-1.702 * z))) * (1 + 1.702 * z * (1 - 1 / (1 + np.exp(-1.702 * z)))),
        "erf": np.vectorize(math.erf)(z), "erf_dx": 2 / math.sqrt(math.pi) * np.exp(-z * z), "tan": np.tan(z),
        "silu": z / (1 + np.exp(-z)), "gelu_apprx_sigmoid": z / (1 + np.exp(-1.702 * z)), "square": z * z,
        "sqrt": np.sqrt(z), "rsqrt": 1 / np.sqrt(z),
        "reciprocal": 1 / z, "abs": np.abs(z), "sign": np.sign(z), "neg": -z,
        "silu_dx": (1 / (1 + np.exp(-z))) * (1 + z * (1 - 1 / (1 + np.exp(-z)))), "softplus": np.log1p(np.exp(z)),
        "mish": z * np.tanh(np.log1p(np.exp(z))), "sin": np.sin(z), "cos": np.cos(z), "arctan": np.arctan(z),
        "floor": np.floor(z), "ceil": np.ceil(z), "trunc": np.trunc(z),
    }[func]
    np.testing.assert_allclose(got, reference, rtol=2e-6, atol=1e-7)


def test_activation_per_partition_bias_tile_by_shorthand():
    x, bias = _rand((4, 5), 10), _rand((4, 1), 11)
    (got,) = _run("activation", {"func": "identity", "scale": 2.0}, [x, bias], (4, 5), engine="act")
    np.testing.assert_allclose(got, x * 2.0 + bias, rtol=1e-6)


@pytest.mark.parametrize("op", [op for op in ALU_OPS if op not in BITVEC_OPS])
def test_tensor_tensor_ops(op):
    a, b = _rand((4, 8), 12, 0.5, 2.0), _rand((4, 8), 13, 0.5, 2.0)
    b[:, :2] = a[:, :2]  # ties, for the comparisons
    if op.startswith("logical"):
        b[0, 3] = 0.0  # a zero (false) among the non-zero (true) values
    (got,) = _run("tensor_tensor", {"op": op}, [a, b], (4, 8))
    truth = {"equal": a == b, "not_equal": a != b, "greater": a > b, "greater_equal": a >= b, "less": a < b,
             "less_equal": a <= b, "logical_and": b != 0, "logical_or": np.ones_like(a, bool),
             "logical_xor": b == 0}
    with np.errstate(divide="ignore", invalid="ignore"):
        want = {"add": a + b, "subtract": a - b, "multiply": a * b, "divide": a / b, "max": np.maximum(a, b),
                "min": np.minimum(a, b), "pow": a**b, "bypass": a, "abs": np.abs(a), "mod": np.mod(a, b),
                "fmod": np.fmod(a, b), "abs_max": np.where(np.abs(a) > np.abs(b), a, b),
                "abs_min": np.where(np.abs(a) < np.abs(b), a, b),
                **{name: mask.astype(np.float32) for name, mask in truth.items()}}[op]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("op", BITVEC_OPS)
def test_bitvec_ops_compute_on_the_integers(op):
    """Beyond fp32's 24 bits, and stored by their low bits (no saturation)."""
    rng = np.random.default_rng(14)
    a = rng.integers(0, 2**32, (4, 8), dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 31, (4, 8), dtype=np.uint64).astype(np.uint32) if op.endswith("shift") else \
        rng.integers(0, 2**32, (4, 8), dtype=np.uint64).astype(np.uint32)
    (got,) = _run("tensor_tensor", {"op": op}, [a, b], (4, 8), out_dtype=np.uint32)
    want = {"bitwise_and": a & b, "bitwise_or": a | b, "bitwise_xor": a ^ b,
            "left_shift": (a.astype(np.uint64) << b).astype(np.uint32), "right_shift": a >> b}[op]
    np.testing.assert_array_equal(got, want)


def test_tensor_tensor_in_bf16_rounds_once_from_fp32():
    a, b = _rand((2, 64), 14, dtype=BF16), _rand((2, 64), 15, dtype=BF16)
    (got,) = _run("tensor_tensor", {"op": "multiply"}, [a, b], (2, 64), out_dtype=BF16)
    np.testing.assert_array_equal(got, (a.astype(F32) * b.astype(F32)).astype(BF16))


def test_tensor_scalar_with_both_ops_reverse_and_a_per_partition_scalar():
    x = _rand((4, 6), 16, 0.5, 2.0)
    (got,) = _run("tensor_scalar", {"op0": "multiply", "operand0": 3.0, "op1": "add", "operand1": -1.0}, [x], (4, 6))
    np.testing.assert_allclose(got, x * 3 - 1, rtol=1e-6)
    (rev,) = _run("tensor_scalar", {"op0": "subtract", "operand0": 2.0, "reverse": True}, [x], (4, 6))
    np.testing.assert_allclose(rev, 2 - x, rtol=1e-6)
    scale = _rand((4, 1), 17)
    (per,) = _run("tensor_scalar", {"op0": "divide"}, [x, scale], (4, 6))
    np.testing.assert_allclose(per, x / scale, rtol=1e-6)
    (none,) = _run("tensor_scalar", {}, [x], (4, 6))
    np.testing.assert_array_equal(none, x)


@pytest.mark.parametrize("op", ["add", "max", "min", "multiply"])
def test_tensor_reduce_reduces_each_partition_and_fills_the_output_row(op):
    x = _rand((4, 10), 18, 0.5, 1.5)
    (got,) = _run("tensor_reduce", {"op": op, "negate": True}, [x], (4, 2))
    reduced = {"add": x.sum(1), "max": x.max(1), "min": x.min(1), "multiply": x.prod(1)}[op]
    np.testing.assert_allclose(got, -np.repeat(reduced[:, None], 2, axis=1), rtol=1e-5)


def test_copies_cast_and_memset_iota_fill():
    x = _rand((4, 8), 19)
    (copy,) = _run("tensor_copy", {}, [x], (4, 8), out_dtype=BF16)
    np.testing.assert_array_equal(copy, x.astype(BF16))
    (same,) = _run("dma_copy", {}, [x.reshape(32)], (4, 8))  # DRAM side is flat: reshaped row-major
    np.testing.assert_array_equal(same, x)
    (zeros,) = _run("memset", {"value": 2.5}, [], (4, 8), out_dtype=BF16)
    assert (zeros.astype(F32) == 2.5).all()
    attrs = {"base": 3, "step": 2, "partition_step": 100}
    (iota,) = _run("iota", attrs, [], (3, 2, 2), out_dtype=np.int32, engine="pool")
    want = 3 + 100 * np.arange(3)[:, None] + 2 * np.arange(4)[None, :]
    np.testing.assert_array_equal(iota.reshape(3, 4), want)


def test_fp8_casts_follow_ml_dtypes():
    x = np.array([[0.3, -1.7, 250.0, 1e-3]], np.float32)
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        (got,) = _run("tensor_copy", {}, [x], (1, 4), out_dtype=np.dtype(dtype))
        np.testing.assert_array_equal(got, x.astype(dtype))


def test_cast_to_integers_rounds_half_even_saturates_and_zeroes_nan():
    got = cast(np.array([0.5, 1.5, -2.5, 1e10, -1e10, np.nan], np.float32), np.dtype(np.int16))
    assert got.tolist() == [0, 2, -2, 32767, -32768, 0]
    assert cast(np.array([300, -5]), np.dtype(np.uint8)).tolist() == [255, 0]


def test_shapes_that_do_not_agree_are_filled_row_major_never_an_error():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = _run("tensor_copy", {}, [a], (2, 4))
    assert got.ravel().tolist() == [0, 1, 2, 3, 4, 5, 0, 1]
    (mm,) = _run("matmul", {}, [np.ones((4, 2), F32), np.ones((3, 2), F32)], (2, 2), engine="pe")
    assert (mm == 3).all()  # contracts over the first min(K, K') partitions


def test_random_is_per_engine_and_reseeded_by_set_rand_state():
    state = Memory([np.zeros(0, np.uint8)] * 3, DramLayout({}, 0), 128, rng_seed=7)
    (first,) = _run("random", {"low": -2.0, "high": 2.0}, [], (4, 4), state=state)
    assert ((first >= -2) & (first < 2)).all()
    execute("set_rand_state", {"seed": 99}, "dve", [], [], state)
    (a,) = _run("random", {}, [], (4, 4), state=state)
    (other,) = _run("random", {}, [], (4, 4), state=state, engine="pool")
    execute("set_rand_state", {"seed": 99}, "dve", [], [], state)
    (b,) = _run("random", {}, [], (4, 4), state=state)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.random.default_rng(99).random((4, 4), dtype=np.float32))
    assert not np.array_equal(a, other)
    fresh = state.copy()
    (again,) = _run("random", {"low": -2.0, "high": 2.0}, [], (4, 4), state=fresh)
    np.testing.assert_array_equal(again, first)


def test_opaque_ops_depend_on_name_and_every_read_byte_only():
    reads = [np.arange(8, dtype=np.int32), _rand((2, 2), 20)]
    out = np.zeros((3, 5), np.float32)
    one = execute("my_kernel", {"cycles": 5}, "dve", reads, [out, np.zeros(4, np.uint8)], None)
    two = execute("my_kernel", {}, "act", [r.copy() for r in reads], [out, np.zeros(4, np.uint8)], None)
    for x, y in zip(one, two):
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
    assert np.isfinite(one[0]).all() and (one[0].view(np.uint8) < 64).all()
    changed = [reads[0].copy(), reads[1]]
    changed[0][3] += 1
    assert not np.array_equal(execute("my_kernel", {}, "dve", changed, [out], None)[0], one[0])
    assert not np.array_equal(execute("other_kernel", {}, "dve", reads, [out], None)[0], one[0])
    assert np.array_equal(opaque_bytes("k", 1, reads, 16), opaque_bytes("k", 1, reads, 16))


# -- memory ----------------------------------------------------------------------------------
@given(tensors_and_access())
def test_a_view_touches_exactly_the_footprint(case):
    """Oracle: write through the view, then read the touched bytes off the raw memory."""
    tensor, access, loops = case
    program = Program({tensor.name: tensor})
    spec = resolve_machine("trn1")
    layout = DramLayout.of(program)
    iteration = {name: trip - 1 for name, trip in loops}
    where = access_view(tensor, access, iteration, spec, layout)
    rows = spec.sbuf_partitions
    sizes = (rows * layout.sbuf_row, rows * layout.psum_row, layout.size)
    memory = Memory([np.zeros(n, np.uint8) for n in sizes], layout, spec.sbuf_partitions, 0)
    raw = replace(where, dtype=np.dtype(f"V{where.dtype.itemsize}"))  # same bytes, no float canonicalisation
    memory.view(raw)[...] = np.frombuffer(b"\xff" * where.dtype.itemsize, raw.dtype)[0]
    fp = footprint(tensor, access, iteration)
    space = memory.spaces[{MemoryKind.SBUF: 0, MemoryKind.PSUM: 1, MemoryKind.DRAM: 2}[tensor.memory]]
    if tensor.memory == MemoryKind.DRAM:
        touched = set(np.flatnonzero(space).tolist())
        base = layout.base[tensor.name] - (tensor.address or 0)
        expected = {base + b for lo, hi in fp.bytes for b in range(lo, hi)}
    else:
        row = layout.sbuf_row if tensor.memory == MemoryKind.SBUF else layout.psum_row
        assert row >= tensor.byte_base + tensor.bytes_per_partition  # the rows hold the tensor
        touched = set(np.flatnonzero(space).tolist())
        parts = [p for p in range(128) if fp.partitions >> p & 1]
        expected = {p * row + b for p in parts for lo, hi in fp.bytes for b in range(lo, hi)}
    assert touched == expected


def test_initial_memory_is_a_finite_seeded_pattern_with_inputs_in_place():
    program = load_program(f"{EXAMPLES}/matmul_k_loop.json")
    spec = resolve_machine(program.machine)
    x = np.arange(4 * 128 * 128, dtype=np.float32).reshape(4, 128, 128) / 1000
    memory = initial_memory(program, spec, data_seed=3, inputs={"x": x})
    again = initial_memory(program, spec, data_seed=3, inputs={"x": x})
    other = initial_memory(program, spec, data_seed=4, inputs={"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(memory.spaces, again.spaces))
    assert not np.array_equal(memory.spaces[0], other.spaces[0])
    assert memory.spaces[0].max() < UNINITIALISED_BYTE_LIMIT and memory.spaces[1].max() < UNINITIALISED_BYTE_LIMIT
    for name in ("float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"):
        dtype = numpy_dtype(name)
        values = memory.spaces[0][: 4096 * dtype.itemsize].view(dtype).astype(np.float64)
        assert np.isfinite(values).all() and (values >= 0).all() and (values < 4).all()
    got = np.frombuffer(memory.tensor_bytes(program.tensors["x"]), BF16).reshape(4, 128, 128)
    np.testing.assert_array_equal(got, x.astype(BF16))
    w = np.frombuffer(memory.tensor_bytes(program.tensors["w"]), BF16)
    assert ((w >= -1) & (w <= 1)).all() and len(np.unique(w)) > 100  # [-1, 1) before rounding to bf16
    # an output may be given its initial values (a tensor updated in place); an internal or
    # on-chip tensor may not
    out = np.full(program.tensors["out"].shape, 0.5, np.float32)
    given = initial_memory(program, spec, data_seed=3, inputs={"x": x, "out": out})
    got_out = np.frombuffer(given.tensor_bytes(program.tensors["out"]), numpy_dtype(program.tensors["out"].dtype))
    assert (got_out.astype(np.float32) == 0.5).all()
    assert np.array_equal(given.spaces[0], memory.spaces[0])  # the seeded inputs drew the same values
    with pytest.raises(Exception, match="role 'input' or 'output'"):
        initial_memory(program, spec, inputs={"xs": x})
    with pytest.raises(Exception, match="elements"):
        initial_memory(program, spec, inputs={"x": x[:2]})


def test_alias_groups_share_one_base_after_the_addressed_tensors():
    doc = {"format": "neuronsim.program/1", "tensors": {
        "a": {"memory": "dram", "dtype": "float32", "shape": [10], "address": 5000},
        "g": {"memory": "dram", "dtype": "float32", "shape": [8], "alias": "G"},
        "h": {"memory": "dram", "dtype": "int8", "shape": [64], "alias": "G"},
        "k": {"memory": "dram", "dtype": "int8", "shape": [4], "alias": "K"}}, "body": []}
    layout = DramLayout.of(parse_program(doc))
    assert layout.base["a"] == 5000
    assert layout.base["g"] == layout.base["h"] == 8192
    assert layout.base["k"] == 12288 and layout.size == 12292


# -- whole programs --------------------------------------------------------------------------
def test_matmul_k_loop_computes_the_k_sum_of_its_inputs():
    program = load_program(f"{EXAMPLES}/matmul_k_loop.json")
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (4, 128, 128)).astype(BF16)
    w = rng.uniform(-1, 1, (4, 128, 128)).astype(BF16)
    sim = simulate(program, seeds=[None, 1], inputs={"x": x, "w": w}, compare="all")
    assert not sim.differs

    plan = build_plan(program)
    memory = run_sequential(plan, initial_memory(program, plan.spec, inputs={"x": x, "w": w}))
    out = np.frombuffer(memory.tensor_bytes(program.tensors["out"]), np.float32).reshape(128, 128)
    want = np.zeros((128, 128), np.float32)
    for k in range(4):  # fp32 accumulation in PSUM, one k at a time
        want = want + w[k].astype(F32).T @ x[k].astype(F32)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@given(st.sampled_from(["float32", "bfloat16", "float8_e4m3"]), st.integers(1, 3))
def test_psum_accumulation_group_through_the_simulator(dtype, steps):
    """A PE accumulation group over ``steps`` K tiles, drained to DRAM by a DMA of the PSUM copy."""
    body = []
    for k in range(steps):
        body.append({"name": f"mm{k}", "engine": "pe", "op": "matmul",
                     "reads": [{"tensor": "a", "partitions": [0, 32], "offset": 8 * k, "pattern": [[1, 8]]},
                               {"tensor": "b", "partitions": [0, 32], "offset": 4 * k, "pattern": [[1, 4]]},
                               *([{"tensor": "acc"}] if k else [])],
                     "writes": [{"tensor": "acc"}], "attrs": {"accumulate": k > 0},
                     "deps": [{"on": f"mm{k - 1}"}] if k else []})
    body.append({"name": "drain", "engine": "act", "op": "tensor_copy", "reads": [{"tensor": "acc"}],
                 "writes": [{"tensor": "y"}], "deps": [{"on": f"mm{steps - 1}"}]})
    body.append({"name": "store", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "y"}],
                 "writes": [{"tensor": "out"}], "deps": [{"on": "drain"}]})
    doc = {"format": "neuronsim.program/1", "tensors": {
        "a": {"memory": "sbuf", "dtype": dtype, "shape": [32, 24], "partition": 0, "offset": 0},
        "b": {"memory": "sbuf", "dtype": dtype, "shape": [32, 12], "partition": 0, "offset": 1024},
        "acc": {"memory": "psum", "dtype": "float32", "shape": [8, 4], "partition": 0, "bank": 1},
        "y": {"memory": "sbuf", "dtype": "float32", "shape": [8, 4], "partition": 0, "offset": 2048},
        "out": {"memory": "dram", "dtype": "float32", "shape": [8, 4], "address": 0, "role": "output"}},
        "body": body}
    program = parse_program(doc)
    sim = simulate(program, seeds=[None, 5])
    assert not sim.differs
    plan = build_plan(program)
    start = initial_memory(program, plan.spec)
    element = numpy_dtype(dtype)
    a = np.frombuffer(start.tensor_bytes(program.tensors["a"]), element).reshape(32, 24)
    b = np.frombuffer(start.tensor_bytes(program.tensors["b"]), element).reshape(32, 12)
    want = np.zeros((8, 4), np.float32)
    for k in range(steps):
        want = want + a[:, 8 * k:8 * k + 8].astype(F32).T @ b[:, 4 * k:4 * k + 4].astype(F32)
    done = run_sequential(plan, start)
    got = np.frombuffer(done.tensor_bytes(program.tensors["out"]), np.float32).reshape(8, 4)
    np.testing.assert_allclose(got, want, rtol=1e-6)
