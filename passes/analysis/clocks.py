"""Vector clocks over the spec's happens-before rules, for the passes' own bookkeeping.

One component per sequencer and one per DMA queue.  A non-DMA instance completes on its
sequencer, a DMA on its queue; completions of one component happen in program order (rules 1
and 3), so ``clock[c] = p`` ("the first ``p`` completions of ``c`` happened") summarises all of
them.  For instance ``X`` with trigger clock ``T``:

* start ``S = T`` (non-DMA) or ``T ⊔ E(previous transfer on the queue)`` (rule 3);
* completion ``E = S`` plus ``X``'s own position on its component;
* the sequencer's clock for its next trigger becomes ``E`` (rule 1) or stays ``T`` (rule 2).

A wait on ``B`` (rule 4) joins ``E(B)`` into ``T``.  ``A`` is ordered before ``X`` (``E(A) <=
S(X)``) iff ``S[comp(A)] >= pos(A)``.  This mirrors the race checker's clock machine (issue #3)
without importing it: ``passes`` may import only ``machine``.

Examples
--------
>>> c = Clocks(num_queues=3, size=3)
>>> t = c.trigger(seq=4); s = c.finish(0, seq=4, comp=5, is_dma=True, trigger=t)   # sp -> dma0
>>> t = c.trigger(seq=2); s = c.finish(1, seq=2, comp=2, is_dma=False, trigger=t)  # dve
>>> c.ordered(0, s)                    # the DMA is not ordered before the dve op
False
>>> t = c.join(c.trigger(seq=1), c.end[0]); s = c.finish(2, seq=1, comp=1, is_dma=False, trigger=t)
>>> c.ordered(0, s), c.ordered(1, s)   # an act op waiting on the DMA
(True, False)
"""

from __future__ import annotations

from machine.ir import SEQUENCERS

__all__ = ["Clocks"]

_NSEQ = len(SEQUENCERS)


class Clocks:
    """Clock state while walking instances in program order."""

    __slots__ = ("width", "seq", "queue", "count", "end", "pos")

    def __init__(self, num_queues: int, size: int) -> None:
        self.width = _NSEQ + num_queues
        zero = (0,) * self.width
        self.seq = [zero] * _NSEQ
        self.queue = [zero] * num_queues
        self.count = [0] * self.width
        self.end: list[tuple[int, ...] | None] = [None] * size
        self.pos = [0] * size

    def trigger(self, seq: int) -> tuple[int, ...]:
        """The clock a new instance on sequencer ``seq`` triggers with, before its waits."""
        return self.seq[seq]

    @staticmethod
    def join(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        if a is b:
            return a
        return tuple(map(max, a, b))

    def start_of(self, comp: int, is_dma: bool, trigger: tuple[int, ...]) -> tuple[int, ...]:
        """``S`` for a trigger clock (rule 3 for a transfer)."""
        if not is_dma:
            return trigger
        return self.join(trigger, self.queue[comp - _NSEQ])

    def finish(self, iid: int, seq: int, comp: int, is_dma: bool, trigger: tuple[int, ...]) -> tuple[int, ...]:
        """Complete instance ``iid``; returns its start clock ``S``."""
        if is_dma:
            self.seq[seq] = trigger
            start = self.join(trigger, self.queue[comp - _NSEQ])
        else:
            start = trigger
        pos = self.count[comp] + 1
        self.count[comp] = pos
        end = start[:comp] + (pos,) + start[comp + 1:]
        if is_dma:
            self.queue[comp - _NSEQ] = end
        else:
            self.seq[seq] = end
        self.end[iid] = end
        self.pos[iid] = pos
        return start

    def ordered(self, a: int, start: tuple[int, ...], comp_a: int | None = None) -> bool:
        """Is finished instance ``a`` ordered before an instance starting at ``start``?"""
        end = self.end[a]
        if comp_a is None:
            return all(x <= y for x, y in zip(end, start))
        return start[comp_a] >= self.pos[a]
