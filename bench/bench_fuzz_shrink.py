"""Fuzz failures found and shrunk: time to the first failure, shrink time, program sizes.

    .venv/bin/python bench/bench_fuzz_shrink.py            # seed 0, budget 200
    .venv/bin/python bench/bench_fuzz_shrink.py --seed 3

For the three planted pass bugs of ``neuronsim.testing.planted``, runs :func:`neuronsim.verify.fuzz.check_pass`
without shrinking until the first failure, then :func:`neuronsim.verify.fuzz.shrink_failure` on it, and
prints the examples drawn, the seconds of each phase, the instructions before and after the
shrink and the fix line.  (Issue 23's acceptance: a planted bug found and saved within 2
minutes, at most 4 instructions.)
"""

from __future__ import annotations

import argparse
import time

from neuronsim.machine.formats.program_json import loads_program
from neuronsim.testing.planted import AntiDepsFirstPartition, DropPsumAccumulation, ProgramOrderFoldReduction
from neuronsim.verify.fuzz import check_pass, shrink_failure
from neuronsim.verify.shrink import instruction_count

BUGS = ((AntiDepsFirstPartition(), "anti-deps"), (DropPsumAccumulation(), "build-fdeps"),
        (ProgramOrderFoldReduction(), "dep-reduction"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=200)
    args = parser.parse_args()
    print("| planted bug | examples | find s | shrink s | instructions | fix |")
    print("|---|---|---|---|---|---|")
    for bug, slot in BUGS:
        started = time.perf_counter()
        found = check_pass(bug, examples=args.budget, seed=args.seed, replace=slot, shrink=False)
        found_s = time.perf_counter() - started
        if found.failure is None:
            print(f"| {type(bug).__name__} | - | {found_s:.1f} | - | - | - |")
            continue
        started = time.perf_counter()
        shrunk = shrink_failure(found.failure, bug, replace=slot)
        shrink_s = time.perf_counter() - started
        before = instruction_count(loads_program(found.failure.program, validate=False))
        after = instruction_count(loads_program(shrunk.program, validate=False))
        print(f"| {type(bug).__name__} | {found.first_failure_at} | {found_s:.1f} | {shrink_s:.1f} | "
              f"{before} -> {after} | {shrunk.fix} |")


if __name__ == "__main__":
    main()
