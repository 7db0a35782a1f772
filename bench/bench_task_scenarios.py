"""The task scenarios (``scenarios/tasks/``) in one table: the runtime tracking the passes save,
races, and nominal makespans, the all-AUTO program against the compiled one.

Per scenario, one run with the program's scalars (``neuronsim.verify.tasks.scenarios.run_task_scenario``,
what ``neuronsim run NAME`` prints):

* ``tasks``: task instances submitted;
* ``lookups`` / ``inserts``: TensorMap lookups and inserts, all-AUTO -> compiled;
* ``explicit``: explicit deps (user and compiler) the runtime is handed, all-AUTO -> compiled;
* ``MANUAL``: tasks in MANUAL scopes after the passes (of all), and the slots demoted
  (``no_dep`` / ``output_existing``);
* ``races``: static race check of the all-AUTO program (the runtime's own WAR hole: a later
  ``output_existing`` writer is not ordered after earlier readers) and of the compiled one,
  then the compiled program's simulated runs (nominal and seeded);
* ``makespan``: nominal simulated makespan in microseconds, all-AUTO -> compiled (the
  all-AUTO figure is of a program that races where it says so), and the orchestrator's busy
  time (what tracking costs it), all-AUTO -> compiled.

Usage: ``python bench/bench_task_scenarios.py [--markdown]`` (a few seconds).
"""

from __future__ import annotations

import argparse

from neuronsim.verify.tasks.scenarios import all_task_scenarios, run_task_scenario, task_scenario_name

COLUMNS = ("scenario", "tasks", "lookups", "inserts", "explicit", "MANUAL tasks", "slots demoted",
           "races all-AUTO / compiled / runs", "makespan us", "orchestrator us")


def rows() -> list[tuple[str, ...]]:
    out = []
    for module in all_task_scenarios():
        result = run_task_scenario(module)
        if result.problems():
            raise SystemExit(f"{task_scenario_name(module)}: {'; '.join(result.problems())}")
        before, after = result.footprint.stages[0], result.footprint.stages[-1]
        b, a = before.run, after.run
        saved = result.footprint.saved()

        def us(x: float | None) -> str:
            return "-" if x is None else f"{x / 1000:.2f}"

        out.append((task_scenario_name(module), str(a["tasks"]), f"{b['lookups']} -> {a['lookups']}",
                    f"{b['inserts']} -> {a['inserts']}", f"{b['explicit']} -> {a['explicit']}",
                    f"{a['manual_tasks']} of {a['tasks']}", str(saved["demoted_slots"]),
                    f"{before.races} / {after.races} / {sum(result.trace_races)} in {len(result.trace_races)}",
                    f"{us(before.makespan_ns)} -> {us(after.makespan_ns)}",
                    f"{us(before.orchestration_ns)} -> {us(after.orchestration_ns)}"))
    return out


def main(argv: list[str]) -> None:
    table = rows()
    if "--markdown" in argv:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|---|" + "---:|" * (len(COLUMNS) - 1))
        for row in table:
            print("| `" + row[0] + "` | " + " | ".join(row[1:]) + " |")
        return
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(COLUMNS)]
    for row in (COLUMNS, *table):
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="the table as Markdown (the README's)")
    main(["--markdown"] if parser.parse_args().markdown else [])
