"""Simulator throughput: the simpy model against a minimal hand-written heapq event loop.

Both run the same lowered model (:class:`neuronsim.machine.sim.plan.Plan`): five in-order sequencers
and three in-order DMA queues, DMA triggers handed from sequencers to queues, and waits as
semaphore thresholds; timing only (``functional=False``: no memory, no numerics).  The
workload is a synthetic straight-line program of N instructions spread uniformly over the
eight engines (a DMA's trigger comes from a random sequencer), durations uniform in 1..100
cycles, and about half the instructions waiting on a random instruction of another engine
among the previous 64.  Both loops must produce identical times (checked), and the figures
are measured side by side in one process, GC off during each run.

The ratio compares nominal runs (first-come first-served ties, as the heapq loop has); the
seeded simpy run (jittered durations, random tie-break priorities) is shown for information.

Usage: ``.venv/bin/python bench/bench_simulator.py [N] [REPEATS]`` (defaults 100000, 3).
"""

from __future__ import annotations

import gc
import heapq
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neuronsim.machine.ir.program import SEQUENCERS, Dep, Instruction, Program  # noqa: E402
from neuronsim.machine.sim.engine import NOMINAL, Interleaving, TimedRun  # noqa: E402
from neuronsim.machine.sim.plan import Plan, build_plan  # noqa: E402


def synthetic_program(n: int, seed: int = 0, window: int = 64, wait_probability: float = 0.5) -> Program:
    """N instructions over 5 sequencers + 3 DMA queues with cross-engine waits (see module doc)."""
    rng = random.Random(seed)
    places = [(s, None) for s in SEQUENCERS] + [(None, f"dma{q}") for q in range(3)]
    body, place_of = [], []
    for i in range(n):
        seq, queue = places[rng.randrange(8)]
        deps = ()
        if i and rng.random() < wait_probability:
            j = rng.randrange(max(0, i - window), i)
            if place_of[j] != (seq, queue):
                deps = (Dep(f"i{j}"),)
        cycles = rng.randint(1, 100)
        if queue is None:
            body.append(Instruction(f"i{i}", seq, "op", attrs={"cycles": cycles}, deps=deps))
        else:
            trigger = rng.choice(SEQUENCERS)
            body.append(Instruction(f"i{i}", trigger, "dma_op", attrs={"cycles": cycles}, deps=deps, queue=queue))
        place_of.append((seq, queue))
    return Program({}, tuple(body))


def heapq_run(plan: Plan, duration: list[float], issue: list[float]):
    """The same model as :class:`neuronsim.machine.sim.engine.TimedRun` with a bare heap of wake-ups.

    Heap entries are ``(time, seq, component)``: the component's current instance finishes
    (or its DMA trigger is issued) at ``time``.  A component blocked on a semaphore threshold
    or on a trigger is parked and retried when that happens.
    """
    n = len(plan)
    ncomp = len(plan.components)
    nseq = ncomp - plan.spec.dma_queues
    streams, waits, is_dma = plan.streams, plan.waits, plan.is_dma
    trigger, issued, start, end = [0.0] * n, [-1.0] * n, [0.0] * n, [0.0] * n
    pos = [0] * ncomp
    count = [0] * ncomp
    parked: dict[tuple[int, int], list[int]] = {}
    awaiting_trigger: dict[int, int] = {}
    heap: list[tuple[float, int, int]] = []
    seq = 0
    now = 0.0

    def advance(c: int) -> None:
        """Issue component c's next instance at ``now`` unless blocked."""
        nonlocal seq
        stream = streams[c]
        if pos[c] >= len(stream):
            return
        i = stream[pos[c]]
        if c < nseq:
            for sc, k, _b in waits[i]:
                if count[sc] < k:
                    parked.setdefault((sc, k), []).append(c)
                    return
            trigger[i] = now
            if is_dma[i]:
                heapq.heappush(heap, (now + issue[i], seq, c))
            else:
                start[i] = now
                heapq.heappush(heap, (now + duration[i], seq, c))
        else:
            if issued[i] < 0:
                awaiting_trigger[i] = c
                return
            start[i] = now
            heapq.heappush(heap, (now + duration[i], seq, c))
        seq += 1

    def complete(c: int) -> None:
        count[c] += 1
        woken = parked.pop((c, count[c]), None)
        if woken:
            for w in woken:
                advance(w)

    for c in range(ncomp):
        advance(c)
    while heap:
        now, _, c = heapq.heappop(heap)
        i = streams[c][pos[c]]
        pos[c] += 1
        if c < nseq and is_dma[i]:
            issued[i] = now
            q = awaiting_trigger.pop(i, None)
            if q is not None:
                advance(q)
        else:
            end[i] = now
            if c < nseq:
                issued[i] = now
            complete(c)
        advance(c)
    if any(pos[c] < len(streams[c]) for c in range(ncomp)):
        raise RuntimeError("deadlock")
    return trigger, issued, start, end


def _timed(fn):
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        result = fn()
        return time.perf_counter() - t0, result
    finally:
        gc.enable()


def main(n: int = 100_000, repeats: int = 3) -> None:
    t0 = time.perf_counter()
    program = synthetic_program(n)
    plan = build_plan(program)
    setup = time.perf_counter() - t0
    nwaits = sum(len(w) for w in plan.waits)
    print(f"workload: {n:,} instructions, {nwaits:,} cross-engine waits, "
          f"{sum(plan.is_dma):,} DMAs on {plan.spec.dma_queues} queues; program + plan built in {setup:.2f} s")
    simpy_times, heap_times = [], []
    for _ in range(repeats):
        dt, times = _timed(lambda: TimedRun(plan, NOMINAL).run())
        simpy_times.append(dt)
        dh, (trig, issued, start, end) = _timed(lambda: heapq_run(plan, plan.duration, plan.issue))
        heap_times.append(dh)
        exact = times.trigger == trig and times.start == start and times.end == end and times.issued == issued
        if not exact:
            raise SystemExit("the two event loops disagree")
    seeded = Interleaving(seed=1)
    seeded_times = [_timed(lambda: TimedRun(plan, seeded).run())[0] for _ in range(repeats)]
    s, h = statistics.median(simpy_times), statistics.median(heap_times)
    print(f"{'loop':<15} {'median s':>9} {'min s':>7} {'us/instr':>9} {'instr/s':>10}")
    rows = (("simpy", simpy_times), ("heapq", heap_times), ("simpy, seeded", seeded_times))
    for name, runs in rows:
        med = statistics.median(runs)
        print(f"{name:<15} {med:>9.3f} {min(runs):>7.3f} {1e6 * med / n:>9.2f} {n / med:>10,.0f}")
    print(f"identical times: yes; simpy / heapq = {s / h:.2f}x (goal <= 3x); makespan {max(end):,.1f} ns")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*args)
