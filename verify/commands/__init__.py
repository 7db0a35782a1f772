"""CLI commands, one small module each; :data:`COMMANDS` lists what ``neuronsim`` offers."""

from .check import check
from .compile import compile_command
from .footprint import footprint
from .loops import loops
from .show import show
from .simulate import simulate

COMMANDS = [check, compile_command, footprint, loops, show, simulate]
