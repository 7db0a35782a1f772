"""Shadow memory of the race checker: per-cell access histories in split interval maps.

Every memory space is cut into the cells of :class:`neuronsim.machine.order.splitmap.CellSpace` (partition
atoms x byte ranges split at every access boundary), so each access covers a cell whole or
not at all, and two accesses conflict exactly when they share a cell.  A cell's value is a
:class:`Histories`: per clock component, the writes and the reads recorded there in
completion order (an *epoch* ``(position, instance)`` each).  This is the FastTrack state
without its lossy compression:

* the race-free fast path looks only at the last write and the last read epoch of each
  component (``position <= start clock`` means ordered);
* when a last epoch is concurrent, the earlier epochs of that component are walked back until
  one is ordered: epochs of one component complete in order, so the unordered ones are a
  suffix.  That makes the checker report *every* racing pair, not just the first, at a cost
  proportional to the races found;
* epochs every future access is ordered after (the clock horizon,
  :meth:`neuronsim.machine.order.hb.HappensBefore.horizon`) are pruned, so memory stays bounded by what can
  still race.
"""

from __future__ import annotations

__all__ = ["Histories", "unordered", "PRUNE_AT"]

#: Epochs per component list above which the list is pruned against the horizon.
PRUNE_AT = 8


class Histories:
    """Per-component write and read epochs of one cell (or one alias-group tensor)."""

    __slots__ = ("writes", "reads")

    def __init__(self, writes: dict[int, list] | None = None, reads: dict[int, list] | None = None) -> None:
        self.writes: dict[int, list] = writes if writes is not None else {}
        self.reads: dict[int, list] = reads if reads is not None else {}

    def copy(self) -> Histories:
        return Histories({c: lst[:] for c, lst in self.writes.items()}, {c: lst[:] for c, lst in self.reads.items()})

    def record(self, comp: int, epoch: tuple, is_write: bool, horizon: tuple[int, ...]) -> None:
        """Append an epoch (a second access of the same instance is recorded once)."""
        table = self.writes if is_write else self.reads
        lst = table.get(comp)
        if lst is None:
            table[comp] = [epoch]
            return
        if lst[-1][1] == epoch[1]:
            return
        lst.append(epoch)
        if len(lst) > PRUNE_AT and lst[0][0] <= horizon[comp]:
            prune(lst, horizon[comp])


def prune(lst: list, floor: int) -> None:
    """Drop the epochs at or below ``floor`` (every future access is ordered after them)."""
    keep = 0
    while keep < len(lst) and lst[keep][0] <= floor:
        keep += 1
    del lst[:keep]


def unordered(table: dict[int, list], start: tuple[int, ...], iid: int) -> list[tuple]:
    """The epochs of ``table`` that ``start`` does not order (a suffix per component),
    other than instance ``iid``'s own."""
    out = []
    for comp, lst in table.items():
        floor = start[comp]
        k = len(lst) - 1
        while k >= 0 and lst[k][0] > floor:
            if lst[k][1] != iid:
                out.append(lst[k])
            k -= 1
    return out
