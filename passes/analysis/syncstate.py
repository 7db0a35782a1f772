"""Engine positions (``assignIds``) and the two-bank ``SyncState`` of ``dep_reduction``.

Engines
    The machine's engines are its five sequencers followed by its DMA queues
    (``pe act dve pool sp dma0 dma1 dma2`` on ``trn1``: eight).  An instance *completes* on
    one engine: a non-DMA instance on the sequencer that issues it, a DMA transfer on its
    queue.  :func:`assign_ids` numbers the completions of each engine ``0, 1, 2, ...`` in
    program order (the seed's engine-position ids).

Why a completion position is enough
    Completions on one engine are totally ordered by the spec's rules: on a sequencer by
    rule 1 (``E(X) <= T(next)``; a DMA in between passes the order on by rule 2), on a queue
    by rule 3 (``E(X) <= S(next)``).  So whenever position ``k`` of an engine is known
    complete, every position ``j < k`` is too: the set of known completions of an engine is
    always a prefix ``{0..k}``.  This is caveat 1.4 of the performance notes; it is what
    makes one counting semaphore per engine sufficient, and it is why the fast reduction can
    store the *frontier* ``k`` of each bitmap instead of the bitmap.

:class:`SyncState` is the seed's "what has happened before here" summary:

* bank A (``completed``): per engine, a BitMap of positions known complete;
* bank B (``issued``): per DMA queue, a BitMap of transfers whose *trigger* is known to have
  happened but whose completion is not (the async window of rule 2: a sequencer that
  triggers a DMA learns only ``T(X) <= T(next)``, never its completion).  Bank B is not a
  prefix: one queue is fed by several sequencers, whose triggers are not ordered with each
  other, so it genuinely needs a set.  :meth:`SyncState.minimize` removes from bank B what
  bank A says has completed (the seed's ``andnot_inplace``).  The exact reduction never needs
  bank B (knowing a trigger never proves a completion); ``dep-reduction{window=async}``
  reads it, as the seed's ``RedundantAsyncRemover`` (:mod:`neuronsim.passes.analysis.asyncwindow`).

Examples
--------
>>> s = SyncState(8)
>>> s.set_completed(2, 0); s.set_completed(2, 1)
>>> s.set_completed(5, 3, issued=True)         # dma0 transfer 3 triggered, not complete
>>> s.has_completed(2, 1), s.has_completed(5, 3), s.is_issued(5, 3)
(True, False, True)
>>> t = SyncState.from_frontier((-1, -1, -1, -1, -1, 3, -1, -1))
>>> s.merge(t); s.minimize()                   # dma0 0..3 complete: 3 leaves the window
>>> s.frontier(), s.window(5)
((-1, -1, 1, -1, -1, 3, -1, -1), [])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

from neuronsim.machine.ir.program import SEQUENCERS
from neuronsim.machine.model.presets import MachineSpec

__all__ = ["SyncState", "EnginePositions", "assign_ids", "NUM_SEQUENCERS"]

NUM_SEQUENCERS = len(SEQUENCERS)
_SEQ_INDEX = {name: i for i, name in enumerate(SEQUENCERS)}


class SyncState:
    """Two banks of per-engine pyroaring BitMaps (the seed's ``SyncState``).

    A working accumulator, mutable on purpose like the seed's: the reduction folds clocks
    into one and then records it; a recorded state is never mutated again (``copy`` first).
    """

    __slots__ = ("completed", "issued")

    def __init__(self, width: int) -> None:
        self.completed: list[BitMap] = [BitMap() for _ in range(width)]
        self.issued: list[BitMap] = [BitMap() for _ in range(width)]

    @classmethod
    def from_frontier(cls, frontier: Sequence[int]) -> SyncState:
        """The state whose bank A holds ``{0..frontier[e]}`` on every engine ``e``."""
        state = cls(len(frontier))
        for engine, last in enumerate(frontier):
            if last >= 0:
                state.completed[engine].add_range(0, last + 1)
        return state

    # -- the seed's three mutators -------------------------------------------------------
    def set_completed(self, engine: int, position: int, issued: bool = False) -> None:
        """``setCompleted``: add ``position`` to bank B (``issued``) or bank A."""
        (self.issued if issued else self.completed)[engine].add(position)

    def remove(self, engine: int, position: int, issued: bool = False) -> None:
        """``remove``: drop ``position`` from bank B (``issued``) or bank A."""
        (self.issued if issued else self.completed)[engine].discard(position)

    def merge(self, other: SyncState) -> None:
        """``merge``: union both banks engine by engine (the join of two clocks)."""
        for mine, theirs in zip(self.completed, other.completed):
            mine |= theirs
        for mine, theirs in zip(self.issued, other.issued):
            mine |= theirs

    # -- queries ---------------------------------------------------------------------------
    def has_completed(self, engine: int, position: int) -> bool:
        """``hasCompleted``: the redundancy test, one ``contains``."""
        return position in self.completed[engine]

    def is_issued(self, engine: int, position: int) -> bool:
        """True when the transfer is known triggered but not known complete."""
        return position in self.issued[engine]

    def minimize(self) -> None:
        """Remove completed transfers from the async window (bank B -= bank A)."""
        for window, done in zip(self.issued, self.completed):
            if window:
                window -= done

    def frontier(self) -> tuple[int, ...]:
        """Per engine the last position known complete (-1 for none): bank A is a prefix."""
        return tuple(bm.max() if bm else -1 for bm in self.completed)

    def window(self, engine: int) -> list[int]:
        """Positions of ``engine`` in the async window (triggered, not known complete)."""
        return list(self.issued[engine])

    def copy(self) -> SyncState:
        other = SyncState.__new__(SyncState)
        other.completed = [BitMap(bm) for bm in self.completed]
        other.issued = [BitMap(bm) for bm in self.issued]
        return other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SyncState):
            return NotImplemented
        return self.completed == other.completed and self.issued == other.issued

    def __repr__(self) -> str:
        windows = {e: len(bm) for e, bm in enumerate(self.issued) if bm}
        return f"SyncState(frontier={self.frontier()}, async={windows})"


@dataclass(frozen=True, slots=True)
class EnginePositions:
    """``assignIds``: where each instance of an unrolled program completes and issues.

    All tuples are indexed by instance id (program order).
    """

    engines: tuple[str, ...]
    """Engine names: the sequencers, then the DMA queues."""
    engine: tuple[int, ...]
    """Engine the instance completes on (its sequencer, or for a DMA its queue)."""
    position: tuple[int, ...]
    """0-based position of its completion on that engine, in program order."""
    issuer: tuple[int, ...]
    """Sequencer that issues (triggers) the instance."""
    is_dma: tuple[bool, ...]
    counts: tuple[int, ...]
    """Completions per engine."""

    @property
    def width(self) -> int:
        return len(self.engines)

    def is_queue(self, engine: int) -> bool:
        return engine >= NUM_SEQUENCERS


def assign_ids(stream, spec: MachineSpec | None = None) -> EnginePositions:
    """Number each engine's completions in program order (``stream``: an
    :class:`~neuronsim.machine.order.stream.InstanceStream`, or an :class:`~neuronsim.machine.order.unroll.Unrolled`).

    >>> from neuronsim.machine.ir.program import Instruction, Program
    >>> from neuronsim.machine.order.stream import InstanceStream
    >>> body = (Instruction("a", "sp", "dma_copy", queue="dma1"), Instruction("b", "sp", "nop"),
    ...         Instruction("c", "act", "dma_copy", queue="dma1"))
    >>> ids = assign_ids(InstanceStream(Program({}, body)))
    >>> [ids.engines[e] for e in ids.engine], ids.position, ids.issuer
    (['dma1', 'sp', 'dma1'], (0, 0, 1), (4, 4, 1))
    """
    stream = getattr(stream, "stream", stream)
    engines = stream.components
    counts = np.bincount(stream.comp, minlength=len(engines))
    return EnginePositions(engines, tuple(stream.comp.tolist()), tuple((stream.pos - 1).tolist()),
                           tuple(stream.seq.tolist()), tuple(stream.dma.tolist()), tuple(counts.tolist()))


def fold_waits(entries, targets, state: SyncState, eng, pos, recorded: dict, remaining: dict,
               redundant: bytearray, in_window: bytearray) -> tuple[SyncState, bool]:
    """The seed's fold of one waiter's waits (``entries``, in the order the fold takes them)
    into the sync state it starts from: a wait whose target ``state`` already has completed is
    redundant; every other merges its target's recorded state (``mergeSyncStates``).  Marks
    ``redundant`` / ``in_window`` (the target issued in the waiter's window, bank B) per entry,
    frees a record after its last waiter (the seed's successor counter) and returns the state
    with whether it is a fresh copy."""
    fresh = False
    for k in entries:
        x = targets[k]
        in_window[k] = state.is_issued(eng[x], pos[x])
        if state.has_completed(eng[x], pos[x]):
            redundant[k] = 1
        else:
            if not fresh:
                state, fresh = state.copy(), True
            state.merge(recorded[x])
        remaining[x] -= 1
        if not remaining[x]:
            del recorded[x]
    return state, fresh
