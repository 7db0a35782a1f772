"""Simulator throughput: the simpy model against its hand-written heapq twin.

Both run the same lowered model (:class:`neuronsim.machine.sim.plan.Plan`, the timing model of
``docs/timing.md``): five in-order sequencers and three in-order DMA queues, DMA triggers
handed from sequencers to queues, waits as semaphore thresholds, result latencies, and
transfers split over the 16 DMA engines; timing only (no memory, no numerics).  The twin is
:func:`neuronsim.testing.heaploop.heap_run`.  The workload is a synthetic straight-line program of N
instructions spread uniformly over the eight engines: compute instructions of 1..100 cycles,
DMAs that copy 4, 32 or 128 partitions of 256 B .. 4 KiB each from HBM into SBUF (a random
sequencer triggers them), and about half the instructions waiting on a random instruction of
another engine among the previous 64.  Both loops must produce identical times (checked), and
the figures are measured side by side in one process, GC off during each run.

The ratio compares nominal runs (first-come first-served ties, as the heapq loop has); the
seeded simpy run (jittered durations, random tie-break priorities) is shown for information.
A second ratio is what ``simulate --timing-only`` does end to end (``simulate(program,
functional=False)``: validation, the plan, the simpy run, the trace records) against the
plan and the heapq loop alone (issue 31: within 2x at 1e6 instructions); a third, the same
without validation, is what the command does with a program ``load_program`` has validated.

``--memory`` runs ``simulate(program, functional=False)`` at 2.5e5, 5e5 and 1e6 instructions
(or the sizes given), each in a fresh process, and prints the peak resident memory (the
program alone, then the peak of the whole): linear means the bytes per instruction stay put.

``--scheduled [TEXT [REPEATS]]`` runs the same comparison on the scheduled programs of
``bench_published.py``'s kernels (those whose label holds TEXT): what the simulator meets once
the compiler model has list-scheduled a traced kernel.

Usage: ``.venv/bin/python bench/bench_simulator.py [N] [REPEATS]`` (defaults 100000, 3);
``.venv/bin/python bench/bench_simulator.py --memory [N ...]``;
``.venv/bin/python bench/bench_simulator.py --scheduled ["mamba v3"] [REPEATS]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import statistics
import subprocess
import sys
import time

from neuronsim.machine.ir.program import SEQUENCERS, Access, Dep, Instruction, MemoryKind, Program, Tensor
from neuronsim.machine.sim.engine import NOMINAL, Interleaving, TimedRun
from neuronsim.testing.heaploop import heap_run
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import simulate

#: ``--memory`` sizes by default (issue 31: memory linear up to 1e6 instructions).
MEMORY_SIZES = (250_000, 500_000, 1_000_000)

#: The synthetic program's DMA endpoints: HBM rows and a bf16 SBUF buffer.
TENSORS = {"hbm": Tensor("hbm", MemoryKind.DRAM, "bfloat16", (128, 2048), address=0),
           "sb": Tensor("sb", MemoryKind.SBUF, "bfloat16", (128, 2048), partition=0, offset=0)}


def _transfer(rng: random.Random) -> tuple[tuple[Access, ...], tuple[Access, ...]]:
    parts = rng.choice((4, 32, 128))
    first = rng.randrange(0, 128 - parts + 1, 4)
    free = rng.choice((128, 512, 1024, 2048))  # 256 B .. 4 KiB per partition
    source = Access("hbm", offset=0, pattern=((1, parts * free),))
    return (source,), (Access("sb", partitions=(first, parts, 1), offset=0, pattern=((1, free),)),)


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
            reads, writes = _transfer(rng)
            body.append(Instruction(f"i{i}", trigger, "dma_copy", reads, writes, deps=deps, queue=queue))
        place_of.append((seq, queue))
    return Program(dict(TENSORS), tuple(body))


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
    compare_loops(program, repeats, f"{n:,} instructions", time.perf_counter() - t0)


def scheduled(text: str = "", repeats: int = 3) -> None:
    """The two loops on the published kernels' scheduled programs (bench_published's cases whose
    label holds ``text``): issue 30's "simpy within 2x of the heapq twin on the same scheduled
    program"."""
    from bench_published import CASES, compiled_case

    for case in CASES:
        if text in case.label and not case.diagnostic:
            t0 = time.perf_counter()
            program = compiled_case(case)
            print(f"\n{case.label} ({case.shape}), scheduled:")
            compare_loops(program, repeats, case.label, time.perf_counter() - t0)


def compare_loops(program: Program, repeats: int, what: str, built_s: float) -> None:
    """simpy against the heapq twin on ``program``, then ``simulate`` end to end against them."""
    t0 = time.perf_counter()
    plan = build_plan(program)
    setup = built_s + time.perf_counter() - t0
    n = len(plan)
    nwaits = sum(len(w) for w in plan.waits)
    print(f"workload: {what}: {n:,} instances, {nwaits:,} cross-engine waits, "
          f"{sum(plan.is_dma):,} DMAs on {plan.spec.dma_queues} queues; program + plan built in {setup:.2f} s")
    simpy_times, heap_times = [], []
    for _ in range(repeats):
        dt, times = _timed(lambda: TimedRun(plan, NOMINAL).run())
        simpy_times.append(dt)
        dh, (trig, issued, start, end) = _timed(lambda: heap_run(plan, NOMINAL.timing(plan)))
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
    print(f"identical times: yes; simpy / heapq = {s / h:.2f}x (goal <= 2x); makespan {max(end):,.1f} ns")
    whole, loaded, twin = [], [], []
    for _ in range(repeats):
        whole.append(_timed(lambda: simulate(program, functional=False))[0])
        loaded.append(_timed(lambda: simulate(program, functional=False, validate=False))[0])
        twin.append(_timed(lambda: _plan_and_heap(program))[0])
    w, v, t = statistics.median(whole), statistics.median(loaded), statistics.median(twin)
    print(f"simulate(functional=False) {w:.3f} s ({1e6 * w / n:.2f} us/instr) / plan + heapq {t:.3f} s = "
          f"{w / t:.2f}x (goal <= 2x)")
    # what `neuronsim simulate --timing-only PROGRAM` does after load_program has validated it
    print(f"the same without validating (a loaded program) {v:.3f} s / plan + heapq = {v / t:.2f}x (goal <= 2x)")


def _plan_and_heap(program: Program):
    plan = build_plan(program)
    return heap_run(plan, NOMINAL.timing(plan))


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def memory_child(n: int) -> None:
    """In a fresh process: peak RSS with the program built, then after ``simulate --timing-only``."""
    program = synthetic_program(n)
    built = _peak_mib()
    t0 = time.perf_counter()
    simulate(program, functional=False)
    print(f"{n} {built:.1f} {_peak_mib():.1f} {time.perf_counter() - t0:.2f}")


def memory_sweep(sizes: list[int]) -> None:
    print(f"{'instructions':>12} {'program MiB':>12} {'peak MiB':>9} {'sim MiB':>8} {'B/instr':>8} {'sim s':>7}")
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "--memory-child", str(n)], capture_output=True, text=True,
                             check=True).stdout.split()
        _, built, peak, seconds = int(out[0]), float(out[1]), float(out[2]), float(out[3])
        print(f"{n:>12,} {built:>12.1f} {peak:>9.1f} {peak - built:>8.1f} {(peak - built) * 2**20 / n:>8.0f} "
              f"{seconds:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--memory", action="store_true", help="peak memory per size, a fresh process each")
    mode.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    mode.add_argument("--scheduled", action="store_true",
                      help="the published kernels' scheduled programs (ARGS: label text, repeats)")
    parser.add_argument("args", nargs="*", help="instructions and repeats (default 1e5 3); sizes with --memory")
    args = parser.parse_args()
    if args.memory_child:
        memory_child(int(args.args[0]))
    elif args.memory:
        memory_sweep([int(float(a)) for a in args.args] or list(MEMORY_SIZES))
    elif args.scheduled:
        scheduled(*args.args[:1], *[int(a) for a in args.args[1:2]])
    else:
        main(*[int(float(a)) for a in args.args])
