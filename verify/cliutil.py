"""Shared helpers of the CLI commands: exit statuses, located errors, ``--json`` output.

Every command module imports these from here (not from :mod:`verify.cli`, which imports the
command modules), so a command module can be imported on its own.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from machine.errors import ProgramError

__all__ = ["UsageFailure", "run_command", "emit_json", "program_argument", "json_option"]


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
        except OSError as err:  # a file that cannot be read or written: unusable input, not a crash
            _fail(getattr(err, "filename", None) or "", err.strerror or str(err), as_json)
        sys.exit(status or 0)

    return wrapper


program_argument = click.argument("program", metavar="PROGRAM")
json_option = click.option("--json", "as_json", is_flag=True, help="Write exactly one JSON document to standard output.")
