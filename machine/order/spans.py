"""An index of half-open integer ranges, queried by overlap: which stored ranges meet ``[lo, hi)``.

Both task-level analyses scan "the earlier accesses of this storage" for each access: the
dependence pass (:mod:`neuronsim.passes.tasks.records`) and the race checker (:mod:`neuronsim.verify.tasks.check`).
A straight-line program writing thousands of disjoint tiles of one output would make that scan
quadratic; with this index an access meets only the earlier ranges that share an element with
its own.

The ranges are kept in one sorted list per power-of-two *span class* (class ``k`` holds ranges
of at most ``2**k`` elements), sorted by first element.  A range of class ``k`` that starts at
or before ``lo - 2**k`` ends by ``lo``, so the candidates of each class are one bisection away
and every candidate but the few straddling the window's left edge meets it.  Each stored range
carries an order number (``seq``): queries answer in that order, the order a plain scan of the
earlier accesses would visit them in.

Examples
--------
>>> index = SpanIndex()
>>> for seq, (lo, hi) in enumerate([(0, 64), (64, 128), (0, 4096), (128, 192)]):
...     index.add(lo, hi, seq, f"tile{seq}")
>>> index.meeting(60, 70)
[(0, 'tile0'), (1, 'tile1'), (2, 'tile2')]
>>> index.remove(1); [seq for seq, _ in index.meeting(0, 200)]
[0, 2, 3]
>>> index.drop_from(2); [seq for seq, _ in index.meeting(0, 200)], len(index)
([0], 1)
"""

from __future__ import annotations

from typing import Any

from sortedcontainers import SortedList

__all__ = ["SpanIndex"]


class SpanIndex:
    """Ranges ``[lo, hi)`` (``hi > lo``) with distinct order numbers and a payload each."""

    __slots__ = ("_classes", "_items", "_order")

    def __init__(self) -> None:
        self._classes: dict[int, SortedList] = {}  # span class -> sorted (lo, seq)
        self._items: dict[int, tuple[int, int, Any]] = {}  # seq -> (lo, hi, payload)
        self._order: list[int] = []  # seqs as added (for drop_from)

    def __len__(self) -> int:
        return len(self._items)

    @staticmethod
    def _span_class(lo: int, hi: int) -> int:
        return (hi - lo - 1).bit_length()

    def add(self, lo: int, hi: int, seq: int, payload: Any) -> None:
        """Store ``[lo, hi)`` under ``seq`` (order numbers must increase from one add to the next)."""
        if hi <= lo:
            raise ValueError(f"empty range [{lo}, {hi})")
        if self._order and seq <= self._order[-1]:
            raise ValueError(f"order number {seq} after {self._order[-1]}")
        bucket = self._classes.get(self._span_class(lo, hi))
        if bucket is None:
            bucket = self._classes[self._span_class(lo, hi)] = SortedList()
        bucket.add((lo, seq))
        self._items[seq] = (lo, hi, payload)
        self._order.append(seq)

    def remove(self, seq: int) -> None:
        """Forget the range stored under ``seq``."""
        lo, hi, _ = self._items.pop(seq)
        self._classes[self._span_class(lo, hi)].remove((lo, seq))

    def drop_from(self, seq: int) -> None:
        """Forget every range stored under ``seq`` or a later order number."""
        while self._order and self._order[-1] >= seq:
            last = self._order.pop()
            if last in self._items:
                self.remove(last)

    def meeting(self, lo: int, hi: int) -> list[tuple[int, Any]]:
        """``(seq, payload)`` of the ranges sharing an element with ``[lo, hi)``, by order number."""
        out: list[tuple[int, Any]] = []
        items = self._items
        for span, bucket in self._classes.items():
            for _, seq in bucket.irange((lo - (1 << span),), (hi,), inclusive=(True, False)):
                item_hi, payload = items[seq][1:]
                if item_hi > lo:
                    out.append((seq, payload))
        out.sort(key=lambda pair: pair[0])
        return out

    def every(self) -> list[tuple[int, Any]]:
        """``(seq, payload)`` of every stored range, by order number."""
        return [(seq, item[2]) for seq, item in sorted(self._items.items())]
