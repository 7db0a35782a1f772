"""How many fuzz programs get storage reuse from the allocator (issue #13, item 7).

    .venv/bin/python bench/reuse_share.py                 # 300 programs, seed 0
    .venv/bin/python bench/reuse_share.py --programs 1000 --seed 3

Draws programs from the fuzzer's strategy (:func:`neuronsim.verify.fuzz.fuzz_strategy`), exactly as
``neuronsim fuzz`` does, and counts those where the ``alloc`` pass places two accessed
virtual tensors on shared bytes (:func:`neuronsim.verify.strategies.allocator_reuse`), with the reuse
family on (the default) and off (the strategy before it existed).
"""

from __future__ import annotations

import argparse
import sys

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from neuronsim.verify.fuzz import fuzz_strategy
from neuronsim.verify.strategies import allocator_reuse


def reuse_counts(programs: int, seed: int, **strategy_options) -> tuple[int, int, int]:
    """``(programs drawn, programs with virtual tensors, programs with allocator reuse)``."""
    counts = [0, 0, 0]

    @hypothesis_seed(seed)
    @settings(max_examples=programs, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(fuzz_strategy(**strategy_options))
    def draw(program) -> None:
        counts[0] += 1
        counts[1] += program.has_virtual_tensors
        counts[2] += bool(allocator_reuse(program))

    draw()
    return counts[0], counts[1], counts[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for label, options in (("reuse family on (default)", {}), ("reuse family off", {"reuse": False})):
        drawn, virtual, reused = reuse_counts(args.programs, args.seed, **options)
        print(f"{label:<26} {reused:>4} of {drawn} programs get allocator reuse "
              f"({100 * reused / drawn:.1f} %; {virtual} have virtual tensors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
