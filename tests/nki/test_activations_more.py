"""Activation functions beyond the common ones (``nl.silu_dx`` as nki-library's MoE backward pass
uses it, softplus, mish, trigonometric, rounding): numpy's values of the same formulas."""

from __future__ import annotations

import numpy as np

from neuronsim_tests.nki_kernels import kernel, run


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


FUNCTIONS = [
    lambda z: _sigmoid(z) * (1 + z * (1 - _sigmoid(z))),  # d/dz z sigmoid(z)
    lambda z: np.log1p(np.exp(z)),
    lambda z: z * np.tanh(np.log1p(np.exp(z))),
    np.sin, np.cos, np.arctan, np.floor, np.ceil, np.trunc,
]


def test_each_function_is_its_formula():
    x = np.random.default_rng(7).uniform(-4, 4, (128, 32)).astype(np.float32)
    out = run(kernel("activations_more.py::each_function"), x)["return0"]
    for k, fn in enumerate(FUNCTIONS):
        np.testing.assert_allclose(out[k], fn(x.astype(np.float64)), rtol=1e-5, atol=1e-6, err_msg=f"function {k}")


def test_silu_dx_is_the_derivative_of_silu():
    z = np.linspace(-3, 3, 7)
    silu = lambda v: v * _sigmoid(v)  # noqa: E731
    numeric = (silu(z + 1e-6) - silu(z - 1e-6)) / 2e-6
    np.testing.assert_allclose(FUNCTIONS[0](z), numeric, rtol=1e-6)
