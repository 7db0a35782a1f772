"""CLI commands, one small module each; :data:`COMMANDS` lists what ``neuronsim`` offers."""

from .check import check
from .show import show

COMMANDS = [check, show]
