"""``t[...][cond]``: an access carrying its own mask, the form neuronx-cc prints NKI in.

The compiler's printed kernels (and the neuron-team kernels of nki-samples written in their
style) bound an operand by subscripting its access with a comparison of its indices::

    nisa.nc_matmul(w[i_p, i_f][i_f < n], x[i_p, j][(j < m) & (i_p < k)])
    nl.load(t[idx][block < N - 1])          # a loop condition, decided as the loop unrolls

The comparison restricts the instruction's index space, as the same comparison given as the
call's ``mask=`` does: a mask names iterators, not operands, and every operand indexed by an
iterator is cut along it (:mod:`neuronsim.machine.nki.mask_boxes`).  So a
:class:`MaskedAccess` is the access and its mask, and :func:`unwrap` hands the call the access
with the masks of all its arguments joined (``&``) to the ``mask=`` it was given.  Chained
subscripts join too (``img[k < K][n < N]``).  A masked access is an operand of a call that takes
``mask=`` and nothing else: its own attributes and operators are refused at their line.

What the subscript adds to ``mask=`` is the operand it names.  The printer writes each mask with
``nl.arange`` calls of its own, so a mask's iterator means the access's axis at its place
(:meth:`~neuronsim.machine.nki.layout.Layout.axis_of`); :func:`bound_to` makes it the access's
own: the iterator indexing that axis stands for it, or, on an axis a slice indexes, it becomes
that axis's tag.  A matmul then knows which operand a mask bounds (``mask_boxes.matmul_roles``:
a mask on the moving operand's partitions is the contraction, not the result's partitions).

>>> from neuronsim.machine.nki.indexing import arange
>>> i = arange(8)[None, :]
>>> is_condition(i < 5), is_condition(False), is_condition(3)
(True, True, False)
>>> sorted((lo, hi) for _it, lo, hi in _joined(i < 5, i >= 1).bounds)
[(1, 5)]
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from functools import reduce
from typing import Any

import numpy as np

from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.indexing import NEVER, ArangeExpr, Mask, as_mask

__all__ = ["MaskedAccess", "is_condition", "masked", "unwrap", "bound_to"]


def is_condition(key: Any) -> bool:
    """Whether a subscript is a mask rather than an index: a comparison of index vectors, or the
    truth of one of loop variables alone (``[block_idx < N - 1]`` in an unrolled loop)."""
    return isinstance(key, (Mask, bool, np.bool_))


def _joined(first: Mask | None, second: Mask | None) -> Mask | None:
    if first is None:
        return second
    return first if second is None else first & second


def _renamed(mask: Mask, names: dict) -> Mask:
    """``mask`` with each iterator of ``names`` replaced by the one it maps to."""
    preds = tuple((ArangeExpr(expr.const, tuple((names.get(it, it), c) for it, c in expr.terms)), cmp, value)
                  for expr, cmp, value in mask.preds)
    return Mask(preds, tuple(_renamed(alt, names) for alt in mask.alternatives))


def bound_to(access: Any, mask: Mask | None) -> tuple[Any, Mask | None]:
    """``(access, mask)`` with the mask's iterators made the access's own (see the module): an
    iterator the access is not indexed by names the axis at its place; the iterator of that axis
    (of as many values) replaces it, or, an axis without one, is tagged with it."""
    if mask is None or mask is NEVER:
        return access, mask
    layout = access.layout
    tags = list(layout.tags or (None,) * len(layout.axes))
    names, tagged = {}, False
    for it in sorted(mask.iterators(), key=lambda it: it.uid):
        if any(tag and it in tag for tag in tags):
            continue
        pos = layout.axis_of(it)
        if pos is None:
            continue
        own = tags[pos]
        if not own:
            tags[pos], tagged = frozenset((it,)), True
        elif len(own) == 1 and next(iter(own)).count == it.count:
            names[it] = next(iter(own))
    if tagged:
        access = type(access)(replace(layout, tags=tuple(t or frozenset() for t in tags)))
    return access, _renamed(mask, names) if names else mask


class MaskedAccess:
    """An access (a tile or tensor view) and the mask its subscript gave it (None: none)."""

    __slots__ = ("access", "mask")

    def __init__(self, access: Any, mask: Mask | None) -> None:
        self.access = access
        self.mask = mask

    def __getitem__(self, key: Any) -> MaskedAccess:
        if not is_condition(key):
            raise fail("a masked access is indexed before its mask: t[i, j][cond], not t[cond][i, j]")
        access, mask = bound_to(self.access, as_mask(key))
        return MaskedAccess(access, _joined(self.mask, mask))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise fail(f"a masked access t[...][cond] has no attribute {attr!r}: it is an operand of an NKI call, "
                   "whose mask= its condition joins")

    def _refused(self, *_args: Any) -> Any:
        raise fail("a masked access t[...][cond] is an operand of an NKI call, whose mask= its condition joins; "
                   "it takes no arithmetic (subscript the call's result, or pass mask= to the operator's call)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refused
    __neg__ = __abs__ = __pow__ = __rpow__ = __and__ = __rand__ = __or__ = __ror__ = _refused
    __lt__ = __le__ = __gt__ = __ge__ = __iadd__ = __isub__ = __imul__ = _refused

    def __bool__(self) -> bool:
        return self._refused()

    def __repr__(self) -> str:
        return f"MaskedAccess({self.access!r})"


def masked(access: Any, key: Any, tracer: Any) -> MaskedAccess:
    """``access[key]`` for a condition ``key``; ``tracer``'s calls then unwrap their arguments."""
    tracer.masked_accesses = True
    return MaskedAccess(access, None)[key]


def unwrap(name: str, signature: inspect.Signature, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with each masked access replaced by its access and the masks joined
    to the call's ``mask=`` (given by keyword or in its place); unchanged without one."""
    masks = [a.mask for a in (*args, *kwargs.values()) if isinstance(a, MaskedAccess)]
    if not masks:
        return args, kwargs
    if "mask" not in signature.parameters:
        raise fail(f"{name} takes no mask=: an operand's t[...][cond] bounds the call through its mask=")
    mask = reduce(_joined, masks, None)
    args = tuple(a.access if isinstance(a, MaskedAccess) else a for a in args)
    kwargs = {k: v.access if isinstance(v, MaskedAccess) else v for k, v in kwargs.items()}
    place = list(signature.parameters).index("mask")
    if place < len(args) and signature.parameters["mask"].kind is not inspect.Parameter.KEYWORD_ONLY:
        args = (*args[:place], _joined(as_mask(args[place]), mask), *args[place + 1:])
    else:
        kwargs["mask"] = _joined(as_mask(kwargs.get("mask")), mask)
    return args, kwargs
