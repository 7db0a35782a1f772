"""``neuronsim show PROGRAM``: the readable listing, one instruction a line."""

from __future__ import annotations

import click

from neuronsim.machine.formats.program_json import load_program, program_to_json
from neuronsim.machine.formats.listing import render_listing

from neuronsim.verify.cli.common import (emit_json, guard_size, json_option, max_memory_option, program_argument,
                                         run_command)


@click.command()
@program_argument
@json_option
@max_memory_option
@run_command
def show(program: str, as_json: bool, max_memory: int | None) -> int:
    """Print PROGRAM one instruction a line: engine, op, footprints and deps."""
    prog = load_program(program)
    # the listing never unrolls (any trip count shows); only the footprints it resolves cost memory
    guard_size(prog, max_instances=None, max_memory=max_memory, unrolls=False)
    if as_json:
        emit_json(program_to_json(prog))
    else:
        click.echo(render_listing(prog))
    return 0
