"""The race checker's fast path: one sort instead of a walk, for programs without races.

A program is race-free iff, in every byte, every access is ordered after the last write
before it, and every write after the reads since the previous write (by induction along each
byte's accesses in program order: the writes form an ordered chain and every read hangs off
it).  With the accesses cut into segments (:func:`neuronsim.machine.order.events.access_events`), those are
the neighbours of each event in its segment, so the whole question is a handful of numpy
operations over the events.  A pair that rules 1 and 3 order (same sequencer, same queue) or
that a wait names directly (rule 4) is settled without clocks; only the others need the start
clocks of the instances (:func:`neuronsim.machine.order.hb.first_unordered`, one walk): "``a`` is ordered
before ``b``" is ``S(b)[comp(a)] >= pos(a)``.

:func:`race_free` answers yes exactly when the program has no race.  When the answer is no,
or the program has DRAM alias groups (whose events over-approximate sharing), the caller runs
the exact walk of :mod:`neuronsim.verify.racecheck`, which lists every racing pair: the fast path never
reports a race itself, so its answer is only ever used when it is "race-free".
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.order.events import access_events, latest_first_keys
from neuronsim.machine.order.hb import first_unordered
from neuronsim.machine.order.stream import InstanceStream, Waits

__all__ = ["race_free", "neighbour_pairs", "open_pairs", "not_waited_on"]

#: Pairs looked up or compared at once: a per-pair column of the whole program is megabytes
#: at a million instructions, and the check's peak is made of them (performance notes 2.9).
_CHUNK = 1 << 20


def neighbour_pairs(seg: np.ndarray, inst: np.ndarray, write: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(earlier, later)`` instance pairs that must be ordered for a race-free program: each
    access after the previous write of its segment, each write after the reads since that
    write (each read before the next write of another instance).

    >>> seg = np.array([0, 0, 0, 0]); inst = np.array([1, 2, 3, 4]); w = np.array([True, False, False, True])
    >>> [list(map(int, a)) for a in neighbour_pairs(seg, inst, w)]
    [[1, 1, 1, 2, 3], [2, 3, 4, 4, 4]]
    """
    n = len(seg)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # each per-event column is let go as soon as the next one is made from it (at a million
    # instances each is megabytes, and this is the check's peak: performance notes 2.9)
    idx = np.arange(n, dtype=np.int32)  # event positions below 2**31: half the bytes of each column below
    start = np.ones(n, bool)
    start[1:] = seg[1:] != seg[:-1]
    seg_first = np.maximum.accumulate(np.where(start, idx, 0))
    del start
    # the last write strictly before each event, inside its segment
    last_w = np.maximum.accumulate(np.where(write, idx, -1))
    prev_w = np.empty(n, np.int32)
    prev_w[0] = -1
    prev_w[1:] = last_w[:-1]
    del last_w
    has_prev = prev_w >= seg_first
    del seg_first
    end = np.ones(n, bool)
    end[:-1] = seg[1:] != seg[:-1]
    seg_last = np.minimum.accumulate(np.where(end, idx, n)[::-1])[::-1]
    del end
    # the first write strictly after each read, inside its segment
    next_w = np.full(n, n, np.int32)
    next_w[:-1] = np.minimum.accumulate(np.where(write, idx, n)[::-1])[::-1][1:]
    del idx
    has_next = ~write & (next_w <= seg_last)
    del seg_last
    nxt = np.where(has_next, next_w, 0)
    del next_w
    has_next &= inst[nxt] != inst  # a read-modify-write's own write: the next write checks it
    earlier = np.concatenate([inst[prev_w[has_prev]], inst[has_next]])
    later = np.concatenate([inst[has_prev], inst[nxt[has_next]]])
    return earlier, later  # of ``inst``'s dtype (the events' int32): keys are widened where made


def race_free(stream: InstanceStream, waits: Waits) -> bool:
    """True iff the program has no race under ``waits`` (False: it may have some; the exact
    walk decides).  DRAM alias groups always answer False (see the module doc).

    Each neighbour pair is settled by the cheapest rule that orders it: rules 1 and 3 (the
    later instance's sequencer ran the earlier one; two transfers of one queue), then rule 4
    directly (the later instance waits on the earlier one: a program whose deps name every
    conflict, as the builders give them before reduction, stops here), and only then the
    start clocks of the happens-before walk (:func:`neuronsim.machine.order.hb.first_unordered`)."""
    if any(isinstance(ca.space, tuple) for ca in stream.templates):
        return False
    ev = access_events(stream, "space")
    pairs = list(open_pairs(stream, *neighbour_pairs(ev.seg, ev.inst, ev.write)))[::-1]  # [later, earlier]
    # The pairs are wanted grouped by their later instance: one walk of the happens-before
    # rules then tests each instance's pairs against its start clock as it goes
    # (:func:`~neuronsim.machine.order.hb.first_unordered`), keeping no clock past its instance.
    if len(waits.target):  # the pairs are let go as their keys are made (the check's peak)
        earlier, later = _unwaited(waits, latest_first_keys(pairs, len(stream)), len(stream))  # by later
    else:
        later, earlier = pairs
        order = np.argsort(later, kind="stable")
        earlier, later = earlier[order], later[order]
        del order
    del pairs
    if not len(earlier):
        return True
    pair_ptr = np.zeros(len(stream) + 1, np.int64)
    np.cumsum(np.bincount(later, minlength=len(stream)), out=pair_ptr[1:])
    del later
    # the columns read in place: as lists they held ~60 B an instance at the check's peak
    seq, comp = stream.columns("seq", "comp")
    return first_unordered(seq, comp, memoryview(waits.ptr), memoryview(waits.target), memoryview(pair_ptr),
                           memoryview(earlier), stream.spec.dma_queues) < 0


def open_pairs(stream: InstanceStream, earlier: np.ndarray, later: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs rules 1 and 3 leave unordered (each ``earlier`` before its ``later`` in
    program order): rule 1 orders a non-DMA instance before everything its sequencer issues
    after it, rule 3 a transfer before the later transfers of its queue."""
    comp, seq, dma = stream.comp, stream.seq, stream.dma
    ce = comp[earlier]
    keep = np.where(dma[earlier], ~dma[later] | (comp[later] != ce), seq[later] != ce)
    return earlier[keep], later[keep]


def not_waited_on(stream: InstanceStream, waits: Waits, earlier: np.ndarray, later: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs whose ``later`` does not wait on ``earlier`` itself (rule 4 orders those),
    ordered by ``later``, then latest ``earlier`` first (as given when nothing waits)."""
    if not len(earlier) or not len(waits.target):
        return earlier, later
    return _unwaited(waits, latest_first_keys([later, earlier], len(stream)), len(stream))


def _unwaited(waits: Waits, pair_key: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of ``pair_key`` (:func:`~neuronsim.machine.order.events.latest_first_keys`, sorted
    here in place) that no wait names, as ``(earlier, later)``."""
    if not len(pair_key):
        return pair_key, pair_key
    # stable (timsort): the pairs arrive as runs already ascending (each segment's events in
    # program order), which it merges, 2.5x faster than a quicksort at 1e6 instances
    pair_key.sort(kind="stable")
    # the waits keyed alike: rows by waiter, latest target first
    wait_key = latest_first_keys([np.repeat(np.arange(n, dtype=np.int64), np.diff(waits.ptr)), waits.target], n)
    if np.any(wait_key[1:] < wait_key[:-1]):
        wait_key.sort()
    # Sorted first: a binary search per pair in random order misses the cache at every step
    # once the keys outgrow it (4x slower at 1e6 instances); ascending needles walk the keys
    # nearly in order, and the caller's gathers over the start clocks (by later) do too.
    keep = np.empty(len(pair_key), bool)
    for lo in range(0, len(pair_key), _CHUNK):  # a chunk of lookups at a time: no int64 index per pair
        part = pair_key[lo:lo + _CHUNK]
        at = np.searchsorted(wait_key, part)
        np.minimum(at, len(wait_key) - 1, out=at)
        keep[lo:lo + len(part)] = wait_key[at] != part
    pair_key = pair_key[keep]
    del keep
    later = pair_key // n
    pair_key %= n  # n - 1 - earlier, turned into earlier in place
    np.subtract(n - 1, pair_key, out=pair_key)
    return pair_key, later
