"""The ``neuronsim`` click group (see :mod:`neuronsim.verify.cli`, which loads it after its signal
handlers are in place).  Its :meth:`_Group.main` keeps every ending to one line and one status."""

from __future__ import annotations

import importlib
import sys

import click

__all__ = ["cli"]


def _usage_path(err: click.ClickException) -> str:
    param = getattr(err, "param", None)
    if param is not None:
        return param.opts[0] if getattr(param, "opts", None) else (param.name or "")
    return ""


def _command_in(argv: list[str]) -> str:
    """``neuronsim SUBCOMMAND`` of a command line whose error click gave no context (an option
    missing its value), or ``neuronsim``: the help the error line points at."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return f"neuronsim {first}" if first in _COMMANDS else "neuronsim"


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from neuronsim.verify.cli.version import version

    click.echo(f"neuronsim {version()}")
    ctx.exit(0)


class _Group(click.Group):
    """The command group; its :meth:`main` keeps every ending to one line and one status, for
    the console script and for click's test runner alike."""

    def list_commands(self, ctx):  # noqa: D102 - the commands are added when first needed
        return sorted(_COMMANDS)

    def get_command(self, ctx, cmd_name):  # noqa: D102 - one command's module alone (click's lazy group)
        if cmd_name in _COMMANDS and cmd_name not in self.commands:
            module, attr = _COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(f"neuronsim.verify.cli.{module}"), attr))
        return super().get_command(ctx, cmd_name)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # noqa: D102
        from neuronsim.verify.cli.common import EXIT_INPUT, closed_pipe, fail, internal_error, stopped

        argv = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in argv
        try:
            super().main(args=argv, prog_name=prog_name or "neuronsim", complete_var=complete_var,
                         standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            raise SystemExit(exc.exit_code) from None
        except SystemExit as exc:  # click ends a closed pipe under its help or the version with 1; commands give 141
            if exc.code == 1 and isinstance(exc.__context__, BrokenPipeError):
                closed_pipe()
            raise
        except click.exceptions.Abort as exc:
            stopped(exc.__context__ if isinstance(exc.__context__, KeyboardInterrupt) else KeyboardInterrupt(), as_json)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare ``neuronsim``: the help, as --help gives it
            click.echo(exc.ctx.get_help())
            raise SystemExit(0) from None
        except click.ClickException as exc:
            command = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else _command_in(argv)
            path = _usage_path(exc)
            plain = isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter)
            message = exc.message if plain and path else exc.format_message()
            fail(path, f"{message} (see {command} --help)", as_json, status=EXIT_INPUT)
        except KeyboardInterrupt as err:
            stopped(err, as_json)
        except BrokenPipeError:
            closed_pipe()
        except OSError as err:  # the help or the version into a full device: out here, nothing else writes
            fail(err.filename or "standard output", err.strerror or str(err), as_json, status=EXIT_INPUT)
        except Exception as err:  # noqa: BLE001 - a bug outside any command: still one line
            internal_error(err, as_json)
        raise SystemExit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version (the installed distribution's) and exit.")
def cli() -> None:
    """neuronsim: race-check, simulate and measure NeuronCore dependence passes.

    PROGRAM is a neuronsim.program/1 JSON file, or - for standard input.  Exit status: 0
    success, 1 a finding, 2 unusable input or work beyond --max-instances / --max-memory,
    3 an internal error, 130 interrupted (SIGINT), 143 terminated (SIGTERM), 129 hung up
    (SIGHUP).
    """


#: Command name -> (module of :mod:`neuronsim.verify.cli`, attribute): each module imports
#: numpy, simpy and the rest of what its command needs, so a command loads its own alone
#: (``run`` never imports the fuzzer's hypothesis: about half a second of every start).
_COMMANDS = {
    "run": ("cmd_run", "run"), "fuzz": ("cmd_fuzz", "fuzz"), "check": ("cmd_check", "check"),
    "compile": ("cmd_compile", "compile_command"), "footprint": ("cmd_footprint", "footprint"),
    "report": ("cmd_report", "report"), "loops": ("cmd_loops", "loops"), "show": ("cmd_show", "show"),
    "simulate": ("cmd_simulate", "simulate"), "tasks": ("cmd_tasks", "tasks"), "nki": ("cmd_nki", "nki"),
    "profile": ("cmd_profile", "profile"), "compare": ("cmd_compare", "compare"),
    "examples": ("cmd_examples", "examples"),
}


def load_command(argv: list[str]) -> None:
    """Import the command ``argv`` names (its first word), before click parses: the console
    script does it while a signal still ends the process at once (:mod:`.signals`), as the
    whole import of the commands was; click would print a blank line for an interrupted one."""
    name = next((word for word in argv if not word.startswith("-")), None)
    if name in _COMMANDS:
        cli.get_command(None, name)

