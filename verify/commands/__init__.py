"""CLI commands, one small module each; :data:`COMMANDS` lists what ``neuronsim`` offers."""

from .check import check
from .compile import compile_command
from .footprint import footprint
from .fuzz import fuzz
from .loops import loops
from .run import run
from .show import show
from .simulate import simulate

COMMANDS = [run, fuzz, check, compile_command, footprint, loops, show, simulate]
