"""Explicit SBUF allocation for scenarios that place their own tiles (the builder's
``partition=`` / ``offset=`` / ``slots=`` on every tile, laid out by a cursor)."""

from __future__ import annotations

from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.build.views import Index, TensorRef, is_int

__all__ = ["SbufArena"]


class SbufArena:
    """Explicit SBUF allocation the way hand-allocated kernels write it: tile after tile.

    Kernels with direct allocation keep a byte cursor and hand it to ``ncc.sbuf.mod_alloc``
    (``cur_addr += ...`` in NS-ALLOC-ATT, ``MemManager.alloc_sbuf`` in NS-ATTUT;
    docs/kernel-patterns.md 1.4, 6.2, 6.4).  :meth:`sbuf` places a tile at the cursor, in partitions
    ``[partition, partition + shape[0])``, and moves the cursor past its last slot, rounded
    up to ``align`` bytes.

    >>> kb = KernelBuilder("k")
    >>> arena = SbufArena(kb, offset=256, align=32)
    >>> a = arena.sbuf("a", (128, 100), "bfloat16", slots=2, loop="i")
    >>> a.tensor.offset, a.tensor.rotate, arena.offset
    (256, Rotation(loop='i', slots=2, stride=200), 672)
    """

    def __init__(self, kb: KernelBuilder, *, offset: int = 0, partition: int = 0, align: int = 1) -> None:
        if not (is_int(offset) and offset >= 0 and is_int(align) and align >= 1):
            raise ValueError("an arena starts at a byte offset >= 0 and aligns to >= 1 byte")
        self.kb, self.offset, self.partition, self.align = kb, offset, partition, align

    def sbuf(self, name: str, shape, dtype: str, *, slots: int = 1, loop: str | Index | None = None) -> TensorRef:
        """A tile of ``slots`` rotating slots over ``loop`` (``mod_alloc(num_free_tiles=(slots,))``)
        at the cursor; the cursor moves past it."""
        ref = self.kb.sbuf(name, shape, dtype, partition=self.partition, offset=self.offset, slots=slots, loop=loop)
        end = self.offset + slots * ref.tensor.bytes_per_partition
        self.offset = -(-end // self.align) * self.align
        return ref
