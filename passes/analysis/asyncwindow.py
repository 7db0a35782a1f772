"""The async window of ``dep_reduction`` (seed ``dependence-reduction.txt`` 3.5): ``procAsync``,
the window kept in bank B of :class:`~neuronsim.passes.analysis.syncstate.SyncState`, and
``RedundantAsyncRemover``.

An async instruction (here: a DMA transfer) does not complete where it is issued.  Its
sequencer learns only that it was *triggered* (rule 2: ``T(X) <= T(next)``); the transfer
completes on its queue, after the queue's earlier transfers (rule 3: ``E(X) <= S(next on the
queue)``).  Between the two, the transfer is in the *async window* of every later instance of
its sequencer: triggered, not known complete.

:func:`proc_async` (``procAsync`` / ``procAsyncSecondaryEdges``) lists those two edges of every
transfer (its issue edge and its completion-latency edge to the queue's next transfer) as a
value, so that both the fold below and the networkx check (tests) build their graphs from it.

:func:`redundant_waits_window` is the SyncState fold of :mod:`neuronsim.passes.dep_reduction` driven by
those edges, which keeps bank B (the window: set at the trigger, ``minimize`` subtracting bank
A as the seed's ``andnot_inplace``) and then reads it: after an instance's targets are folded,
``RedundantAsyncRemover`` (``procAsyncRedundantDescendants``) drops every kept wait on a
transfer that was in the window when tested and that another kept wait of the same instance
covers, being on a later transfer of the same queue (rule 3: the earlier completes before the
later starts).  Sound (a dropped wait is implied through rule 3 and a kept wait).

How it compares with the exact clocks (tested): with the exact ``latest-first`` fold the
remover never finds a wait the fold kept (the fold is exact already), so the answer is the
clock's entry for entry; with the seed's ``program-order`` fold it recovers the waits on
earlier transfers of one queue that the fold tested too early, when they were in the window,
and nothing else: the seed's answer stays weaker than the exact one (waits implied through
other engines, or on transfers the waiter did not know were triggered).

>>> from neuronsim.machine.ir.program import Dep, Instruction, Program
>>> from neuronsim.machine.order.stream import InstanceStream
>>> from neuronsim.passes.dep_reduction import instance_waits
>>> body = (Instruction("x1", "sp", "dma_copy", queue="dma0"), Instruction("x2", "sp", "dma_copy", queue="dma0"),
...         Instruction("y", "sp", "op", deps=(Dep("x1"), Dep("x2"))))
>>> edges = proc_async(InstanceStream(Program({}, body)))
>>> edges.issue, edges.queue
(((0, 1), (1, 2)), ((0, 1),))
>>> redundant, in_window, removed = redundant_waits_window(instance_waits(Program({}, body)), "program-order")
>>> list(redundant), list(in_window), list(removed)     # entries latest target first: x2, x1
([0, 1], [1, 1], [0, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronsim.machine.order.hb import wait_counts
from neuronsim.machine.order.stream import InstanceStream

from neuronsim.passes.analysis.syncstate import NUM_SEQUENCERS, SyncState, assign_ids, fold_waits

__all__ = ["AsyncEdges", "proc_async", "redundant_waits_window"]


@dataclass(frozen=True, slots=True)
class AsyncEdges:
    """The secondary edges of every async instance, over instance ids (program order)."""

    issue: tuple[tuple[int, int], ...]
    """``(X, Z)``: ``Z`` is the next instance of the sequencer that triggers transfer ``X``;
    ``T(X) <= T(Z)`` (rule 2), so ``X`` enters ``Z``'s window."""
    queue: tuple[tuple[int, int], ...]
    """``(X, X')``: ``X'`` is the next transfer of ``X``'s queue; ``E(X) <= S(X')`` (rule 3)."""

    def hb_edges(self) -> list[tuple[tuple[int, str], tuple[int, str]]]:
        """The edges as happens-before graph edges between ``(instance, "T" | "S" | "E")``."""
        return [((x, "T"), (z, "T")) for x, z in self.issue] + [((x, "E"), (z, "S")) for x, z in self.queue]


def proc_async(stream: InstanceStream) -> AsyncEdges:
    """``procAsync``: the issue and completion-latency edges of every DMA instance."""
    stream = getattr(stream, "stream", stream)
    seq, comp, dma = stream.seq.tolist(), stream.comp.tolist(), stream.dma.tolist()
    issue, queue = [], []
    pending: dict[int, int] = {}  # sequencer -> its last instance, when a transfer
    last_on_queue: dict[int, int] = {}
    for y in range(len(stream)):
        x = pending.pop(seq[y], None)
        if x is not None:
            issue.append((x, y))
        if dma[y]:
            pending[seq[y]] = y
            before = last_on_queue.get(comp[y])
            if before is not None:
                queue.append((before, y))
            last_on_queue[comp[y]] = y
    return AsyncEdges(tuple(issue), tuple(queue))


def redundant_waits_window(waits, fold: str = "latest-first", *,
                           remover: bool = True) -> tuple[bytearray, bytearray, bytearray]:
    """The SyncState fold with the async window read (see the module doc).

    ``waits`` is a :class:`neuronsim.passes.dep_reduction.InstanceWaits`.  Returns ``(redundant,
    in_window, removed)`` per wait entry: redundant (by the fold or the remover), its target
    in the waiter's window when tested (bank B), dropped by ``RedundantAsyncRemover``.
    """
    if fold not in ("latest-first", "program-order"):
        raise ValueError(f"fold must be latest-first or program-order, got {fold!r}")
    stream = waits.stream
    ids = assign_ids(stream)
    eng, pos, seq, dma = ids.engine, ids.position, ids.issuer, ids.is_dma
    edges = proc_async(stream)
    queue_pred = {y: x for x, y in edges.queue}
    empty = SyncState(ids.width)
    seq_state = [empty] * NUM_SEQUENCERS  # what the next instance of each sequencer starts from
    recorded: dict[int, SyncState] = {}
    remaining = wait_counts(waits.target)
    for x, _ in edges.queue:  # the queue's next transfer merges its record too
        remaining[x] = remaining.get(x, 0) + 1
    n = len(waits.target)
    redundant, in_window, removed = bytearray(n), bytearray(n), bytearray(n)
    for y in range(len(eng)):
        entries = waits.waits_of(y)
        state, fresh = fold_waits(entries if fold == "latest-first" else reversed(entries), waits.target,
                                  seq_state[seq[y]], eng, pos, recorded, remaining, redundant, in_window)
        if remover:
            _remove_redundant_async(waits, y, eng, pos, dma, redundant, in_window, removed)
        if fresh:
            state.minimize()
        if dma[y]:
            trigger = state.copy()
            trigger.set_completed(eng[y], pos[y], issued=True)  # the window opens at T(Y)
            seq_state[seq[y]] = trigger
            end = state.copy()
            before = queue_pred.get(y)
            if before is not None:  # the completion-latency edge: E(before) <= S(Y)
                end.merge(recorded[before])
                _release(recorded, remaining, before)
            end.set_completed(eng[y], pos[y])
            end.minimize()
        else:
            end = state if fresh else state.copy()
            end.set_completed(eng[y], pos[y])
            seq_state[seq[y]] = end
        if remaining.get(y):
            recorded[y] = end
    return redundant, in_window, removed


def _release(recorded: dict, remaining: dict, x: int) -> None:
    remaining[x] -= 1
    if not remaining[x]:
        del recorded[x]  # the seed's successor counter: free after the last use


def _remove_redundant_async(waits, y: int, eng, pos, dma, redundant: bytearray, in_window: bytearray,
                            removed: bytearray) -> None:
    """``procAsyncRedundantDescendants`` for instance ``y``: a kept wait on a transfer in the
    window, covered by a kept wait on a later transfer of its queue, is dropped."""
    latest: dict[int, int] = {}  # queue -> latest position among the kept waits on it
    for k in waits.waits_of(y):
        x = waits.target[k]
        if not redundant[k] and dma[x]:
            latest[eng[x]] = max(latest.get(eng[x], -1), pos[x])
    for k in waits.waits_of(y):
        x = waits.target[k]
        if not redundant[k] and dma[x] and in_window[k] and pos[x] < latest[eng[x]]:
            redundant[k] = removed[k] = 1
