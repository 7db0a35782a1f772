"""Microscaling (MX): ``nisa.quantize_mx`` and ``nisa.nc_matmul_mx`` on the packed ``_x4``
dtypes, traced, compiled, simulated and compared with numpy references written here from
the NKI API reference: a scaling group is 8 partitions x the 4 lanes of one packed element,
its scale ``2**(floor(log2(amax)) - (Emax - 1))`` (Emax 8 for e4m3fn, 15 for e5m2) stored as a
biased E8M0 exponent in the first 4 rows of its 32-partition quadrant; lane ``j`` of a packed
word is its ``j``-th byte (fp8) or nibble (fp4), little end first.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim.machine.nki.dtypes import nl_dtypes, to_dtype
from neuronsim_tests.nki_kernels import KERNELS, kernel, run
from neuronsim_tests.nki_kit import line_of

LANES = {"e4m3": (ml_dtypes.float8_e4m3fn, 8), "e5m2": (ml_dtypes.float8_e5m2, 15)}


def _reference_quantize(x: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Packed uint32 words [P, F] and biased scale exponents [P / 8, F] of x [P, 4F]."""
    lane, emax = LANES[kind]
    p, f = x.shape[0], x.shape[1] // 4
    groups = x.astype(np.float32).reshape(p // 8, 8, f, 4)
    amax = np.abs(groups).max(axis=(1, 3))
    _mantissa, exp = np.frexp(amax)  # amax = m * 2**exp, m in [0.5, 1): floor(log2 amax) = exp - 1
    scale_exp = np.where(amax > 0, exp - 1 - (emax - 1), -127)
    scaled = groups / np.exp2(scale_exp.astype(np.float64))[:, None, :, None]
    codes = scaled.astype(np.float32).astype(lane).view(np.uint8).reshape(p, f, 4)
    return codes.copy().view("<u4").reshape(p, f), (scale_exp + 127).astype(np.uint8)


def _decode(words: np.ndarray, lane: type, bits: int) -> np.ndarray:
    """[P, F, 4] float values of packed words (lane j at bits j*bits ...)."""
    lanes = [(words.astype(np.int64) >> (j * bits)) & ((1 << bits) - 1) for j in range(4)]
    return np.stack(lanes, -1).astype(np.uint8).view(lane).astype(np.float64)


def _reference_matmul(st, st_scale, mv, mv_scale, lane, bits) -> np.ndarray:
    """Dequantize (scale row of partition p: its group's index) and multiply over K x 4 lanes."""
    def values(words, scale):
        return _decode(words, lane, bits) * np.exp2(scale.astype(np.float64) - 127)[np.arange(words.shape[0]) // 8,
                                                                                    :, None]
    a, b = values(st, st_scale), values(mv, mv_scale)
    return a.transpose(1, 0, 2).reshape(a.shape[1], -1) @ b.transpose(0, 2, 1).reshape(-1, b.shape[1])


def _scale_rows(scales: np.ndarray) -> np.ndarray:
    """The rows of a full-height scale tile that hold scales: the first 4 of each quadrant."""
    return np.concatenate([scales[q:q + 4] for q in range(0, scales.shape[0], 32)])


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_quantize_then_matmul_matches_numpy(kind):
    rng = np.random.default_rng(1)
    st = (rng.normal(size=(64, 64)) * np.exp2(rng.integers(-6, 6, (64, 64)))).astype(ml_dtypes.bfloat16)
    st[0:8, 0:4] = 0  # an all-zero group: scale 2**-127 (code 0)
    mv = rng.normal(size=(64, 96)).astype(ml_dtypes.bfloat16)
    out = run(kernel(f"mx_current.py::quantize_matmul_{kind}"), st, mv)
    words, exps = _reference_quantize(st, kind)
    np.testing.assert_array_equal(out["codes"], words)
    np.testing.assert_array_equal(_scale_rows(out["scales"]), exps)
    assert _scale_rows(out["scales"])[0, 0] == 0
    assert not out["scales"][4:32].any()  # rows between the quadrants' scale rows stay as memset
    mv_words, mv_exps = _reference_quantize(mv, kind)
    lane = LANES[kind][0]
    expected = _reference_matmul(words, exps, mv_words, mv_exps, lane, 8)
    np.testing.assert_allclose(out["out"], expected, rtol=1e-5, atol=1e-4)
    exact = st.astype(np.float64).reshape(64, 16, 4).transpose(1, 0, 2).reshape(16, -1) @ \
        mv.astype(np.float64).reshape(64, 24, 4).transpose(0, 2, 1).reshape(-1, 24)
    assert np.abs(out["out"] - exact).max() < 0.1 * np.abs(exact).max()  # quantization error only


def test_e8m0_scale_tiles_hold_the_same_exponents_as_uint8_ones():
    rng = np.random.default_rng(4)
    st = (rng.normal(size=(32, 32)) * 1e-3).astype(ml_dtypes.bfloat16)
    mv = rng.normal(size=(32, 64)).astype(ml_dtypes.bfloat16)
    out = run(kernel("mx_current.py::quantize_matmul_e8m0_scales"), st, mv)
    as_uint8 = run(kernel("mx_current.py::quantize_matmul_e4m3"), st, mv)
    assert out["scales"].dtype == ml_dtypes.float8_e8m0fnu
    _words, exps = _reference_quantize(st, "e4m3")
    np.testing.assert_array_equal(out["scales"][:4].view(np.uint8), exps)
    np.testing.assert_array_equal(out["out"], as_uint8["out"])


def test_packed_fp4_matmul_accumulates_in_psum():
    rng = np.random.default_rng(2)
    st_words = rng.integers(0, 1 << 16, (32, 16)).astype(np.uint16)
    mv_words = rng.integers(0, 1 << 16, (32, 40)).astype(np.uint16)
    st_scale = rng.integers(120, 134, (4, 16)).astype(np.uint8)
    mv_scale = rng.integers(120, 134, (4, 40)).astype(np.uint8)
    out = run(kernel("mx_current.py::packed_fp4_matmul"), st_words, st_scale, mv_words, mv_scale)
    expected = 2 * _reference_matmul(st_words, st_scale, mv_words, mv_scale, ml_dtypes.float4_e2m1fn, 4)
    np.testing.assert_allclose(out["out"], expected, rtol=1e-5, atol=1e-3)
    assert np.abs(expected).max() > 1  # not a product of zeros


def test_two_tiles_share_one_scale_tile_from_rows_0_and_4():
    rng = np.random.default_rng(3)
    st = rng.normal(size=(64, 64)).astype(ml_dtypes.bfloat16)
    mv = (rng.normal(size=(64, 128)) * 100).astype(ml_dtypes.bfloat16)
    out = run(kernel("mx_current.py::shared_scale_tile"), st, mv)
    words, exps = _reference_quantize(st, "e4m3")
    mv_words, mv_exps = _reference_quantize(mv, "e4m3")
    scales = out["scales_out"]
    np.testing.assert_array_equal(np.concatenate([scales[0:4, :16], scales[32:36, :16]]), exps)
    np.testing.assert_array_equal(np.concatenate([scales[4:8], scales[36:40]]), mv_exps)
    assert not scales[8:32].any() and not scales[40:].any()
    expected = _reference_matmul(words, exps, mv_words, mv_exps, ml_dtypes.float8_e4m3fn, 8)
    np.testing.assert_allclose(out["out"], expected, rtol=1e-5, atol=1e-2)


def test_packed_dtypes_are_storage_of_four_lanes():
    names = nl_dtypes()
    assert names["float8_e4m3fn_x4"].itemsize == 4 and names["float8_e5m2_x4"].itemsize == 4
    assert names["float4_e2m1fn_x4"].itemsize == 2 and names["float8_e8m0fnu"].itemsize == 1
    assert to_dtype(np.uint32) == "uint32"  # the packed storage type keeps its own name


@pytest.mark.parametrize("spec, message, needle", [
    ("mx_current.py::quantize_fp32_source", "src source", "# refused: fp32 source"),
    ("mx_current.py::scale_tile_too_short", "first 4 rows of each quadrant", "# refused: short scale tile"),
])
def test_misuse_is_one_line_at_the_kernel_line(spec, message, needle):
    path = Path(KERNELS, spec.split("::")[0])
    with pytest.raises(NkiError) as info:
        trace(kernel(spec), np.zeros((64, 32), np.float32))
    text = str(info.value)
    assert "\n" not in text and message in text, text
    assert text.startswith(f"tests/nki/kernels/{path.name}:"), text
    assert int(text.split(":")[1]) == line_of(path, needle)


def test_mx_costs_follow_matmul_and_one_stream_on_dve():
    """nc_matmul_mx costs what nc_matmul costs per moving column (docs/timing.md), whatever
    the lane type; quantize_mx is one streamed input on DVE."""
    from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Tensor
    from neuronsim.machine.model.cost import instruction_cost
    from neuronsim.machine.model.presets import PRESETS

    def sbuf(name, dtype, shape, offset):
        return Tensor(name, MemoryKind.SBUF, dtype, shape, partition=0, offset=offset)

    tensors = {"st": sbuf("st", "float8_e4m3fn_x4", (128, 128), 0),
               "mv": sbuf("mv", "float8_e4m3fn_x4", (128, 512), 4096),
               "ss": sbuf("ss", "uint8", (128, 128), 8192), "ms": sbuf("ms", "uint8", (128, 512), 9216),
               "bf": sbuf("bf", "bfloat16", (128, 128), 12288), "bm": sbuf("bm", "bfloat16", (128, 512), 16384),
               "src": sbuf("src", "bfloat16", (128, 2048), 20480),
               "out": Tensor("out", MemoryKind.PSUM, "float32", (128, 512), partition=0, offset=0, bank=0)}
    mx = Instruction("mm", "pe", "matmul_mx", (Access("st"), Access("mv"), Access("ss"), Access("ms")),
                     (Access("out"),), {"stationary_dtype": "float8_e4m3fn_x4", "moving_dtype": "float8_e4m3fn_x4"})
    plain = Instruction("mm", "pe", "matmul", (Access("bf"), Access("bm")), (Access("out"),))
    quant = Instruction("q", "dve", "quantize_mx", (Access("src"),), (Access("mv"), Access("ms")),
                        {"dtype": "float8_e4m3fn_x4"})
    spec = PRESETS["trn1"]
    assert instruction_cost(mx, tensors, spec).cycles == instruction_cost(plain, tensors, spec).cycles == 512
    assert instruction_cost(quant, tensors, spec).cycles == 2048
