"""Edges of the elementwise tables a helper's sweep found wrong, each silently:

* ``erf`` near 0: Abramowitz and Stegun 7.1.26's absolute error (1.5e-7) swamped erf(x) ~
  1.128 x, so erf(1e-10) came out 1.1e-9 and erf(1e-30) 1e-9;
* the GELU family, SiLU and Mish at infinity: their formulas meet ``inf * 0`` there and gave
  NaN (a -inf from masking spread NaN);
* ``mod`` / ``fmod`` / ``divide`` of int32 tiles on GpSimd went through fp32 (123456789 mod 10
  came out 2, 7 / 2 came out 4), where the page promises exact native integer arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronsim.machine.model.semantics import ACTIVATIONS, BASE_OPS

F32 = np.float32


def test_erf_is_accurate_near_zero_and_everywhere_else() -> None:
    x = np.array([1e-30, 1e-10, 1e-8, 1e-3, 0.1, 0.3, 0.49, 0.5, 0.9, 2.0, 5.0], np.float64)
    for values in (x, -x):
        got = ACTIVATIONS["erf"](values.astype(F32)).astype(np.float64)
        want = np.array([math.erf(float(np.float32(v))) for v in values])
        assert np.all(np.abs(got - want) <= 4e-7 * np.abs(want)), (got, want)


@pytest.mark.parametrize("func, at_neg, at_pos", [
    ("gelu", 0.0, np.inf), ("gelu_apprx_tanh", 0.0, np.inf), ("gelu_apprx_sigmoid", 0.0, np.inf),
    ("silu", 0.0, np.inf), ("mish", 0.0, np.inf),
    ("gelu_dx", 0.0, 1.0), ("gelu_apprx_sigmoid_dx", 0.0, 1.0), ("silu_dx", 0.0, 1.0),
])
def test_gelu_family_takes_its_limits_at_infinity(func: str, at_neg: float, at_pos: float) -> None:
    got = ACTIVATIONS[func](np.array([-np.inf, np.inf, 1.0], F32))
    assert got[0] == at_neg and got[1] == at_pos and np.isfinite(got[2])


A = [123456789, 2147483647, 1000000007, 12, -7, 5]
B = [10, 2, 1000, -5, 2, 0]


@pytest.mark.parametrize("op, expected", [
    ("mod", [9, 1, 7, -3, 1, 0]),                         # the divisor's sign (nl.mod); by 0, 0
    ("fmod", [9, 1, 7, 2, -1, 0]),                        # the dividend's sign
    ("divide", [12345678, 1073741823, 1000000, -2, -3, 0]),  # truncated toward zero; by 0, 0
])
def test_int32_mod_and_divide_on_gpsimd_are_exact(op: str, expected: list[int]) -> None:
    a, b = np.array([A], np.int32), np.array([B], np.int32)
    got = BASE_OPS["tensor_tensor"]({"op": op}, [a, b], [np.zeros_like(a)], "pool", None)[0]
    assert got.ravel().tolist() == expected
