"""Views past a tensor's end, refused where an instruction accesses them, not where they are
made: the instruction's mask may keep nothing, and a masked-off instruction does nothing on the
device.

nki-samples' blockwise matmul prefetches the block after the current one into a tile of blocks
(``buf[i + 1] = nl.load(..., mask=(i < N - 1))``, past the last block in the last iteration),
and on a grid that splits the blocks unevenly loads the expert of a block past the last
(``nl.load(block_to_expert[b], mask=(b < N))``).  Either view is an :class:`OutsideView`: an
access whose mask keeps nothing (``False``, or a mask ``t[k][k < n]`` attached to the view)
reads or writes nothing; any other access is refused at its line with the message the index
had.  An integer index past the end becomes one only where a tensor is subscripted
(:meth:`~neuronsim.machine.nki.tiles.NkiTensor.__getitem__`); every other index past the end
is refused where it is written, as before.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.nki import masked_access
from neuronsim.machine.nki.alloc import TileSpec
from neuronsim.machine.nki.errors import NkiError, fail
from neuronsim.machine.nki.indexing import NEVER, as_mask
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import NkiTensor, register_operators
from neuronsim.machine.build.views import is_int

__all__ = ["OutsideView", "outside"]


class OutsideView(NkiTensor):
    """``t[k]`` past a tensor's end (or past its last block): its shape, dtype and buffer, with
    no layout to access.  ``masked_off``: a mask attached to it keeps nothing."""

    __slots__ = ("why", "masked_off")

    def __init__(self, why: str, spec: TileSpec | None = None, masked_off: bool = False) -> None:
        super().__init__(spec=spec)
        self.why, self.masked_off = why, masked_off

    @property
    def layout(self) -> Layout:
        raise fail(self.why)

    # a block past the last has no shape, dtype or buffer of its own: asked for one, its index is the mistake
    @property
    def shape(self) -> tuple[int, ...]:
        return NkiTensor.shape.fget(self._described())

    @property
    def dtype(self) -> Any:
        return NkiTensor.dtype.fget(self._described())

    @property
    def buffer(self) -> Any:
        return NkiTensor.buffer.fget(self._described())

    def _described(self) -> OutsideView:
        if self._spec is None:
            raise fail(self.why)
        return self

    def __getitem__(self, key: Any) -> NkiTensor:
        if masked_access.is_condition(key) and as_mask(key) is NEVER:  # a[k][k < n] at k = n: nothing accessed
            return OutsideView(self.why, self._spec, masked_off=True)
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
    memory = "hbm" if not like.on_chip else like.tensor.memory.name.lower()
    return OutsideView(why, TileSpec(tuple(like.shape), like.element_dtype, memory))


register_operators(outside=outside)
