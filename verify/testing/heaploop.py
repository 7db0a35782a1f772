"""The engine's model once more, as a hand-written event loop over a bare heap.

:class:`neuronsim.machine.sim.engine.TimedRun` (simpy) is the simulator; this loop is its twin, written
independently: the tests use it as an oracle (both must give the same times, bit for bit,
under any interleaving's durations) and ``bench/bench_simulator.py`` as the speed baseline
(simpy's run against this loop).  It runs timing only (no executor, no deadlock diagnosis).

The model (see :mod:`neuronsim.machine.sim.engine`): a sequencer reaches its next instance, blocks until
the semaphores of its waits reach their thresholds, then until its producers' results exist;
a compute instance occupies it for its duration, a DMA trigger for its issue time.  A queue
takes its next transfer once triggered, lets its latency pass, asks for its DMA engines (the
arbiter grants one instant's requests in queue order, after every other event of the
instant), moves data from its first share's start to its last share's end, and completes.

Heap entries are ``(time, priority, seq, component)``: the component continues at ``time``;
``component == -1`` is the arbiter.  Every continuation time is computed as simpy computes a
timeout's (``now + (t - now)``), so the two loops agree exactly.

>>> from neuronsim.machine.formats.program_json import load_program
>>> from neuronsim.machine.sim.engine import NOMINAL, TimedRun
>>> from neuronsim.machine.sim.plan import build_plan
>>> plan = build_plan(load_program("examples/matmul_k_loop.json"))
>>> heap_run(plan, NOMINAL.timing(plan))[3] == TimedRun(plan).run().end
True
"""

from __future__ import annotations

import heapq

from neuronsim.machine.sim.plan import Plan

__all__ = ["heap_run", "HeapTimes"]

_NORMAL, _ARBITER = 1, 2
HeapTimes = tuple[list[float], list[float], list[float], list[float]]
"""``(trigger, issued, start, end)`` per instance."""


def heap_run(plan: Plan, timing: tuple) -> HeapTimes:
    """Run ``plan`` with the per-instance ``timing`` of an interleaving
    (:meth:`neuronsim.machine.sim.engine.Interleaving.timing`); raise RuntimeError on a deadlock."""
    duration, issue, result, latency, scale = timing
    n, ncomp = len(plan), len(plan.components)
    nseq = ncomp - plan.spec.dma_queues
    streams, waits, is_dma, after, shares = plan.streams, plan.waits, plan.is_dma, plan.after, plan.shares
    trigger, issued, start, end = [0.0] * n, [-1.0] * n, [0.0] * n, [0.0] * n
    res, stop = [0.0] * n, [0.0] * n
    free = [0.0] * plan.spec.dma_engines
    by_queue, ready = plan.spec.dma_paced_by_queue, [0.0] * ncomp
    pos, phase, count = [0] * ncomp, [0] * ncomp, [0] * ncomp
    parked: dict[tuple[int, int], list[int]] = {}
    awaiting: dict[int, int] = {}
    pending: list[tuple[int, int]] = []
    heap: list[tuple[float, int, int, int]] = []
    seq = 0
    now = 0.0

    def push(at: float, component: int, priority: int = _NORMAL) -> None:
        nonlocal seq
        heapq.heappush(heap, (at, priority, seq, component))
        seq += 1

    def complete(c: int) -> None:
        count[c] += 1
        for w in parked.pop((c, count[c]), ()):
            run(w)

    def run(c: int) -> None:
        """Advance component ``c`` at ``now`` until it waits for something."""
        stream = streams[c]
        while pos[c] < len(stream):
            i = stream[pos[c]]
            p = phase[c]
            if c < nseq:
                if p == 0:  # waits, then the producers' results
                    for sc, k, _b in waits[i]:
                        if count[sc] < k:
                            parked.setdefault((sc, k), []).append(c)
                            return
                    phase[c] = 1
                    t = now
                    for b in after[i]:
                        if res[b] > t:
                            t = res[b]
                    if t > now:
                        push(now + (t - now), c)
                        return
                    continue
                if p == 1:  # trigger / start
                    trigger[i] = now
                    phase[c] = 2
                    if is_dma[i]:
                        if issue[i]:
                            push(now + issue[i], c)
                            return
                        continue
                    start[i] = now
                    res[i] = now + result[i]
                    push(now + duration[i], c)
                    return
                # p == 2: the trigger is issued or the instruction completes
                issued[i] = now
                pos[c] += 1
                phase[c] = 0
                if is_dma[i]:
                    q = awaiting.pop(i, None)
                    if q is not None:
                        run(q)
                else:
                    end[i] = now
                    complete(c)
                continue
            if p == 0:  # triggered?  then the latency
                if issued[i] < 0:
                    awaiting[i] = c
                    return
                phase[c] = 1
                t = issued[i] + latency[i]
                if t > now:
                    push(now + (t - now), c)
                    return
                continue
            if p == 1:  # engines, or a stand-in transfer
                phase[c] = 2
                if shares[i]:
                    if not pending:
                        push(now, -1, _ARBITER)
                    pending.append((c, i))
                    return
                stop[i] = now + (duration[i] - latency[i])
                continue
            if p == 2:  # data starts
                start[i] = now
                phase[c] = 3
                if stop[i] > now:
                    push(now + (stop[i] - now), c)
                    return
                continue
            end[i] = res[i] = now  # p == 3: completes
            pos[c] += 1
            phase[c] = 0
            complete(c)

    def arbitrate() -> None:
        requests = sorted(pending)
        pending.clear()
        for c, i in requests:
            k = 1.0 if scale is None else scale[i]
            first = last = None
            gap = 0.0
            floor = ready[c] if by_queue and ready[c] > now else now
            for e, data, keep in shares[i]:
                f = free[e]
                s = f if f > floor else floor
                free[e] = s + (data if by_queue else keep) * k
                gap = max(gap, keep)
                d = s + data * k
                if first is None or s < first:
                    first = s
                if last is None or d > last:
                    last = d
            if by_queue:
                ready[c] = first + gap * k
            stop[i] = last
            push(now + (first - now), c)

    for c in range(ncomp):
        run(c)
    while heap:
        now, _priority, _seq, c = heapq.heappop(heap)
        if c < 0:
            arbitrate()
        else:
            run(c)
    if any(pos[c] < len(streams[c]) for c in range(ncomp)):
        raise RuntimeError("deadlock")
    return trigger, issued, start, end
