"""``neuronsim check PROGRAM [--json]``: race-check under the given deps, no pass run."""

from __future__ import annotations

import click

from machine.format import load_program
from machine.unroll import unroll

from verify.cliutil import emit_json, json_option, program_argument, run_command
from verify.racecheck import check_waits
from verify.report import render_report


@click.command()
@program_argument
@json_option
@run_command
def check(program: str, as_json: bool) -> int:
    """Race-check PROGRAM under its deps: exit 0 race-free, 1 races found, 2 unusable input."""
    prog = load_program(program)
    unrolled = unroll(prog)
    waits = [tuple(t for _, t in ws) for ws in unrolled.resolve_waits()]
    report = check_waits(prog, waits, unrolled)
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(render_report(report, unrolled))
    return 0 if report.race_free else 1
