"""Views past a tensor's end, refused where an instruction accesses them, not where they are
made: the instruction's mask may keep nothing, and a masked-off instruction does nothing on the
device.

nki-samples' blockwise matmul prefetches the block after the current one into a tile of blocks
(``buf[i + 1] = nl.load(..., mask=(i < N - 1))``, past the last block in the last iteration),
and on a grid that splits the blocks unevenly loads the expert of a block past the last
(``nl.load(block_to_expert[b], mask=(b < N))``).  Either view is an :class:`OutsideView`: an
access whose mask keeps nothing (``False``, given to the call or attached, ``t[k][k < n]``)
reads or writes nothing; any other access is refused at its line with the message the index
had.  An integer index past the end becomes one only where a tensor is subscripted
(:meth:`~neuronsim.machine.nki.tiles.NkiTensor.__getitem__`); every other index past the end
is refused where it is written, as before.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.nki import masked_access
from neuronsim.machine.nki.errors import NkiError, fail
from neuronsim.machine.nki.indexing import NEVER, as_mask
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import NkiTensor, register_operators
from neuronsim.machine.nki.tracer import current
from neuronsim.machine.build.views import is_int

__all__ = ["OutsideView", "outside"]


class OutsideView(NkiTensor):
    """``t[k]`` past a tensor's end (or past its last block): the shape, dtype and buffer of
    ``like`` (the view at an index inside), with no layout to access."""

    __slots__ = ("why", "like")

    def __init__(self, why: str, like: NkiTensor | None = None) -> None:
        super().__init__()
        self.why, self.like = why, like

    @property
    def layout(self) -> Layout:
        raise fail(self.why)

    # a block past the last has no shape, dtype or buffer of its own: asked for one, its index is the mistake
    @property
    def shape(self) -> tuple[int, ...]:
        return self._described().shape

    @property
    def dtype(self) -> Any:
        return self._described().dtype

    @property
    def buffer(self) -> Any:
        return self._described().buffer

    def _described(self) -> NkiTensor:
        if self.like is None:
            raise fail(self.why)
        return self.like

    def __getitem__(self, key: Any) -> NkiTensor:
        if masked_access.is_condition(key) and as_mask(key) is NEVER:  # a[k][k < n] at k = n: the call's mask
            return masked_access.masked(self, key, current())  # keeps nothing (masked_access.unwrap)
        raise fail(self.why)


def outside(why: str, layout: Layout | None = None, key: Any = None, keep: bool = False) -> OutsideView:
    """The view ``layout[key]``, refused for ``why`` where it is accessed; its shape is the one
    the key gives with its integers at 0 (an integer drops its dimension wherever it is).
    Without a layout (a block past the last of a directly allocated tile): no shape."""
    if layout is None:
        return OutsideView(why)
    parts = key if isinstance(key, tuple) else (key,)
    at_zero = tuple(0 if is_int(k) else k for k in parts)
    try:
        like = layout.index(at_zero if isinstance(key, tuple) else at_zero[0], keep_partition=keep)
    except NkiError:
        return OutsideView(why)
    return OutsideView(why, NkiTensor(like))


register_operators(outside=outside)
