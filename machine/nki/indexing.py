"""Index expressions of NKI kernels: loop variables, ``nl.ds``, ``nl.arange`` / ``nl.mgrid``, masks.

* :class:`SymIndex` is the variable of a kept legacy loop: affine arithmetic (``i * 128 + 64``)
  stays symbolic (the builder's :class:`~neuronsim.machine.build.views.Index`); anything else (``i == 0``,
  ``i // 2``, ``int(i)``, ``range(i)``) raises :class:`~neuronsim.machine.nki.errors.NotAffine`, and the
  tracer unrolls that loop instead.
* :class:`ArangeExpr` is an affine index vector over *iterators* (each ``nl.arange`` call, each axis of an
  ``nl.mgrid`` call: an :class:`Iter`); ``//`` / ``%`` by an integer where affine (index_fit).  Indexing
  with index vectors gives a tile axis per iterator, in the index's order (:mod:`~.layout`).
* A comparison of an :class:`ArangeExpr` with a number is a :class:`Mask`: a range of one
  iterator; ``&`` joins them.  Applied to an instruction, a mask shrinks the axis of that
  iterator in every operand (an operand not indexed by iterators: the axis at the iterator's
  position).

>>> i_p = arange(128)[:, None]
>>> [(it.pos, it.ndim, c) for it, c in (i_p * 2 + 1).terms], [(lo, hi) for _it, lo, hi in (i_p < 100).bounds]
([(0, 2, 2)], [(0, 100)])
>>> k = SymIndex(Index(0, (("k", 1),)))
>>> (k * 128 + 64).index
Index(const=64, terms=(('k', 128),))
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.fast_dataclasses import cached
from neuronsim.machine.nki.errors import NkiError, NotAffine, fail, shown, unsupported
from neuronsim.machine.nki.index_fit import GridTooLarge, affine_fit
from neuronsim.machine.build.views import Index, is_int

__all__ = ["SymIndex", "ArangeExpr", "Mask", "Iter", "arange", "ds", "MGrid", "as_index", "concrete", "new_iter",
           "as_mask", "NEVER", "check_broadcastable", "without_ellipsis"]


class SymIndex:
    """A kept loop's variable, or an affine expression of kept loops' variables."""

    __slots__ = ("index",)

    def __init__(self, index: Index) -> None:
        self.index = index

    def _refuse(self, what: str):
        raise NotAffine(tuple(name for name, _ in self.index.terms), what)

    @staticmethod
    def _wrap(index: Index) -> SymIndex | int:
        return SymIndex(index) if index.terms else index.const

    def __add__(self, other: Any):
        if isinstance(other, ArangeExpr):
            return other + self
        if isinstance(other, SymIndex):
            return self._wrap(self.index + other.index)
        if is_int(other):
            return self._wrap(self.index + other)
        return NotImplemented if not isinstance(other, float) else self._refuse("a loop index plus a float")

    __radd__ = __add__

    def __sub__(self, other: Any):
        return self + (-other)

    def __rsub__(self, other: Any):
        return (-self) + other

    def __neg__(self):
        return self._wrap(self.index * -1)

    def __mul__(self, other: Any):
        if isinstance(other, ArangeExpr):
            self._refuse("a loop index times an index vector")
        if is_int(other):
            return self._wrap(self.index * other)
        if isinstance(other, SymIndex):
            self._refuse("a product of loop indices")
        if isinstance(other, float) and other.is_integer():
            return self._wrap(self.index * int(other))
        return NotImplemented if not isinstance(other, float) else self._refuse("a loop index times a float")

    __rmul__ = __mul__

    def _cmp(self, other: Any):
        if isinstance(other, ArangeExpr):
            return NotImplemented
        self._refuse("a comparison of a loop index")

    __lt__ = __le__ = __gt__ = __ge__ = _cmp

    def __eq__(self, other: Any):  # type: ignore[override]
        self._refuse("a comparison of a loop index")

    def __ne__(self, other: Any):  # type: ignore[override]
        self._refuse("a comparison of a loop index")

    def __hash__(self) -> int:
        return hash(self.index)

    def __bool__(self):
        self._refuse("a loop index used as a condition")

    def __index__(self):
        self._refuse("a loop index used as a Python integer")

    __int__ = __index__

    def __float__(self):
        self._refuse("a loop index used as a number")

    def __floordiv__(self, other: Any):
        self._refuse("a floor division of a loop index")

    __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = __pow__ = __floordiv__

    def __repr__(self) -> str:
        parts = [f"{c}*{n}" if c != 1 else n for n, c in self.index.terms]
        return " + ".join(parts + ([str(self.index.const)] if self.index.const else []))


def as_index(value: Any) -> Index:
    """A builder :class:`Index` from an int, a :class:`SymIndex` or a numpy integer."""
    if type(value) is int:  # the common case first: a traced kernel asks millions of times
        return Index(value)
    if isinstance(value, SymIndex):
        return value.index
    if is_int(value):
        return Index(value)
    if hasattr(value, "device_index"):  # a device scalar indexing a tensor: its value on these inputs
        return Index(value.device_index())
    if hasattr(value, "__index__") and not isinstance(value, (float, bool)):
        return Index(int(value))
    if isinstance(value, Mask):  # `t[...][i < n]`: a comparison of indices bounds an access through mask=
        raise fail("a comparison of indices used as an index: pass it as the call's mask= instead")
    raise fail(f"index {shown(value)} is not an integer or an affine expression of loop variables")


def concrete(value: Any, what: str) -> int:
    """``value`` as an int; a kept loop's symbol makes that loop unroll."""
    if type(value) is int:  # the common case, without an Index made and read back
        return value
    if isinstance(value, SymIndex):
        value._refuse(what)
    return int(as_index(value).const)


def ds(start: Any, size: int) -> slice:
    """``nl.ds(start, size)``: the slice ``start:start + size`` (``nl.ds`` itself also reads a
    one-element tile as its start: :func:`neuronsim.machine.nki.scalars.ds`)."""
    if isinstance(size, (int, np.integer)) and size < 0:  # (it became Python's start:-4, reading 508 of 512)
        raise fail(f"nl.ds({start!r}, {size}): the size is the number of elements from start, not negative")
    return slice(start, start + size)


#: Called with :data:`TRUTH_WARNING` when Python reads a mask as a truth value (the tracer
#: sets it: it says the warning at the kernel's line; this module knows no tracer).
on_truth_value: Any = None
TRUTH_WARNING = ("a comparison of indices read as a Python truth value (and, or, not, if) is true: `a and b` keeps "
                 "b alone and `a or b` keeps a alone; combine masks with & and | (NKI's known-issues page: "
                 "masks are combined with &, not `and`)")


@dataclass(frozen=True)
class Mask:
    """A mask: comparisons ``expr <cmp> value`` of index vectors with numbers, all of
    ``preds`` and, when ``alternatives`` is not empty, at least one of them (``|``).

    As a ``mask=`` it must keep a box: one contiguous range per iterator (:attr:`bounds`);
    ``nisa.affine_select`` takes one comparison of any affine expression."""

    preds: tuple[tuple[ArangeExpr, str, int], ...]
    alternatives: tuple[Mask, ...] = ()

    def __and__(self, other: Any) -> Mask:
        if isinstance(other, (bool, np.bool_)):  # a condition of loop variables alone, decided by an unrolled loop
            return self if other else NEVER
        if not isinstance(other, Mask):
            raise fail("a mask combines with & only with another mask or a boolean")
        if self is NEVER or other is NEVER:
            return NEVER
        if self.alternatives and other.alternatives:
            return Mask(self.preds + other.preds, self._distributed(other))
        return Mask(self.preds + other.preds, self.alternatives or other.alternatives)

    __rand__ = __and__

    # No __bool__ that refuses (the errors page's err_control_flow_condition_depending_on_arange):
    # the SDK's own nc_match_replace8 test writes mask=(ix < n // 2 and iy < m // 2), which
    # Python's `and` reads through the first comparison's truth, and it runs on the device.
    # It is true, as Python reads any object, and said (TRUTH_WARNING): `a and b` keeps b alone,
    # `a or b` a alone, where the known-issues page asks for & (a CS149 probe's mask kept half).
    def __bool__(self) -> bool:
        if on_truth_value is not None:
            on_truth_value(TRUTH_WARNING)
        return True

    def __getitem__(self, key: Any) -> Mask:
        """``(i_p < 100)[:, None]``: the comparison of the index vectors reshaped so (as
        ``i_p[:, None] < 100``)."""
        if self is NEVER:
            return self
        return Mask(tuple((expr[key], cmp, value) for expr, cmp, value in self.preds),
                    tuple(alternative[key] for alternative in self.alternatives))

    def _distributed(self, other: Mask) -> tuple[Mask, ...]:
        """``(a | b) & (c | d)`` as ``a&c | a&d | b&c | b&d``."""
        return tuple(x & y for x in self.alternatives for y in other.alternatives)

    def __or__(self, other: Any) -> Mask | bool:
        if isinstance(other, (bool, np.bool_)):
            return True if other else self  # (True: no mask, as mask=True)
        if not isinstance(other, Mask):
            raise fail("a mask combines with | only with another mask or a boolean")
        if self is NEVER or other is NEVER:
            return other if self is NEVER else self
        return Mask((), (self, other))

    __ror__ = __or__

    def _allowed(self) -> dict[Iter, set[int]]:
        """The values each bounded iterator keeps."""
        kept: dict[Iter, set[int]] = {}
        for expr, cmp, value in self.preds:
            it, values = expr._allowed(cmp, value)
            kept[it] = kept[it] & values if it in kept else values
        if self.alternatives:
            options = [alt._allowed() for alt in self.alternatives]
            iters = {it for option in options for it in option}
            if len(iters) != 1 or any(not option for option in options):
                raise unsupported("a mask joining conditions on different index axes with |",
                                  "a mask keeps one box: one range per axis")
            (it,) = iters
            union = set().union(*(option[it] for option in options))
            kept[it] = kept[it] & union if it in kept else union
        return kept

    @cached  # asked for by every operand of every masked instruction
    def bounds(self) -> tuple[tuple[Iter, int, int], ...]:
        """``((iterator, first, last + 1), ...)``: the range of each iterator the mask keeps."""
        out = []
        for it, values in self._allowed().items():
            if not values:
                out.append((it, 0, 0))
                continue
            lo, hi = min(values), max(values) + 1
            if len(values) != hi - lo:
                raise unsupported("a mask that keeps a range with holes", "a mask keeps one box: one range per axis")
            out.append((it, lo, hi))
        return tuple(out)


    @cached
    def boxes(self) -> tuple[Mask, ...]:
        """The mask as disjoint boxes, each a mask of one range per iterator: itself when it
        is one box; else (a comparison of ``i_p + i_f``, a range with holes) its kept grid cut
        into slices of the last iterator, adjacent slices alike merged, each slice into those
        of the iterator before, and so on: the partition iterator (first, as kernels write
        ``i_p``) is cut last, so a box's partitions start at 0 wherever the mask allows (a
        triangle ``i_p + i_f < n`` is a box per column, each from partition 0: compute engines
        start an access only at partition 0, 32, 64 or 96).  An instruction with such a mask
        is emitted once per box (:mod:`~neuronsim.machine.nki.tracer`)."""
        return self.boxes_cut_first(frozenset())

    def boxes_cut_first(self, outer: frozenset[Iter]) -> tuple[Mask, ...]:
        """:attr:`boxes`, the grid cut along the iterators ``outer`` before the others: a
        reduction's output iterators, so that boxes keeping other ranges of the reduced axes
        write different outputs (:mod:`~neuronsim.machine.nki.mask_boxes`)."""
        try:
            self.bounds  # noqa: B018  (one box: the common case, no grid)
            return (self,)
        except NkiError:
            pass
        iters = sorted(self.iterators(), key=lambda it: (it not in outer, -it.pos, it.uid))
        if prod(it.count for it in iters) > _MAX_GRID:
            raise unsupported(f"a mask over a grid of more than {_MAX_GRID} indices that is not one box",
                              "bound each axis on its own")
        kept = self._kept(iters, np.indices(tuple(it.count for it in iters)))
        return tuple(Mask(tuple(pred for it, lo, hi in box for pred in _range_preds(it, lo, hi)))
                     for box in _cut(kept, iters))

    def iterators(self) -> set[Iter]:
        found = {it for expr, _cmp, _v in self.preds for it, c in expr.terms if c}
        for alt in self.alternatives:
            found |= alt.iterators()
        return found

    def _kept(self, iters: list[Iter], grid: np.ndarray) -> np.ndarray:
        """Which points of ``grid`` (one axis per iterator of ``iters``) the mask keeps."""
        keep = np.ones(grid.shape[1:], dtype=bool)
        for expr, cmp, value in self.preds:
            if isinstance(expr.const, SymIndex):
                expr.const._refuse("a mask that depends on a loop index")
            total = sum(c * grid[iters.index(it)] for it, c in expr.terms if c) + expr.const
            keep &= _COMPARE[cmp](total, value)
        if self.alternatives:
            keep &= np.logical_or.reduce([alt._kept(iters, grid) for alt in self.alternatives])
        return keep


_MAX_GRID = 1 << 22
_COMPARE = {"less": np.less, "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
            "equal": np.equal, "not_equal": np.not_equal}



#: A mask that is a Python ``False`` (a condition the kernel computed, or a mask joined with
#: one): the instruction is skipped.
NEVER = Mask(())


def as_mask(mask: Any) -> Mask | None:
    """A ``mask=`` value: a :class:`Mask`, or a Python / numpy boolean (True: no mask)."""
    if mask is None or isinstance(mask, Mask):
        return mask
    if isinstance(mask, (bool, np.bool_)):
        return None if mask else NEVER
    raise fail(f"mask= is a comparison of nl.arange / nl.mgrid indices or a boolean, not {mask!r}")


def check_broadcastable(name: str, order: list[Any]) -> None:
    """Refuse index vectors of one index that numpy's advanced indexing cannot broadcast together:
    two different ``nl.arange`` vectors along the same axis of their arrays (``i_p =
    nl.arange(128)[None, :]`` beside ``i_f = nl.arange(F)[None, :]``, a partition index written
    as a free one: it ran as if ``[:, None]``, a probe of kernel mistakes)."""
    seen: dict[tuple[int, int], Any] = {}
    for it in order:
        if it.count > 1 and seen.setdefault((it.ndim, it.pos), it) != it:
            other = seen[(it.ndim, it.pos)]
            raise fail(f"indexing {name} with index vectors of {other.count} and {it.count} elements along the same "
                       f"axis ({_vector_shape(other)} and {_vector_shape(it)}): numpy's indexing broadcasts them "
                       "together, which their shapes do not allow; the partition index takes nl.arange(n)[:, None], "
                       "a free one nl.arange(n)[None, :]")


def _vector_shape(it: Any) -> tuple[int, ...]:
    return tuple(it.count if k == it.pos else 1 for k in range(it.ndim))


def _range_preds(it: Iter, lo: int, hi: int) -> tuple[tuple[ArangeExpr, str, int], ...]:
    index = ArangeExpr(0, ((it, 1),))
    return ((index, "greater_equal", lo), (index, "less", hi))


def _cut(kept: np.ndarray, iters: list[Iter]) -> list[tuple[tuple[Iter, int, int], ...]]:
    """Disjoint boxes ``((iterator, lo, hi), ...)`` covering the true points of ``kept``."""
    if kept.ndim == 1:
        padded = np.concatenate(([False], kept, [False])).astype(np.int8)
        edges = np.flatnonzero(np.diff(padded))
        return [((iters[0], int(lo), int(hi)),) for lo, hi in zip(edges[::2], edges[1::2])]
    boxes: list[tuple[tuple[Iter, int, int], ...]] = []
    start, rows = 0, None
    for k in range(kept.shape[0] + 1):
        row = _cut(kept[k], iters[1:]) if k < kept.shape[0] else None
        if k and row != rows:
            boxes.extend(((iters[0], start, k),) + box for box in rows or [])
            start = k
        rows = row
    return boxes


_UIDS = count()


def new_iter(pos: int, ndim: int, n: int) -> Iter:
    """A fresh iterator of ``n`` values at position ``pos`` of ``ndim`` axes (the positions of
    a tile of indices, :mod:`~neuronsim.machine.nki.layout`)."""
    return Iter(next(_UIDS), pos, ndim, n)


class Iter:
    """One iteration axis of an ``nl.arange`` / ``nl.mgrid`` call: ``count`` values, at
    position ``pos`` of the call's ``ndim`` axes.  Iterators are the same when their ``uid``
    is (reshaping ``[:, None]`` moves the position, not the identity)."""

    __slots__ = ("uid", "pos", "ndim", "count")

    def __init__(self, uid: int, pos: int, ndim: int, n: int) -> None:
        self.uid, self.pos, self.ndim, self.count = uid, pos, ndim, n

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Iter) and other.uid == self.uid

    def __hash__(self) -> int:
        return self.uid

    def __repr__(self) -> str:
        return f"Iter({self.uid}, pos={self.pos}/{self.ndim}, n={self.count})"


@dataclass(frozen=True, eq=False)
class ArangeExpr:
    """``const + sum(coeff * iterator)``: an affine index vector (terms keep zero
    coefficients: ``0 * i_p`` still spans ``i_p``'s axis)."""

    const: Any  # int or SymIndex
    terms: tuple[tuple[Iter, int], ...]

    @property
    def iters(self) -> tuple[Iter, ...]:
        return tuple(it for it, _c in self.terms)

    @property
    def ndim(self) -> int:
        return max((it.ndim for it, _c in self.terms), default=0)

    @property
    def shape(self) -> tuple[int, ...]:
        """Positional shape (numpy's view of the index grid)."""
        shape = [1] * self.ndim
        for it in self.iters:
            shape[it.pos + self.ndim - it.ndim] = it.count
        return tuple(shape)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise fail("an index vector (nl.arange / nl.mgrid) takes no item assignment (err_cannot_assign_to_index): "
                   "make it a tile first with nisa.iota, then assign into the tile")

    def __getitem__(self, key: Any) -> ArangeExpr:
        key = key if isinstance(key, tuple) else (key,)
        if len(self.terms) == 1 and self.terms[0][0].ndim == 1:  # nl.arange(n)[:, None], the usual case
            (it, c), = self.terms
            placed = [p for p, k in enumerate(key) if k is not None]
            if len(placed) == 1 and key[placed[0]] == slice(None):
                return ArangeExpr(self.const, ((Iter(it.uid, placed[0], len(key), it.count), c),))
        iters = sorted(self.iters, key=lambda it: it.pos)
        given = sum(1 for k in key if k is not None)
        if given != self.ndim:
            shown = ", ".join(":" if k == slice(None) else "None" if k is None else "..." for k in key)
            raise fail(f"an index vector of {self.ndim} axes {self.shape} indexed [{shown}], which names {given}: "
                       f"it is reshaped by one ':' for each of its axes and None for each new one")
        moved, j = {}, 0
        for new_pos, k in enumerate(key):
            if k is None:
                continue
            if k != slice(None):
                raise fail("an index vector is reshaped by ':' and None only")
            for it in iters:
                if it.pos == j:
                    moved[it.uid] = Iter(it.uid, new_pos, len(key), it.count)
            j += 1
        return ArangeExpr(self.const, tuple((moved[it.uid], c) for it, c in self.terms))

    def __add__(self, other: Any) -> ArangeExpr:
        if isinstance(other, ArangeExpr):
            terms = dict(self.terms)
            for it, c in other.terms:
                terms[it] = terms.get(it, 0) + c
            return ArangeExpr(self.const + other.const, tuple(terms.items()))
        if isinstance(other, SymIndex) or is_int(other):
            return ArangeExpr(self.const + other, self.terms)
        return NotImplemented

    __radd__ = __add__

    def __neg__(self) -> ArangeExpr:
        return self * -1

    def __sub__(self, other: Any) -> ArangeExpr:
        return self + (-other)

    def __rsub__(self, other: Any) -> ArangeExpr:
        return (-self) + other

    def __mul__(self, other: Any) -> ArangeExpr:
        other = int(other) if isinstance(other, np.integer) else other
        if not is_int(other):
            raise fail("an index vector multiplies by integers only (indices are affine)")
        return ArangeExpr(self.const * other, tuple((it, c * other) for it, c in self.terms))

    __rmul__ = __mul__

    def _not_affine(self, *_args: Any) -> Any:
        # (a % of a mask's vector was Python's TypeError: a probe)
        raise fail("an index vector in %, //, / or ** is no affine expression: NKI's index and mask expressions are "
                   "affine (the errors page's err_unsupported_expression_in_mask: \"i % 2 is not an affine "
                   "expression\"; % and // by a positive integer pass where the result is affine over the index's "
                   "range); a stepped nl.arange or a range of the loop gives every second index")

    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _not_affine

    def _quasi_affine(self, other: Any, op: str) -> ArangeExpr:
        other = int(other) if isinstance(other, np.integer) else other  # (np.int64(K): a probe)
        if not is_int(other) or other <= 0 or isinstance(self.const, SymIndex):
            self._not_affine()
        try:
            fitted = affine_fit(self.const, [(it.count, c) for it, c in self.terms], other, divmod_op=op)
        except GridTooLarge as err:
            raise fail(f"an index vector {'//' if op == 'floor' else '%'} {other} {err}") from None
        if fitted is None:
            self._not_affine()
        base, coeffs = fitted
        return ArangeExpr(base, tuple(zip(self.iters, coeffs)))

    def __floordiv__(self, other: Any) -> ArangeExpr:
        return self._quasi_affine(other, "floor")

    def __mod__(self, other: Any) -> ArangeExpr:
        return self._quasi_affine(other, "mod")

    def __divmod__(self, other: Any) -> tuple[ArangeExpr, ArangeExpr]:
        return self._quasi_affine(other, "floor"), self._quasi_affine(other, "mod")

    __rfloordiv__ = __rmod__ = __rdivmod__ = _not_affine

    def _allowed(self, cmp: str, value: int) -> tuple[Iter, set[int]]:
        """The values of this expression's one iterator for which ``self <cmp> value`` holds
        (any coefficient, negative too: ``127 - i_p >= 64``)."""
        if isinstance(self.const, SymIndex):
            self.const._refuse("a mask that depends on a loop index")
        terms = [(it, c) for it, c in self.terms if c]
        if len(terms) != 1:
            raise unsupported("a mask comparing an expression of several index axes (i_p + i_f < n)",
                              "a mask keeps one box: bound each axis on its own")
        (it, coeff), = terms
        test = {"less": int.__lt__, "less_equal": int.__le__, "greater": int.__gt__, "greater_equal": int.__ge__,
                "equal": int.__eq__, "not_equal": int.__ne__}[cmp]
        return it, {i for i in range(it.count) if test(self.const + coeff * i, value)}

    def _cmp(self, cmp: str, other: Any) -> Mask:
        if isinstance(other, ArangeExpr):
            return (self - other)._cmp(cmp, 0)
        return Mask(((self, cmp, concrete(other, "a mask bound")),))

    def __lt__(self, other: Any) -> Mask:
        return self._cmp("less", other)

    def __le__(self, other: Any) -> Mask:
        return self._cmp("less_equal", other)

    def __gt__(self, other: Any) -> Mask:
        return self._cmp("greater", other)

    def __ge__(self, other: Any) -> Mask:
        return self._cmp("greater_equal", other)

    def __eq__(self, other: Any):  # type: ignore[override]
        """``i_p == i_f``: a comparison like the others (``affine_select``'s diagonal; as a
        ``mask=`` it must keep a box).  It was Python's identity, ``False``: a mask that
        silently dropped its instruction."""
        if isinstance(other, ArangeExpr) or is_int(other):
            return self._cmp("equal", other)
        return NotImplemented

    def __ne__(self, other: Any):  # type: ignore[override]
        if isinstance(other, ArangeExpr) or is_int(other):
            return self._cmp("not_equal", other)
        return NotImplemented

    __hash__ = object.__hash__  # an index vector is itself, in sets and dicts


def arange(*args: int) -> ArangeExpr:
    """``nl.arange([start,] stop[, step])``: a 1-D index vector."""
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    n = -(-(concrete(stop, "an arange bound") - start) // step)
    return ArangeExpr(start, ((Iter(next(_UIDS), 0, 1, n), step),))


class MGrid:
    """``nl.mgrid[0:p, 0:f]``: one index vector per slice, each over its own iterator."""

    def __getitem__(self, key: Any):
        key = key if isinstance(key, tuple) else (key,)
        out = []
        for j, k in enumerate(key):
            start, step = k.start or 0, k.step or 1
            n = -(-(concrete(k.stop, "an mgrid bound") - start) // step)
            out.append(ArangeExpr(start, ((Iter(next(_UIDS), j, len(key), n), step),)))
        return out[0] if len(out) == 1 else Grid(out)


class Grid(tuple):
    """The index vectors of one ``nl.mgrid`` call: a tuple, also named ``.p`` (the partition
    axis) and ``.x``, ``.y``, ``.z`` (the free axes), as legacy kernels write them."""

    p = property(lambda self: self[0])
    x = property(lambda self: self[1])
    y = property(lambda self: self[2])
    z = property(lambda self: self[3])


def without_ellipsis(key: tuple, rank: int) -> tuple:
    """``key`` with its ``...`` (if any) spelt out as whole slices of a ``rank``-dimensional view.

    >>> without_ellipsis((Ellipsis, 3), 3)
    (slice(None, None, None), slice(None, None, None), 3)
    """
    if not any(k is Ellipsis for k in key):
        return key
    at = key.index(Ellipsis)
    return key[:at] + (slice(None),) * (rank - len(key) + 1) + key[at + 1:]
