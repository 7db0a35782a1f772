"""Benchmark: ``dep-reduction{window=async}`` (the seed's async window and redundant-async
remover) against the exact clocks, in time and in waits kept.

    .venv/bin/python bench/bench_async_window.py                 # 200 programs of 200 instructions
    .venv/bin/python bench/bench_async_window.py --programs 50 --size 400 --dma 0.5

Each program: ``--size`` instructions on random sequencers, a share ``--dma`` of them DMA
transfers on three queues, each waiting on up to three of the previous twelve.  Per fold
(``latest-first``, the exact one, and the seed's ``program-order``) it prints the waits kept by
the clocks, by the window fold without the remover and with it, and the time of each (total
over the programs); the window fold must keep exactly the clocks' waits with ``latest-first``
(checked) and lies between the seed's fold and exact with ``program-order``.
"""

from __future__ import annotations

import argparse
import random
import time

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import SEQUENCERS, Dep, Instruction, Program
from neuronsim.passes.analysis.asyncwindow import redundant_waits_window
from neuronsim.passes.dep_reduction import instance_waits, redundant_waits


def random_program(n: int, seed: int, dma_share: float) -> Program:
    rng = random.Random(seed)
    body = []
    for i in range(n):
        dma = rng.random() < dma_share
        formers = rng.sample(range(max(0, i - 12), i), min(rng.randint(0, 3), i - max(0, i - 12)))
        deps = tuple(Dep(f"i{j}", EdgeKind.FLOW) for j in sorted(formers))
        body.append(Instruction(f"i{i}", rng.choice(SEQUENCERS), "dma_copy" if dma else "op", deps=deps,
                                queue=f"dma{rng.randrange(3)}" if dma else None))
    return Program({}, tuple(body))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--dma", type=float, default=0.4)
    args = parser.parse_args()
    waits = [instance_waits(random_program(args.size, seed, args.dma)) for seed in range(args.programs)]
    total = sum(len(w) for w in waits)
    print(f"{args.programs} programs x {args.size} instructions, {total:,} waits, DMA share {args.dma}")
    print("fold           method            waits kept   removed by the remover   seconds")
    for fold in ("latest-first", "program-order"):
        rows = {}
        # fold bound as a default: each lambda is run in its own iteration, the binding says so
        for label, run in (("clocks", lambda w, fold=fold: (redundant_waits(w, fold), None)),
                           ("window, no remover",
                            lambda w, fold=fold: redundant_waits_window(w, fold, remover=False)[::2]),
                           ("window=async", lambda w, fold=fold: redundant_waits_window(w, fold)[::2])):
            start = time.perf_counter()
            results = [run(w) for w in waits]
            seconds = time.perf_counter() - start
            kept = sum(len(r[0]) - sum(r[0]) for r in results)
            removed = sum(sum(r[1]) for r in results if r[1] is not None)
            rows[label] = [r[0] for r in results]
            print(f"{fold:<14} {label:<18} {kept:>10,}   {removed:>22,}   {seconds:7.2f}")
        if fold == "latest-first" and rows["window=async"] != rows["clocks"]:
            print("error: the window fold disagrees with the exact clocks")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
