"""The affine expression an index vector's quotient or remainder is, where it is one.

NKI's index expressions are affine in the ``nl.arange`` / ``nl.mgrid`` iterators.  ``i // K``
and ``i % K`` are not in general (``i % 2``, the errors page's own example), but over the
iterators' ranges they may be: a flat index ``i < K`` stored at ``(i // K, i % K)`` is
``(0, i)`` (Autocomp's conv1d kernels, measured on trn1).  :func:`affine_fit` evaluates the
expression on the index grid and fits it.

>>> affine_fit(0, [(2048, 1)], 2048, divmod_op="floor")
(0, [0])
>>> affine_fit(8, [(64, 4), (4, 1)], 4, divmod_op="mod")
(0, [0, 1])
>>> affine_fit(0, [(128, 1)], 2, divmod_op="mod") is None
True
"""

from __future__ import annotations

from math import prod

import numpy as np

__all__ = ["GRID_LIMIT", "affine_fit"]

#: The most index-grid points a quotient or remainder is evaluated on to see whether it is affine.
GRID_LIMIT = 1 << 22

_OPS = {"floor": np.floor_divide, "mod": np.mod}


def affine_fit(const: int, terms: list[tuple[int, int]], divisor: int, *, divmod_op: str
               ) -> tuple[int, list[int]] | None:
    """``(const', coefficients')`` with ``(const + sum(c * i)) // divisor`` (``divmod_op="floor"``)
    or ``% divisor`` (``"mod"``) equal to ``const' + sum(c' * i)`` for every ``i`` of the grid
    (``terms``: each iterator's ``(count, coefficient)``), or None: not affine there, or a grid
    past :data:`GRID_LIMIT` points.  ``divisor`` is a positive integer."""
    if prod(count for count, _c in terms) > GRID_LIMIT:
        return None
    axes = np.ix_(*(np.arange(count) for count, _c in terms)) if terms else ()
    values = _OPS[divmod_op](const + sum((c * axis for (_n, c), axis in zip(terms, axes)), np.int64(0)), divisor)
    base = int(values.flat[0])
    coeffs = [int(values[tuple(1 if k == j else 0 for k in range(len(axes)))]) - base if count > 1 else 0
              for j, (count, _c) in enumerate(terms)]
    fitted = base + sum((c * axis for c, axis in zip(coeffs, axes)), np.int64(0))
    if not np.array_equal(values, np.broadcast_to(fitted, values.shape)):
        return None
    return base, coeffs
