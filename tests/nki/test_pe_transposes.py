"""PE transposes of public kernels (probe_au): ``nc_matmul(is_transpose=True)`` is the matmul
it computes on NeuronCore-v2, where the flag only labels it for the profiler (it was refused
as a transpose whose shape disagreed), and is refused from v3 unless its moving tile is shaped
as the identity; a legacy ``nc_transpose`` assigned to an SBUF tile runs on PE, staged through
PSUM (``engine=nisa.tensor_engine`` was refused, and without an engine a 128 x 128 tile went to
the Vector Engine, which transposes 32 x 32 at most)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_labelled_transpose_with_another_moving_tile_is_the_matmul_on_trn1():
    q, k = f32(128, 128), f32(128, 512, seed=1)
    ops = [i.op for i, _ in trace(kernel("pe_transposes.py::scores_labelled_transpose"), q, k).program.instructions()]
    assert "matmul" in ops and "transpose" not in ops, ops
    out = run(kernel("pe_transposes.py::scores_labelled_transpose"), q, k)["return0"]
    np.testing.assert_allclose(out, q.T @ k, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("moving", ["random", "identity"])
def test_a_square_moving_tile_on_trn1_is_the_matmul_whatever_it_holds(moving):
    # (a square one was taken for the identity: attention's 128-row K tiles came out as q.T, probe_av)
    q = f32(128, 64)
    k = f32(128, 128, seed=1) if moving == "random" else np.eye(128, dtype=np.float32)
    out = run(kernel("pe_transposes.py::scores_labelled_transpose"), q, k)["return0"]
    np.testing.assert_allclose(out, q.T @ k, rtol=1e-4, atol=1e-4)


def test_transpose_mode_on_trn2_takes_the_identity_shaped_moving_tile_for_the_identity():
    q, eye = f32(128, 64), np.eye(128, dtype=np.float32)
    program = trace(kernel("pe_transposes.py::scores_labelled_transpose"), q, eye, machine="trn2").program
    assert [i.op for i, _ in program.instructions() if i.engine == "pe"] == ["transpose"]


def test_transpose_mode_from_v3_needs_the_identity_s_shape():
    q, k = f32(128, 128), f32(128, 512, seed=1)
    expected = r"pe_transposes.py:14: .*transpose mode .* identity moving tile of \(128, 128\)"
    with pytest.raises(NkiError, match=expected):
        trace(kernel("pe_transposes.py::scores_labelled_transpose"), q, k, machine="trn2")


@pytest.mark.parametrize("engine, shape, engines", [
    ("pe", (128, 128), ["pe", "act"]), ("none", (128, 128), ["pe", "act"]), ("none", (128, 96), ["pe", "act"]),
    ("none", (32, 32), ["dve"]), ("dve", (32, 16), ["dve"]),
])
def test_a_legacy_transpose_assigned_to_sbuf(engine, shape, engines):
    x = f32(*shape)
    program = trace(kernel("pe_transposes.py::transposed_into_sbuf"), x, engine=engine).program
    on_chip = [i.engine for i, _ in program.instructions() if not i.is_dma]
    assert on_chip == engines, on_chip
    out = run(kernel("pe_transposes.py::transposed_into_sbuf"), x, engine=engine)["return0"]
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("func, kw", [("int_transposed", {}), ("transposed_into_sbuf", {"engine": "pe"})])
def test_an_int32_pe_transpose_is_bit_accurate_from_v3(func, kw):
    # staged through a float32 PSUM tile, values above 2**24 came back rounded (vLLM's block
    # table kernel, probe_aw); the nc_transpose page makes PE transposes bit-accurate from v3
    a = (np.arange(128 * 128, dtype=np.int64).reshape(128, 128) + 2**25 + 1).astype(np.int32)
    out = run(kernel(f"pe_transposes.py::{func}"), a, machine="trn2", **kw)["return0"]
    np.testing.assert_array_equal(out, a.T)
