"""CLI commands, one small module each; :data:`COMMANDS` lists what ``neuronsim`` offers."""

from .show import show

COMMANDS = [show]
