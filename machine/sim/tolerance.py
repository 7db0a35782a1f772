"""Comparing values with a tolerance, and the largest error of a comparison.

One definition serves every comparison neuronsim prints (``simulate`` against the sequential
reference, ``run`` against a numpy reference):

* the *absolute error* of an element is ``|actual - expected|`` in float64; two NaNs, or two
  equal infinities, are no error; a NaN or an infinity against anything else is an infinite
  error;
* the *relative error* is the absolute error over ``|expected|``, taken over the elements
  whose expected value is neither 0 nor infinite (an output of exact zeros has no relative
  error to speak of: its absolute error says it all);
* an element is *beyond* ``rtol`` / ``atol`` when its absolute error exceeds
  ``atol + rtol * |expected|`` (numpy's ``isclose``; ``0`` / ``0``: any difference).

>>> import numpy as np
>>> largest_errors(np.array([1.0, 2.5, 0.0]), np.array([1.0, 2.0, 0.001]))
LargestErrors(absolute=0.5, relative=1.0)
>>> beyond(np.array([1.0, 2.5]), np.array([1.0, 2.0]), rtol=0.1, atol=0.0).tolist()
[False, True]
>>> plain_number(np.float64(-0.52551234567)), plain_number(float("inf")), plain_number(3)
('-0.525512', 'inf', '3')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["LargestErrors", "NO_ERROR", "largest_errors", "beyond", "plain_number"]


@dataclass(frozen=True, slots=True)
class LargestErrors:
    """The largest absolute and relative error of one comparison (0 / 0 when equal)."""

    absolute: float
    relative: float

    def worst(self, other: LargestErrors) -> LargestErrors:
        """The larger of each figure."""
        return LargestErrors(absolute=_larger(self.absolute, other.absolute),
                             relative=_larger(self.relative, other.relative))

    def text(self) -> str:
        """``largest error 0.0021 (relative 0.0004)`` for people."""
        return f"largest error {plain_number(self.absolute)} (relative {plain_number(self.relative)})"

    def to_json(self) -> dict:
        """Strict JSON: an infinite or NaN figure is ``null``."""
        return {"absolute": _finite_or_none(self.absolute), "relative": _finite_or_none(self.relative)}


NO_ERROR = LargestErrors(absolute=0.0, relative=0.0)


def _larger(a: float, b: float) -> float:
    return a if math.isnan(a) or a >= b else b


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


#: Elements compared at a time: float64 temporaries of a whole 4096 x 4096 output are
#: hundreds of MB of fresh pages each; a chunk's are reused while in cache (issue 31).
CHUNK = 1 << 18


def _chunks(actual: np.ndarray, expected: np.ndarray):
    """``(slice, actual, expected)`` float64 pieces of the flattened arrays (broadcast first)."""
    actual, expected = np.broadcast_arrays(np.asarray(actual), np.asarray(expected))
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    for start in range(0, flat_actual.size, CHUNK):
        part = slice(start, start + CHUNK)
        yield part, flat_actual[part].astype(np.float64), flat_expected[part].astype(np.float64)


def _abs_errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(got - want)
    same = (got == want) | (np.isnan(got) & np.isnan(want))  # inf - inf is NaN, NaN vs NaN agree
    error[same] = 0.0
    error[np.isnan(error)] = np.inf  # a NaN against a number: as far off as can be
    return error


def largest_errors(actual: np.ndarray, expected: np.ndarray) -> LargestErrors:
    """The largest absolute and relative error of ``actual`` against ``expected`` (module doc)."""
    largest = NO_ERROR
    for _part, got, want in _chunks(actual, expected):
        error = _abs_errors(got, want)
        want = np.abs(want)
        scaled = (want != 0) & np.isfinite(want)
        relative = float(np.max(error[scaled] / want[scaled])) if scaled.any() else 0.0
        largest = largest.worst(LargestErrors(absolute=float(np.max(error)), relative=relative))
    return largest


def beyond(actual: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> np.ndarray:
    """Mask of the elements whose error exceeds ``atol + rtol * |expected|``.

    One pass first keeps every element whose plain difference is within bounds (both finite,
    no NaN: the full rules can only agree); the rest, usually none, get the full rules (equal
    infinities and two NaNs agree, a NaN against a number is as far off as can be, and an
    infinite expectation is met by that infinity alone, not by its infinite tolerance).

    >>> beyond(np.array([1.0, 1.5, np.nan, np.inf]), np.array([1.0, 1.0, np.nan, np.inf]), rtol=0.1, atol=0.0)
    array([False,  True, False, False])
    >>> beyond(np.array([1.0, -np.inf, 2.0]), np.array([np.inf, -np.inf, np.nan]), rtol=0.1, atol=0.1)
    array([ True, False,  True])
    """
    shape = np.broadcast_shapes(np.shape(actual), np.shape(expected))
    mask = np.empty(math.prod(shape), dtype=bool)
    for part, got, want in _chunks(actual, expected):
        with np.errstate(invalid="ignore", over="ignore"):
            allowed = atol + rtol * np.abs(want)
            outside = ~(np.abs(got - want) <= allowed) | ~np.isfinite(want)
        if outside.any():
            where = np.flatnonzero(outside)
            error = _abs_errors(got[where], want[where])
            # an infinite or NaN expectation allows no error (its tolerance would be infinite):
            # only the same infinity, or a NaN, meets it
            limit = np.where(np.isfinite(want[where]), allowed[where], 0.0)
            outside[where] = error > np.nan_to_num(limit, nan=0.0, posinf=np.inf)
        mask[part] = outside
    return mask.reshape(shape)


def plain_number(x: float | int | np.number) -> str:
    """A value as people read it: ``-0.525512``, ``1e+30``, ``inf`` (never ``np.float64(...)``)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return str(int(x))
    return f"{float(x):.6g}"
