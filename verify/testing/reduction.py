"""The transitive reduction of waits on the seed's two-bank SyncState: a reference path.

:func:`neuronsim.passes.dep_reduction.redundant_waits` is the product's reduction (frontier
clocks, :meth:`neuronsim.machine.order.hb.HappensBefore.fold`).  This is the seed's
``applyReorderReduction`` loop written on its own data structure
(:class:`~neuronsim.passes.analysis.syncstate.SyncState`, pyroaring bitmaps), about an order of
magnitude slower: the tests check both agree entry for entry, ``bench/bench_reduction.py``
times one against the other.
"""

from __future__ import annotations

from neuronsim.machine.order.hb import wait_counts
from neuronsim.passes.analysis.syncstate import NUM_SEQUENCERS, SyncState, assign_ids, fold_waits
from neuronsim.passes.dep_reduction import LATEST_FIRST, InstanceWaits, validate_options

__all__ = ["redundant_waits_syncstate"]


def redundant_waits_syncstate(waits: InstanceWaits, fold: str = LATEST_FIRST) -> tuple[bytearray, bytearray]:
    """The same reduction on the seed's two-bank :class:`SyncState` (reference path).

    Returns ``(redundant, in_window)``: per entry, whether it is redundant, and whether its
    target was in the waiter's async window when tested (a DMA whose trigger the waiter
    already knows but whose completion it does not: bank B).  About an order of magnitude
    slower than :func:`neuronsim.passes.dep_reduction.redundant_waits`; the tests check both agree
    entry for entry.
    """
    validate_options(fold)
    pos_ = assign_ids(waits.stream)
    n, width = len(pos_.engine), pos_.width
    eng, pos, seq, dma = pos_.engine, pos_.position, pos_.issuer, pos_.is_dma
    empty = SyncState(width)
    seq_state = [empty] * NUM_SEQUENCERS
    queue_state = [empty] * width
    recorded: dict[int, SyncState] = {}
    remaining = wait_counts(waits.target)
    redundant = bytearray(len(waits.target))
    in_window = bytearray(len(waits.target))
    for y in range(n):
        s = seq[y]
        entries = waits.waits_of(y)
        state, fresh = fold_waits(entries if fold == LATEST_FIRST else reversed(entries), waits.target, seq_state[s],
                                  eng, pos, recorded, remaining, redundant, in_window)
        if fresh:
            state.minimize()
        e = eng[y]
        if dma[y]:
            trigger = state.copy()
            trigger.set_completed(e, pos[y], issued=True)  # the window opens at T(Y)
            seq_state[s] = trigger
            end = state.copy()
            end.merge(queue_state[e])
            end.set_completed(e, pos[y])
            end.minimize()
            queue_state[e] = end
        else:
            end = state if fresh else state.copy()
            end.set_completed(e, pos[y])
            seq_state[s] = end
        if y in remaining:
            recorded[y] = end  # recordSyncState
    return redundant, in_window
