"""Race checker throughput: ns per access event and total time at 1e4, 1e5, 1e6 instances.

Workload: a flat program on the eight engines of trn1 (five sequencers, three DMA queues).
Each instruction reads one or two of 64 SBUF buffers (80 % from the 16 most recently
written) and writes one; a quarter are DMA loads from DRAM triggered by SP, ACT or POOL.
Two dep sets, each checked as a plain program (deps in the instruction objects, as loaded):

* "as built": what a dependence builder gives before reduction (last writer of every read
  buffer; for a write, the last writer and the readers since): every conflict has a wait of
  its own, so the fast path settles each neighbour pair by rules 1, 3 or a direct wait and
  needs no clocks;
* "reduced": the same program after ``dep-reduction`` (about a quarter of the deps stay):
  most pairs are ordered only through other waits, so the happens-before walk runs.

Both are race-free, as compiled programs are.  At 1e4 and 1e5 a third run drops 1 % of the
deps to show the cost when races are found (the exact walk that lists them).

Printed per size and dep set: wall and CPU seconds of :func:`neuronsim.verify.racecheck.check_program`
(instance stream, wait resolution, the check), CPU ns per access event against the goal of
2 us, and the ratio to the floor: ``bench_reduction.plain_vector_clock``, a plain integer
vector-clock walk over the same instance waits (happens-before only, no memory), in CPU
seconds.  The check and the floor are each timed three times, in turn, and the best of each
is compared (noise on a shared machine only adds time; both get the same number of tries).
Then the check's stages one by one (building the instance stream, the dep table, resolving
waits, compiling the accesses, the access events, the neighbour pairs rules 1 and 3 and
direct waits leave, the walk testing those left against the start clocks) and the walk's own
ratio to the floor; the stages reuse memory the runs before them freed, so their sum need not
equal the check's CPU time.

Usage: ``python bench/bench_racecheck.py [N ...]`` (default 1e4 1e5 1e6).
Goal (issue #3): at most 2 us per access event; 1e6 instances in under a minute.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time

import numpy as np

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Access, Dep, Instruction, MemoryKind, Program, Tensor, frozen_mapping
from neuronsim.machine.order.deptable import dep_table
from neuronsim.machine.order.events import access_events
from neuronsim.machine.order.hb import first_unordered
from neuronsim.machine.order.stream import NUM_SEQUENCERS, InstanceStream
from neuronsim.passes.pipeline import run_pipeline
from neuronsim.verify.race_free import neighbour_pairs, not_waited_on, open_pairs
from neuronsim.verify.racecheck import check_program

from bench_reduction import plain_vector_clock

BUFFERS = 64
REPEATS = 3  # the check and the floor, in turn: the best of each is compared
BUF_BYTES = 512  # per partition


def synthetic(n: int, seed: int = 0, drop: float = 0.0) -> Program:
    rnd = random.Random(seed)
    tensors = {f"b{i}": Tensor(f"b{i}", MemoryKind.SBUF, "float32", (128, BUF_BYTES // 4), 0, i * BUF_BYTES)
               for i in range(BUFFERS)}
    tensors["hbm"] = Tensor("hbm", MemoryKind.DRAM, "float32", (1 << 20,), address=0, role="input")
    last_writer: dict[str, str] = {}
    readers: dict[str, list[str]] = {}
    recent: list[str] = []
    body = []
    for k in range(n):
        name = f"i{k}"
        deps: dict[str, Dep] = {}

        # this iteration's name and deps bound as defaults (wait runs only within the iteration)
        def wait(on: str, kind: EdgeKind, name: str = name, deps: dict[str, Dep] = deps) -> None:
            if on != name and rnd.random() >= drop:
                deps[on] = Dep(on, kind)

        out = f"b{rnd.randrange(BUFFERS)}"
        if rnd.random() < 0.25:
            engine = rnd.choice(("sp", "act", "pool"))
            src = Access("hbm", offset=16384 * rnd.randrange(64), pattern=((1, 16384),))  # a tile
            inst_reads, op, queue = (src,), "dma_copy", f"dma{rnd.randrange(3)}"
            read_names: list[str] = []
        else:
            engine = rnd.choice(("pe", "act", "dve", "pool", "dve"))
            nreads = rnd.choice((1, 2))
            read_names = [rnd.choice(recent[-16:]) if recent and rnd.random() < 0.8 else f"b{rnd.randrange(BUFFERS)}"
                          for _ in range(nreads)]
            inst_reads = tuple(Access(b) for b in read_names)
            op, queue = "opaque_compute", None
        for b in read_names:
            if b in last_writer:
                wait(last_writer[b], EdgeKind.FLOW)
        if out in last_writer:
            wait(last_writer[out], EdgeKind.OUTPUT)
        for r in readers.get(out, ()):
            wait(r, EdgeKind.ANTI)
        body.append(Instruction(name, engine, op, inst_reads, (Access(out),), frozen_mapping({}), tuple(deps.values()),
                                queue))
        for b in read_names:
            readers.setdefault(b, []).append(name)
        readers[out] = []
        last_writer[out] = name
        recent.append(out)
    return Program(frozen_mapping(tensors), tuple(body))


def _floor_seconds(program: Program) -> float:
    """The plain integer vector-clock walk of ``bench_reduction`` over the same instance
    waits: the floor a pure-Python happens-before walk of this program costs (no memory)."""
    stream = InstanceStream(program)
    waits = stream.resolve()
    ptr, target = waits.ptr.tolist(), waits.target.tolist()
    ascending = [target[ptr[i]:ptr[i + 1]][::-1] for i in range(len(stream))]
    comp = stream.comp.tolist()
    queue = [c - NUM_SEQUENCERS if c >= NUM_SEQUENCERS else 0 for c in comp]
    gc.disable()
    t0 = time.process_time()
    plain_vector_clock(stream.seq.tolist(), stream.dma.tolist(), queue, ascending)
    elapsed = time.process_time() - t0
    gc.enable()
    return elapsed


def _stages(program: Program) -> tuple[dict[str, float], int, float]:
    """The check's stages timed one by one (CPU s), on a fresh stream; the pairs left for the
    clocks; the happens-before walk's own time (timed even when the check needs no clocks)."""
    out = {}

    def timed(label, fn):
        t0 = time.process_time()
        result = fn()
        out[label] = time.process_time() - t0
        return result

    stream = timed("stream", lambda: InstanceStream(program))
    table = timed("deps", lambda: dep_table(program, stream))
    waits = timed("resolve", lambda: stream.resolve(table))
    timed("accesses", lambda: stream.templates)
    ev = timed("events", lambda: access_events(stream, "space"))
    left, later = timed("pairs", lambda: not_waited_on(stream, waits, *open_pairs(stream, *neighbour_pairs(
        ev.seg, ev.inst, ev.write))))
    order = np.argsort(later, kind="stable")  # grouped by the later instance, as the check walks them
    pair_ptr = np.zeros(len(stream) + 1, np.int64)
    np.cumsum(np.bincount(later, minlength=len(stream)), out=pair_ptr[1:])
    seq, comp = stream.columns("seq", "comp")
    t0 = time.process_time()
    first_unordered(seq, comp, memoryview(waits.ptr), memoryview(waits.target), memoryview(pair_ptr),
                    memoryview(left[order]), stream.spec.dma_queues)
    walk = time.process_time() - t0
    if len(left):
        out["clocks"] = walk
    return out, len(left), walk


def reduced(program: Program) -> Program:
    """``program`` after ``dep-reduction`` (waits other waits imply dropped), as a plain program
    with its deps in its instructions, like one loaded from a file."""
    return run_pipeline(program, "dep-reduction")


def measure(label: str, program: Program, n: int) -> None:
    """The check and its floor, each timed ``REPEATS`` times in turn; the best of each is
    printed (a shared machine's noise only ever adds time: on a quiet 2-core machine the same
    1e6 floor measured 2.65-4.74 s CPU from one run to the next)."""
    checks, floors = [], []
    for _ in range(REPEATS):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        report = check_program(program)
        checks.append((time.process_time() - c0, time.perf_counter() - t0))
        del report
        gc.collect()
        floors.append(_floor_seconds(program))
    report = check_program(program)
    cpu, elapsed = min(checks)
    floor = min(floors)
    per_event = cpu / report.access_events * 1e9
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    deps = sum(len(inst.deps) for inst in program.body)
    print(f"{n:>9,} instances  {label:<9} {deps:>9,} deps  {report.access_events:>9,} access events  "
          f"races {report.total_races:>6,}  {elapsed:7.2f} s wall  {cpu:7.2f} s CPU  {per_event:6.0f} ns/event "
          f"(goal 2000)  int-clock floor {floor:6.2f} s CPU  ratio {cpu / floor:5.2f}  peak RSS {rss:6.0f} MiB "
          f"(best of {REPEATS}; check {max(checks)[0]:.2f}, floor {max(floors):.2f} s at worst)", flush=True)
    stages, left, walk = _stages(program)
    clocks = f"{left:,} neighbour pairs left for the clocks" if left else \
        "every neighbour pair ordered by rules 1, 3 or a direct wait: no clocks needed"
    print(f"{'':>9}  stages (CPU s): " + "  ".join(f"{k} {v:.2f}" for k, v in stages.items())
          + f"; {clocks}; happens-before walk {walk:.2f} s = {walk / floor:.2f} x the int-clock floor", flush=True)


def run(n: int) -> None:
    program = synthetic(n)
    measure("as built", program, n)
    program = reduced(program)
    measure("reduced", program, n)
    del program
    if n <= 100_000:
        racy = synthetic(n, drop=0.01)
        c0 = time.process_time()
        report = check_program(racy)
        cpu = time.process_time() - c0
        print(f"{'':>9}  with 1% of deps dropped: races {report.total_races:>7,}  {cpu:7.2f} s CPU  "
              f"{cpu / report.access_events * 1e9:7.0f} ns/event", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=lambda a: int(float(a)), metavar="N",
                        help="instances (1e6 or 1000000; default 1e4 1e5 1e6)")
    for size in parser.parse_args().sizes or [10_000, 100_000, 1_000_000]:
        run(size)
