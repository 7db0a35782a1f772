"""Shadow memory for the race checker: split interval maps of access histories.

A :class:`SegmentMap` covers one address space (SBUF partition bytes, PSUM partition bytes,
DRAM addresses, or one alias-group tensor's bytes).  It is a split interval map: every access
boundary becomes a segment boundary, so each segment is touched whole or not at all by every
access recorded in it, and "do these two accesses share bytes" becomes "are they in one
segment" (the same trick as the seed's ``boost::icl::split_interval_map``).

Each segment keeps, per clock component, the writes and the reads recorded there in
completion order (an *epoch* ``(position, instance, partition mask)`` each).  This is the
FastTrack state without its lossy compression:

* the race-free fast path looks only at the last write epoch and the last read epoch of each
  component (``position <= start clock`` means ordered) - a read epoch "grows to a clock"
  exactly when reads of several components are concurrent;
* when a last epoch is concurrent, the earlier epochs of that component are walked back
  until one is ordered: epochs of one component complete in order, so the unordered ones are a
  suffix.  That makes the checker report *every* racing pair, not just the first, at a cost
  proportional to the races found;
* epochs every future access is ordered after (the clock horizon) are pruned, so memory stays
  bounded by what can still race.
"""

from __future__ import annotations

from bisect import bisect_left

__all__ = ["SegmentMap", "Histories"]

# An epoch: (position on its component, instance id, partition mask or byte cover).
Epoch = tuple


class Histories:
    """Per-component write and read epochs of one segment (or one alias tensor)."""

    __slots__ = ("writes", "reads")

    def __init__(self, writes: dict[int, list] | None = None, reads: dict[int, list] | None = None) -> None:
        self.writes: dict[int, list] = writes if writes is not None else {}
        self.reads: dict[int, list] = reads if reads is not None else {}

    def copy(self) -> Histories:
        return Histories({c: lst[:] for c, lst in self.writes.items()}, {c: lst[:] for c, lst in self.reads.items()})

    def record(self, comp: int, epoch: Epoch, is_write: bool, horizon: tuple[int, ...]) -> None:
        """Append an epoch; fold a second access of the same instance into the first."""
        table = self.writes if is_write else self.reads
        lst = table.get(comp)
        if lst is None:
            table[comp] = [epoch]
            return
        last = lst[-1]
        if last[1] == epoch[1]:
            if isinstance(last[2], int):
                lst[-1] = (last[0], last[1], last[2] | epoch[2])
            else:  # a byte cover (alias tensors): keep the covering range
                lst[-1] = (last[0], last[1], (min(last[2][0], epoch[2][0]), max(last[2][1], epoch[2][1])))
            return
        lst.append(epoch)
        if len(lst) > 8 and lst[0][0] <= horizon[comp]:
            floor = horizon[comp]
            keep = 0
            while keep < len(lst) and lst[keep][0] <= floor:
                keep += 1
            del lst[:keep]

    def concurrent(self, start: tuple[int, ...], with_reads: bool, iid: int) -> list[tuple[Epoch, bool]]:
        """``(epoch, was_write)`` for every epoch not ordered before ``start``.

        The fast path compares only each component's last epoch with the start clock.
        """
        out: list[tuple[Epoch, bool]] = []
        _unordered(self.writes, start, iid, True, out)
        if with_reads:
            _unordered(self.reads, start, iid, False, out)
        return out


def _unordered(table: dict[int, list], start: tuple[int, ...], iid: int, was_write: bool,
               out: list[tuple[Epoch, bool]]) -> None:
    """Append the epochs of ``table`` that ``start`` does not order (a suffix per component)."""
    for comp, lst in table.items():
        floor = start[comp]
        k = len(lst) - 1
        while k >= 0 and lst[k][0] > floor:
            if lst[k][1] != iid:
                out.append((lst[k], was_write))
            k -= 1


class SegmentMap:
    """A split interval map from byte ranges to :class:`Histories`.

    ``bounds`` are the sorted segment boundaries; ``cells[i]`` holds the histories of
    ``[bounds[i], bounds[i + 1])`` (None for a gap nothing has touched).
    """

    __slots__ = ("bounds", "cells")

    def __init__(self) -> None:
        self.bounds: list[int] = []
        self.cells: list[Histories | None] = []

    def _split(self, x: int) -> int:
        bounds = self.bounds
        i = bisect_left(bounds, x)
        if i < len(bounds) and bounds[i] == x:
            return i
        if not bounds:
            bounds.append(x)
            return 0
        bounds.insert(i, x)
        if i == 0:
            self.cells.insert(0, None)
        elif i == len(bounds) - 1:
            self.cells.append(None)
        else:
            cell = self.cells[i - 1]
            self.cells.insert(i, None if cell is None else cell.copy())
        return i

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """Split at ``lo`` and ``hi``; cells ``[i, j)`` then cover exactly ``[lo, hi)``.

        Every cell in the span exists afterwards (gaps get empty histories).
        """
        bounds = self.bounds
        i = bisect_left(bounds, lo)
        # Fast path: the access matches one existing segment (a buffer touched again).
        if i + 1 < len(bounds) and bounds[i] == lo and bounds[i + 1] == hi:
            if self.cells[i] is None:
                self.cells[i] = Histories()
            return i, i + 1
        i = self._split(lo)
        j = self._split(hi)
        cells = self.cells
        for k in range(i, j):
            if cells[k] is None:
                cells[k] = Histories()
        return i, j

    def segments(self, lo: int, hi: int) -> list[tuple[int, int, Histories]]:
        """``(lo, hi, histories)`` of every segment of ``[lo, hi)`` (splitting as needed)."""
        i, j = self.span(lo, hi)
        return [(self.bounds[k], self.bounds[k + 1], self.cells[k]) for k in range(i, j)]

    def __len__(self) -> int:
        return len(self.cells)
