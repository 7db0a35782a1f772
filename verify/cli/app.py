"""The ``neuronsim`` command line (spec, "Command line").

Every command reads a program from a path or ``-`` (standard input).  Exit statuses: 0 for
success, 1 for a finding (races, outputs that differ), 2 for unusable input (and for work
beyond the size limits ``--max-instances`` / ``--max-memory``), 3 for an internal error (a
bug: one line ``internal error: ...``; ``NEURONSIM_TRACEBACK=1`` shows the traceback), 130 when
interrupted (Ctrl-C), 143 when terminated (SIGTERM), 141 when the reader of standard output
went away.  With ``--json`` standard output carries exactly one JSON document; on exit 2, 3,
130 or 143 it is ``{"format": "neuronsim.error/1", "path": ..., "message": ..., "internal":
...}``, and the message is on standard error as well.  Never a traceback: any
:class:`~neuronsim.machine.ir.errors.ProgramError` (and any other failure to read input, including a bad
flag) becomes exit 2 with a located one-line message.

Commands live in small modules (``verify/cli/*.py``); each defines click commands and
this module adds them to the group.
"""

from __future__ import annotations

import signal
import sys

import click

from neuronsim.verify.cli.check import check
from neuronsim.verify.cli.compile import compile_command
from neuronsim.verify.cli.footprint import footprint
from neuronsim.verify.cli.fuzz import fuzz
from neuronsim.verify.cli.loops import loops
from neuronsim.verify.cli.report import report
from neuronsim.verify.cli.run import run
from neuronsim.verify.cli.show import show
from neuronsim.verify.cli.simulate import simulate
from neuronsim.verify.cli.tasks import tasks
from neuronsim.verify.cli.common import (
    EXIT_INPUT,
    MEMORY_BACKSTOP,
    Terminated,
    UsageFailure,
    closed_pipe,
    emit_json,
    fail,
    internal_error,
    json_option,
    program_argument,
    run_command,
    stopped,
)

__all__ = ["main", "cli", "run_command", "emit_json", "program_argument", "json_option", "UsageFailure"]

def _usage_path(err: click.ClickException) -> str:
    param = getattr(err, "param", None)
    if param is not None:
        return param.opts[0] if getattr(param, "opts", None) else (param.name or "")
    return ""


class _Group(click.Group):
    """The command group; its :meth:`main` keeps every ending to one line and one status, for
    the console script and for click's test runner alike."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # noqa: D102
        argv = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in argv
        try:
            super().main(args=argv, prog_name=prog_name or "neuronsim", complete_var=complete_var,
                         standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort as exc:
            stopped(exc.__context__ if isinstance(exc.__context__, KeyboardInterrupt) else KeyboardInterrupt(), as_json)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare ``neuronsim``: the help, as --help gives it
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except click.ClickException as exc:
            command = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "neuronsim"
            path = _usage_path(exc)
            plain = isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter)
            message = exc.message if plain and path else exc.format_message()
            fail(path, f"{message} (see {command} --help)", as_json, status=EXIT_INPUT)
        except KeyboardInterrupt as err:
            stopped(err, as_json)
        except BrokenPipeError:
            closed_pipe()
        except Exception as err:  # noqa: BLE001 - a bug outside any command: still one line
            internal_error(err, as_json)
        sys.exit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="neuronsim")
def cli() -> None:
    """neuronsim: race-check, simulate and measure NeuronCore dependence passes.

    PROGRAM is a neuronsim.program/1 JSON file, or - for standard input.  Exit status: 0
    success, 1 a finding, 2 unusable input or work beyond --max-instances / --max-memory,
    3 an internal error, 130 interrupted.
    """


#: What ``neuronsim`` offers, in the order its help lists them.
COMMANDS = [run, fuzz, check, compile_command, footprint, report, loops, show, simulate, tasks]
for _command in COMMANDS:
    cli.add_command(_command)


def _terminate(signum, frame) -> None:
    raise Terminated  # SIGTERM ends like Ctrl-C (temporary files removed, one line), with 143


def main() -> None:
    """Console entry point."""
    signal.signal(signal.SIGTERM, _terminate)
    MEMORY_BACKSTOP["enabled"] = True
    cli.main()
