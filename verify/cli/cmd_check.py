"""``neuronsim check PROGRAM [--json] [--max-races N]``: race-check under the given deps, no pass run.

Every race is counted; the first ``--max-races`` (default :data:`DEFAULT_MAX_RACES`) are
listed, so a badly broken program of millions of instances still gives a report of a
readable size (``total_races`` in the JSON report says how many there are in all).
"""

from __future__ import annotations

import click

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.order.unroll import unroll

from neuronsim.machine.ir.source import instance_source
from neuronsim.verify.cli.common import (emit_json, guard_size, json_option, placed, program_argument, run_command,
                                         size_options)
from neuronsim.verify.app.progress import Progress
from neuronsim.verify.racecheck import check_waits
from neuronsim.verify.race_report import render_report, suggest_fix
from neuronsim.verify.cli.task_programs import check_tasks, sniff_task_program
from neuronsim.verify.cli.traced import prepare_traced

#: Races listed by default (all are counted).
DEFAULT_MAX_RACES = 1000

max_races_option = click.option("--max-races", type=click.IntRange(min=0), default=DEFAULT_MAX_RACES,
                                show_default=True, metavar="N", help="List at most N races (all are counted).")


@click.command()
@program_argument
@json_option
@max_races_option
@size_options
@run_command
def check(program: str, as_json: bool, max_races: int, max_instances: int, max_memory: int | None) -> int:
    """Race-check PROGRAM under its deps: exit 0 race-free, 1 races found, 2 unusable input.

    A traced NKI program gets its NKI findings (exit 1 on an error among them) and, without
    deps, is compiled first."""
    prog = sniff_task_program(program)
    if isinstance(prog, TaskProgram):  # neuronsim.tasks/1: the task race checker
        return check_tasks(prog, as_json=as_json, max_races=max_races, max_instances=max_instances)
    prog, findings = prepare_traced(load_program(prog))  # a traced NKI program: its findings, compiled first
    prog = placed(prog)
    size = guard_size(prog, max_instances=max_instances, max_memory=max_memory)
    with Progress() as progress:
        with progress.stage("unroll", None, size=size.instances):
            unrolled = unroll(prog)
            waits = [tuple(t for _, t in ws) for ws in unrolled.resolve_waits()]
        with progress.stage("check", len(unrolled), unit="instance") as update:
            report = check_waits(prog, waits, unrolled, max_races=max_races, progress=lambda done, _total: update(done))
    if as_json:
        doc = report.to_json()
        for race, entry in zip(report.races, doc["races"]):  # the wait that orders each pair; a traced kernel's lines
            waiter, dep = suggest_fix(race, unrolled)
            carried = {"loop_carried": True} if dep.loop_carried else {}
            entry["fix"] = {"waiter": waiter, "dep": {"on": dep.on, **carried}}
            sources = (("first_source", instance_source(unrolled.stream, race.first_id)),
                       ("second_source", instance_source(unrolled.stream, race.second_id)))
            entry.update({key: where for key, where in sources if where})
        emit_json({**doc, "total_races": report.total_races, **({"nki_findings": [f.to_json() for f in findings]}
                                                                if findings else {})})
    else:
        errors = sum(f.is_error for f in findings)
        if errors and report.race_free:  # the deps order every pair, yet the kernel as written is wrong
            click.echo(f"not race-free as written: {errors} NKI finding(s) above; the compiled program's deps "
                       f"leave no race between its {len(unrolled):,} instances")
        else:
            click.echo(render_report(report, unrolled))
    return 0 if report.race_free and not any(f.is_error for f in findings) else 1
