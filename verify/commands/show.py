"""``neuronsim show PROGRAM``: the readable listing, one instruction a line."""

from __future__ import annotations

import click

from machine.format import load_program, program_to_json
from machine.listing import render_listing

from verify.cliutil import emit_json, json_option, program_argument, run_command


@click.command()
@program_argument
@json_option
@run_command
def show(program: str, as_json: bool) -> int:
    """Print PROGRAM one instruction a line: engine, op, footprints and deps."""
    prog = load_program(program)
    if as_json:
        emit_json(program_to_json(prog))
    else:
        click.echo(render_listing(prog))
    return 0
