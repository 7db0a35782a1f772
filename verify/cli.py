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

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from machine.errors import ProgramError

__all__ = ["main", "cli", "run_command", "emit_json", "program_argument", "json_option"]


class UsageFailure(Exception):
    """Exit 2 with a message (bad flags or files, outside any program document)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def emit_json(doc: Any) -> None:
    """Write the one JSON document of a ``--json`` run."""
    sys.stdout.write(json.dumps(doc, indent=1) + "\n")


def _fail(path: str, message: str, as_json: bool) -> None:
    where = f"{path}: " if path else ""
    click.echo(f"error: {where}{message}", err=True)
    if as_json:
        emit_json({"format": "neuronsim.error/1", "path": path, "message": message})
    sys.exit(2)


def run_command(fn: Callable[..., int | None]) -> Callable[..., None]:
    """Decorator: turn input errors into exit 2 and return values into exit statuses."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        as_json = bool(kwargs.get("as_json"))
        try:
            status = fn(*args, **kwargs)
        except ProgramError as err:
            _fail(err.path, err.message, as_json)
        except UsageFailure as err:
            _fail(err.path, err.message, as_json)
        except RecursionError:
            _fail("", "the program nests too deeply to process", as_json)
        sys.exit(status or 0)

    return wrapper


program_argument = click.argument("program", metavar="PROGRAM")
json_option = click.option("--json", "as_json", is_flag=True, help="Write exactly one JSON document to standard output.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="neuronsim")
def cli() -> None:
    """neuronsim: race-check, simulate and measure NeuronCore dependence passes.

    PROGRAM is a neuronsim.program/1 JSON file, or - for standard input.
    """


def _register() -> None:
    from .commands import COMMANDS

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
