"""The console a command prints tables to for people (rich), wide enough never to cut a number."""

from __future__ import annotations

__all__ = ["people_console", "PIPE_WIDTH"]

#: Columns of the console when standard output is not a terminal (a pipe, a file): wide enough
#: that rich never cuts a table cell to ``12,917,500…``; tables take the width they need.
PIPE_WIDTH = 10_000


def people_console(stream=None):
    """The rich console of a command's output for people: on a terminal its width, elsewhere
    :data:`PIPE_WIDTH` so that no number in a table is cut; lines are never wrapped.  A reader
    that went away (``neuronsim run K | head``) is the command's exit 141, as for every other
    write: rich's own handling ends the process with status 1, which here means a check
    failed."""
    import sys

    from rich.console import Console

    class PeopleConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more to write; the command's handler says 141
            raise BrokenPipeError("the reader of standard output went away")

    target = stream if stream is not None else sys.stdout
    wide = None if target.isatty() else PIPE_WIDTH
    return PeopleConsole(file=stream, highlight=False, soft_wrap=True, width=wide)
