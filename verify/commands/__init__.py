"""CLI commands, one small module each; :data:`COMMANDS` lists what ``neuronsim`` offers."""

from .check import check
from .show import show
from .simulate import simulate

COMMANDS = [check, show, simulate]
