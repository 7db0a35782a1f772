"""``neuronsim run SCENARIO``: one shipped kernel end to end.

Builds the scenario, runs the pass pipeline (allocation, dependence construction, reduction),
race-checks the result, simulates it under several interleavings, compares the outputs with
the scenario's numpy reference, and writes the Perfetto trace, the sync footprint and
(optionally) a timeline picture.  SCENARIO is a scenario name (``neuronsim run --list``) or
the path of a scenario module.

Exit 0 when everything holds, 1 when a check fails (races, outputs off the reference,
interleavings that disagree), 2 on unusable input.
"""

from __future__ import annotations

import json
import os

import click
from rich.console import Console
from rich.table import Table

from machine.sim.export import plot_timeline, write_chrome_trace
from machine.sim.trace import summarize, summary_table

from verify.cliutil import UsageFailure, emit_json, json_option, run_command

__all__ = ["run"]


def _write(path: str, write) -> None:
    try:
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        write(path)
    except (OSError, ValueError) as err:
        raise UsageFailure(f"cannot write {path}: {err}") from None


def _print(result, paths: dict[str, str]) -> None:
    console = Console(highlight=False, soft_wrap=True)
    summary = result.summary()
    trace = result.simulation.runs[0].trace
    console.print(f"scenario {result.name}: {len(trace)} instances on {trace.machine}, pipeline {result.final_pipeline}")
    table = Table(title="", show_header=True)
    for column in ("check", "result"):
        table.add_column(column)
    waits = summary["waits"]
    table.add_row("races (compiled / reduced)", f"{summary['races']['compiled']} / {summary['races']['final']}")
    table.add_row("waits before / after / minimum", f"{waits['before']} / {waits['after']} / {waits['minimum']}")
    table.add_row("makespan (nominal)", f"{summary['makespan_ns']:,.1f} ns")
    table.add_row("outputs vs numpy reference", "equal" if summary["outputs_match"] else "DIFFER")
    table.add_row(f"{len(result.seeds)} interleavings vs sequential", "agree" if summary["interleavings_agree"] else "DISAGREE")
    console.print(table)
    console.print(summary_table(summarize(trace), title=""))
    for problem in result.problems():
        console.print(f"problem: {problem}")
    for what, path in paths.items():
        console.print(f"{what}: {path}")


@click.command("run")
@click.argument("scenario", metavar="SCENARIO", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the shipped scenarios.")
@click.option("--out", "out_dir", default="out", show_default=True, metavar="DIR",
              help="Folder for the trace (NAME.trace.json) and footprint (NAME.footprint.json).")
@click.option("--plot", "plot_path", metavar="FILE.png", help="Also draw the nominal run's timeline.")
@json_option
@run_command
def run(scenario: str | None, list_only: bool, out_dir: str, plot_path: str | None, as_json: bool) -> int:
    """Run SCENARIO end to end: compile, check, simulate, compare with numpy."""
    # The scenarios sit on top of every package (they use the passes and the checker), so
    # they are imported here, when the command runs, not when the CLI starts.
    from verify.scenarios import all_scenarios, load_scenario, run_scenario, scenario_name

    if list_only:
        names = [scenario_name(m) for m in all_scenarios()]
        if as_json:
            emit_json({"scenarios": names})
        else:
            click.echo("\n".join(names))
        return 0
    if scenario is None:
        raise UsageFailure("missing SCENARIO (see neuronsim run --list)", "SCENARIO")
    module = load_scenario(scenario)
    result = run_scenario(module)
    name = result.name
    paths = {"trace": os.path.join(out_dir, f"{name}.trace.json"),
             "footprint": os.path.join(out_dir, f"{name}.footprint.json")}
    nominal = result.simulation.runs[0].trace
    _write(paths["trace"], lambda p: write_chrome_trace(nominal, p))
    footprint_doc = result.sync.to_json()

    def dump_footprint(path: str) -> None:
        with open(path, "w") as fh:
            json.dump(footprint_doc, fh, indent=1)

    _write(paths["footprint"], dump_footprint)
    if plot_path:
        _write(plot_path, lambda p: plot_timeline(nominal, p))
        paths["plot"] = plot_path
    problems = result.problems()
    if as_json:
        emit_json({"format": "neuronsim.run/1", "scenario": name, "summary": result.summary(),
                   "problems": problems, "files": paths})
    else:
        _print(result, paths)
    return 1 if problems else 0
