"""quantize_mx's scale rule and rounding, and the MX decoders, on tiny cases worked by hand from
the NKI docs: quantize_mx takes X = 2**(floor(log2(amax)) - (Emax - 1)) (Emax 8 for e4m3fn), twice
OCP's sample scale, so a group's largest value keeps room to round up without saturating; e2m1
codes are sign, 2 exponent bits (bias 1), 1 mantissa bit; an e8m0 / uint8 scale e is 2**(e - 127)."""

import ml_dtypes
import numpy as np

from neuronsim.machine.model.semantics_mx import dequantize, quantize


def _group(values: dict[tuple[int, int], float]) -> np.ndarray:
    """One 32-value group [8 partitions, 4 lanes], zero except ``values``."""
    src = np.zeros((8, 4), np.float32)
    for (p, j), v in values.items():
        src[p, j] = v
    return src


def test_largest_value_rounds_up_within_range_not_clipped():
    # amax 496: floor(log2 496) = 8, X = 2**(8 - 7) = 2; 496 / 2 = 248 is a tie between e4m3fn's
    # 240 (mantissa 111) and 256 (mantissa 000): even wins, 256, i.e. 512 dequantized.  OCP's
    # X = 1 would have clipped 496 to 448.
    packed, exponents = quantize(_group({(0, 0): 496.0, (3, 2): 3.0, (7, 3): -0.3}), "float8_e4m3fn_x4")
    assert exponents.tolist() == [[1]]
    values = dequantize(packed, (exponents + 127).astype(np.uint8), "float8_e4m3fn_x4").reshape(8, 4)
    assert values[0, 0] == 512.0
    assert values[3, 2] == 3.0  # 1.5 in e4m3fn exactly
    # -0.3 / 2 = -0.15 = -9.6 steps of 2**-6 (the step in [2**-3, 2**-2)): -10 steps, -0.15625
    assert values[7, 3] == -0.3125


def test_all_zero_group_takes_the_smallest_scale():
    _packed, exponents = quantize(_group({}), "float8_e4m3fn_x4")
    assert exponents.tolist() == [[-127]]


def test_e5m2_scale_uses_emax_15():
    # amax 1.0: floor(log2 1) = 0, X = 2**(0 - 14); 1.0 / X = 2**14 is exact in e5m2
    packed, exponents = quantize(_group({(1, 1): 1.0}), "float8_e5m2_x4")
    assert exponents.tolist() == [[-14]]
    assert dequantize(packed, (exponents + 127).astype(np.uint8), "float8_e5m2_x4").reshape(8, 4)[1, 1] == 1.0


def test_fp4_codes_and_e8m0_scales_decode_as_the_docs_define():
    # lane j holds bits 4j..4j+3: codes 0x7 (+6.0), 0x1 (+0.5, the subnormal), 0xA (-1.0), 0xD (-3.0)
    word = np.array([[0x7 | 0x1 << 4 | 0xA << 8 | 0xD << 12]] * 8, np.uint16)
    by_uint8 = dequantize(word, np.array([[129]], np.uint8), "float4_e2m1fn_x4")  # 2**2
    assert by_uint8[0, 0].tolist() == [24.0, 2.0, -4.0, -12.0]
    by_e8m0 = dequantize(word, np.array([[0.5]], ml_dtypes.float8_e8m0fnu), "float4_e2m1fn_x4")
    assert by_e8m0[7, 0].tolist() == [3.0, 0.25, -0.5, -1.5]
