"""Legacy-API (``neuronxcc.nki``) kernels traced, compiled and simulated against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.ir.program import Loop, Rotation
from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import f32, kernel, run, sources


def _loops(traced):
    return [node for node, _ in traced.program.walk() if isinstance(node, Loop)]


def test_masked_tail_unrolls_the_loop():
    a, b = f32(300, 64), f32(300, 64, seed=1)
    traced = trace(kernel("legacy_ops.py::add_masked"), a, b)
    assert not _loops(traced)  # the mask depends on t: unrolled
    loads = [i for i, _ in traced.program.instructions() if i.op == "dma_copy" and i.writes[0].tensor != "return0"]
    assert loads[-1].writes[0].partitions == (0, 300 - 256, 1)
    np.testing.assert_allclose(run(kernel("legacy_ops.py::add_masked"), a, b)["return0"], a + b)


def test_affine_loop_kept():
    a = f32(256, 32)
    traced = trace(kernel("legacy_ops.py::scale_rows"), a)
    (loop,) = _loops(traced)
    assert (loop.trip_count, dict(loop.extras)) == (2, {"x-nki-range": "affine"})
    assert all(s["indices"] == {"t": "t"} for s in sources(traced))
    np.testing.assert_allclose(run(kernel("legacy_ops.py::scale_rows"), a, seeds=(None, 3))["return0"], a * 3)


def test_psum_accumulation_in_affine_loop():
    lhs, rhs = f32(256, 64), f32(256, 32, seed=2)
    traced = trace(kernel("legacy_ops.py::matmul_psum"), lhs, rhs)
    (loop,) = _loops(traced)
    (mm,) = [i for i in loop.body if i.op == "matmul"]
    assert mm.attrs["accumulate"] is True and mm.extras["x-nki-accumulate"] is True
    np.testing.assert_allclose(run(kernel("legacy_ops.py::matmul_psum"), lhs, rhs)["return0"], lhs.T @ rhs, atol=1e-4)


def test_sequential_range_carries_a_sum():
    a = f32(384, 32)
    traced = trace(kernel("legacy_ops.py::running_sum"), a)
    (loop,) = _loops(traced)
    assert loop.extras["x-nki-range"] == "sequential"
    (add,) = [i for i in loop.body if i.op == "tensor_tensor"]
    assert add.extras["x-nki-accumulate"] is True
    out = run(kernel("legacy_ops.py::running_sum"), a)["return0"]
    np.testing.assert_allclose(out, a.reshape(3, 128, 32).sum(0), atol=1e-5)


def test_non_affine_body_unrolls():
    a = f32(256, 32)
    traced = trace(kernel("legacy_ops.py::first_block_special"), a)
    assert not _loops(traced)
    assert [s["indices"] for s in sources(traced)][::3] == [{"t": 0}, {"t": 1}]
    ref = a.copy()
    ref[:128] *= 10
    np.testing.assert_allclose(run(kernel("legacy_ops.py::first_block_special"), a)["return0"], ref)


def test_mod_alloc_rotates_over_the_loop():
    a = f32(512, 32)
    traced = trace(kernel("legacy_ops.py::mod_alloc_copy"), a)
    (buf,) = [t for t in traced.program.tensors.values() if t.memory.name == "SBUF"]
    assert (buf.partition, buf.offset, buf.rotate) == (0, 0, Rotation("t", 2, 128)) and buf.name.endswith("_rot")
    np.testing.assert_allclose(run(kernel("legacy_ops.py::mod_alloc_copy"), a)["return0"], a)


def test_psum_mod_alloc_slots_by_bank():
    lhs, rhs = f32(128, 128), f32(128, 64, seed=2)
    traced = trace(kernel("legacy_ops.py::psum_banks"), lhs, rhs)
    banks = {n: t.bank for n, t in traced.program.tensors.items() if t.memory.name == "PSUM"}
    assert banks == {"ps_92_b0": 2, "ps_92_b1": 3, "ps_92_b2": 2, "ps_92_b3": 3}  # a tile per block, on its slot
    out = run(kernel("legacy_ops.py::psum_banks"), lhs, rhs)["return0"]
    for j in range(4):
        np.testing.assert_allclose(out[j], (j + 1) * (lhs.T @ rhs), atol=1e-4)


def test_output_parameter_and_isa_mix():
    x, out = f32(128, 16), np.zeros((128, 16), np.float32)
    traced = trace(kernel("legacy_ops.py::isa_mix"), x, out)
    assert traced.outputs == ("out",) and list(traced.inputs) == ["x"]
    engines = {i.op: i.engine for i, _ in traced.program.instructions()}
    assert engines["iota"] == "pool" and engines["activation"] == "act" and engines["tensor_reduce"] == "dve"
    act = np.exp(x * 0.5 + 0.5)
    ref = act / act.sum(1, keepdims=True) + np.arange(16)[None, :]
    np.testing.assert_allclose(run(kernel("legacy_ops.py::isa_mix"), x, out)["out"], ref, atol=1e-5)


def test_matmul_transposes_on_pe():
    x, y = f32(64, 128), f32(128, 32, seed=4)
    traced = trace(kernel("legacy_ops.py::matmul_plain"), x, y)
    ops = [(i.op, i.engine) for i, _ in traced.program.instructions()]
    assert ("transpose", "pe") in ops and ("matmul", "pe") in ops
    np.testing.assert_allclose(run(kernel("legacy_ops.py::matmul_plain"), x, y)["return0"], x @ y, atol=1e-4)


def test_affine_select_causal_mask():
    s = f32(128, 128)
    traced = trace(kernel("legacy_ops.py::causal_mask"), s)
    (sel,) = [i for i, _ in traced.program.instructions() if i.op == "affine_select"]
    assert sel.engine == "pool" and dict(sel.attrs)["channel_multiplier"] == 1
    ref = np.where(np.tril(np.ones((128, 128), bool)), s, -9984.0)
    np.testing.assert_allclose(run(kernel("legacy_ops.py::causal_mask"), s)["return0"], ref)


def test_tiled_matmul_nested_kept_loops_race_free():
    lhs, rhs = f32(256, 256), f32(256, 1024, seed=2)
    traced = trace(kernel("legacy_ops.py::matmul_tiled"), lhs, rhs)
    # kt's first iteration is peeled: its matmul opens the PSUM group (machine/nki/groups.py)
    assert [(loop.name, loop.trip_count) for loop in _loops(traced)] == [("mt", 2), ("nt", 2), ("kt", 1)]
    first, mm = [i for i, _ in traced.program.instructions() if i.op == "matmul"]
    assert dict(first.extras["x-source"]["indices"]) == {"mt": "mt", "nt": "nt", "kt": 0}
    assert dict(mm.extras["x-source"]["indices"]) == {"mt": "mt", "nt": "nt", "kt": "kt+1"}
    scopes = {t.name.split("_")[0]: t.extras["x-nki-scope"] for t in traced.program.tensors.values()
              if t.memory.name != "DRAM" and "~first" not in t.name}
    assert scopes["res"] == ["mt", "nt"] and scopes["lhsT"] == ["mt", "nt", "kt"]  # where each tile was declared
    out = run(kernel("legacy_ops.py::matmul_tiled"), lhs, rhs, seeds=(None, 1, 2))["return0"]
    np.testing.assert_allclose(out, lhs.T @ rhs, atol=1e-3)


def test_alloc_function_places_blocks_and_fp8_output():
    import ml_dtypes

    x = f32(256, 16)
    traced = trace(kernel("legacy_ops.py::fn_alloc_fp8"), x)
    placed = sorted((t.partition, t.offset) for t in traced.program.tensors.values() if t.memory.name == "SBUF")
    assert placed == [(0, 4096), (0, 4096 + 64)]
    out = run(kernel("legacy_ops.py::fn_alloc_fp8"), x)["return0"]
    assert out.dtype == ml_dtypes.float8_e4m3  # nl.float8_e4m3: max 240, not OCP's e4m3fn
    np.testing.assert_array_equal(out, x.astype(ml_dtypes.float8_e4m3))


def test_grid_axes_partition_broadcast_and_reduction_broadcast():
    x, w = f32(300, 96), f32(96, seed=6)
    traced = trace(kernel("legacy_ops.py::scale_by_row_norm"), x, w)
    calls = {(i.op, i.engine, i.extras["x-source"]["call"]) for i, _ in traced.program.instructions()
             if i.op in ("matmul", "nc_stream_shuffle")}
    assert calls == {("matmul", "pe", "nl.broadcast_to")}  # the one-partition row reaches every partition on PE
    ref = x / np.abs(x).sum(1, keepdims=True) * w
    np.testing.assert_allclose(run(kernel("legacy_ops.py::scale_by_row_norm"), x, w)["return0"], ref, rtol=1e-5)


def test_bn_stats_chunks_masked_by_their_own_iterator():
    x = f32(128, 700)
    out = run(kernel("legacy_ops.py::stats_in_chunks"), x)["return0"]
    np.testing.assert_allclose(out[:, 0], x.mean(1), atol=1e-5)
    np.testing.assert_allclose(out[:, 1], x.var(1), atol=1e-5)


def test_store_follows_index_iterators():
    x = f32(128, 64)
    out = run(kernel("legacy_ops.py::transpose_by_indices"), x)["return0"]
    np.testing.assert_allclose(out, (x + x.sum(1, keepdims=True)).T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, cols", [(128, 128), (128, 64), (64, 128)])
@pytest.mark.parametrize("func", ["load_swapped", "store_swapped"])
def test_swapped_index_vectors_transpose_square_tiles_too(func, rows, cols):
    """A square tile loaded or stored through swapped vectors was copied straight (the tile took
    the view's iterators, or an untagged tile met the view's order: a probe of kernel mistakes)."""
    x = f32(rows, cols)
    np.testing.assert_array_equal(run(kernel(f"legacy_ops.py::{func}"), x)["return0"], x.T)


def test_plus_equals_into_a_fresh_psum_tile():
    lhs, rhs = f32(256, 64), f32(256, 32, seed=9)
    traced = trace(kernel("legacy_ops.py::fresh_psum_accumulate"), lhs, rhs)
    # the zeroing before the kept loop is dropped and kt's first iteration peeled: the group
    # opens with an overwriting matmul (machine/nki/groups.py)
    assert not [i for i, _ in traced.program.instructions() if i.op == "memset"]
    matmuls = [(dict(i.attrs)["accumulate"], loops[-1].name if loops else None)
               for i, loops in traced.program.instructions() if i.op == "matmul"]
    assert matmuls == [(False, None), (True, "kt"), (False, None), (True, "kt_1")]
    out = run(kernel("legacy_ops.py::fresh_psum_accumulate"), lhs, rhs)["return0"]
    for rep in range(2):
        np.testing.assert_allclose(out[rep], (rep + 1) * (lhs.T @ rhs), atol=1e-4)


def test_two_dimensional_grid_transposed_blocks():
    x = f32(128, 64)
    traced = trace(kernel("legacy_ops.py::grid_blocks")[2, 2], x)
    assert {s["indices"] == {} for s in sources(traced)} == {True}
    out = run(kernel("legacy_ops.py::grid_blocks"), x, grid=(2, 2))["return0"]
    ref = np.empty((64, 128), np.float32)
    for r in range(2):
        for c in range(2):
            blk = x[r * 64:(r + 1) * 64, c * 32:(c + 1) * 32].T
            e = np.exp(blk - blk.max(1, keepdims=True))
            ref[c * 32:(c + 1) * 32, r * 64:(r + 1) * 64] = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_python_lists_of_tiles_unroll_the_loops():
    x = f32(384, 16)
    traced = trace(kernel("legacy_ops.py::tiles_in_a_list"), x)
    assert not _loops(traced)
    np.testing.assert_allclose(run(kernel("legacy_ops.py::tiles_in_a_list"), x)["return0"], 2 * x)


def test_boolean_masks_keep_or_drop():
    x = f32(64, 8)
    traced = trace(kernel("legacy_ops.py::boolean_masks"), x)
    assert [i.attrs.get("operand0") for i, _ in traced.program.instructions() if i.op == "tensor_scalar"] == \
        [2.0, float(np.finfo(np.float32).min)]
    np.testing.assert_allclose(run(kernel("legacy_ops.py::boolean_masks"), x)["return0"], 2 * x)
