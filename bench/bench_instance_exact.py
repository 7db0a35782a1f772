"""Kept waits against the spec's minimum on generated loop programs, loops kept (issue #12).

Draws ``N`` programs (default 1,000) from the strategy of ``tests/property/test_instance_exact.py``
(``neuronsim.verify.strategies.programs`` with loops, virtual tensors, no deps) with a fixed seed,
compiles each with the default pipeline and counts how many keep exactly the minimum of
waits (``neuronsim.verify.sync_counts.minimum_sync``), fewer, or more; the loops must be kept and the
result race-free.  The test asserts "never more" on fewer examples; this prints the split.

Usage: ``python bench/bench_instance_exact.py [N] [--seed S]``.
"""

from __future__ import annotations

import argparse
from collections import Counter

from hypothesis import HealthCheck, Phase, given, seed, settings

from neuronsim.machine.ir.program import Loop
from neuronsim.passes import compile_program
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs
from neuronsim.verify.sync_counts import minimum_sync, stage_sync

LOOPS = dict(deps="none", virtual=True, max_instructions=10, max_trip=3, max_loops=3)


def _loops(program) -> list[tuple[str, int]]:
    return [(node.name, node.trip_count) for node, _ in program.walk() if isinstance(node, Loop)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    counts: Counter[str] = Counter()

    @seed(args.seed)
    @settings(max_examples=args.n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs(**LOOPS))
    def one(program) -> None:
        compiled, _ = compile_program(program)
        if _loops(compiled) != _loops(program) or not check_program(compiled).race_free:
            counts["broken"] += 1
            return
        kept = stage_sync(compiled, "compiled", simulate=False).figures.waits
        minimum = minimum_sync(compiled).figures.waits
        counts["equal" if kept == minimum else "below" if kept < minimum else "above"] += 1
        counts["with loops"] += bool(_loops(program))

    one()
    total = counts["equal"] + counts["below"] + counts["above"] + counts["broken"]
    print(f"{total} programs ({counts['with loops']} with loops, seed {args.seed}): kept = minimum on "
          f"{counts['equal']}, below on {counts['below']}, above on {counts['above']}; "
          f"loops lost or races: {counts['broken']}")


if __name__ == "__main__":
    main()
