"""The affine expression an index vector's quotient or remainder is, where it is one.

NKI's index expressions are affine in the ``nl.arange`` / ``nl.mgrid`` iterators.  ``i // K``
and ``i % K`` are not in general (``i % 2``, the errors page's own example), but over the
iterators' ranges they may be: a flat index ``i < K`` stored at ``(i // K, i % K)`` is
``(0, i)`` (Autocomp's conv1d kernels, measured on trn1).  :func:`affine_fit` fits the
expression from its values at the origin and one step along each axis, then checks the fit on
the whole index grid, a slab of the first axis at a time.

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

__all__ = ["GRID_LIMIT", "SLAB", "affine_fit", "GridTooLarge"]

#: The most index-grid points a quotient or remainder is checked on (a second or two of numpy).
GRID_LIMIT = 1 << 26
#: Points checked at once (the memory of one slab's values: 32 MiB of int64).
SLAB = 1 << 22

_OPS = {"floor": np.floor_divide, "mod": np.mod}


class GridTooLarge(ValueError):
    """The index grid has more points than :data:`GRID_LIMIT`: the fit is not checked."""


def affine_fit(const: int, terms: list[tuple[int, int]], divisor: int, *, divmod_op: str
               ) -> tuple[int, list[int]] | None:
    """``(const', coefficients')`` with ``(const + sum(c * i)) // divisor`` (``divmod_op="floor"``)
    or ``% divisor`` (``"mod"``) equal to ``const' + sum(c' * i)`` for every ``i`` of the grid
    (``terms``: each iterator's ``(count, coefficient)``), or None where it is not affine there.
    ``divisor`` is a positive integer; :class:`GridTooLarge` past :data:`GRID_LIMIT` points."""
    if prod(count for count, _c in terms) > GRID_LIMIT:
        raise GridTooLarge(f"over {prod(count for count, _c in terms):,} index points: too many to check that the "
                           "result is affine (NKI's index expressions are); split the index")
    op = _OPS[divmod_op]

    def at(point: list[int]) -> int:
        return int(op(const + sum(c * i for (_n, c), i in zip(terms, point)), divisor))

    base = at([0] * len(terms))
    coeffs = [at([1 if k == j else 0 for k in range(len(terms))]) - base if count > 1 else 0
              for j, (count, _c) in enumerate(terms)]
    if not terms:
        return base, coeffs
    rest = prod(count for count, _c in terms[1:])
    step = max(1, SLAB // max(rest, 1))
    for start in range(0, terms[0][0], step):  # the first axis a slab at a time
        axes = np.ix_(np.arange(start, min(start + step, terms[0][0])),
                      *(np.arange(count) for count, _c in terms[1:]))
        values = op(const + sum((c * axis for (_n, c), axis in zip(terms, axes)), np.int64(0)), divisor)
        fitted = base + sum((c * axis for c, axis in zip(coeffs, axes)), np.int64(0))
        if not np.array_equal(values, np.broadcast_to(fitted, values.shape)):
            return None
    return base, coeffs
