"""The README's planted-bug table: examples until the fuzzer's first failure, per planted bug.

    .venv/bin/python bench/planted_table.py                      # seeds 0-9, budget 500, 2 processes
    .venv/bin/python bench/planted_table.py --seeds 0 1 2 --budget 200 --workers 1
    .venv/bin/python bench/planted_table.py --tasks              # the task-pass bugs instead

For each planted bug of ``neuronsim.testing.planted`` and each seed, runs
:func:`neuronsim.verify.fuzz.check_pass` with the bug in its pipeline slot (or, for the simulator,
as the simulator) on up to ``--budget`` programs (``neuronsim fuzz``'s default is 500), without
shrinking, and prints how many examples it took until the first failure ("-" when none
within the budget) and which checks found it, as a Markdown table.  ``--tasks`` does the same
for the task-pass bugs of ``neuronsim.testing.planted_tasks`` with
:func:`neuronsim.verify.tasks.task_fuzz.check_task_pass` (``neuronsim fuzz --tasks``) in the slot of
``auto-derive-task-dependencies``.  The counts depend only on the seed and the strategy, not on ``--workers``.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor

#: (label, planted object name in neuronsim.testing.planted, check_pass options)
BUGS = (
    ("build_fdeps drops the PSUM accumulation chain", "DropPsumAccumulation", {"replace": "build-fdeps"}),
    ("anti analyzer ignores partitions", "AntiDepsFirstPartition", {"replace": "anti-deps"}),
    ("program-order fold, wrong closures", "ProgramOrderFoldReduction", {"replace": "dep-reduction"}),
    ("reduction takes the DMA queues for one FIFO", "OneFifoReduction", {"replace": "dep-reduction"}),
    ("simulator skips a wait", "simulator_ignoring_one_wait", {}),
)

#: the same for the task-pass bugs (``neuronsim.testing.planted_tasks``)
TASK_BUGS = (
    ("task deps without WAR", "ForgetsWar", {"replace": "auto-derive-task-dependencies"}),
    ("MemRef aliasing ignored", "IgnoresMemRefAliasing", {"replace": "auto-derive-task-dependencies"}),
    ("uncovered input demoted to no_dep", "DemotesUncoveredInput", {"replace": "auto-derive-task-dependencies"}),
)


def first_failure(bug: int, seed: int, budget: int, tasks: bool = False) -> tuple[int | None, str | None]:
    """``(examples until the first failure, check that failed)`` or ``(None, None)``."""
    if tasks:
        from neuronsim.testing import planted_tasks
        from neuronsim.verify.tasks.task_fuzz import check_task_pass

        _, attr, options = TASK_BUGS[bug]
        result = check_task_pass(getattr(planted_tasks, attr), examples=budget, seed=seed, shrink=False, **options)
        return (None, None) if result.failure is None else (result.first_failure_at, result.failure.check)
    from neuronsim.testing import planted
    from neuronsim.verify.fuzz import check_pass

    _, attr, options = BUGS[bug]
    obj = getattr(planted, attr)
    if attr == "simulator_ignoring_one_wait":
        result = check_pass(None, examples=budget, seed=seed, shrink=False, simulator=obj, **options)
    else:
        result = check_pass(obj(), examples=budget, seed=seed, shrink=False, **options)
    if result.failure is None:
        return None, None
    return result.first_failure_at, result.failure.check


def _job(args: tuple[int, int, int, bool]) -> tuple[int, int, int | None, str | None]:
    bug, seed, budget, tasks = args
    return (bug, seed, *first_failure(bug, seed, budget, tasks))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", action="store_true", help="the task-pass bugs (neuronsim.testing.planted_tasks)")
    args = parser.parse_args(argv)
    bugs = TASK_BUGS if args.tasks else BUGS
    jobs = [(bug, seed, args.budget, args.tasks) for bug in range(len(bugs)) for seed in args.seeds]
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(_job, jobs))
    else:
        results = [_job(job) for job in jobs]
    found = {(bug, seed): (at, check) for bug, seed, at, check in results}
    first, last = args.seeds[0], args.seeds[-1]
    print(f"| planted bug | seeds {first}-{last} | found by |")
    print("|---|---|---|")
    missed = 0
    for bug, (label, _, _) in enumerate(bugs):
        cells = [found[(bug, seed)] for seed in args.seeds]
        missed += sum(at is None for at, _ in cells)
        counts = ", ".join("-" if at is None else str(at) for at, _ in cells)
        checks = ", ".join(sorted({check for _, check in cells if check}))
        print(f"| {label} | {counts} | {checks} |")
    print(f"\nexamples until the first failure, budget {args.budget}; '-' = not found within it ({missed} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
