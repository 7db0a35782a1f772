"""Current-API (``nki``) kernels traced, compiled and simulated against numpy references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronsim.machine.ir.program import Loop
from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import f32, kernel, run, sources


def test_add_unrolls_loops_and_records_sources():
    a, b = f32(256, 64), f32(256, 64, seed=1)
    traced = trace(kernel("current_ops.py::add"), a, b)
    assert not any(isinstance(node, Loop) for node, _ in traced.program.walk())  # current API: unrolled
    src = sources(traced)
    assert src[0] == {"file": "tests/nki/kernels/current_ops.py", "line": 12, "call": "nl.load", "indices": {"i": 0}}
    assert {s["indices"]["i"] for s in src} == {0, 1}
    assert traced.outputs == ("return0",) and set(traced.inputs) == {"a", "b"}
    np.testing.assert_allclose(run(kernel("current_ops.py::add"), a, b, seeds=(None, 1))["return0"], a + b)


def test_matmul_accumulates_into_psum():
    lhs, rhs = f32(256, 64), f32(256, 32, seed=2)
    traced = trace(kernel("current_ops.py::matmul"), lhs, rhs)
    matmuls = [i for i, _ in traced.program.instructions() if i.op == "matmul"]
    assert [m.attrs["accumulate"] for m in matmuls] == [False, True]
    assert matmuls[1].extras.get("x-nki-accumulate") is True
    np.testing.assert_allclose(run(kernel("current_ops.py::matmul"), lhs, rhs)["return0"], lhs.T @ rhs, atol=1e-4)


def test_rmsnorm_engines():
    x, w = f32(256, 64), f32(64, seed=3)
    traced = trace(kernel("current_ops.py::rmsnorm"), x, w)
    engines = {(i.op, i.engine) for i, _ in traced.program.instructions()}
    assert ("activation", "act") in engines and ("tensor_tensor", "pool") in engines
    ref = x / np.sqrt((x ** 2).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(run(kernel("current_ops.py::rmsnorm"), x, w)["return0"], ref, atol=1e-4)


def test_spmd_grid_runs_each_instance():
    x = f32(128, 16)
    traced = trace(kernel("current_ops.py::spmd_scale")[4], x)
    assert {i.attrs.get("operand0") for i, _ in traced.program.instructions() if i.op == "tensor_scalar"} == \
        {1.0, 2.0, 3.0, 4.0}
    expected = x * np.repeat([1, 2, 3, 4], 32)[:, None]
    np.testing.assert_allclose(run(kernel("current_ops.py::spmd_scale"), x, grid=(4,))["return0"], expected)


def test_address_places_tensors():
    x = f32(64, 32)
    traced = trace(kernel("current_ops.py::placed_copy"), x)
    tensors = traced.program.tensors
    assert (tensors["buf_72"].partition, tensors["buf_72"].offset) == (0, 1024)  # <var>_<line>
    assert (tensors["acc_73"].bank, tensors["acc_73"].offset) == (2, 0)
    assert any(np.array_equal(v, np.eye(64, dtype=np.float32)) for v in traced.inputs.values())
    np.testing.assert_allclose(run(kernel("current_ops.py::placed_copy"), x)["return0"], x, atol=1e-6)


def test_access_pattern_transposes():
    x = f32(4, 8)
    np.testing.assert_allclose(run(kernel("current_ops.py::access_pattern"), x)["return0"], x.T + 1)


def test_softmax_with_reductions():
    x = f32(128, 32)
    e = np.exp(x - x.max(1, keepdims=True))
    out = run(kernel("current_ops.py::softmax_rows"), x)["return0"]
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), atol=1e-5)


def test_bf16_output_and_gelu():
    x = f32(64, 32)
    out = run(kernel("current_ops.py::bf16_gelu"), x)["return0"]
    assert out.dtype.name == "bfloat16"
    ref = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))  # nl.gelu: the erf form
    np.testing.assert_allclose(out.astype(np.float32), ref, atol=1e-2)


@pytest.mark.parametrize("machine, factor", [("trn1", 2.0), ("trn2", 3.0)])
def test_nc_version_follows_machine(machine, factor):
    x = f32(32, 8)
    out = run(kernel("current_ops.py::nc_version_branch"), x, machine=machine)["return0"]
    np.testing.assert_allclose(out, x * factor)


def test_affine_select_and_iota_pattern():
    s = f32(128, 128)
    ref = np.where(np.tril(np.ones((128, 128), bool)), s, -9984.0) + np.arange(128)[None, :]
    np.testing.assert_allclose(run(kernel("current_ops.py::causal_mask"), s)["return0"], ref)


def test_psum_group_restarts_after_its_result_is_read():
    lhs, rhs = f32(256, 64), f32(256, 32, seed=2)
    traced = trace(kernel("current_ops.py::psum_reused"), lhs, rhs)
    assert [i.attrs["accumulate"] for i, _ in traced.program.instructions() if i.op == "matmul"] == \
        [False, True, False, True]
    out = run(kernel("current_ops.py::psum_reused"), lhs, rhs)["return0"]
    np.testing.assert_allclose(out[1], 2 * (lhs.T @ rhs), atol=1e-4)


def test_blocked_matmul_with_tile_lists():
    lhs, rhs = f32(512, 512), f32(512, 256, seed=8)
    out = run(kernel("current_ops.py::blocked_matmul"), lhs, rhs, seeds=(None, 4))["return0"]
    np.testing.assert_allclose(out, lhs.T @ rhs, atol=1e-3)


def test_scan_with_carry_and_annotations():
    x = f32(64, 32)
    np.testing.assert_allclose(run(kernel("current_ops.py::running_total"), x)["return0"], np.cumsum(x, 1), atol=1e-5)


def test_access_pattern_pooling():
    x = f32(4, 6, 8)
    ref = x.reshape(4, 3, 2, 4, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(run(kernel("current_ops.py::pool_by_access_pattern"), x, size=2)["return0"], ref,
                               rtol=1e-6)


def test_broadcast_of_a_table_row_at_any_partition():
    """``nl.broadcast_to`` of row 3 of a (25, K) SBUF table: the page puts no limit on where the
    row is; neuronsim's lowering (a PE matmul against ones) read it at partition 3, which no
    engine access may start at, and refused a legal kernel.  The row goes to a tile of its own
    by DMA first now."""
    tab = np.arange(25 * 40, dtype=np.float32).reshape(25, 40) / 7
    for row in (0, 3, 24):
        out = run(kernel("current_ops.py::table_row_broadcast"), tab, row=row)["return0"]
        np.testing.assert_array_equal(out, np.broadcast_to(tab[row], (128, 40)))
