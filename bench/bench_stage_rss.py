"""Which stage of compile + check holds the peak resident memory: the RSS high-water mark per stage.

Workload: ``bench_compile.py``'s synthetic program, the default pipeline with verification,
then the race check, as ``bench_compile.py`` runs them.  A thread reads the process's resident
set (``/proc/self/statm``) every 3 ms and keeps the highest reading of each stage (a pass, its
verification, the check).  Printed per stage: that reading in MiB and in bytes per instruction,
the program's own included (it is built first and printed first), and the user and system CPU
seconds and page faults the stage took.

Why beside ``bench_pass_memory.py``: that one traces Python's allocations at 1e5, which is
repeatable but leaves out what the allocators keep; this one reads what ``bench_compile.py 1e7``
is judged on (peak RSS under 8 GiB, issue 31) at the size itself, to say which stage to work on.
A reading every 3 ms can miss a peak shorter than that: ``bench_compile.py``'s own figure
(``getrusage``) runs ~100-150 MiB above this one's highest at 1e7.  Linux only.

Usage: ``.venv/bin/python bench/bench_stage_rss.py [N]`` (default 1e6; 1e7 takes ~10 minutes
and ~8 GiB).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from bench_compile import cpu_usage, synthetic_program
from bench_pass_memory import StagePeaks, run_staged

PAGE = os.sysconf("SC_PAGE_SIZE")


def resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class StageWatch(StagePeaks):
    """Per stage label, the highest resident set seen (every 3 ms; 10 ms more after the block)."""

    period, settle = 0.003, 0.01

    def __init__(self) -> None:
        super().__init__("build")

    def measure(self) -> int:
        return resident()


class StageClock:
    """Per stage, the user and system CPU seconds and minor page faults it took (``getrusage``
    as each stage starts): on a virtual machine whose host takes freed pages back, system time
    is what grows faster than the instructions (performance notes 2.9)."""

    def __init__(self) -> None:
        self.spent: dict[str, dict] = {}
        self.stage, self.since = "build", cpu_usage()

    def enter(self, stage: str) -> None:
        spent = self.spent.setdefault(self.stage, {"user_s": 0.0, "sys_s": 0.0, "faults": 0})
        for key, amount in cpu_usage(self.since).items():
            spent[key] += amount
        self.stage, self.since = stage, cpu_usage()


def main(argv: list[str] | None = None) -> int:
    from neuronsim.verify.racecheck import check_stream

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", default="1e6")
    n = int(float(parser.parse_args(argv).size))
    clock = StageClock()

    def enter(stage: str) -> None:
        watch.stage = stage
        clock.enter(stage)

    with StageWatch() as watch:
        program = synthetic_program(n)
        gc.collect()
        built = resident()
        state = run_staged(program, enter)
        enter("check")
        races = check_stream(state.stream, state.stream.resolve(state.deps)).races
        clock.enter("end")
    print(f"N={n:,}: peak resident set per stage (the program's included), {len(races)} races")
    print(f"  {'program built':28s} {built / 2**20:9,.0f} MiB {built / n:7.1f} B/instr")
    for stage, peak in watch.peaks.items():
        spent = clock.spent.get(stage, {"user_s": 0.0, "sys_s": 0.0, "faults": 0})
        user, system, faults = spent["user_s"], spent["sys_s"], int(spent["faults"])
        print(f"  {stage:28s} {peak / 2**20:9,.0f} MiB {peak / n:7.1f} B/instr   CPU {user:7.2f} s user "
              f"{system:6.2f} s system {faults:10,} page faults")
    highest = max(watch.peaks, key=watch.peaks.get)
    print(f"  highest: {highest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
