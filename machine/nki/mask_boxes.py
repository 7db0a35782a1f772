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

from neuronsim.machine.nki.errors import unsupported
from neuronsim.machine.nki.indexing import Mask
from neuronsim.machine.nki.layout import Layout

__all__ = ["box_targets"]


def box_targets(call: str, mask: Mask | None, dst: Layout, transposed: bool = False,
                reduces: bool = False) -> Iterator[tuple[Mask | None, Layout]]:
    """``(box, dst restricted to it)`` for each box of ``mask`` that keeps an element of ``dst``
    (one ``(None, dst)`` without a mask).  ``transposed``: the mask is written in the indices of
    a 2-D transpose's source; ``reduces``: the call is a reduction (see the module)."""
    if mask is None:
        yield None, dst
        return
    boxes = mask.boxes
    if reduces and len(boxes) > 1:
        outputs = frozenset(it for it in mask.iterators() if _bounds_an_output(dst, it, transposed))
        boxes = mask.boxes_cut_first(outputs)
        ranges = {tuple(bound for bound in box.bounds if bound[0] in outputs) for box in boxes}
        if len(ranges) < len(boxes):
            raise unsupported(f"{call} with a mask= that keeps, for one output, reduced indices that are not one "
                              "range", "a mask keeping one range of the reduced axes per output")
    for box in boxes:
        target = dst
        for it, lo, hi in box.bounds:
            target = target.restrict(it, lo, hi, transposed)
        if not target.empty:
            yield box, target


def _bounds_an_output(dst: Layout, it, transposed: bool) -> bool:
    """Whether iterator ``it`` ranges over an axis of the destination: not a reduced axis kept
    as one element (``keepdims=True``), which an untagged destination places by position."""
    pos = dst.axis_of(it, transposed)
    return pos is not None and (dst.axes[pos][2] > 1 or it.count == 1)
