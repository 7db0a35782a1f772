"""Keys that are not plain integers or slices: the part of :class:`~neuronsim.machine.nki.layout.Layout`'s
advanced indexing (``nl.arange`` / ``nl.mgrid`` index vectors, tiles of indices) that needs no
layout, and the axis kinds.

An axis of a layout is ``(P, 0, count)``, the partition axis, or ``(F, stride, count)``, a free
axis.  :func:`vector_limit` bounds an iterator by the dimensions its indices must stay in;
:func:`grid_order` shapes a DRAM view indexed by an integer beside index vectors as numpy
broadcasts index arrays.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.build.views import is_int

__all__ = ["P", "F", "vector_limit", "grid_order", "is_index_tile"]

P = "P"
F = "F"


def vector_limit(exprs: list[Any], axes: tuple[tuple[str, int, int], ...], it: Any
                  ) -> tuple[int, int, int, int] | None:
    """The positions of iterator ``it`` that keep every index it drives inside its dimension
    (``const + c * it`` over ``count`` elements), when some do not (see ``Layout.limits``)."""
    first, stop, where, uid = 0, it.count, None, it.uid
    for dim, (e, (_kind, _s, count)) in enumerate(zip(exprs, axes)):
        coeff, others = 0, False
        for i, c in e.terms:  # plain loops: this runs for every index of a traced kernel
            if i.uid == uid:
                coeff += c
            elif c:
                others = True
        if not coeff or others or not is_int(e.const):
            continue
        # const + coeff * i in [0, count): i in [lo, hi)
        lo, hi = ((-e.const + coeff - 1) // coeff, (count - e.const + coeff - 1) // coeff) if coeff > 0 else \
            ((e.const - count) // -coeff + 1, e.const // -coeff + 1)
        if lo > first or hi < stop:
            first, stop, where = max(first, lo), min(stop, hi), (dim, count)
    return None if where is None else (first, max(first, stop), *where)


def grid_order(exprs: list[Any], order: list[Any], axes: list, tags: list, limits: list) -> tuple[list, list, list]:
    """An HBM view indexed by an integer beside index vectors that leave a position of their
    grid unspanned (``x[0, nl.arange(512)[None, :]]``, an error page's fixed kernel): the
    grid's shape, as numpy broadcasts index arrays, an axis of one where no iterator lies
    (``(1, 512)``, not ``(512,)``, whose 512 would become a loaded tile's partitions).  An
    mgrid's unused axes still add none (the caller passes only keys with an integer)."""
    ndim = max((e.ndim for e in exprs), default=0)
    at = {it.pos + ndim - it.ndim: k for k, it in enumerate(order)}
    if ndim <= len(order) or len(at) != len(order):
        return axes, tags, limits
    picked = [at.get(p) for p in range(ndim)]
    return ([axes[k] if k is not None else (F, 0, 1) for k in picked],
            [tags[k] if k is not None else frozenset() for k in picked],
            [limits[k] if k is not None else None for k in picked])


def is_index_tile(key: Any) -> bool:
    """True for an NKI tile used as an index (``x[idx_tile, i_f]``): the tile proxies sit above
    this module (:mod:`~neuronsim.machine.nki.tiles`), so they are known by their ``layout``."""
    return isinstance(getattr(type(key), "layout", None), property)
