"""Examples the fuzzer needs to find each planted bug of ``tests/planted.py``, per seed.

For every planted bug and seeds 0..SEEDS-1: :func:`verify.fuzz.check_pass` with the default
budget (500 examples, no shrinking) and the number of the first failing example, or "-" when
the budget passes without a failure; then the checks that found it.  Prints the README's
Markdown table.

Usage: ``.venv/bin/python bench/bench_planted.py [SEEDS] [BUDGET]`` (defaults 10, 500).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.planted import (  # noqa: E402
    AntiDepsFirstPartition,
    DropPsumAccumulation,
    ProgramOrderFoldReduction,
    simulator_ignoring_one_wait,
)
from verify.fuzz import check_pass  # noqa: E402

PLANTED = (
    ("build_fdeps drops the PSUM accumulation chain", DropPsumAccumulation(), {"replace": "build-fdeps"}),
    ("anti analyzer ignores partitions", AntiDepsFirstPartition(), {"replace": "anti-deps"}),
    ("program-order fold, wrong closures", ProgramOrderFoldReduction(), {"replace": "dep-reduction"}),
    ("simulator skips a wait", None, {"simulator": simulator_ignoring_one_wait}),
)
CHECK_NAMES = {"flow": "flow contract", "trace": "trace check"}


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    print(f"| planted bug | seeds 0-{seeds - 1} | found by |")
    print("|---|---|---|")
    for label, planted, options in PLANTED:
        found, checks = [], []
        for seed in range(seeds):
            result = check_pass(planted, examples=budget, seed=seed, shrink=False, **options)
            found.append(str(result.first_failure_at) if result.failure else "-")
            if result.failure and CHECK_NAMES.get(result.failure.check, result.failure.check) not in checks:
                checks.append(CHECK_NAMES.get(result.failure.check, result.failure.check))
        print(f"| {label} | {', '.join(found)} | {', '.join(checks)} |", flush=True)


if __name__ == "__main__":
    main()
