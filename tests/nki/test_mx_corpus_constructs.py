"""Constructs nki-library's MX kernels use, in small kernels of ours
(tests/nki/kernels/mx_reinterpret.py), against numpy written here:

* packed words handed over as integers and reinterpreted (``.view(dtype)``, ``.ap(dtype=)``; the
  NKI API reference: a view that copies nothing and reads the storage as the new dtype) before
  ``nisa.nc_matmul_mx``; an input typed as a packed format (``packed_array``), as the library's
  tests pass ``float4_e2m1fn_x4`` arrays;
* ``.ap(vector_offset= / scalar_offset=, indirect_dim=0)`` on a reshaped HBM view: the indices
  count rows of the view (the 4H-folded hidden states of the MX MoE kernels);
* views of another element size into a DMA (engines reading such views:
  tests/nki/test_reinterpret_compute.py).
"""

from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values: indices, offsets)
from neuronsim.machine.nki import NkiError, trace
from neuronsim.machine.nki.dtypes import packed_array
from neuronsim_tests.nki_kernels import kernel, run


def _e5m2_words(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """uint32 words of four finite e5m2 codes (magnitudes 2**-3 .. 2**2, either sign)."""
    codes = rng.integers(0x30, 0x44, size=shape + (4,)) | (rng.integers(0, 2, shape + (4,)) << 7)
    return sum(codes[..., j].astype(np.uint32) << (8 * j) for j in range(4)).astype(np.uint32)


def _values(words: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """[K * 4, F] float64 of e5m2 words [K, F] (lane j: byte j) times 2**(scale - 127) of their
    8-partition group."""
    lanes = (words[..., None] >> (8 * np.arange(4, dtype=np.uint32))) & 0xFF
    values = lanes.astype(np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float64)
    scaled = values * np.exp2(scales.astype(np.float64) - 127).repeat(8, axis=0)[..., None]
    return scaled.transpose(0, 2, 1).reshape(-1, words.shape[1])


def test_viewed_and_ap_typed_words_multiply_as_their_e5m2_codes():
    rng = np.random.default_rng(5)
    st, mv = _e5m2_words(rng, (32, 16)), _e5m2_words(rng, (32, 24))
    st_scale = rng.integers(124, 131, (4, 16)).astype(np.uint8)
    mv_scale = rng.integers(124, 131, (4, 24)).astype(np.uint8)
    out = run(kernel("mx_reinterpret.py::viewed_words_matmul"), st, st_scale, mv, mv_scale)
    expected = _values(st, st_scale).T @ _values(mv, mv_scale)
    assert np.abs(expected).max() > 1  # the codes carry values, not zeros
    np.testing.assert_allclose(out["out"], expected, rtol=1e-5, atol=1e-4)


def test_the_matmul_reads_the_view_dtype_not_the_tiles():
    rng = np.random.default_rng(6)
    args = (_e5m2_words(rng, (32, 8)), np.full((4, 8), 127, np.uint8), _e5m2_words(rng, (32, 8)),
            np.full((4, 8), 127, np.uint8))
    traced = trace(kernel("mx_reinterpret.py::viewed_words_matmul"), *args)
    (matmul,) = [inst for inst, _ in traced.program.instructions() if inst.op == "matmul_mx"]
    assert matmul.attrs["stationary_dtype"] == matmul.attrs["moving_dtype"] == "float8_e5m2_x4"
    stationary = traced.program.tensors[matmul.reads[0].tensor]
    assert stationary.dtype == "uint32"  # the tile keeps its own dtype; the view names e5m2_x4


def test_a_packed_input_is_a_tensor_of_its_packed_dtype():
    words = np.random.default_rng(7).integers(0, 1 << 16, (32, 12)).astype(np.uint16)
    packed = packed_array(words, "float4_e2m1fn_x4")
    traced = trace(kernel("mx_reinterpret.py::packed_passthrough"), packed)
    assert traced.program.tensors["weights"].dtype == "float4_e2m1fn_x4"
    assert traced.program.tensors["out"].dtype == "float4_e2m1fn_x4"
    out = run(kernel("mx_reinterpret.py::packed_passthrough"), packed)
    np.testing.assert_array_equal(out["out"].view(np.uint16), words)


def test_packed_array_refuses_words_of_another_width():
    with pytest.raises(ValueError, match="uint16 integers, not uint32"):
        packed_array(np.zeros(4, np.uint32), "float4_e2m1fn_x4")
    with pytest.raises(ValueError, match="not a packed MX dtype"):
        packed_array(np.zeros(4, np.uint32), "float32")


def test_vector_offset_on_a_reshape_gathers_rows_of_the_reshape():
    data = np.random.default_rng(8).normal(size=(8, 64)).astype(np.float32)
    rows = np.array([[31], [0], [17], [4], [29], [30]], np.int32)  # rows of the [32, 16] view, past 8
    out = run(kernel("mx_reinterpret.py::gather_folded_rows"), data, rows)
    np.testing.assert_array_equal(out["out"], data.reshape(32, 16)[rows[:, 0]])


def test_vector_offset_past_the_reshape_is_out_of_bounds_of_the_reshape():
    data = np.zeros((8, 64), np.float32)
    with pytest.raises(NkiError) as info:
        trace(kernel("mx_reinterpret.py::gather_folded_rows"), data, np.array([[3], [32]], np.int32))
    assert "index 32" in str(info.value) and "outside the 32 rows" in str(info.value)


def test_scalar_offset_on_a_reshape_counts_rows_of_the_reshape():
    data = np.random.default_rng(9).normal(size=(8, 64)).astype(np.float32)
    out = run(kernel("mx_reinterpret.py::folded_row_at_offset"), data, np.array([[21]], np.int32))
    np.testing.assert_array_equal(out["out"][0], data.reshape(32, 16)[21])


def test_nl_range_loops_as_python_range():
    x = np.random.default_rng(10).normal(size=(16, 96)).astype(np.float32)
    traced = trace(kernel("mx_reinterpret.py::doubled_by_blocks"), x)
    assert sum(inst.op == "tensor_scalar" for inst, _ in traced.program.instructions()) == 3  # unrolled
    np.testing.assert_array_equal(run(kernel("mx_reinterpret.py::doubled_by_blocks"), x)["out"], 2 * x)


def test_a_float32_scale_stored_as_four_fp8_bytes_keeps_its_bits():
    values = np.random.default_rng(11).normal(size=(16, 8)).astype(np.float32)
    traced = trace(kernel("mx_reinterpret.py::scale_as_bytes"), values)
    (store,) = [inst for inst, _ in traced.program.instructions() if inst.attrs.get("bitcast")]
    assert store.op == "dma_copy" and store.writes[0].tensor == "out"
    out = run(kernel("mx_reinterpret.py::scale_as_bytes"), values)
    np.testing.assert_array_equal(out["out"].view(np.uint8), values[:, :1].copy().view(np.uint8))


def test_bf16_pairs_read_as_float32_words():
    halves = np.random.default_rng(12).normal(size=(8, 64)).astype(ml_dtypes.bfloat16)
    out = run(kernel("mx_reinterpret.py::pairs_as_words"), halves)
    np.testing.assert_array_equal(out["out"].view(np.uint32), halves.view(np.uint32))
