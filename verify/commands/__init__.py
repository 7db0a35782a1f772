"""CLI commands, one small module each; :data:`COMMANDS` lists what ``neuronsim`` offers."""

from verify.commands.check import check
from verify.commands.compile import compile_command
from verify.commands.footprint import footprint
from verify.commands.fuzz import fuzz
from verify.commands.loops import loops
from verify.commands.report import report
from verify.commands.run import run
from verify.commands.show import show
from verify.commands.simulate import simulate
from verify.commands.tasks import tasks

COMMANDS = [run, fuzz, check, compile_command, footprint, report, loops, show, simulate, tasks]
