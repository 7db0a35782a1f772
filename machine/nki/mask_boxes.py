"""Where a held-back call's ``mask=`` puts its instructions: one per box of the mask.

A mask keeps a union of boxes, one contiguous range per iterator (:attr:`~neuronsim.machine.nki.
indexing.Mask.boxes`).  The tracer emits a masked call once per box, into its destination
restricted to the box; the operands are restricted by the same box when they are laid out
(:func:`~neuronsim.machine.nki.ops.lay` reads the tracer's mask).

A call that reduces (its operand has axes its result has not: ``nl.max(t, axis=[3, 4],
mask=...)``, legacy ``nisa.tensor_reduce``) writes each of its outputs whole from the reduced
elements its box keeps.  So its boxes must not share an output: the grid is cut along the
destination's iterators first (a padded pool's edge outputs get a box of their own, keeping
the window rows inside the image), and a mask that, for one output, keeps reduced indices that
are no one range (a hole) is refused at its line: two instructions would each write that output,
the second's result replacing the first's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from neuronsim.machine.nki.errors import unsupported
from neuronsim.machine.nki.indexing import Mask
from neuronsim.machine.nki.layout import P, Layout

__all__ = ["box_targets", "matmul_roles", "restricted_operand", "swapped_into"]


def box_targets(call: str, mask: Mask | None, dst: Layout, transposed: bool | str = False,
                reduces: tuple[frozenset[int], bool] | None = None, roles: dict[Any, int | None] | None = None
                ) -> Iterator[tuple[Mask | None, Layout]]:
    """``(box, dst restricted to it)`` for each box of ``mask`` that keeps an element of ``dst``
    (one ``(None, dst)`` without a mask).  ``transposed``: the mask is written in the indices of
    a 2-D transpose's source; ``reduces``: the call is a reduction, of these operand axes, kept
    or not (see the module); ``roles``: the destination axis an operand's own iterator bounds
    (:func:`matmul_roles`)."""
    if mask is None:
        yield None, dst
        return
    transposed = swapped_into(transposed, mask, dst)
    boxes = mask.boxes
    if reduces and len(boxes) > 1:
        outputs = frozenset(it for it in mask.iterators() if _bounds_an_output(dst, it, transposed, reduces))
        boxes = mask.boxes_cut_first(outputs)
        ranges = {tuple(bound for bound in box.bounds if bound[0] in outputs) for box in boxes}
        if len(ranges) < len(boxes):
            raise unsupported(f"{call} with a mask= that keeps, for one output, reduced indices that are not one "
                              "range", "a mask keeping one range of the reduced axes per output")
    for box in boxes:
        target = dst
        for it, lo, hi in box.bounds:
            if roles is not None and it in roles:  # (the axis it indexes in the result, else its role's)
                own = next((k for k, tag in enumerate(dst.tags or ()) if tag and it in tag), roles[it])
                target = target if roles[it] is None else target.restrict_axis(own, lo, hi)
            elif roles is not None and it.pos == 0:  # a matmul's result partitions, however many its axes
                target = target.restrict_axis(0, lo, hi)
            elif (place := _result_place(dst, it, reduces)) is not None:
                target = target.restrict_axis(place, lo, hi)
            else:
                target = target.restrict(it, lo, hi, transposed)
        if not target.empty:
            yield box, target


def swapped_into(transposed: bool | str, mask: Mask, dst: Layout) -> bool:
    """Whether a transpose's mask bounds ``dst``'s axes swapped: written in its source's own
    indices (``True``), or in fresh ones fitting its source (``"fresh"``,
    :func:`~neuronsim.machine.nki.ops.masked_in_source`) that do not index ``dst`` (where they do,
    ``y[i_p, i_f] = nl.transpose(t, mask=(i_p < 64))``, they bound the result's rows)."""
    if transposed != "fresh":
        return bool(transposed)
    return not any(tag and it in tag for tag in dst.tags or () for it in mask.iterators())


def matmul_roles(stationary: Layout, moving: Layout) -> dict[Any, int | None]:
    """The iterators indexing a matmul's operands, each with the result axis it bounds: the
    stationary's free iterator the result's partitions (M: the ``nc_matmul`` page's
    ``(128, 126)`` stationary gives a ``(126, 512)`` result), the moving one's its free axis (N;
    its ``k``-th free axis the result's ``1 + k``-th: ``[K, a, b]`` into ``[M, a, b]``), a
    partition iterator none (the contraction K).  A mask on such an iterator bounds that
    operand and that result axis alone (nki-samples' blockwise matmul masks the stationary's
    ``idx < I_TP``), not every operand's axis at its position.  An iterator indexing neither
    operand is the result's, by its place (:func:`restricted_operand`)."""
    roles: dict[Any, int | None] = {}
    for layout, first in ((stationary, 0), (moving, 1)):
        free = 0
        for (kind, _stride, _count), tag in zip(layout.axes, layout.tags or ()):
            for it in tag or ():
                roles[it] = None if kind == P else first + first * free
            free += kind != P
    return roles


def restricted_operand(layout: Layout, box: Mask, roles: dict[Any, int | None], moving: bool) -> Layout:
    """A matmul operand (the stationary, or the ``moving`` one) restricted by ``box``: an
    iterator of ``roles`` only where the operand's own index holds it, or a partition one (the
    contraction K, which both operands share) on the partitions.  Any other iterator is the
    result's, as the compiler prints a matmul's mask (nki-samples' blockwise matmul backward,
    ``mask=(-nl.arange(128)[:, None] + I_TP - 1 >= 0)``): at the first place its partitions M,
    the stationary's free axis; at place ``p`` after it the moving one's axis ``p`` (its
    columns N)."""
    last = len(layout.axes) - 1
    for it, lo, hi in box.bounds:
        if it not in roles:
            if (it.pos == 0) != moving:
                layout = layout.restrict_axis(min(it.pos, last) if moving else last, lo, hi)
            continue
        pos = next((k for k, tag in enumerate(layout.tags or ()) if tag and it in tag), None)
        if pos is None and roles[it] is None:  # the contraction: both operands' partitions
            pos = next((k for k, axis in enumerate(layout.axes) if axis[0] == P), None)
        layout = layout if pos is None else layout.restrict_axis(pos, lo, hi)
    return layout


def _bounds_an_output(dst: Layout, it, transposed: bool, reduces: tuple[frozenset[int], bool] | None) -> bool:
    """Whether iterator ``it`` ranges over an axis of the destination: not a reduced axis kept
    as one element (``keepdims=True``), which an untagged destination places by position."""
    pos = _result_place(dst, it, reduces)
    pos = dst.axis_of(it, transposed) if pos is None else pos
    return pos is not None and (dst.axes[pos][2] > 1 or it.count == 1)


def _result_place(dst: Layout, it, reduces: tuple[frozenset[int], bool] | None) -> int | None:
    """The axis of a reduction's result, indexed by no iterator (its own tile), that an iterator
    of the operand's places bounds: its place less the reduced axes before it (the conv1d of
    nki-samples' neuron-team kernels: ``tensor_reduce(add, x[i_p, i_w, i_f], axis=(1,),
    mask=(i_f < 7))`` bounds the result's second axis).  None when the result keeps the reduced
    axes, is indexed by iterators, or ``it`` is not of the operand's rank or is a reduced axis."""
    if not reduces or reduces[1] or dst.tags or it.ndim != len(dst.axes) + len(reduces[0]) or it.pos in reduces[0]:
        return None
    return it.pos - sum(axis < it.pos for axis in reduces[0])
