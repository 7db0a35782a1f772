"""``neuronsim report PROGRAM -o report.html``: one offline HTML page about a program.

The page (:mod:`neuronsim.verify.app.html_report`) shows the nominal simulated timeline with the waits
drawn, the races under the program's deps with the dep that fixes each, the sync footprint
(waits by kind before and after the footprint pipeline, and the minimum) and the per-engine
table.  It is one self-contained file: nothing is fetched when it is opened.

Exit 0 when the page is written (a program with races still gets its page: the races are
what it shows), 2 on unusable input or an output that cannot be written.
"""

from __future__ import annotations

import os

import click

from neuronsim.machine.formats.program_json import load_program

from neuronsim.verify.cli.common import (
    check_not_imported,
    UsageFailure, check_output, guard_size, max_idle_option, pass_sources, placed, program_argument, run_command,
    size_options,
)
from neuronsim.verify.cli.traced import prepare_traced
from neuronsim.verify.app.html_report import write_report
from neuronsim.verify.nki.findings import grouped_findings

__all__ = ["report"]


@click.command("report")
@program_argument
@click.option("-o", "--output", "output", required=True, metavar="FILE.html", help="Where to write the page.")
@click.option("--passes", "spec", metavar="SPEC", default=None,
              help="Pipeline of the footprint part (default: dep-reduction, or the compile pipeline then "
                   "dep-reduction when the program has no deps).")
@size_options
@max_idle_option()
@run_command
def report(program: str, output: str, spec: str | None, max_instances: int, max_memory: int | None) -> int:
    """Write an offline HTML page about PROGRAM: timeline, races with fixes, sync footprint, engines."""
    check_output(output, "--output", (program, *pass_sources(spec)))
    prog, findings = prepare_traced(load_program(program))  # a traced NKI program: its findings, compiled first
    prog = placed(prog)
    # the page unrolls, race-checks and simulates one run: the same guard as check and simulate
    guard_size(prog, max_instances=max_instances, max_memory=max_memory, simulated_runs=1)
    name = "standard input" if program == "-" else os.path.basename(program)
    try:
        views: list[dict] = []
        grouped_findings(findings, lambda f: views.append(f.to_json()) or "")  # one per kind on a pair of lines
        check_not_imported(output, "--output")
        shown = write_report(prog, output, name, passes=spec, findings=views)
    except OSError as err:
        raise UsageFailure(f"cannot write {output}: {err.strerror or err}", "--output") from None
    races = (f"{shown.total_races} race(s)" if shown.total_races else
             f"{shown.finding_errors} NKI finding(s)" if shown.finding_errors else "race-free")
    click.echo(f"report: {output} ({shown.instances} instances, {races}, "
               f"makespan {shown.makespan_ns:,.1f} ns)")
    return 0
