"""Happens-before as vector clocks, exactly per the spec's rules 1-4.

Components
    One clock component per sequencer (``pe act dve pool sp``) and one per DMA queue
    (``dma0 …``): eight on ``trn1``.  A non-DMA instance *completes* on its sequencer's
    component; a DMA instance completes on its queue's component.  Completions on one
    component happen in program order (rule 1 for a sequencer's non-DMA instances, rule 3 for
    a queue), so "everything up to position p of component c has completed" is one integer.

Clocks
    For an instance X the machine keeps three clocks, one per event of the spec:
    ``T(X)`` (trigger), ``S(X)`` (start) and ``E(X)`` (completion).  ``clock[c] = p`` means the
    first ``p`` completions of component ``c`` happen before the event.  The rules become:

    * rule 1 - same sequencer, X not a DMA: ``E(X) <= T(next)``: the sequencer's clock becomes
      ``E(X)``;
    * rule 2 - same sequencer, X a DMA: ``T(X) <= T(next)`` only: the sequencer's clock stays
      ``T(X)``;
    * rule 3 - same queue: ``E(X) <= S(next)``: the queue's clock becomes ``E(X)``, and a
      transfer starts at ``S(X) = T(X) ⊔ queue clock``;
    * rule 4 - "Y waits for B": ``E(B) <= T(Y)``: ``T(Y) = sequencer clock ⊔ E(B)``.

    ``A`` is ordered before ``Y`` (``E(A) <= S(Y)``) iff ``S(Y)[comp(A)] >= pos(A)``.  This is
    exact, not an approximation: the order is reachability in the DAG of T/S/E nodes, and on a
    component completions are totally ordered, so the maximum position reached summarises all
    of them (Fidge/Mattern clocks over in-order components).

Both entry points of the race checker feed :class:`ClockMachine` the same way: the static
check with the waits the program's ``deps`` resolve to, the trace check with the waits the
simulator recorded as met.

References
----------
C. Flanagan and S. N. Freund, "FastTrack: efficient and precise dynamic race detection",
PLDI 2009.  C. J. Fidge, "Timestamps in message-passing systems that preserve the partial
ordering", 1988.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from machine.ir import SEQUENCERS

__all__ = ["ClockMachine", "Step", "component_names"]


def _joiner(width: int):
    """A component-wise max of two clocks, unrolled for ``width`` (several times faster than
    ``tuple(map(max, a, b))`` in CPython; see performance-notes section 2.3)."""
    items = ", ".join(f"a[{i}] if a[{i}] > b[{i}] else b[{i}]" for i in range(width))
    namespace: dict = {}
    exec(f"def join(a, b):\n    return ({items},)", namespace)  # noqa: S102 - generated from an int
    return namespace["join"]


def component_names(num_queues: int) -> tuple[str, ...]:
    """Names of the clock components: the sequencers, then the DMA queues.

    >>> component_names(3)
    ('pe', 'act', 'dve', 'pool', 'sp', 'dma0', 'dma1', 'dma2')
    """
    return SEQUENCERS + tuple(f"dma{i}" for i in range(num_queues))


class Step(NamedTuple):
    """What the clock machine learned about one instance (a named tuple: one per instance)."""

    start: tuple[int, ...]
    """``S(X)``: completions known to have happened before X starts touching memory."""
    component: int
    """Component X completes on."""
    position: int
    """1-based position of X's completion on that component."""


_new_step = tuple.__new__  # builds a Step without the named tuple's Python-level __new__


class ClockMachine:
    """Feeds instances in an order consistent with happens-before (program order is one).

    Examples
    --------
    >>> m = ClockMachine(num_queues=3)
    >>> a = m.step(0, seq=2, queue=None, waits=())       # dve compute
    >>> b = m.step(1, seq=4, queue=5, waits=())          # sp triggers a DMA on dma0
    >>> c = m.step(2, seq=1, queue=None, waits=(1,))     # act waits for the DMA
    >>> m.ordered(a, c), m.ordered(b, c), m.ordered(a, b)
    (False, True, False)
    """

    __slots__ = ("width", "_seq", "_queue", "_count", "_completion", "_keep", "_join", "_nseq")

    def __init__(self, num_queues: int, keep: Iterable[int] | dict[int, int] | None = None) -> None:
        self.width = len(SEQUENCERS) + num_queues
        zero = (0,) * self.width
        self._seq = [zero] * len(SEQUENCERS)
        self._queue = [zero] * num_queues
        self._count = [0] * self.width
        self._completion: dict[int, tuple[int, ...]] = {}
        # None keeps every completion clock.  Otherwise only those of instances waited on are
        # kept; given as {instance: number of waits on it}, a clock is freed after its last use.
        if keep is None or isinstance(keep, dict):
            self._keep = keep
        else:
            self._keep = dict.fromkeys(keep, -1)
        self._join = _joiner(self.width)
        self._nseq = len(SEQUENCERS)

    def step(self, iid: int, seq: int, queue: int | None, waits: Iterable[int]) -> Step:
        """Process instance ``iid`` on sequencer index ``seq`` (queue component index or None).

        ``waits`` are ids of earlier instances whose completion ``iid`` waits for.
        """
        clock = self._seq[seq]
        join = self._join
        keep = self._keep
        for target in waits:
            other = self._completion[target]
            if clock is not other:
                clock = join(clock, other)
            if keep is not None:
                left = keep[target] - 1
                if left == 0:
                    del self._completion[target]
                keep[target] = left
        if queue is None:
            comp = seq
            start = clock
        else:
            self._seq[seq] = clock  # rule 2: only the trigger is ordered on the sequencer
            comp = queue
            qclock = self._queue[queue - self._nseq]
            start = join(clock, qclock)
        pos = self._count[comp] + 1
        self._count[comp] = pos
        end = start[:comp] + (pos,) + start[comp + 1 :]
        if queue is None:
            self._seq[seq] = end  # rule 1
        else:
            self._queue[queue - self._nseq] = end  # rule 3
        if keep is None or iid in keep:
            self._completion[iid] = end
        return _new_step(Step, (start, comp, pos))

    @staticmethod
    def ordered(earlier: Step, later: Step) -> bool:
        """True iff ``E(earlier) <= S(later)`` follows from the rules."""
        return later.start[earlier.component] >= earlier.position

    def horizon(self, active: Iterable[int] | None = None) -> tuple[int, ...]:
        """Per component, positions that every *future* instance is ordered after.

        Every later instance starts no earlier than the current clock of the sequencer that
        issues it (a transfer starts after its trigger), so the component-wise minimum over
        the sequencers that still have instances to come (``active``, default all) is a floor
        for every start clock still to come.  Accesses at or below it can never race again.
        """
        seqs = range(len(self._seq)) if active is None else active
        clocks = [self._seq[s] for s in seqs]
        if not clocks:
            return (1 << 62,) * self.width
        return tuple(min(column) for column in zip(*clocks))
