"""The ``neuronsim`` command line (spec, "Command line").

Every command reads a program from a path or ``-`` (standard input).  Exit statuses: 0 for
success, 1 for a finding (races, outputs that differ), 2 for unusable input.  With ``--json``
standard output carries exactly one JSON document; on exit 2 it is
``{"format": "neuronsim.error/1", "path": ..., "message": ...}``, and the message is on
standard error as well.  Never a traceback: any :class:`~machine.errors.ProgramError` (and
any other failure to read input) becomes exit 2 with a located one-line message.

Commands live in small modules (``verify/commands/*.py``); each defines click commands and
this module adds them to the group.
"""

from __future__ import annotations

import sys

import click

from verify.cliutil import UsageFailure, emit_json, json_option, program_argument, run_command

__all__ = ["main", "cli", "run_command", "emit_json", "program_argument", "json_option", "UsageFailure"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="neuronsim")
def cli() -> None:
    """neuronsim: race-check, simulate and measure NeuronCore dependence passes.

    PROGRAM is a neuronsim.program/1 JSON file, or - for standard input.
    """


def _register() -> None:
    from verify.commands import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)


_register()


def main() -> None:
    """Console entry point; click usage errors also exit 2."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
