"""Elementwise function tables of the engines, as numpy, for :mod:`neuronsim.machine.model.semantics`:
ACT's activation functions (:data:`ACTIVATIONS`, float32 in and out, the NKI language
reference's formulas, by the name an ``activation``'s ``func`` attribute gives; semantics
applies ``scale`` and ``bias``) and GpSimd's native 32-bit integer ALU operators
(:data:`NATIVE_INT`).

GELU and its relatives meet ``inf * 0`` at infinity in their formulas; they return their limits
there (:func:`_limits`), so a -inf from masking does not turn into NaN.  numpy has no erf: it is
computed here (:func:`_erf`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

F32 = np.float32

__all__ = ["ACTIVATIONS", "NATIVE_INT", "native_int", "VALID_INPUT", "outside_valid_input", "subtract_fold",
           "MAGNITUDE_FOLDS"]


def _phi(z: np.ndarray) -> np.ndarray:
    """The standard normal distribution function, ``0.5 (1 + erf(z / sqrt 2))``, in float64."""
    return 0.5 * (1.0 + _erf(np.asarray(z, np.float64) * 0.7071067811865476))


def _gelu(z: np.ndarray) -> np.ndarray:
    """GELU, ``x * Phi(x)`` (NKI's ``gelu``; its approximations are ``gelu_apprx_tanh`` and
    ``gelu_apprx_sigmoid``)."""
    return (z * _phi(z)).astype(F32)


def _gelu_dx(z: np.ndarray) -> np.ndarray:
    """GELU's derivative, ``Phi(x) + x * phi(x)``."""
    return (_phi(z) + z * np.exp(-0.5 * np.asarray(z, np.float64) ** 2) * 0.3989422804014327).astype(F32)


def _gelu_sigmoid_dx(z: np.ndarray) -> np.ndarray:
    """The derivative of ``x * sigmoid(1.702 x)``."""
    s = _sigmoid(F32(1.702) * z)
    return s * (F32(1) + F32(1.702) * z * (F32(1) - s))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (numpy has none): within 1.5e-7 from |x| = 0.5 on (Abramowitz and Stegun
    7.1.26: below half an fp32 ulp of GELU's factor, so the fp32 result is the exact one or its
    neighbour), and below it the Maclaurin series to x**17, within 2e-8 relative: 7.1.26's
    absolute error would swamp erf(x) ~ 1.128 x near 0 (erf(1e-10) came out 1.1e-9).

    >>> [float(f"{v:.6g}") for v in _erf(np.array([1e-30, 1e-10, 0.25, 1.0, -np.inf]))]
    [1.12838e-30, 1.12838e-10, 0.276326, 0.842701, -1.0]
    """
    x = np.asarray(x, np.float64)
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.sign(x) * (1.0 - poly * np.exp(-x * x)), np.float64)
    small = np.abs(x) < 0.5
    if small.any():
        xs = x[small]
        term, total = xs.copy(), xs.copy()
        for n in range(1, 9):  # sum of (-1)^n x^(2n+1) / (n! (2n+1))
            term = term * -(xs * xs) / n
            total += term / (2 * n + 1)
        out[small] = 1.1283791670955126 * total
    return out


def _limits(f: Callable[[np.ndarray], np.ndarray], at_neg: float, at_pos: float | None) -> Callable:
    """``f`` with its limits at minus and plus infinity, where its formula meets ``inf * 0``
    (GELU ``x Phi(x)`` at -inf is 0, not NaN: a -inf from masking must not turn into NaN)."""
    def limited(z: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            out = np.asarray(f(z))
        z = np.asarray(z)
        out = np.where(z == -np.inf, F32(at_neg), out)
        return np.where(z == np.inf, F32(at_pos), out) if at_pos is not None else out
    return limited


def _gelu_tanh(z: np.ndarray) -> np.ndarray:
    return F32(0.5) * z * (F32(1) + np.tanh(F32(0.7978845608028654) * (z + F32(0.044715) * z * z * z)))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return F32(1) / (F32(1) + np.exp(-z))


#: Activation functions: float32 array -> float32 array.
ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda z: z,
    "copy": lambda z: z,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda z: np.maximum(z, F32(0)),
    "gelu": _limits(_gelu, 0.0, None),
    "gelu_apprx_tanh": _limits(_gelu_tanh, 0.0, None),
    "gelu_dx": _limits(_gelu_dx, 0.0, 1.0),
    "gelu_apprx_sigmoid_dx": _limits(_gelu_sigmoid_dx, 0.0, 1.0),
    "erf": lambda z: _erf(np.asarray(z, np.float64)).astype(F32),
    "erf_dx": lambda z: (1.1283791670955126 * np.exp(-np.asarray(z, np.float64) ** 2)).astype(F32),
    "tan": np.tan,
    "silu": _limits(lambda z: z * _sigmoid(z), 0.0, None),
    "gelu_apprx_sigmoid": _limits(lambda z: z * _sigmoid(F32(1.702) * z), 0.0, None),
    "square": np.square,
    "sqrt": np.sqrt,
    "rsqrt": lambda z: F32(1) / np.sqrt(z),
    "reciprocal": lambda z: F32(1) / z,
    "abs": np.abs,
    "sign": np.sign,
    "neg": np.negative,
    # the NKI language reference's other activation functions (derivative of silu: s (1 + z (1 - s)))
    "silu_dx": _limits(lambda z: _sigmoid(z) * (F32(1) + z * (F32(1) - _sigmoid(z))), 0.0, 1.0),
    "softplus": lambda z: np.logaddexp(F32(0), z),
    "mish": _limits(lambda z: z * np.tanh(np.logaddexp(F32(0), z)), 0.0, None),
    "sin": np.sin,
    "cos": np.cos,
    "arctan": np.arctan,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
}


def _truncated_quotient(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` of integers truncated toward zero (C's integer division); 0 where ``b`` is 0.

    >>> _truncated_quotient(np.array([7, -7, 7, 5]), np.array([2, 2, -2, 0])).tolist()
    [3, -3, -3, 0]
    """
    safe = np.where(b != 0, b, 1)
    return np.where(b != 0, np.abs(a) // np.abs(safe) * np.sign(a) * np.sign(safe), 0)


#: ALU operators GpSimd computes on 32-bit integers natively (NKI 0.7's tensor_tensor page: all
#: tiles int32 / uint32 on GpSimd, "native integer arithmetic", exact for every 32-bit value);
#: ``mod`` and ``fmod`` too, whose pages give the result's sign (the divisor's, the dividend's),
#: and ``divide`` as native integer division does it, the quotient truncated toward zero (C's);
#: by zero, 0
NATIVE_INT = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "max": np.maximum, "min": np.minimum,
    "mod": np.mod, "fmod": np.fmod, "divide": lambda a, b: _truncated_quotient(a, b),
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "less": np.less, "less_equal": np.less_equal,
}


def native_int(op: str, engine: str, arrays: Sequence[np.ndarray]) -> bool:
    return engine == "pool" and op in NATIVE_INT and all(a.dtype in (np.int32, np.uint32) for a in arrays)


#: The Valid Input Range of the activation functions whose range is narrower than the reals
#: (the shared API page's activation table; ``reciprocal``'s by magnitude): outside it "the
#: Scalar Engine will generate invalid output results", and for ``sin`` it "performs no argument
#: range reduction or clamping" (``sin(9.0)`` is ~27.65).  The simulator computes the exact
#: function and notes such inputs (:meth:`~neuronsim.machine.sim.memory.Memory.note_outside`).
VALID_INPUT: dict[str, tuple[float, float]] = {
    "sin": (-np.pi, np.pi), "arctan": (-np.pi / 2, np.pi / 2), "log": (2.0**-64, 2.0**64),
    "sqrt": (2.0**-116, 2.0**118), "rsqrt": (2.0**-87, 2.0**97), "reciprocal": (2.0**-42, 2.0**42)}


def outside_valid_input(func: str, z: np.ndarray) -> tuple[int, float] | None:
    """How many elements of ``z`` lie outside ``func``'s :data:`VALID_INPUT` and the first of
    them, or None.  A float32 rounding at an end (a reduced angle of -3.1415927) is inside.

    >>> outside_valid_input("sin", np.array([0.5, 9.0, -4.0], np.float32))
    (2, 9.0)
    >>> outside_valid_input("reciprocal", np.array([-2.0, 0.5], np.float32)) is None
    True
    """
    low, high = VALID_INPUT[func]
    low, high = low * (1 + 1e-6) if low < 0 else low * (1 - 1e-6), high * (1 + 1e-6)
    values = np.abs(z) if func == "reciprocal" else z
    outside = (values < low) | (values > high)
    if not outside.any():
        return None
    return int(np.count_nonzero(outside)), float(z.reshape(-1)[int(np.argmax(outside.reshape(-1)))])


def subtract_fold(values: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    """``x0 - x1 - ... - xn`` over ``axis``, in order: the ALU's subtract folded from the left, as
    numpy's ``subtract.reduce`` folds it.  The tensor_reduce and tensor_scalar_reduce pages name
    subtract among their reduction operators and say no more.

    >>> subtract_fold(np.array([[10.0, 1.0, 2.0], [0.0, 4.0, 4.0]], np.float32), (1,)).tolist()
    [7.0, -8.0]
    """
    kept = [a for a in range(values.ndim) if a not in axis]
    moved = np.transpose(values, (*kept, *axis)).reshape(*(values.shape[a] for a in kept), -1)
    return np.subtract.reduce(moved, axis=-1)


def _by_magnitude(pick: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def fold(values: np.ndarray, axis: int, keepdims: bool = True) -> np.ndarray:
        index = pick(np.abs(values), axis=axis, keepdims=True)
        chosen = np.take_along_axis(values, index, axis=axis)
        return chosen if keepdims else np.squeeze(chosen, axis=axis)
    return fold


#: The magnitude reductions (``activate2``'s ``reduce_op=nl.abs_max`` / ``nl.abs_min``): the
#: signed element of the largest (smallest) magnitude, as ``nl.abs_max`` "returns the original
#: (signed) value of whichever input has the larger absolute value" (the first of a tie).
#:
#: >>> MAGNITUDE_FOLDS["abs_max"](np.array([[1.0, -5.0, 3.0]]), axis=1).tolist()
#: [[-5.0]]
MAGNITUDE_FOLDS = {"abs_max": _by_magnitude(np.argmax), "abs_min": _by_magnitude(np.argmin)}
